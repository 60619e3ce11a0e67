"""ABX: is X the same as A or as B? Can a listener tell two models apart at all?

Trials: every pair of models per prompt per repeat; X repeats A or B in a balanced
pattern (:func:`~songlab.listening._trials.abx_plans`). Answer: ``"A"`` or ``"B"``.
Statistics: per pair the correct rate, its interval, the one-sided exact binomial test and
d' (one listener); across raters, per rater and pooled with Holm's correction. Rater checks:
one of A and B is made plainly bad (gold) or interrupted by beeps (trap), which makes X
plain to tell.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

import songlab.listening.panel as panel
import songlab.listening.stats as st
from songlab.listening._errors import ListeningError
from songlab.listening._kit import (
    TRIAL_COLUMNS,
    check_condition,
    frame_of,
    no_extra,
    probability,
)
from songlab.listening._trials import Plan, abx_plans
from songlab.listening.controls import Choice, Controls, Summary
from songlab.listening.session import ListeningSession, Trial
from songlab.listening.verdict import Estimate, Measure, verdict

__all__ = ["ABXSession", "CORRECT", "abx"]

#: the panel summary's measure: the correct rate of a pair against chance, by the one-sided
#: exact binomial test the table shows (a listener who hears no difference is right half the time)
CORRECT = Measure(
    "correct",
    digits=0,
    scale=100,
    suffix=" %",
    interval="95 % interval (Wilson)",
    chance=0.5,
    directional=False,
    test="one-sided exact binomial test",
)


class ABXSession(ListeningSession):
    """ABX: is X the same as A or as B? Labels A, B, X; answer ``"A"`` or ``"B"``."""

    kind = "abx"
    behaviour = {"p_correct": 0.9}
    trap_rule = "When clips are interrupted by beeps, answer as ever: is X A or B?"

    def _check_options(self, models: list[str], options: dict[str, Any]) -> dict[str, Any]:
        no_extra(options, set())
        return {}

    def _design(
        self, models: list[str], n_prompts: int, options: dict[str, Any], rng: np.random.Generator
    ) -> list[Plan]:
        return abx_plans(models, n_prompts=n_prompts, repeats=options["repeats"], rng=rng)

    def _labels(self, plan: Plan) -> tuple[str, ...]:
        return ("A", "B", "X")

    def _model_of_plan(self, trial: Trial, plan: Plan, label: str) -> str:
        return plan.models[plan.x_at if label == "X" else "AB".index(label)]

    def controls(self, trial: int, /) -> Controls:
        self._trial(trial)
        choices = (Choice("A", "X is A"), Choice("B", "X is B"))
        return Controls("Is X the same as A or as B?", choices=choices)

    def _check_answer(self, trial: Trial, value: Any) -> Any:
        if value not in ("A", "B"):
            raise ListeningError("choice", f"must be 'A' or 'B' (which one X is); got {value!r}")
        return value

    def _check_plan(self, check: str, template: Plan, rng: np.random.Generator) -> Plan:
        at = int(rng.integers(2))
        models = list(template.models)
        models[at] = check_condition(check, models[at], beeps=3 if check == "trap" else 0)
        return Plan(template.prompt, tuple(models), template.x, check=check, at=at)

    def _passed(self, trial: Trial, plan: Plan, answer: Any) -> bool:
        return bool(answer == "AB"[plan.x_at])

    def _expected(self, trial: Trial, plan: Plan) -> str:
        what = "made plainly bad" if plan.check == "gold" else "interrupted by beeps"
        return f"X is {'AB'[plan.x_at]} ({'AB'[plan.at or 0]} is {what})"

    def _right_answer(
        self, trial: Trial, plan: Plan, behaviour: Mapping[str, Any], rng: np.random.Generator
    ) -> Any:
        return "AB"[plan.x_at]

    def _rows(self, trial: Trial, plan: Plan, answer: Any, revealed: bool) -> list[dict[str, Any]]:
        x = "AB"[plan.x_at]
        return [
            {
                "trial": trial.index,
                "prompt": trial.prompt,
                "answer": answer,
                "model_a": plan.models[0],
                "model_b": plan.models[1],
                "x": x,
                "x_model": plan.models[plan.x_at],
                "correct": answer == x,
            }
        ]

    def _frame(self, rows: list[dict[str, Any]]) -> pd.DataFrame:
        revealed = {
            "model_a": "string",
            "model_b": "string",
            "x": "string",
            "x_model": "string",
            "correct": "boolean",
        }
        return frame_of(rows, TRIAL_COLUMNS | {"answer": "string"}, revealed, self.revealed)

    def _stats(  # type: ignore[override]  # each protocol has its own options
        self,
        frame: pd.DataFrame,
        /,
        *,
        ci: str = "wilson",
        correction: str = "log-linear",
        model: str = "differencing",
        confidence: float = 0.95,
    ) -> dict[str, pd.DataFrame]:
        """``{"pairs": per-pair correct rate, CI, one-sided binomial p, d' (ABX and yes-no)}``."""
        return {
            "pairs": st.abx_table(
                frame, ci=ci, correction=correction, model=model, confidence=confidence
            )
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
        """``{"raters": per rater and pair, "pooled": per pair}`` (Holm over each)."""
        return panel.abx_panel(frame, confidence=confidence)

    def _summary(self, frame: pd.DataFrame) -> Summary:
        pairs = self._stats(frame)["pairs"]
        keep = ["model_a", "model_b", "n", "correct", "rate", "ci_low", "ci_high", "p_value"]
        frame = pairs[keep].reset_index(drop=True)
        records = frame.to_dict("records")
        rows = tuple(
            (
                f"{r['model_a']} vs {r['model_b']}",
                str(r["n"]),
                CORRECT.show(r["rate"]),
                CORRECT.span(r["ci_low"], r["ci_high"]),
                st.format_p(r["p_value"]),
            )
            for r in records
        )
        found = verdict(
            [
                Estimate(
                    r["model_a"],
                    r["rate"],
                    r["ci_low"],
                    r["ci_high"],
                    other=r["model_b"],
                    p=r["p_value"],
                )  # fmt: skip
                for r in records
            ],
            measure=CORRECT,
        )
        head = ("pair", "trials", "correct", CORRECT.interval, "p (one-sided)")
        return Summary(found.text, head, rows, frame, rule=found.rule)

    def _check_behaviour(self, behaviour: dict[str, Any]) -> dict[str, Any]:
        return {"p_correct": probability("p_correct", behaviour["p_correct"])}

    def _scripted(
        self, trial: Trial, plan: Plan, behaviour: Mapping[str, Any], rng: np.random.Generator
    ) -> Any:
        """Correct with probability ``p_correct``."""
        return "AB"[plan.x_at] if rng.random() < behaviour["p_correct"] else "AB"[1 - plan.x_at]


def abx(
    clips: Mapping[str, Any],
    /,
    *,
    sr: int | None = None,
    prompts: Any = None,
    seed: int | None = None,
    repeats: int = 1,
    peak_ceiling_db: float = -1.0,
    **common: Any,
) -> ABXSession:
    """A blind ABX session over every pair of models (options as :func:`preference`'s)."""
    return ABXSession(
        clips,
        sr=sr,
        prompts=prompts,
        seed=seed,
        repeats=repeats,
        peak_ceiling_db=peak_ceiling_db,
        **common,
    )
