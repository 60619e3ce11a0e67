"""Task handles: the typed answer of every create, and a way back to a task by id.

A handle is a frozen value (``task_id``, ``status`` at creation, ``consent_id``
for voice clones, the ``idempotency_key`` the create was sent with, the raw
body) bound to the client that made it. Its methods delegate to that client, so
on an :class:`AsyncClient` they return awaitables / async iterators.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, overload

from songlab.client._models import Event, Task
from songlab.client._typing import Awaiting, C

if TYPE_CHECKING:
    from songlab.client._async import AsyncClient
    from songlab.client._sync import Client

__all__ = ["TaskHandle"]


@dataclass(frozen=True, slots=True)
class TaskHandle(Generic[C]):
    task_id: str
    status: str | None  # at creation ("queued"); None for client.task(id)
    consent_id: str | None
    idempotency_key: str | None
    raw: dict[str, Any] = field(repr=False, compare=False)
    _client: C = field(repr=False, compare=False)

    @classmethod
    def from_created(cls, body: dict[str, Any], key: str | None, client: C) -> TaskHandle[C]:
        return TaskHandle(
            body["task_id"], body.get("status"), body.get("consent_id"), key, body, client
        )

    @overload
    def get(self: TaskHandle[Client]) -> Task: ...
    @overload
    def get(self: TaskHandle[AsyncClient]) -> Awaiting[Task]: ...
    def get(self) -> Any:
        """The current snapshot (:class:`Task`)."""
        return self._c.generations.get(self.task_id)

    @overload
    def stream(self: TaskHandle[Client], *, after: int = 0) -> Iterator[Event]: ...
    @overload
    def stream(self: TaskHandle[AsyncClient], *, after: int = 0) -> AsyncIterator[Event]: ...
    def stream(self, *, after: int = 0) -> Any:
        """The task's events, resumed transparently, each once and in order."""
        return self._c.generations.stream(self.task_id, after=after)

    @overload
    def wait(
        self: TaskHandle[Client],
        *,
        timeout: float = ...,
        on_event: Callable[[Event], Any] | None = ...,
        raise_on_failure: bool = ...,
        poll_interval: float = ...,
        use_stream: bool = ...,
    ) -> Task: ...
    @overload
    def wait(
        self: TaskHandle[AsyncClient],
        *,
        timeout: float = ...,
        on_event: Callable[[Event], Any] | None = ...,
        raise_on_failure: bool = ...,
        poll_interval: float = ...,
        use_stream: bool = ...,
    ) -> Awaiting[Task]: ...
    def wait(self, **options: Any) -> Any:
        """Block (or await) until the task ends; see ``generations.wait``."""
        return self._c.generations.wait(self.task_id, **options)

    @property
    def _c(self) -> Any:  # the client, untyped: the overloads above say what it returns
        return self._client
