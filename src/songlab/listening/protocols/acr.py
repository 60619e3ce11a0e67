"""ACR (ITU-T P.800 / P.808): rate one clip at a time on the five-point scale, giving a MOS.

Absolute category rating: each trial plays one clip, and the listener answers with one of
five categories, 5 Excellent, 4 Good, 3 Fair, 2 Poor, 1 Bad (P.800 Annex B; P.808 runs it
with crowd raters). Trials: every (model, prompt) clip ``repeats`` times, in a random order.
The mean of the votes is the mean opinion score (MOS). Statistics: per model the MOS with a
Student t interval over the votes (as the P.808 toolkit reports it) and paired t tests over
prompts (Holm); across raters, the MOS with a rater-clustered interval as well, and paired
tests over the raters' means. Rater checks (P.808's): a gold clip made plainly bad, whose
answer must be 1 Bad or 2 Poor (the toolkit accepts one category off), and a trapping
question, a clip interrupted by 1-5 beeps whose answer must be the number of beeps.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

import songlab.listening._categories as categories
from songlab.listening._kit import (
    no_extra,
    score_summary,
)
from songlab.listening._trials import Plan
from songlab.listening.controls import Choice, Controls, Summary
from songlab.listening.session import Trial

__all__ = ["ACRSession", "CATEGORIES"]

#: P.800 Annex B / P.808: the listening-quality scale, best first (as the P.808 page lists it)
CATEGORIES = ((5, "Excellent"), (4, "Good"), (3, "Fair"), (2, "Poor"), (1, "Bad"))
_WORD = dict(CATEGORIES)


class ACRSession(categories.CategorySession):
    """Absolute category rating: one clip per trial, rated 1 (Bad) to 5 (Excellent)."""

    kind = "acr"
    panel_score = ("models", "mos")  # 1-5
    behaviour = {"scores": None, "noise": 0.8}
    trap_rule = categories.TRAP_RULE
    words = _WORD
    score = "mos"
    low_hint = "1 Bad or 2 Poor"

    def _check_options(self, models: list[str], options: dict[str, Any]) -> dict[str, Any]:
        no_extra(options, set())
        return {}

    def _labels(self, plan: Plan) -> tuple[str, ...]:
        return ("A",)

    def controls(self, trial: int, /) -> Controls:
        self._trial(trial)
        choices = tuple(Choice(value, f"{value} {word}") for value, word in CATEGORIES)
        return Controls("How would you rate the quality of this clip?", choices=choices)

    def _summary(self, frame: pd.DataFrame) -> Summary:
        models = self._stats(frame)["models"].sort_values("mos", ascending=False, ignore_index=True)
        head = ("model", "votes", "MOS", "95 % interval (t)")
        return score_summary(models, score="mos", digits=2, what="MOS", head=head)

    def _scripted(
        self, trial: Trial, plan: Plan, behaviour: Mapping[str, Any], rng: np.random.Generator
    ) -> Any:
        """``scores[model]`` (a MOS, default 3) plus Gaussian ``noise`` (sd), rounded to a
        category."""
        mean = float((behaviour["scores"] or {}).get(plan.models[0], 3.0))
        return categories.scripted(mean, behaviour["noise"], rng)
