"""Blind preference: which clip do you prefer? Pairs of models, or all models at once.

Trials: one per pair of models per prompt per repeat (``design="pairs"``, balanced by
:func:`~songlab.listening._trials.pair_plans`), or every model in every trial
(``design="all"``, Williams squares). Answer: a label, or None ("no preference", with
``allow_tie``). Statistics: per pair the exact binomial test with a Wilson interval (one
listener); across raters, rater-clustered shares and a Bradley-Terry ranking.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

import songlab.listening.panel as panel
import songlab.listening.stats as st
from songlab.listening._errors import ListeningError
from songlab.listening._trials import Plan, latin_plans, pair_plans
from songlab.listening.controls import Choice, Controls, Summary
from songlab.listening.session import (
    LETTERS,
    TRIAL_COLUMNS,
    ListeningSession,
    Trial,
    frame_of,
    no_extra,
    pct,
    probability,
)

__all__ = ["PreferenceSession", "preference"]


class PreferenceSession(ListeningSession):
    """Blind preference: which option do you prefer? Pairs of models (``design="pairs"``)
    or all models at once (``design="all"``); ``allow_tie`` adds "no preference" (answer None)."""

    kind = "preference"
    behaviour = {"prefer": None, "p": 0.8, "p_tie": 0.0}

    def _check_options(self, models: list[str], options: dict[str, Any]) -> dict[str, Any]:
        no_extra(options, {"design", "allow_tie"})
        design = options.get("design", "pairs")
        if design not in ("pairs", "all"):
            raise ListeningError("design", f"must be 'pairs' or 'all'; got {design!r}")
        if design == "all" and len(models) > len(LETTERS):
            raise ListeningError("clips", f"at most {len(LETTERS)} models in one trial")
        allow_tie = options.get("allow_tie", False)
        if not isinstance(allow_tie, bool):
            raise ListeningError("allow_tie", f"must be a bool; got {allow_tie!r}")
        return {"design": design, "allow_tie": allow_tie}

    def _design(
        self, models: list[str], n_prompts: int, options: dict[str, Any], rng: np.random.Generator
    ) -> list[Plan]:
        make = pair_plans if options["design"] == "pairs" else latin_plans
        return make(models, n_prompts=n_prompts, repeats=options["repeats"], rng=rng)

    def _labels(self, plan: Plan) -> tuple[str, ...]:
        return tuple(LETTERS[: len(plan.models)])

    def controls(self, trial: int, /) -> Controls:
        t = self._trial(trial)
        choices = [Choice(label, f"I prefer {label}") for label in t.labels]
        if self.options["allow_tie"]:
            choices.append(Choice(None, "No preference"))
        return Controls("Which one do you prefer?", choices=tuple(choices))

    def _check_answer(self, trial: Trial, value: Any) -> Any:
        if value is None and self.options["allow_tie"]:
            return None
        if value not in trial.labels:
            allowed = ", ".join(trial.labels) + (
                " or None (no preference)" if self.options["allow_tie"] else ""
            )
            raise ListeningError("choice", f"must be one of {allowed}; got {value!r}")
        return value

    def _rows(self, trial: Trial, plan: Plan, answer: Any, revealed: bool) -> list[dict[str, Any]]:
        return [
            {
                "trial": trial.index,
                "prompt": trial.prompt,
                "label": label,
                "chosen": label == answer,
                "tie": answer is None,
                "model": plan.models[i],
            }
            for i, label in enumerate(trial.labels)
        ]

    def _frame(self, rows: list[dict[str, Any]]) -> pd.DataFrame:
        blinded = TRIAL_COLUMNS | {"label": "string", "chosen": "boolean", "tie": "boolean"}
        return frame_of(rows, blinded, {"model": "string"}, self.revealed)

    def stats(  # type: ignore[override]  # each protocol has its own options
        self, *, ci: str = "wilson", confidence: float = 0.95
    ) -> dict[str, pd.DataFrame]:
        """``{"pairs": per-pair wins, share, CI, two-sided binomial p; "models": choice share per model}``."""
        self._require_revealed("statistics by model")
        frame = self.results()
        by_model = frame.groupby("model", sort=True).agg(
            offered=("trial", "nunique"), chosen=("chosen", "sum")
        )
        by_model["share"] = by_model["chosen"] / by_model["offered"]
        return {
            "pairs": st.preference_table(frame, ci=ci, confidence=confidence),
            "models": by_model.reset_index(),
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
        """``{"shares": clustered shares per pair, "ranking": Bradley-Terry}``."""
        return {
            "shares": panel.preference_shares(frame, confidence=confidence),
            "ranking": panel.bradley_terry(frame, baseline=baseline, confidence=confidence),
        }

    def summary(self) -> Summary:
        models = self.stats()["models"]
        rows = []
        for m in models.itertuples():
            low, high = st.proportion_ci(int(m.chosen), int(m.offered))
            rows.append(
                {
                    "model": m.model,
                    "chosen": int(m.chosen),
                    "offered": int(m.offered),
                    "share": m.share,
                    "ci_low": low,
                    "ci_high": high,
                }
            )
        frame = pd.DataFrame(rows).sort_values("share", ascending=False, ignore_index=True)
        best = frame.iloc[0]
        clear = len(frame) > 1 and best["ci_low"] > frame.iloc[1:]["ci_high"].max()
        verdict = (
            f"Winner: {best['model']}, chosen in {pct(best['share'])} of the trials it was in "
            f"(95 % interval {pct(best['ci_low'])}-{pct(best['ci_high'])})"
            + ("" if clear else "; its interval overlaps the next one's, so the lead may be chance")
        )
        table = tuple(
            (
                str(r.model),
                f"{r.chosen} of {r.offered}",
                pct(r.share),
                f"{pct(r.ci_low)}-{pct(r.ci_high)}",
            )
            for r in frame.itertuples()
        )
        return Summary(
            verdict, ("model", "chosen", "share", "95 % interval (Wilson)"), table, frame
        )

    def _check_behaviour(self, behaviour: dict[str, Any]) -> dict[str, Any]:
        prefer = behaviour["prefer"]
        if isinstance(prefer, str) and prefer not in self.models:
            raise ListeningError(
                "prefer", f"must be one of the models {list(self.models)}; got {prefer!r}"
            )
        if isinstance(prefer, Mapping) and (not prefer or any(w < 0 for w in prefer.values())):
            raise ListeningError(
                "prefer", "weights must be a non-empty mapping of non-negative numbers"
            )
        return dict(
            behaviour,
            p=probability("p", behaviour["p"]),
            p_tie=probability("p_tie", behaviour["p_tie"]),
        )

    def _scripted(
        self, trial: Trial, plan: Plan, behaviour: Mapping[str, Any], rng: np.random.Generator
    ) -> Any:
        """``prefer``: a model chosen with probability ``p`` when offered (else a uniform pick
        among the others), or model weights (choice probability proportional to weight);
        with ``allow_tie`` "no preference" with probability ``p_tie``."""
        p_tie = behaviour["p_tie"] if self.options["allow_tie"] else 0.0
        return _prefer(trial.labels, plan.models, behaviour["prefer"], behaviour["p"], p_tie, rng)


def _prefer(
    labels: Sequence[str],
    models: Sequence[str],
    prefer: str | Mapping[str, float] | None,
    p: float,
    p_tie: float,
    rng: np.random.Generator,
) -> str | None:
    if p_tie and rng.random() < p_tie:
        return None
    if isinstance(prefer, Mapping):
        w = np.array([float(prefer.get(m, 0.0)) for m in models])
        w = w / w.sum() if w.sum() > 0 else np.full(len(models), 1 / len(models))
        return labels[int(rng.choice(len(models), p=w))]
    if prefer in models and rng.random() < p:
        return labels[models.index(prefer)]
    others = [i for i, m in enumerate(models) if m != prefer]
    return labels[int(rng.choice(others))]


def preference(
    clips: Mapping[str, Any],
    /,
    *,
    design: str = "pairs",
    allow_tie: bool = False,
    sr: int | None = None,
    prompts: Any = None,
    seed: int | None = None,
    repeats: int = 1,
    peak_ceiling_db: float = -1.0,
) -> PreferenceSession:
    """A blind preference session: pairs of models (``design="pairs"``) or all at once (``"all"``).

    ``clips``: model -> one clip per prompt (encoded bytes, ``(array, sr)``, or arrays with
    ``sr=``). ``prompts`` names the prompts; ``seed`` makes the design reproducible (drawn
    and sealed when None); ``repeats`` presents each comparison that many times;
    ``peak_ceiling_db`` bounds matched peaks.
    """
    return PreferenceSession(
        clips,
        design=design,
        allow_tie=allow_tie,
        sr=sr,
        prompts=prompts,
        seed=seed,
        repeats=repeats,
        peak_ceiling_db=peak_ceiling_db,
    )
