"""What a listener answers with, described once for every screen: choices or rating scales.

A protocol says, per trial, which controls answer it (:class:`Controls`): a set of
:class:`Choice` buttons (a preference, an ABX decision, an ACR category), or one slider per
label on a :class:`Scale` with its words (MUSHRA). The rater page's script and the notebook
panel draw any protocol from this description, so neither knows a protocol by name.

The answer a control gives is, for choices, the chosen ``value`` (a string, an int or
None), and for a scale ``{label: int}``; an answer file writes the latter as
``[[label, int], ...]`` sorted by label (:func:`to_file` / :func:`from_file`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd

__all__ = ["Choice", "Controls", "Scale", "Summary", "from_file", "to_file"]


@dataclass(frozen=True)
class Choice:
    """One answer button: the value it gives and the text it shows."""

    value: str | int | None
    text: str


@dataclass(frozen=True)
class Scale:
    """A rating slider from ``low`` to ``high`` with its words along it.

    ``words``: ``(from, to, word)`` bands, lowest first (BS.1534-3: Bad 0-20 ... Excellent
    80-100); a screen shows each word beside the slider, at its band.
    """

    low: int
    high: int
    start: int
    step: int = 1
    words: tuple[tuple[int, int, str], ...] = ()

    def word(self, value: float) -> str:
        """The word of the band ``value`` falls in ("" without words)."""
        for low, high, word in self.words:
            if low <= value <= high:
                return word
        return ""


@dataclass(frozen=True)
class Controls:
    """The controls that answer one trial: ``choices``, or a ``scale`` for each label in ``rate``."""

    question: str
    choices: tuple[Choice, ...] = ()
    scale: Scale | None = None
    rate: tuple[str, ...] = ()
    submit: str = "Answer"

    def __post_init__(self) -> None:
        if bool(self.choices) == (self.scale is not None):
            raise ValueError("controls: either choices or a scale, not both or neither")
        if self.scale is not None and not self.rate:
            raise ValueError("controls: a scale needs the labels it rates")

    def to_json(self) -> dict[str, Any]:
        """The description a rater page embeds (its script draws the controls from it)."""
        doc: dict[str, Any] = {"question": self.question, "submit": self.submit}
        if self.scale is not None:
            s = self.scale
            doc["scale"] = {
                "low": s.low,
                "high": s.high,
                "start": s.start,
                "step": s.step,
                "words": [list(w) for w in s.words],
                "rate": list(self.rate),
            }
        else:
            doc["choices"] = [[c.value, c.text] for c in self.choices]
        return doc


def to_file(controls: Controls, value: Any) -> Any:
    """A session's answer as an answer file writes it (a scale: ``[[label, int], ...]``)."""
    if controls.scale is not None:
        return [[label, int(round(value[label]))] for label in sorted(value)]
    return value


def from_file(controls: Controls, value: Any) -> Any:
    """An answer file's answer as a session takes it; ValueError says what is wrong."""
    if controls.scale is None:
        return value
    if not isinstance(value, list) or not all(
        isinstance(p, list) and len(p) == 2 and isinstance(p[0], str) for p in value
    ):
        raise ValueError("a rating answer must be a list of [label, rating] pairs")
    labels = [p[0] for p in value]
    if len(set(labels)) != len(labels):
        raise ValueError(f"a rating answer rates a label twice: {labels}")
    return {label: rating for label, rating in value}


@dataclass(frozen=True)
class Summary:
    """What a panel shows after reveal: a verdict line (rendered by
    :func:`songlab.listening.verdict.verdict` from ``frame``, ending with its ``rule``), and
    a table (its numbers in ``frame``)."""

    verdict: str
    head: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    frame: pd.DataFrame = field(compare=False)
    rule: str = ""
