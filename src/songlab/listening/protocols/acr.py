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
import songlab.listening.stats as st
from songlab.listening._kit import (
    no_extra,
    non_negative,
    score_summary,
)
from songlab.listening._trials import Plan
from songlab.listening.controls import Choice, Controls, Summary
from songlab.listening.session import ListeningSession, Trial

__all__ = ["ACRSession", "CATEGORIES"]

#: P.800 Annex B / P.808: the listening-quality scale, best first (as the P.808 page lists it)
CATEGORIES = ((5, "Excellent"), (4, "Good"), (3, "Fair"), (2, "Poor"), (1, "Bad"))
_WORD = dict(CATEGORIES)


class ACRSession(ListeningSession):
    """Absolute category rating: one clip per trial, rated 1 (Bad) to 5 (Excellent)."""

    kind = "acr"
    panel_score = ("models", "mos")  # 1-5
    behaviour = {"scores": None, "noise": 0.8}
    trap_rule = categories.TRAP_RULE

    def _check_options(self, models: list[str], options: dict[str, Any]) -> dict[str, Any]:
        no_extra(options, set())
        return {}

    def _design(
        self, models: list[str], n_prompts: int, options: dict[str, Any], rng: np.random.Generator
    ) -> list[Plan]:
        """Every clip ``repeats`` times; each repetition a fresh random order of all clips."""
        clips = [Plan(p, (m,)) for m in models for p in range(n_prompts)]
        return [clips[i] for _ in range(options["repeats"]) for i in rng.permutation(len(clips))]

    def _labels(self, plan: Plan) -> tuple[str, ...]:
        return ("A",)

    def controls(self, trial: int, /) -> Controls:
        self._trial(trial)
        choices = tuple(Choice(value, f"{value} {word}") for value, word in CATEGORIES)
        return Controls("How would you rate the quality of this clip?", choices=choices)

    def _check_answer(self, trial: Trial, value: Any) -> Any:
        return categories.check_answer(value, _WORD)

    def _check_plan(self, check: str, template: Plan, rng: np.random.Generator) -> Plan:
        return categories.check_plan(check, template, rng)

    def _passed(self, trial: Trial, plan: Plan, answer: Any) -> bool:
        return categories.passed(plan, answer)

    def _expected(self, trial: Trial, plan: Plan) -> str:
        return categories.expected(plan, "1 Bad or 2 Poor")

    def _right_answer(
        self, trial: Trial, plan: Plan, behaviour: Mapping[str, Any], rng: np.random.Generator
    ) -> Any:
        return categories.right_answer(plan)

    def _rows(self, trial: Trial, plan: Plan, answer: Any, revealed: bool) -> list[dict[str, Any]]:
        return categories.rows(trial, plan, answer)

    def _frame(self, rows: list[dict[str, Any]]) -> pd.DataFrame:
        return categories.frame(rows, self.revealed)

    def _stats(  # type: ignore[override]  # each protocol has its own options
        self, frame: pd.DataFrame, /, *, test: str = "paired-t", confidence: float = 0.95
    ) -> dict[str, pd.DataFrame]:
        """``{"models": MOS, sd, t interval per model; "pairs": paired tests over prompts, Holm}``."""
        return {
            "models": categories.mean_table(frame, "mos", confidence),
            "pairs": st.mushra_pairwise(categories.by_unit(frame, "prompt"), test=test),
        }

    @classmethod
    def panel_stats(
        cls,
        frame: pd.DataFrame,
        /,
        *,
        options: Mapping[str, Any],
        baseline: str | None = None,
        confidence: float = 0.95,
    ) -> dict[str, pd.DataFrame]:
        """``{"models": MOS with a t and a rater-clustered interval; "pairs": paired t over
        raters' means, Holm}``."""
        return categories.panel_table(frame, "mos", confidence)

    def _summary(self, frame: pd.DataFrame) -> Summary:
        models = self._stats(frame)["models"].sort_values("mos", ascending=False, ignore_index=True)
        head = ("model", "votes", "MOS", "95 % interval (t)")
        return score_summary(models, score="mos", digits=2, what="MOS", head=head)

    def _check_behaviour(self, behaviour: dict[str, Any]) -> dict[str, Any]:
        return dict(behaviour, noise=non_negative("noise", behaviour["noise"]))

    def _scripted(
        self, trial: Trial, plan: Plan, behaviour: Mapping[str, Any], rng: np.random.Generator
    ) -> Any:
        """``scores[model]`` (a MOS, default 3) plus Gaussian ``noise`` (sd), rounded to a
        category."""
        mean = float((behaviour["scores"] or {}).get(plan.models[0], 3.0))
        return categories.scripted(mean, behaviour["noise"], rng)
