"""The vocabulary of the sans-I/O operations: what an operation yields (:class:`Call`,
:class:`Work`), the "not given" sentinel, and the two helpers every request uses."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import quote

from songlab.client._retry import CallKind
from songlab.client._validate import require

__all__ = ["Call", "NOT_GIVEN", "NotGiven", "Op", "Step", "Work", "new_idempotency_key", "path_id"]


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
    params: dict[str, Any] | None = None
    json: Any = None
    files: Any = None
    idempotency_key: str | None = None
    auth: bool = True
    expect: str = "json"  # "json" or "bytes"
    # error codes handed straight to the operation instead of retried (a batch paces itself
    # on RateLimited rather than retrying each create)
    final_codes: frozenset[str] = frozenset()

    @property
    def kind(self) -> CallKind:
        """GETs are reads; a POST with an Idempotency-Key is a create; any other POST
        (an upload) is repeated only where it provably never reached the server."""
        if self.method == "GET":
            return CallKind.READ
        return CallKind.CREATE if self.idempotency_key is not None else CallKind.UPLOAD


@dataclass(frozen=True, slots=True)
class Work:
    """Blocking local work an operation asks for (file reads and writes, decoding): the
    sync client runs it in place, the async client in a thread, off its event loop."""

    fn: Callable[..., Any]
    args: tuple[Any, ...] = ()


Step = Call | Work
Op = Generator[Step, Any, Any]


def new_idempotency_key() -> str:
    """A fresh key in the spec's alphabet (A-Z a-z 0-9 _ . : -), 44 characters."""
    return f"songlab:{uuid.uuid4()}"


def path_id(value: Any, field: str) -> str:
    require(isinstance(value, str) and bool(value), field, "a non-empty string id")
    return quote(value, safe="")
