"""Blind preference: which clip do you prefer? Pairs of models, or all models at once.

Trials: one per pair of models per prompt per repeat (``design="pairs"``, balanced by
:func:`~songlab.listening._trials.pair_plans`), or every model in every trial
(``design="all"``, Williams squares). Answer: a label; None ("no preference", with
``allow_tie``); or ``"bad"`` ("both are bad", as Music Arena offers it; ``both_bad=False``
takes it away). Statistics: per pair the exact binomial test with a Wilson interval (one
listener); across raters, rater-clustered shares and a Bradley-Terry ranking. Rater checks:
a gold trial pits a clip against one made plainly bad (choosing the bad one fails); a
trapping question has a clip interrupted by beeps, which the rater must choose.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

import songlab.listening.panel as panel
import songlab.listening.stats as st
from songlab.listening._errors import ListeningError
from songlab.listening._kit import (
    LETTERS,
    TRIAL_COLUMNS,
    check_condition,
    frame_of,
    no_extra,
    probability,
)
from songlab.listening._trials import Plan, latin_plans, pair_plans
from songlab.listening.controls import Choice, Controls, Summary
from songlab.listening.session import ListeningSession, Trial
from songlab.listening.verdict import Estimate, Measure, verdict

__all__ = ["BOTH_BAD", "PreferenceSession", "preference"]

BOTH_BAD = "bad"  # the answer "both are bad" (not a label: labels are single letters)
#: the panel summary's measure: each model's share of the trials it was in (Wilson interval)
SHARE = Measure("choice share", digits=0, scale=100, suffix=" %", interval="95 % interval (Wilson)")


class PreferenceSession(ListeningSession):
    """Blind preference: which option do you prefer? Pairs of models (``design="pairs"``)
    or all models at once (``design="all"``); ``allow_tie`` adds "no preference" (answer None)."""

    kind = "preference"
    panel_score = ("ranking", "score")  # Bradley-Terry, 0-100
    behaviour = {"prefer": None, "p": 0.8, "p_tie": 0.0, "p_bad": 0.0}
    trap_rule = "When a clip is interrupted by beeps, choose that clip."

    def _check_options(self, models: list[str], options: dict[str, Any]) -> dict[str, Any]:
        no_extra(options, {"design", "allow_tie", "both_bad"})
        design = options.get("design", "pairs")
        if design not in ("pairs", "all"):
            raise ListeningError("design", f"must be 'pairs' or 'all'; got {design!r}")
        if design == "all" and len(models) > len(LETTERS):
            raise ListeningError("clips", f"at most {len(LETTERS)} models in one trial")
        allow_tie = options.get("allow_tie", False)
        if not isinstance(allow_tie, bool):
            raise ListeningError("allow_tie", f"must be a bool; got {allow_tie!r}")
        both_bad = options.get("both_bad", True)
        if not isinstance(both_bad, bool):
            raise ListeningError("both_bad", f"must be a bool; got {both_bad!r}")
        return {"design": design, "allow_tie": allow_tie, "both_bad": both_bad}

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
        if self.options["both_bad"]:
            choices.append(
                Choice(BOTH_BAD, "Both are bad" if len(t.labels) == 2 else "All are bad")
            )
        return Controls("Which one do you prefer?", choices=tuple(choices))

    def _check_answer(self, trial: Trial, value: Any) -> Any:
        if value is None and self.options["allow_tie"]:
            return None
        if value == BOTH_BAD and self.options["both_bad"]:
            return BOTH_BAD
        if not isinstance(value, str) or value not in trial.labels:
            allowed = ", ".join(trial.labels)
            allowed += " or None (no preference)" if self.options["allow_tie"] else ""
            allowed += f" or {BOTH_BAD!r} (both are bad)" if self.options["both_bad"] else ""
            raise ListeningError("choice", f"must be one of {allowed}; got {value!r}")
        return value

    def _check_plan(self, check: str, template: Plan, rng: np.random.Generator) -> Plan:
        at = int(rng.integers(len(template.models)))
        models = list(template.models)
        models[at] = check_condition(check, models[at], beeps=3 if check == "trap" else 0)
        return Plan(template.prompt, tuple(models), check=check, at=at)

    def _passed(self, trial: Trial, plan: Plan, answer: Any) -> bool:
        label = trial.labels[plan.at or 0]
        if plan.check == "trap":
            return bool(answer == label)
        return answer in trial.labels and answer != label

    def _expected(self, trial: Trial, plan: Plan) -> str:
        label = trial.labels[plan.at or 0]
        if plan.check == "trap":
            return f"{label} (interrupted by beeps)"
        return f"any clip but {label} (made plainly bad)"

    def _right_answer(
        self, trial: Trial, plan: Plan, behaviour: Mapping[str, Any], rng: np.random.Generator
    ) -> Any:
        at = plan.at or 0
        if plan.check == "trap":
            return trial.labels[at]
        return trial.labels[int(rng.choice([i for i in range(len(trial.labels)) if i != at]))]

    def _rows(self, trial: Trial, plan: Plan, answer: Any, revealed: bool) -> list[dict[str, Any]]:
        return [
            {
                "trial": trial.index,
                "prompt": trial.prompt,
                "label": label,
                "chosen": label == answer,
                "tie": answer is None,
                "both_bad": answer == BOTH_BAD,
                "model": plan.models[i],
            }
            for i, label in enumerate(trial.labels)
        ]

    def _frame(self, rows: list[dict[str, Any]]) -> pd.DataFrame:
        blinded = TRIAL_COLUMNS | {
            "label": "string",
            "chosen": "boolean",
            "tie": "boolean",
            "both_bad": "boolean",
        }
        return frame_of(rows, blinded, {"model": "string"}, self.revealed)

    def _stats(  # type: ignore[override]  # each protocol has its own options
        self, frame: pd.DataFrame, /, *, ci: str = "wilson", confidence: float = 0.95
    ) -> dict[str, pd.DataFrame]:
        """``{"pairs": per-pair wins, share, CI, two-sided binomial p; "models": choice share
        per model}``."""
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

    def _summary(self, frame: pd.DataFrame) -> Summary:
        models = self._stats(frame)["models"]
        estimates, counts = [], {}
        for m in models.to_dict("records"):
            chosen, offered = int(m["chosen"]), int(m["offered"])
            low, high = st.proportion_ci(chosen, offered)
            estimates.append(Estimate(str(m["model"]), float(m["share"]), low, high))
            counts[str(m["model"])] = (chosen, offered)
        found = verdict(estimates, measure=SHARE)
        by_name = {e.name: e for e in estimates}
        ordered = [by_name[name] for name in found.order]
        table = pd.DataFrame(
            [
                {
                    "model": e.name,
                    "chosen": counts[e.name][0],
                    "offered": counts[e.name][1],
                    "share": e.value,
                    "ci_low": e.low,
                    "ci_high": e.high,
                }
                for e in ordered
            ],
            columns=["model", "chosen", "offered", "share", "ci_low", "ci_high"],
        )
        bad = int(frame.groupby("trial")["both_bad"].any().sum())
        said = found.text + (f" {bad} trial(s) were answered 'both are bad'." if bad else "")
        shown = tuple(
            (
                e.name,
                f"{counts[e.name][0]} of {counts[e.name][1]}",
                SHARE.show(e.value),
                SHARE.span(e.low, e.high),
            )
            for e in ordered
        )
        head = ("model", "chosen", "share", SHARE.interval)
        return Summary(said, head, shown, table, rule=found.rule)

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
        with ``allow_tie`` "no preference" with probability ``p_tie``; "both are bad" with
        probability ``p_bad``."""
        if self.options["both_bad"] and behaviour["p_bad"] and rng.random() < behaviour["p_bad"]:
            return BOTH_BAD
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
    both_bad: bool = True,
    sr: int | None = None,
    prompts: Any = None,
    seed: int | None = None,
    repeats: int = 1,
    peak_ceiling_db: float = -1.0,
    **common: Any,
) -> PreferenceSession:
    """A blind preference session: pairs of models (``design="pairs"``) or all at once (``"all"``).

    ``clips``: model -> one clip per prompt (encoded bytes, ``(array, sr)``, or arrays with
    ``sr=``). ``prompts`` names the prompts; ``seed`` makes the design reproducible (drawn
    and sealed when None); ``repeats`` presents each comparison that many times;
    ``peak_ceiling_db`` bounds matched peaks. Every session also takes ``seconds`` (the
    common length, default the shortest clip's), ``min_heard`` (seconds of each clip to hear
    before answering, default 5, or the whole clip), and ``gold`` / ``traps`` (rater checks
    placed at random among the trials, default none).
    """
    return PreferenceSession(
        clips,
        design=design,
        allow_tie=allow_tie,
        both_bad=both_bad,
        sr=sr,
        prompts=prompts,
        seed=seed,
        repeats=repeats,
        peak_ceiling_db=peak_ceiling_db,
        **common,
    )
