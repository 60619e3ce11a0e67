"""Task handles: the typed answer of every create, and a way back to a task by id.

A handle is a frozen value (``task_id``, ``status`` at creation, ``consent_id`` for voice
clones, the ``idempotency_key`` the create was sent with, whether it was ``reused`` from the
record, the raw body) bound to the client that made it. Its methods are the client's, so on
an :class:`AsyncClient` they return awaitables / async iterators.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from songlab.client._call import Op, Wait
from songlab.client._models import Event, Task
from songlab.client._typing import C, OnClient, iterates, operation

__all__ = ["TaskHandle"]


@dataclass(frozen=True, slots=True)
class TaskHandle(OnClient[C]):
    task_id: str
    status: str | None  # at creation ("queued"); None for client.task(id)
    consent_id: str | None
    idempotency_key: str | None
    raw: dict[str, Any] = field(repr=False, compare=False)  # the create's answer (JSON)
    _client: C = field(repr=False, compare=False)
    reused: bool = False  # re-attached from the record: no POST was sent, nothing billed

    @classmethod
    def created(cls, body: dict[str, Any], key: str | None, client: C) -> TaskHandle[C]:
        """The handle of a create's answer (``body``: its JSON, ``task_id`` checked)."""
        status, consent = body.get("status"), body.get("consent_id")
        return TaskHandle(
            body["task_id"],
            status if isinstance(status, str) else None,
            consent if isinstance(consent, str) else None,
            key,
            body,
            client,
            body.get("reused") is True,
        )

    @operation
    def get(self) -> Op[Task]:
        """The current snapshot (:class:`Task`)."""
        return self._c.generations._get_op(self.task_id)

    @iterates
    def stream(self, *, after: int = 0) -> Iterator[Event] | AsyncIterator[Event]:
        """The task's events, resumed transparently, each once and in order."""
        return self._c._events(self.task_id, after)

    @operation
    def wait(
        self,
        *,
        timeout: float = 600.0,
        on_event: Callable[[Event], object] | None = None,
        raise_on_failure: bool = True,
        poll_interval: float = 0.5,
        use_stream: bool = True,
    ) -> Op[Task]:
        """Block (or await) until the task ends; see ``generations.wait``."""
        return wait_op(self.task_id, timeout, on_event, raise_on_failure, poll_interval, use_stream)


def wait_op(
    task_id: str,
    timeout: object,
    on_event: Callable[[Event], object] | None,
    raise_on_failure: bool,
    poll_interval: object,
    use_stream: bool,
) -> Op[Task]:
    """Follow the task to its end (a :class:`Wait` the client performs), arguments checked."""
    from songlab.client._call import path_id
    from songlab.client._validate import ValidationError

    path_id(task_id, "task_id")
    if not (isinstance(timeout, int | float) and not isinstance(timeout, bool) and timeout > 0):
        raise ValidationError("timeout", "a positive number of seconds")
    if not (
        isinstance(poll_interval, int | float)
        and not isinstance(poll_interval, bool)
        and poll_interval > 0
    ):
        raise ValidationError("poll_interval", "a positive number of seconds")
    return _waited(
        Wait(task_id, float(timeout), on_event, raise_on_failure, float(poll_interval), use_stream)
    )


def _waited(step: Wait) -> Op[Task]:
    task: Task = yield step
    return task
