"""The vocabulary of the sans-I/O operations: what an operation yields (:class:`Call`,
:class:`Work`, :class:`Wait`), the "not given" sentinel, and the two helpers every request
uses.

An operation (``Op[T]``) is a generator: it yields steps and receives each one's answer,
then returns a ``T``. A sender performs the steps: ``Client._drive`` in place,
``AsyncClient._drive`` awaited (``Work`` in a thread). The answer of a :class:`Call` is the
decoded JSON body (arbitrary JSON, hence the ``Any`` send type) or the bytes; of a
:class:`Work` what its function returns; of a :class:`Wait` or a :class:`Watch` the final
:class:`~songlab.client._models.Task`; a :class:`Batch` answers nothing (its state holds
the outcome). The last three are what each client does its own way (blocking, or awaited).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Literal, TypeAlias, TypeVar
from urllib.parse import quote

from songlab.client._exceptions import ValidationError
from songlab.client._retry import CallKind

if TYPE_CHECKING:
    from songlab.client._batch import BatchOptions, BatchState
    from songlab.client._loop import WatchLoop, WatchUpdate
    from songlab.client._models import Event

__all__ = [
    "Batch",
    "Call",
    "NOT_GIVEN",
    "NotGiven",
    "Op",
    "Step",
    "Wait",
    "Watch",
    "Work",
    "new_idempotency_key",
    "path_id",
]

_T = TypeVar("_T")


class NotGiven:
    """Sentinel for "use the default", distinct from None (which may mean "send null")."""

    _instance: NotGiven | None = None

    def __new__(cls) -> NotGiven:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __bool__(self) -> bool:
        return False

    def __repr__(self) -> str:
        return "NOT_GIVEN"


NOT_GIVEN: Final = NotGiven()


@dataclass(frozen=True, slots=True)
class Call:
    """One HTTP exchange an operation asks for."""

    method: str
    path: str  # relative to base_url, or an absolute signed URL (auth=False)
    params: dict[str, str | int] | None = None
    json: object = None
    files: dict[str, tuple[str, bytes, str]] | None = None
    idempotency_key: str | None = None
    auth: bool = True
    expect: str = "json"  # "json" or "bytes"
    # error codes handed straight to the operation instead of retried (a batch paces itself
    # on RateLimited rather than retrying each create)
    final_codes: frozenset[str] = frozenset()

    @property
    def kind(self) -> CallKind:
        """GETs are reads; a POST with an Idempotency-Key is a create; any other POST
        (an upload, keyed or not) is repeated only where it provably never reached the
        server."""
        if self.method == "GET":
            return CallKind.READ
        if self.files is not None:  # an upload, even when it carries a key of its bytes
            return CallKind.UPLOAD
        return CallKind.CREATE if self.idempotency_key is not None else CallKind.UPLOAD


@dataclass(frozen=True, slots=True)
class Work:
    """Blocking local work an operation asks for (file reads and writes, decoding, the
    record): the sync client runs it in place, the async client in a thread, off its
    event loop."""

    fn: Callable[..., object]
    args: tuple[object, ...] = ()


@dataclass(frozen=True, slots=True)
class Wait:
    """Follow a task to its end (the stream, then polling; ``generations.wait``): each
    client does it its own way (blocking or awaited) and answers the final task."""

    task_id: str
    timeout: float
    on_event: Callable[[Event], object] | None
    raise_on_failure: bool
    poll_interval: float
    use_stream: bool


@dataclass(frozen=True, slots=True)
class Watch:
    """``client.watch``: follow a task with its :class:`WatchLoop`, telling ``callback``
    each update; the client answers the final task."""

    loop: WatchLoop
    callback: Callable[[WatchUpdate], object] | None


@dataclass(frozen=True, slots=True)
class Batch:
    """``client.batch``: run the batch ``state`` to its end (threads on a ``Client``,
    asyncio tasks on an ``AsyncClient``), telling ``report(phase, done)`` as it goes."""

    state: BatchState
    options: BatchOptions
    report: Callable[[Literal["creating", "finishing", "done"], int], None]


Step: TypeAlias = Call | Work | Wait | Watch | Batch
Op: TypeAlias = Generator[Step, Any, _T]


def new_idempotency_key() -> str:
    """A fresh key in the spec's alphabet (A-Z a-z 0-9 _ . : -), 44 characters."""
    return f"songlab:{uuid.uuid4()}"


def path_id(value: object, field: str) -> str:
    """``value`` checked as an id and quoted for a path segment."""
    if not isinstance(value, str) or not value:
        raise ValidationError(field, "a non-empty string id")
    return quote(value, safe="")
