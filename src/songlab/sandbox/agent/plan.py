"""The data of an Agent One plan, and how a planned payload is filled in from earlier results.

A :class:`Plan` is an ordered list of :class:`Turn` s; each turn is one model
call that writes a short prose segment and makes one or more tool calls
(:class:`Call`). A call's payload may point at what an earlier call produced
through :class:`Ref` (a file, all files, or the text of that call) or a
:class:`Text` that joins literal strings and refs; :func:`resolve` fills them in
from the :class:`Result` s at run time. Nothing here does I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Literal

__all__ = ["Call", "Plan", "Ref", "Result", "Text", "Turn", "UnresolvedRef", "resolve"]


class UnresolvedRef(LookupError):
    """A ref points at a call that did not complete or produced nothing of that kind."""


@dataclass(frozen=True, slots=True)
class Ref:
    """What an earlier call (by ``call`` key) produced.

    ``what``: ``"file"`` -> ``"file_id:<id>"`` of the asset named ``name`` (else
    the first asset); ``"files"`` -> a list of every asset as ``"file_id:<id>"``;
    ``"text"`` -> the call's text output, cut to ``limit`` characters if given.
    """

    call: str
    what: Literal["file", "files", "text"]
    name: str | None = None
    limit: int | None = None


@dataclass(frozen=True, slots=True)
class Text:
    """A string assembled at run time from literal parts and refs."""

    parts: tuple[str | Ref, ...]


@dataclass(frozen=True, slots=True)
class Call:
    """One planned sub-tool call.

    ``key`` names it for later refs; ``purpose`` is the line the trace and the
    stream show; ``verify_against`` (pro's verification turn) is the text the
    result is compared with.
    """

    key: str
    operation: str
    model: str
    payload: Mapping[str, Any]
    purpose: str
    verify_against: Ref | None = None

    @property
    def deps(self) -> tuple[str, ...]:
        """Keys of the earlier calls this call's payload reads, in first-use order."""
        found: list[str] = []
        for ref in _refs(self.payload):
            if ref.call not in found:
                found.append(ref.call)
        if self.verify_against is not None and self.verify_against.call not in found:
            found.append(self.verify_against.call)
        return tuple(found)


@dataclass(frozen=True, slots=True)
class Turn:
    """One model call: a prose segment and the tool calls it makes (maybe none)."""

    index: int
    kind: Literal["work", "verification"]
    prose: str
    calls: tuple[Call, ...] = ()


@dataclass(frozen=True, slots=True)
class Plan:
    """A tier's plan for one prompt. ``dropped`` lists what the tier chose not to do."""

    tier: str
    summary: str
    turns: tuple[Turn, ...]
    dropped: tuple[str, ...] = ()

    @property
    def calls(self) -> tuple[Call, ...]:
        return tuple(c for t in self.turns for c in t.calls)


@dataclass(slots=True)
class Result:
    """What one sub-tool call gave back (filled by the runner)."""

    status: str  # "completed" | "failed"
    tool_id: str | None = None
    task_id: str | None = None
    cost_usd: Decimal | None = None
    assets: list[tuple[str, str]] = field(default_factory=list)  # (name, file_id)
    text: str | None = None
    error: str | None = None

    @property
    def file_ids(self) -> list[str]:
        return [fid for _, fid in self.assets]


def _refs(value: Any) -> list[Ref]:
    if isinstance(value, Ref):
        return [value]
    if isinstance(value, Text):
        return [p for p in value.parts if isinstance(p, Ref)]
    if isinstance(value, Mapping):
        return [r for v in value.values() for r in _refs(v)]
    if isinstance(value, (list, tuple)):
        return [r for v in value for r in _refs(v)]
    return []


def _one(ref: Ref, results: Mapping[str, Result]) -> Any:
    res = results.get(ref.call)
    if res is None or res.status != "completed":
        raise UnresolvedRef(f"{ref.call} did not complete")
    if ref.what == "text":
        if res.text is None:
            raise UnresolvedRef(f"{ref.call} produced no text")
        return res.text if ref.limit is None else res.text[: ref.limit]
    if not res.assets:
        raise UnresolvedRef(f"{ref.call} produced no file")
    if ref.what == "files":
        return [f"file_id:{fid}" for _, fid in res.assets]
    for name, fid in res.assets:
        if ref.name is None or name == ref.name:
            return f"file_id:{fid}"
    raise UnresolvedRef(f"{ref.call} produced no {ref.name!r} file")


def resolve(value: Any, results: Mapping[str, Result]) -> Any:
    """``value`` with every :class:`Ref` and :class:`Text` filled in from ``results``."""
    if isinstance(value, Ref):
        return _one(value, results)
    if isinstance(value, Text):
        return "".join(p if isinstance(p, str) else str(_one(p, results)) for p in value.parts)
    if isinstance(value, Mapping):
        return {k: resolve(v, results) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [resolve(v, results) for v in value]
    return value
