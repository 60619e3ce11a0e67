"""The three protocols: preference (A/B or k-way), ABX, MUSHRA-style rating.

Each subclass of :class:`~songlab.listening.session.ListeningSession` says
its options, its trial design, its labels, what an answer is, and how an
answered trial becomes result rows (blinded before reveal, by model after).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

import songlab.listening.stats as st
from songlab.listening._errors import ListeningError
from songlab.listening._match import lowpass_anchor
from songlab.listening._trials import Plan, abx_plans, latin_plans, pair_plans
from songlab.listening.session import KINDS, ListeningSession, Trial

LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWYZ"  # no X: it is ABX's reference
ANCHOR = "anchor (3.5 kHz low-pass)"
MID_ANCHOR = "anchor (7 kHz low-pass)"  # BS.1534-3 sec. 5.1: the mid-range anchor

_DTYPES = {
    "trial": "Int64",
    "prompt": "string",
    "label": "string",
    "model": "string",
    "chosen": "boolean",
    "tie": "boolean",
    "answer": "string",
    "model_a": "string",
    "model_b": "string",
    "x": "string",
    "x_model": "string",
    "correct": "boolean",
    "rating": "Float64",
}


def _frame(
    rows: list[dict[str, Any]], blinded: list[str], revealed: list[str], is_revealed: bool
) -> pd.DataFrame:
    columns = blinded + (revealed if is_revealed else [])
    return pd.DataFrame(rows, columns=columns).astype({c: _DTYPES[c] for c in columns})


def _no_extra(options: dict[str, Any], allowed: set[str]) -> None:
    extra = sorted(set(options) - allowed)
    if extra:
        raise ListeningError(extra[0], "is not an option of this session kind")


class PreferenceSession(ListeningSession):
    """Blind preference: which option do you prefer? Pairs of models (``design="pairs"``)
    or all models at once (``design="all"``); ``allow_tie`` adds "no preference" (answer None)."""

    kind = "preference"

    def _check_options(self, models: list[str], options: dict[str, Any]) -> dict[str, Any]:
        _no_extra(options, {"design", "allow_tie"})
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
        return _frame(rows, ["trial", "prompt", "label", "chosen", "tie"], ["model"], self.revealed)

    def stats(  # type: ignore[override]  # each kind has its own options; the base takes any
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


class ABXSession(ListeningSession):
    """ABX: is X the same as A or as B? Labels A, B, X; answer ``"A"`` or ``"B"``."""

    kind = "abx"

    def _check_options(self, models: list[str], options: dict[str, Any]) -> dict[str, Any]:
        _no_extra(options, set())
        return {}

    def _design(
        self, models: list[str], n_prompts: int, options: dict[str, Any], rng: np.random.Generator
    ) -> list[Plan]:
        return abx_plans(models, n_prompts=n_prompts, repeats=options["repeats"], rng=rng)

    def _labels(self, plan: Plan) -> tuple[str, ...]:
        return ("A", "B", "X")

    def _check_answer(self, trial: Trial, value: Any) -> Any:
        if value not in ("A", "B"):
            raise ListeningError("choice", f"must be 'A' or 'B' (which one X is); got {value!r}")
        return value

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
        return _frame(
            rows,
            ["trial", "prompt", "answer"],
            ["model_a", "model_b", "x", "x_model", "correct"],
            self.revealed,
        )

    def stats(  # type: ignore[override]  # each kind has its own options; the base takes any
        self,
        *,
        ci: str = "wilson",
        correction: str = "log-linear",
        model: str = "differencing",
        confidence: float = 0.95,
    ) -> dict[str, pd.DataFrame]:
        """``{"pairs": per-pair correct rate, CI, one-sided binomial p, d' (ABX and yes-no)}``."""
        self._require_revealed("statistics by model")
        frame = self.results()
        return {
            "pairs": st.abx_table(
                frame, ci=ci, correction=correction, model=model, confidence=confidence
            )
        }


class MushraSession(ListeningSession):
    """MUSHRA-style multi-stimulus rating (ITU-R BS.1534): rate every labelled clip 0-100.

    ``reference=model`` also offers that model's clip openly as ``"Ref"`` (it
    stays among the blinded stimuli: the hidden reference); ``anchor=True``
    adds the reference low-passed at 3.5 kHz as a hidden low anchor, and
    ``mid_anchor=True`` the reference low-passed at 7 kHz (the mid-range anchor).
    """

    kind = "mushra"

    def _check_options(self, models: list[str], options: dict[str, Any]) -> dict[str, Any]:
        _no_extra(options, {"reference", "anchor", "mid_anchor"})
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
        for name, on, cutoff in self._anchors(options):
            if on:
                ref = decoded[options["reference"]]
                out[name] = [(lowpass_anchor(a, sr=r, cutoff=cutoff), r) for a, r in ref]
        return out

    @staticmethod
    def _anchors(options: dict[str, Any]) -> tuple[tuple[str, bool, float], ...]:
        return (
            (ANCHOR, options["anchor"], 3500.0),
            (MID_ANCHOR, options.get("mid_anchor", False), 7000.0),
        )

    def _design(
        self, models: list[str], n_prompts: int, options: dict[str, Any], rng: np.random.Generator
    ) -> list[Plan]:
        conditions = list(models) + [name for name, on, _ in self._anchors(options) if on]
        return latin_plans(conditions, n_prompts=n_prompts, repeats=options["repeats"], rng=rng)

    def _labels(self, plan: Plan) -> tuple[str, ...]:
        return tuple(LETTERS[: len(plan.models)])

    def _playable(self, trial: Trial) -> tuple[str, ...]:
        return trial.labels + (("Ref",) if self.options["reference"] is not None else ())

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
        return _frame(rows, ["trial", "prompt", "label", "rating"], ["model"], self.revealed)

    def stats(  # type: ignore[override]  # each kind has its own options; the base takes any
        self, *, test: str = "paired-t", confidence: float = 0.95
    ) -> dict[str, pd.DataFrame]:
        """``{"models": mean, sd, t interval per model; "pairs": paired tests, Holm-adjusted}``."""
        self._require_revealed("statistics by model")
        frame = self.results()
        return {
            "models": st.mushra_table(frame, confidence=confidence),
            "pairs": st.mushra_pairwise(frame, test=test),
        }


KINDS.update({c.kind: c for c in (PreferenceSession, ABXSession, MushraSession)})


_COMMON = """``clips``: model -> one clip per prompt (encoded bytes, ``(array, sr)``, or arrays
    with ``sr=``). ``prompts`` names the prompts; ``seed`` makes the design
    reproducible (drawn and sealed when None); ``repeats`` presents each
    comparison that many times; ``peak_ceiling_db`` bounds matched peaks."""


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
    """A blind preference session: pairs of models (``design="pairs"``) or all at once (``"all"``)."""
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


def abx(
    clips: Mapping[str, Any],
    /,
    *,
    sr: int | None = None,
    prompts: Any = None,
    seed: int | None = None,
    repeats: int = 1,
    peak_ceiling_db: float = -1.0,
) -> ABXSession:
    """A blind ABX session over every pair of models."""
    return ABXSession(
        clips, sr=sr, prompts=prompts, seed=seed, repeats=repeats, peak_ceiling_db=peak_ceiling_db
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
) -> MushraSession:
    """A blind MUSHRA-style rating session, optionally with an open reference and a low anchor."""
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
    )


for _f in (preference, abx, mushra):
    _f.__doc__ = f"{_f.__doc__}\n\n    {_COMMON}\n    "
