"""Typed answers of the service: frozen dataclasses and the one parse function of each.

Every object keeps the dict it was parsed from as ``.raw`` (so fields the spec
leaves open stay reachable). ``output.metadata_json`` stays as its raw text and
is also parsed once into ``output.metadata``; :attr:`Task.vocal_id` and
:attr:`Task.trace` read from it. An asset's storage ``url`` is deliberately not
an attribute (the spec: never use it); mint a link with ``client.files.link``.

The get path parses one dict into one dataclass with no validation library:
it is the hot path measured by ``benchmarks/client_overhead.py``.

Only what the spec shows is required (a task's ``task_id`` and ``status``, an
event's kind and seq, a tool's ``id``/``model``/``operation`` ...). Every other
attribute is read through the names of :mod:`songlab.client.field_names` and is
``None`` when the service does not send it; unknown fields are ignored (kept in
``raw``).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Any, NamedTuple, ParamSpec, TypeVar

import msgspec

import songlab.client.field_names as field_names
from songlab.client._exceptions import MalformedResponse
from songlab.spec import EventKind, Status

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "AgentRun",
    "AgentStep",
    "AgentTrace",
    "AgentUsage",
    "Asset",
    "AudioArray",
    "Balance",
    "Event",
    "Failure",
    "FileLink",
    "Page",
    "Task",
    "TaskOutput",
    "Tool",
    "UploadedFile",
    "VoiceClone",
]


_R = TypeVar("_R")
_P = ParamSpec("_P")


def _parser(what: str) -> Callable[[Callable[_P, _R]], Callable[_P, _R]]:
    """A parse function whose failures (a field missing or of the wrong type) raise
    :class:`MalformedResponse` naming ``what``, never a bare KeyError/TypeError."""

    def decorate(fn: Callable[_P, _R]) -> Callable[_P, _R]:
        @functools.wraps(fn)
        def parse(*args: _P.args, **kwargs: _P.kwargs) -> _R:
            try:
                return fn(*args, **kwargs)
            except (KeyError, TypeError, ValueError, AttributeError, ArithmeticError) as exc:
                raise MalformedResponse(f"unreadable {what}: {type(exc).__name__}: {exc}") from None

        return parse

    return decorate


def _dt(value: Any) -> datetime | None:
    if not value:
        return None
    return datetime.fromisoformat(value.replace("Z", "+00:00") if value.endswith("Z") else value)


def _dec(value: Any) -> Decimal | None:
    return None if value is None else Decimal(str(value))


@dataclass(frozen=True, slots=True)
class Asset:
    """One output file: keep ``file_id``; its storage url stays only in ``raw``."""

    file_id: str
    blob_hash: str | None
    raw: dict[str, Any] = field(repr=False, compare=False)

    @property
    def name(self) -> str | None:
        """What the file is (mix, vocals, ...), if the service says (not in the spec)."""
        value = field_names.first(self.raw, field_names.ASSET_NAME)
        return None if value is None else str(value)

    @property
    def mime_type(self) -> str | None:
        """The media type, if the asset says (not in the spec; a file link shows it)."""
        value = field_names.first(self.raw, field_names.ASSET_MIME_TYPE)
        return None if value is None else str(value)


@dataclass(frozen=True, slots=True)
class Failure:
    error: str
    message: str | None


@dataclass(frozen=True, slots=True)
class TaskOutput:
    text: str | None
    metadata_json: str | None
    metadata: Any  # metadata_json parsed (dict), or None
    assets: tuple[Asset, ...]

    @property
    def file_ids(self) -> tuple[str, ...]:
        return tuple(a.file_id for a in self.assets)


_EMPTY_OUTPUT = TaskOutput(None, None, None, ())


@dataclass(frozen=True, slots=True)
class Task:
    """A task snapshot (``GET /v1/generations/{id}``)."""

    task_id: str
    status: str
    tool_id: str | None
    model: str | None
    operation: str | None
    license: int | None
    created_at: datetime | None
    updated_at: datetime | None
    cost_usd: Decimal | None
    progress: float | None
    failure: Failure | None
    output: TaskOutput
    raw: dict[str, Any] = field(repr=False, compare=False)

    @property
    def done(self) -> bool:
        return self.status in (Status.COMPLETED, Status.FAILED)

    @property
    def vocal_id(self) -> str | None:
        """The saved voice of a completed voice-clone task (from ``metadata_json``)."""
        meta = self.output.metadata
        return meta.get("vocal_id") if isinstance(meta, dict) else None

    @property
    def trace(self) -> AgentTrace | None:
        """Agent One's parsed step trace (from ``metadata_json``), else None."""
        meta = self.output.metadata
        if isinstance(meta, dict) and "steps" in meta:
            return parse_trace(meta)
        return None

    @property
    def file_ids(self) -> tuple[str, ...]:
        return self.output.file_ids


def parse_output(d: dict[str, Any] | None) -> TaskOutput:
    if not d:
        return _EMPTY_OUTPUT
    text = d.get("metadata_json")
    meta: Any = None
    if isinstance(text, str) and text:
        try:
            meta = json.loads(text)
        except ValueError:
            meta = None
    assets = tuple(Asset(a["file_id"], a.get("blob_hash"), a) for a in (d.get("assets") or ()))
    return TaskOutput(d.get("text"), text, meta, assets)


def _failure(f: Any) -> Failure | None:
    if not isinstance(f, dict):
        return None
    code = field_names.first(f, field_names.FAILURE_CODE)
    message = field_names.first(f, field_names.FAILURE_MESSAGE)
    return Failure("" if code is None else str(code), None if message is None else str(message))


def _license(value: Any) -> int | None:
    """A guessed field: an integer tier, else unknown (never a reason to refuse the task)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or value != int(value):
        return None
    return int(value)


def _guessed(read: Callable[[Any], _R], value: Any) -> _R | None:
    """A field the spec does not show, read by ``read``; unreadable means unknown (None)."""
    try:
        return read(value)
    except (TypeError, ValueError, AttributeError, ArithmeticError):
        return None


def _fraction(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


@_parser("task snapshot")
def parse_task(d: dict[str, Any]) -> Task:
    """A snapshot: ``task_id`` and ``status`` are required (the spec shows them), every
    other fact is read through :mod:`songlab.client.field_names` or left ``None``."""
    first = field_names.first
    return Task(
        d["task_id"],
        d["status"],
        first(d, field_names.TASK_TOOL_ID),
        first(d, field_names.TASK_MODEL),
        first(d, field_names.TASK_OPERATION),
        _license(first(d, field_names.TASK_LICENSE)),
        _guessed(_dt, first(d, field_names.TASK_CREATED_AT)),
        _guessed(_dt, first(d, field_names.TASK_UPDATED_AT)),
        _guessed(_dec, first(d, field_names.TASK_COST_USD)),
        _fraction(first(d, field_names.TASK_PROGRESS)),
        _failure(first(d, field_names.TASK_FAILURE)),
        parse_output(d.get("output")),
        d,
    )


@dataclass(frozen=True, slots=True)
class Page:
    """One page of ``GET /v1/generations``."""

    data: tuple[Task, ...]
    next_cursor: str | None


@_parser("task page")
def parse_page(d: dict[str, Any]) -> Page:
    """A listing page; its envelope's names are guesses (:mod:`songlab.client.field_names`)."""
    items = field_names.first(d, field_names.LISTING_ITEMS) or ()
    return Page(
        tuple(parse_task(t) for t in items), field_names.first(d, field_names.LISTING_NEXT_CURSOR)
    )


@dataclass(frozen=True, slots=True)
class RawPage:
    """One page of ``GET /v1/generations`` as the service sent it: the body's bytes
    (``{"data": [task, ...], "next_cursor": ...}``, for a reader that decodes the tasks
    itself, e.g. into Arrow) and the cursor of the next page."""

    content: bytes = field(repr=False)
    next_cursor: str | None

    def __repr__(self) -> str:
        return f"RawPage(<{len(self.content)} bytes>, next_cursor={self.next_cursor!r})"


_PAGE_SHAPE = msgspec.json.Decoder(dict[str, msgspec.Raw])  # the tasks stay undecoded
_CURSOR = msgspec.json.Decoder(str | None)


def parse_raw_page(content: bytes) -> RawPage:
    """The page's bytes and its next cursor, read without decoding the tasks (the
    envelope's names: :mod:`songlab.client.field_names`)."""
    try:
        shape = _PAGE_SHAPE.decode(content)
        if field_names.first(shape, field_names.LISTING_ITEMS) is None:
            raise MalformedResponse(
                f"unreadable task page: no {' or '.join(field_names.LISTING_ITEMS)}"
            )
        raw_cursor = field_names.first(shape, field_names.LISTING_NEXT_CURSOR)
        cursor = None if raw_cursor is None else _CURSOR.decode(raw_cursor)
    except msgspec.DecodeError as exc:
        raise MalformedResponse(f"unreadable task page: {exc}") from None
    return RawPage(content, cursor)


@dataclass(frozen=True, slots=True)
class Event:
    """One server-sent event of a task stream."""

    seq: int
    kind: str
    task_id: str | None
    status: str | None
    progress: float | None
    step: str | None
    phase: str | None
    message: str | None
    cursor: int | None
    raw: dict[str, Any] = field(repr=False, compare=False)

    @property
    def is_terminal(self) -> bool:
        return self.kind == EventKind.TERMINAL

    @property
    def ends_task(self) -> bool:
        """The task is over: the ``terminal`` event, or any event showing a final status."""
        return self.kind == EventKind.TERMINAL or self.status in (Status.COMPLETED, Status.FAILED)

    @property
    def final_status(self) -> str | None:
        """``completed`` or ``failed`` when the event shows it, else None."""
        return self.status if self.status in (Status.COMPLETED, Status.FAILED) else None

    @property
    def is_resume_signal(self) -> bool:
        """``timeout``/``error``: the server closes; the client resumes after it."""
        return self.kind in (EventKind.TIMEOUT, EventKind.ERROR)


def _int_or_none(value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise ValueError(f"not an integer: {value!r}")
    return int(value)


def parse_event(
    data: str, *, sse_id: str | None = None, sse_event: str | None = None, path: str = ""
) -> Event:
    """One SSE frame -> :class:`Event`; :class:`MalformedResponse` if its ``data`` is not a
    JSON object, its ``seq``/``id``/``cursor`` is not an integer, or ``id`` and ``seq``
    disagree (design.md: ``id: <seq>``)."""
    try:
        d = json.loads(data) if data else {}
        if not isinstance(d, dict):
            raise ValueError("data is not a JSON object")
        seq = _int_or_none(field_names.first(d, field_names.EVENT_SEQ))
        frame_id = _int_or_none(sse_id.strip()) if sse_id and sse_id.strip() else None
        if seq is None:
            seq = frame_id
        elif frame_id is not None and frame_id != seq:
            raise ValueError(f"id {frame_id} and data seq {seq} disagree")
        cursor = _int_or_none(field_names.first(d, field_names.EVENT_CURSOR))
        kind = field_names.first(d, field_names.EVENT_KIND) or sse_event or "message"
        if not isinstance(kind, str):
            raise ValueError(f"kind is not a string: {kind!r}")
    except ValueError as exc:
        raise MalformedResponse(
            f"unreadable stream frame (id {sse_id!r}): {exc}", method="GET", path=path
        ) from None
    first = field_names.first
    return Event(
        seq or 0,
        kind,
        first(d, field_names.EVENT_TASK_ID),
        first(d, field_names.EVENT_STATUS),
        _fraction(first(d, field_names.EVENT_PROGRESS)),
        first(d, field_names.EVENT_STEP),
        first(d, field_names.EVENT_PHASE),
        first(d, field_names.EVENT_MESSAGE),
        cursor,
        d,
    )


@dataclass(frozen=True, slots=True)
class Tool:
    """A tool of ``GET /v1/tools``: ``id``, ``model``, ``operation`` (what the spec shows)."""

    id: str
    model: str
    operation: str
    name: str | None
    raw: dict[str, Any] = field(repr=False, compare=False)

    @property
    def is_agent(self) -> bool:
        """An Agent One tier (operation ``agent``; its ``model`` is the tier)."""
        return self.operation == "agent"


def parse_tool(d: dict[str, Any]) -> Tool:
    return Tool(d["id"], d["model"], d["operation"], field_names.first(d, field_names.TOOL_NAME), d)


@_parser("tool listing")
def parse_tools(d: dict[str, Any] | list[Any]) -> tuple[Tool, ...]:
    items = d if isinstance(d, list) else field_names.first(d, field_names.TOOLS_ITEMS)
    if items is None:
        raise KeyError(" or ".join(field_names.TOOLS_ITEMS))
    return tuple(parse_tool(t) for t in items)


@dataclass(frozen=True, slots=True)
class FileLink:
    """A signed, short-lived link (``/v1/files/{id}/url`` or ``/download``). Never cache it."""

    file_id: str
    url: str = field(repr=False)  # signed: a bearer of its own
    mime_type: str | None
    expires_at: datetime | None
    raw: dict[str, Any] = field(repr=False, compare=False)


@_parser("file link")
def parse_link(d: dict[str, Any]) -> FileLink:
    return FileLink(d["file_id"], d["url"], d.get("mime_type"), _dt(d.get("expires_at")), d)


@dataclass(frozen=True, slots=True)
class UploadedFile:
    file_id: str
    mime_type: str | None
    size_bytes: int | None
    sha256: str | None
    raw: dict[str, Any] = field(repr=False, compare=False)


@_parser("upload answer")
def parse_upload(
    d: dict[str, Any], *, mime_type: str | None = None, size_bytes: int | None = None
) -> UploadedFile:
    """The answer of ``POST /v1/files`` (only ``file_id`` is shown); ``mime_type`` and
    ``size_bytes`` are what the client sent, used where the answer does not say."""
    first = field_names.first
    mime = first(d, field_names.UPLOAD_MIME_TYPE)
    size = _guessed(int, first(d, field_names.UPLOAD_SIZE_BYTES))
    return UploadedFile(
        d["file_id"],
        mime_type if mime is None else str(mime),
        size_bytes if size is None else size,
        first(d, field_names.UPLOAD_SHA256),
        d,
    )


@dataclass(frozen=True, slots=True)
class Balance:
    total_effective: int
    base_effective: int
    extra_tokens: int
    base_expires_at: datetime | None
    raw: dict[str, Any] = field(repr=False, compare=False)

    @property
    def total_usd(self) -> Decimal:
        return Decimal(self.total_effective) * Decimal("0.01")


@_parser("balance")
def parse_balance(d: dict[str, Any]) -> Balance:
    return Balance(
        int(d["total_effective"]),
        int(d["base_effective"]),
        int(d.get("extra_tokens", 0)),
        _dt(d.get("base_expires_at")),
        d,
    )


@dataclass(frozen=True, slots=True)
class AgentStep:
    index: int
    kind: str  # tool_call | prose | verification
    tool: str | None
    tool_id: str | None
    status: str | None
    cost_usd: Decimal | None
    task_id: str | None
    file_ids: tuple[str, ...]
    text: str | None


@dataclass(frozen=True, slots=True)
class AgentUsage:
    input_tokens: int
    output_tokens: int


@dataclass(frozen=True, slots=True)
class AgentTrace:
    """Agent One's ``metadata_json`` (design.md's trace shape)."""

    steps: tuple[AgentStep, ...]
    usage: AgentUsage
    agent_fee_usd: Decimal | None
    total_cost_usd: Decimal | None
    stopped_by: str | None  # None, "budget" or "max_steps"
    raw: dict[str, Any] = field(repr=False, compare=False)

    @property
    def tool_calls(self) -> tuple[AgentStep, ...]:
        return tuple(s for s in self.steps if s.kind == "tool_call")

    @property
    def file_ids(self) -> tuple[str, ...]:
        return tuple(f for s in self.steps for f in s.file_ids)


def parse_trace(d: dict[str, Any]) -> AgentTrace:
    steps = tuple(
        AgentStep(
            int(s.get("index", i)),
            s.get("kind", ""),
            s.get("tool"),
            s.get("tool_id"),
            s.get("status"),
            _dec(s.get("cost_usd")),
            s.get("task_id"),
            tuple(s.get("file_ids") or ()),
            s.get("text"),
        )
        for i, s in enumerate(d.get("steps") or ())
    )
    u = d.get("usage") or {}
    return AgentTrace(
        steps,
        AgentUsage(int(u.get("input_tokens", 0)), int(u.get("output_tokens", 0))),
        _dec(d.get("agent_fee_usd")),
        _dec(d.get("total_cost_usd")),
        d.get("stopped_by"),
        d,
    )


@dataclass(frozen=True, slots=True)
class AgentRun:
    """A finished Agent One run: the final answer, the trace and the task."""

    task_id: str
    status: str
    text: str | None
    trace: AgentTrace | None
    task: Task = field(repr=False)

    @property
    def stopped_by(self) -> str | None:
        return self.trace.stopped_by if self.trace else None


@dataclass(frozen=True, slots=True)
class VoiceClone:
    """A finished voice clone: the ``vocal_id`` to pass to song/singing generation."""

    vocal_id: str | None
    consent_id: str | None
    task_id: str
    task: Task = field(repr=False)


class AudioArray(NamedTuple):
    """Decoded audio: ``samples`` float32 of shape (channels, frames); rate in Hz."""

    samples: np.ndarray
    sample_rate: int
