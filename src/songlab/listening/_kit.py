"""What the protocol modules share: result frames, option checks, summaries, check clips.

Plain helpers, so that a protocol module holds only what is its own.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pandas as pd

from songlab.listening._errors import ListeningError
from songlab.listening.controls import Summary
from songlab.listening.verdict import Estimate, Measure, verdict

__all__ = [
    "CHECKS",
    "LETTERS",
    "TRIAL_COLUMNS",
    "check_condition",
    "check_source",
    "frame_of",
    "no_extra",
    "non_negative",
    "pct",
    "probability",
    "score_summary",
]

#: the rater checks: a gold clip (a known answer) and a trapping question (P.808)
CHECKS = ("gold", "trap")


def check_condition(check: str, model: str, *, beeps: int = 0) -> str:
    """The name of a check clip made from ``model``'s clip: ``"gold:0:v7"`` (degraded) or
    ``"trap:3:v7"`` (with three beeps). Only the organiser sees it, after reveal."""
    return f"{check}:{beeps}:{model}"


def check_source(condition: str) -> tuple[str, int, str] | None:
    """``(check, beeps, model)`` of a check clip's name, or None for a model or an anchor."""
    check, _, rest = condition.partition(":")
    beeps, _, model = rest.partition(":")
    if check not in CHECKS or not beeps.isdigit() or not model:
        return None
    return check, int(beeps), model


LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWYZ"  # no X: it is ABX's reference
#: the columns every protocol's results share, with their dtypes
TRIAL_COLUMNS = {"trial": "Int64", "prompt": "string"}


def frame_of(
    rows: list[dict[str, Any]],
    blinded: Mapping[str, str],
    revealed: Mapping[str, str],
    is_revealed: bool,
) -> pd.DataFrame:
    """A results frame: the ``blinded`` columns, and the ``revealed`` ones after reveal
    (each mapping column -> dtype, in order)."""
    columns = dict(blinded) | (dict(revealed) if is_revealed else {})
    return pd.DataFrame(rows, columns=list(columns)).astype(columns)


def no_extra(options: Mapping[str, Any], allowed: set[str]) -> None:
    """Refuse an option the protocol does not take, naming it."""
    extra = sorted(set(options) - allowed)
    if extra:
        raise ListeningError(extra[0], "is not an option of this protocol")


def probability(name: str, value: Any) -> float:
    """``value`` checked to be a probability in 0..1."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
        raise ListeningError(name, f"must be a probability in 0..1; got {value!r}")
    return float(value)


def non_negative(name: str, value: Any) -> float:
    """``value`` checked to be a number >= 0."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not value >= 0:
        raise ListeningError(name, f"must be >= 0; got {value!r}")
    return float(value)


def score_summary(
    frame: pd.DataFrame,
    *,
    score: str,
    digits: int,
    what: str,
    head: tuple[str, ...],
    word: Callable[[float], str] | None = None,
) -> Summary:
    """A panel summary of a score per model (``frame``: model, n, ``score``, ci_low, ci_high):
    the verdict over the intervals (:func:`~songlab.listening.verdict.verdict`), and one row
    per model in its order."""
    measure = Measure(what, digits=digits, interval=head[-1])
    found = verdict(
        [
            Estimate(str(r["model"]), r[score], r["ci_low"], r["ci_high"])
            for r in frame.to_dict("records")
        ],
        measure=measure,
    )
    frame = frame.set_index("model").loc[list(found.order)].reset_index()

    def number(x: float) -> str:
        return measure.show(x) + (f" ({word(x)})" if word is not None else "")

    rows = tuple(
        (str(r["model"]), str(r["n"]), number(r[score]), measure.span(r["ci_low"], r["ci_high"]))
        for r in frame.to_dict("records")
    )
    return Summary(found.text, head, rows, frame, rule=found.rule)


def pct(x: float) -> str:
    """A share as a whole percentage (``-`` when undefined)."""
    return "-" if pd.isna(x) else f"{100 * x:.0f} %"
