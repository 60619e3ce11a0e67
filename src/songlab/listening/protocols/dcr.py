"""DCR (ITU-T P.800 Annex D / P.808): how degraded is a clip against the reference, giving a DMOS.

Degradation category rating: each trial plays the reference openly (``Ref``, a model the
organiser names, ``reference=``) and then one clip of the same prompt (``A``), both to be
heard before the answer, and the
listener rates how much the second is degraded against the first on five categories: 5
Degradation is inaudible, 4 audible but not annoying, 3 slightly annoying, 2 annoying, 1
very annoying (P.800 Annex D, run with crowd raters by P.808). Where ACR asks how good a clip
is, DCR asks how much of the reference a model keeps: the question to ask of a cheaper
model against the one you use. Trials: every (model, prompt) clip ``repeats`` times in a
random order, the reference's own clip among them (the null pair: its DMOS shows how a panel
rates no degradation). The mean of the votes is the degradation mean opinion score (DMOS).
Statistics: per model the DMOS with a Student t interval over the votes and paired t tests
over prompts (Holm); across raters, the DMOS with a rater-clustered interval as well and
paired tests over the raters' means. Rater checks (P.808's): a gold clip made plainly bad,
whose answer must be 1 or 2 (annoying at least), and a trapping question, a clip
interrupted by 1-5 beeps whose answer must be the number of beeps.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

import songlab.listening._categories as categories
from songlab.listening._errors import ListeningError
from songlab.listening._kit import (
    no_extra,
    score_summary,
)
from songlab.listening._trials import Plan
from songlab.listening.controls import Choice, Controls, Summary
from songlab.listening.session import Trial

__all__ = ["DCRSession", "DEGRADATION"]

#: P.800 Annex D / P.808: the degradation scale, least degraded first
DEGRADATION = (
    (5, "Degradation is inaudible"),
    (4, "Degradation is audible but not annoying"),
    (3, "Degradation is slightly annoying"),
    (2, "Degradation is annoying"),
    (1, "Degradation is very annoying"),
)
_WORD = dict(DEGRADATION)
REFERENCE = "Ref"


class DCRSession(categories.CategorySession):
    """Degradation category rating: the reference, then one clip, rated 5 (inaudible) to 1
    (very annoying); ``reference=`` names the reference model (default: the first model of
    ``clips``, in the order given). Every clip, the reference's own included, is rated."""

    kind = "dcr"
    panel_score = ("models", "dmos")  # 1-5
    behaviour = {"scores": None, "noise": 0.6}
    trap_rule = categories.TRAP_RULE
    words = _WORD
    score = "dmos"
    low_hint = "1 or 2: annoying at least"

    def _check_options(self, models: list[str], options: dict[str, Any]) -> dict[str, Any]:
        no_extra(options, {"reference"})
        reference = options.get("reference", models[0])  # default: the first model given
        if reference not in models:
            raise ListeningError(
                "reference", f"must name the reference model, one of {models}; got {reference!r}"
            )
        return {"reference": reference}

    def _labels(self, plan: Plan) -> tuple[str, ...]:
        """The reference first, then the clip rated against it (P.800 Annex D's order): both
        are labels, so both must be heard before the answer."""
        return (REFERENCE, "A")

    def _model_of_plan(self, trial: Trial, plan: Plan, label: str) -> str:
        if label == REFERENCE:
            reference: str = self.options["reference"]
            return reference
        return plan.models[0]

    def controls(self, trial: int, /) -> Controls:
        self._trial(trial)
        choices = tuple(Choice(value, f"{value} {words}") for value, words in DEGRADATION)
        return Controls("Compared with the reference, how degraded is clip A?", choices=choices)

    def _summary(self, frame: pd.DataFrame) -> Summary:
        models = self._stats(frame)["models"]
        head = ("model", "votes", "DMOS", "95 % interval (t)")
        return score_summary(models, score="dmos", digits=2, what="DMOS", head=head)

    def _scripted(
        self, trial: Trial, plan: Plan, behaviour: Mapping[str, Any], rng: np.random.Generator
    ) -> Any:
        """``scores[model]`` (a DMOS; default 5 for the reference, 4 for the others) plus
        Gaussian ``noise`` (sd), rounded to a category."""
        default = 5.0 if plan.models[0] == self.options["reference"] else 4.0
        mean = float((behaviour["scores"] or {}).get(plan.models[0], default))
        return categories.scripted(mean, behaviour["noise"], rng)
