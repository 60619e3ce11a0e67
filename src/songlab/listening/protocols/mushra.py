"""MUSHRA (ITU-R BS.1534-3): rate every clip of a trial 0-100, against an open reference.

Trials: every model (and the anchors) in every trial, positions from Williams squares.
``reference=model`` plays that model's clip openly as ``Ref``, first, and hides it again
among the rated clips (the hidden reference); ``anchor=True`` adds the reference low-passed
at 3.5 kHz, ``mid_anchor=True`` at 7 kHz (BS.1534-3 sec. 5.1). The scale carries the
standard's five words (Bad, Poor, Fair, Good, Excellent) along it. Statistics: per model the
mean with a t interval and paired tests (Holm); across raters, BS.1534-3 sec. 4.1.2
post-screening first, then means with rater-clustered intervals. Rater checks: one clip of
a trial made plainly bad (gold: rated 40 or below, Poor at best) or interrupted by beeps
(trap: rated 10 or below, as the instructions ask for 0).
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
    LETTERS,
    TRIAL_COLUMNS,
    check_condition,
    frame_of,
    no_extra,
    non_negative,
    score_summary,
)
from songlab.listening._match import lowpass_anchor
from songlab.listening._trials import Plan, latin_plans
from songlab.listening.controls import Controls, Scale, Summary
from songlab.listening.session import ListeningSession, Trial

__all__ = ["ANCHOR", "MID_ANCHOR", "MushraSession", "SCALE", "mushra"]

ANCHOR = "anchor (3.5 kHz low-pass)"
MID_ANCHOR = "anchor (7 kHz low-pass)"  # BS.1534-3 sec. 5.1: the mid-range anchor
REFERENCE = "Ref"
#: BS.1534-3's continuous quality scale: 0-100 in five bands, each with its word
SCALE = Scale(
    low=0,
    high=100,
    start=50,
    words=(
        (0, 20, "Bad"),
        (20, 40, "Poor"),
        (40, 60, "Fair"),
        (60, 80, "Good"),
        (80, 100, "Excellent"),
    ),
)


class MushraSession(ListeningSession):
    """MUSHRA-style multi-stimulus rating (ITU-R BS.1534): rate every labelled clip 0-100.

    ``reference=model`` also offers that model's clip openly as ``"Ref"`` (it
    stays among the blinded stimuli: the hidden reference); ``anchor=True`` adds the
    reference low-passed at 3.5 kHz as a hidden low anchor, and
    ``mid_anchor=True`` the reference low-passed at 7 kHz (the mid-range anchor).
    """

    kind = "mushra"
    panel_score = ("models", "mean")  # 0-100
    behaviour = {"scores": None, "noise": 8.0}
    trap_rule = "When a clip is interrupted by beeps, rate it 0."
    #: the most a check clip may be rated and still pass (gold: Poor at best; trap: ~0)
    CHECK_MAX = {"gold": 40.0, "trap": 10.0}

    def _check_options(self, models: list[str], options: dict[str, Any]) -> dict[str, Any]:
        no_extra(options, {"reference", "anchor", "mid_anchor"})
        reference, anchor = options.get("reference"), options.get("anchor", False)
        mid = options.get("mid_anchor", False)
        if not isinstance(mid, bool) or (mid and reference is None):
            raise ListeningError("mid_anchor", "must be a bool, and needs a reference to low-pass")
        if reference is not None and reference not in models:
            raise ListeningError(
                "reference", f"must be one of the models {models} or None; got {reference!r}"
            )
        if not isinstance(anchor, bool) or (anchor and reference is None):
            raise ListeningError("anchor", "must be a bool, and needs a reference to low-pass")
        for name in (ANCHOR, MID_ANCHOR):
            if name in models:
                raise ListeningError("clips", f"{name!r} is a reserved name")
        if len(models) + anchor + mid > len(LETTERS):
            raise ListeningError("clips", f"at most {len(LETTERS)} stimuli in one trial")
        return {"reference": reference, "anchor": anchor, "mid_anchor": mid}

    def _conditions(
        self, decoded: dict[str, list[tuple[np.ndarray, int]]], options: dict[str, Any]
    ) -> dict[str, list[tuple[np.ndarray, int]]]:
        out = dict(decoded)
        for name, on, cutoff in _anchors(options):
            if on:
                ref = decoded[options["reference"]]
                out[name] = [(lowpass_anchor(a, sr=r, cutoff=cutoff), r) for a, r in ref]
        return out

    def _design(
        self, models: list[str], n_prompts: int, options: dict[str, Any], rng: np.random.Generator
    ) -> list[Plan]:
        conditions = list(models) + [name for name, on, _ in _anchors(options) if on]
        return latin_plans(conditions, n_prompts=n_prompts, repeats=options["repeats"], rng=rng)

    def _labels(self, plan: Plan) -> tuple[str, ...]:
        return tuple(LETTERS[: len(plan.models)])

    def _playable(self, trial: Trial) -> tuple[str, ...]:
        """The open reference first (as BS.1534-3's interface shows it), then the rated clips."""
        return ((REFERENCE,) if self.options["reference"] is not None else ()) + trial.labels

    def _model_of_plan(self, trial: Trial, plan: Plan, label: str) -> str:
        if label == REFERENCE:
            reference: str = self.options["reference"]
            return reference
        return plan.models[trial.labels.index(label)]

    def controls(self, trial: int, /) -> Controls:
        t = self._trial(trial)
        against = " against the reference" if self.options["reference"] is not None else ""
        question = f"Rate the quality of each clip{against}, 0-100."
        return Controls(question, scale=SCALE, rate=t.labels, submit="Submit ratings")

    def _check_answer(self, trial: Trial, value: Any) -> Any:
        if not isinstance(value, Mapping) or set(value) != set(trial.labels):
            raise ListeningError(
                "ratings", f"must map every label ({', '.join(trial.labels)}) to a rating"
            )
        out = {}
        for label in trial.labels:
            r = value[label]
            if (
                isinstance(r, bool)
                or not isinstance(r, int | float | np.number)
                or not 0 <= r <= 100
            ):
                raise ListeningError("ratings", f"{label}: must be a number in 0..100; got {r!r}")
            out[label] = float(r)
        return out

    def _check_plan(self, check: str, template: Plan, rng: np.random.Generator) -> Plan:
        at = int(rng.integers(len(template.models)))
        models = list(template.models)
        models[at] = check_condition(check, models[at], beeps=3 if check == "trap" else 0)
        return Plan(template.prompt, tuple(models), check=check, at=at)

    def _passed(self, trial: Trial, plan: Plan, answer: Any) -> bool:
        rating = float(answer[trial.labels[plan.at or 0]])
        return rating <= self.CHECK_MAX[plan.check or "gold"]

    def _expected(self, trial: Trial, plan: Plan) -> str:
        what = "made plainly bad" if plan.check == "gold" else "interrupted by beeps"
        top = self.CHECK_MAX[plan.check or "gold"]
        return f"{trial.labels[plan.at or 0]} rated {top:g} or below ({what})"

    def _right_answer(
        self, trial: Trial, plan: Plan, behaviour: Mapping[str, Any], rng: np.random.Generator
    ) -> Any:
        ratings = self._scripted(trial, plan, behaviour, rng)
        ratings[trial.labels[plan.at or 0]] = 15.0 if plan.check == "gold" else 0.0
        return ratings

    def _rows(self, trial: Trial, plan: Plan, answer: Any, revealed: bool) -> list[dict[str, Any]]:
        return [
            {
                "trial": trial.index,
                "prompt": trial.prompt,
                "label": label,
                "rating": answer[label],
                "model": plan.models[i],
            }
            for i, label in enumerate(trial.labels)
        ]

    def _frame(self, rows: list[dict[str, Any]]) -> pd.DataFrame:
        blinded = TRIAL_COLUMNS | {"label": "string", "rating": "Float64"}
        return frame_of(rows, blinded, {"model": "string"}, self.revealed)

    def _stats(  # type: ignore[override]  # each protocol has its own options
        self, frame: pd.DataFrame, /, *, test: str = "paired-t", confidence: float = 0.95
    ) -> dict[str, pd.DataFrame]:
        """``{"models": mean, sd, t interval per model; "pairs": paired tests, Holm-adjusted}``."""
        return {
            "models": st.mushra_table(frame, confidence=confidence),
            "pairs": st.mushra_pairwise(frame, test=test),
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
        """``{"screening" (with a reference), "models", "pairs"}`` (:func:`panel.mushra_panel`)
        of the raters in ``frame``: the campaign has already left out the raters it excludes
        (the screening among its rules), so none is dropped here."""
        return panel.mushra_panel(
            frame,
            reference=options.get("reference"),
            mid_anchor=MID_ANCHOR if options.get("mid_anchor") else None,
            confidence=confidence,
            exclude=False,
        )

    @classmethod
    def screen(cls, frame: pd.DataFrame, /, *, options: Mapping[str, Any]) -> pd.DataFrame | None:
        """BS.1534-3 sec. 4.1.2 post-screening (with a reference: the hidden reference and, with
        ``mid_anchor``, the mid-range anchor)."""
        if options.get("reference") is None:
            return None
        mid = MID_ANCHOR if options.get("mid_anchor") else None
        return panel.bs1534_screen(frame, reference=options["reference"], mid_anchor=mid)

    def _summary(self, frame: pd.DataFrame) -> Summary:
        models = self._stats(frame)["models"]
        frame = models[["model", "n", "mean", "ci_low", "ci_high"]].sort_values(
            "mean", ascending=False, ignore_index=True
        )
        head = ("model", "ratings", "mean", "95 % interval (t)")
        return score_summary(
            frame, score="mean", digits=1, what="score", head=head, word=SCALE.word
        )

    def _check_behaviour(self, behaviour: dict[str, Any]) -> dict[str, Any]:
        return dict(behaviour, noise=non_negative("noise", behaviour["noise"]))

    def _scripted(
        self, trial: Trial, plan: Plan, behaviour: Mapping[str, Any], rng: np.random.Generator
    ) -> Any:
        """Rating ``scores[model]`` (default 50) plus Gaussian ``noise`` (sd), clipped to 0..100."""
        scores = behaviour["scores"] or {}
        means = [float(scores.get(m, 50.0)) for m in plan.models]
        ratings = np.clip(np.array(means) + rng.normal(0.0, behaviour["noise"], len(means)), 0, 100)
        return {label: round(float(r), 1) for label, r in zip(trial.labels, ratings, strict=True)}


def _anchors(options: Mapping[str, Any]) -> tuple[tuple[str, bool, float], ...]:
    return (
        (ANCHOR, bool(options["anchor"]), 3500.0),
        (MID_ANCHOR, bool(options.get("mid_anchor", False)), 7000.0),
    )


def mushra(
    clips: Mapping[str, Any],
    /,
    *,
    reference: str | None = None,
    anchor: bool = False,
    mid_anchor: bool = False,
    sr: int | None = None,
    prompts: Any = None,
    seed: int | None = None,
    repeats: int = 1,
    peak_ceiling_db: float = -1.0,
    **common: Any,
) -> MushraSession:
    """A blind MUSHRA-style rating session, optionally with an open reference and anchors
    (other options as :func:`preference`'s)."""
    return MushraSession(
        clips,
        reference=reference,
        anchor=anchor,
        mid_anchor=mid_anchor,
        sr=sr,
        prompts=prompts,
        seed=seed,
        repeats=repeats,
        peak_ceiling_db=peak_ceiling_db,
        **common,
    )
