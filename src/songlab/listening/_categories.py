"""What the five-category rating protocols share (ITU-T P.800 / P.808: an absolute or a
degradation category rating): the answer, P.808's rater checks, the result rows and the mean
opinion score per model with its intervals, kept on the 1-5 scale.

Each such protocol keeps in its own module only its words, its trials and its question.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

import songlab.listening.panel as panel
import songlab.listening.stats as st
from songlab.listening._errors import ListeningError
from songlab.listening._kit import TRIAL_COLUMNS, check_condition, frame_of, non_negative
from songlab.listening._trials import Plan
from songlab.listening.session import ListeningSession, Trial

__all__ = [
    "CategorySession",
    "SCALE",
    "TRAP_RULE",
    "by_unit",
    "check_answer",
    "check_plan",
    "expected",
    "frame",
    "mean_table",
    "panel_table",
    "passed",
    "right_answer",
    "rows",
    "scripted",
]

#: the categories' range (P.800: 1 to 5)
SCALE = (1.0, 5.0)
TRAP_RULE = (
    "When a clip is interrupted by beeps, answer with the number of beeps you heard "
    "(three beeps: 3)."
)


def check_answer(value: Any, words: Mapping[int, str]) -> int:
    """``value`` as a category of ``words`` (an int 1-5), or a ListeningError naming both ends."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value not in words:
        raise ListeningError(
            "rating", f"must be a category 1 ({words[1]}) to 5 ({words[5]}); got {value!r}"
        )
    return int(value)


def check_plan(check: str, template: Plan, rng: np.random.Generator) -> Plan:
    """P.808's checks: a gold clip (made plainly bad) or a trapping question (1-5 beeps)."""
    count = int(rng.integers(1, 6)) if check == "trap" else 0
    model = check_condition(check, template.models[0], beeps=count)
    return Plan(template.prompt, (model,), check=check, at=0, expect=count or None)


def passed(plan: Plan, answer: Any) -> bool:
    """The trap: the number of beeps; gold: P.808's known answer (1), one category off."""
    if plan.check == "trap":
        return bool(answer == plan.expect)
    return int(answer) <= 2


def expected(plan: Plan, gold: str) -> str:
    """What passes a check, in words (``gold``: the two lowest categories' words)."""
    if plan.check == "trap":
        return f"{plan.expect} ({plan.expect} beeps)"
    return f"{gold} (made plainly bad)"


def right_answer(plan: Plan) -> int:
    """An attentive listener's answer to a check."""
    return int(plan.expect) if plan.check == "trap" and plan.expect else 1


def rows(trial: Trial, plan: Plan, answer: Any) -> list[dict[str, Any]]:
    return [
        {"trial": trial.index, "prompt": trial.prompt, "rating": answer, "model": plan.models[0]}
    ]


def frame(result_rows: list[dict[str, Any]], revealed: bool) -> pd.DataFrame:
    return frame_of(result_rows, TRIAL_COLUMNS | {"rating": "Int64"}, {"model": "string"}, revealed)


def scripted(mean: float, noise: float, rng: np.random.Generator) -> int:
    """A scripted vote: ``mean`` plus Gaussian ``noise`` (sd), rounded to a category."""
    return int(np.clip(np.rint(mean + rng.normal(0.0, noise)), *SCALE))


def by_unit(results: pd.DataFrame, unit: str) -> pd.DataFrame:
    """Ratings with ``unit`` (prompt or rater) as the pairing of the paired tests."""
    return results[[unit, "model", "rating"]].rename(columns={unit: "trial"})


def mean_table(results: pd.DataFrame, score: str, confidence: float) -> pd.DataFrame:
    """Per model: votes, the mean (as ``score``), sd and the Student t interval, cut to the
    scale (4.83 +- 0.43 is 4.40-5, not 4.40-5.26)."""
    out = []
    for model, g in results.groupby("model", sort=True):
        votes = g["rating"].to_numpy(dtype=float)
        mean, low, high = st.t_interval(votes, confidence=confidence)
        sd = float(votes.std(ddof=1)) if votes.size > 1 else float("nan")
        low, high = max(low, SCALE[0]), min(high, SCALE[1])  # nan stays nan
        out.append(
            {"model": model, "n": votes.size, score: mean, "sd": sd, "ci_low": low, "ci_high": high}
        )
    return pd.DataFrame(out, columns=["model", "n", score, "sd", "ci_low", "ci_high"])


def panel_table(results: pd.DataFrame, score: str, confidence: float) -> dict[str, pd.DataFrame]:
    """A campaign's ``{"models": the mean with a t and a rater-clustered interval (both on the
    scale); "pairs": paired t over raters' means, Holm}``."""
    models = mean_table(results, score, confidence)
    clustered = {
        m: panel.clustered_mean(
            g["rating"].to_numpy(float), g["rater"].tolist(), confidence=confidence, bounds=SCALE
        )
        for m, g in results.groupby("model", sort=True)
    }
    models["raters"] = [
        results.loc[results["model"] == m, "rater"].nunique() for m in models["model"]
    ]
    models["ci_low_rater"] = [clustered[m][1] for m in models["model"]]
    models["ci_high_rater"] = [clustered[m][2] for m in models["model"]]
    means = results.groupby(["rater", "model"])["rating"].mean().reset_index()
    return {
        "models": models.sort_values(score, ascending=False, ignore_index=True),
        "pairs": st.mushra_pairwise(by_unit(means, "rater")),
    }


class CategorySession(ListeningSession):
    """What the category protocols (ACR, DCR) share: one clip rated on a five-point scale,
    checks, rows, statistics and the scripted listener's noise. A protocol names its
    ``words`` (value -> word), ``score`` (the mean's column: ``mos``, ``dmos``) and
    ``low_hint`` (what a trap clip's answer must be)."""

    words: Mapping[int, str]
    score: str
    low_hint: str

    def _design(
        self, models: list[str], n_prompts: int, options: dict[str, Any], rng: np.random.Generator
    ) -> list[Plan]:
        """Every clip ``repeats`` times; each repetition a fresh random order of all clips."""
        clips = [Plan(p, (m,)) for m in models for p in range(n_prompts)]
        return [clips[i] for _ in range(options["repeats"]) for i in rng.permutation(len(clips))]

    def _check_answer(self, trial: Trial, value: Any) -> Any:
        return check_answer(value, self.words)

    def _check_plan(self, check: str, template: Plan, rng: np.random.Generator) -> Plan:
        return check_plan(check, template, rng)

    def _passed(self, trial: Trial, plan: Plan, answer: Any) -> bool:
        return passed(plan, answer)

    def _expected(self, trial: Trial, plan: Plan) -> str:
        return expected(plan, self.low_hint)

    def _right_answer(
        self, trial: Trial, plan: Plan, behaviour: Mapping[str, Any], rng: np.random.Generator
    ) -> Any:
        return right_answer(plan)

    def _rows(self, trial: Trial, plan: Plan, answer: Any, revealed: bool) -> list[dict[str, Any]]:
        return rows(trial, plan, answer)

    def _frame(self, rows: list[dict[str, Any]]) -> pd.DataFrame:
        return frame(rows, self.revealed)

    def _stats(  # type: ignore[override]  # each protocol has its own options
        self, frame: pd.DataFrame, /, *, test: str = "paired-t", confidence: float = 0.95
    ) -> dict[str, pd.DataFrame]:
        """``{"models": the mean score, sd, t interval per model; "pairs": paired tests over
        prompts, Holm}``."""
        return {
            "models": mean_table(frame, self.score, confidence),
            "pairs": st.mushra_pairwise(by_unit(frame, "prompt"), test=test),
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
        """``{"models": the mean score with a t and a rater-clustered interval; "pairs": paired
        t over raters' means, Holm}``."""
        return panel_table(frame, cls.score, confidence)

    def _check_behaviour(self, behaviour: dict[str, Any]) -> dict[str, Any]:
        return dict(behaviour, noise=non_negative("noise", behaviour["noise"]))
