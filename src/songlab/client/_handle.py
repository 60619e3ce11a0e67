"""Task handles: the typed answer of every create, and a way back to a task by id.

A handle is a frozen value (``task_id``, ``status`` at creation, ``consent_id``
for voice clones, the ``idempotency_key`` the create was sent with, the raw
body) bound to the client that made it. Its methods delegate to that client, so
on an :class:`AsyncClient` they return awaitables / async iterators.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["TaskHandle"]


@dataclass(frozen=True, slots=True)
class TaskHandle:
    task_id: str
    status: str | None  # at creation ("queued"); None for client.task(id)
    consent_id: str | None
    idempotency_key: str | None
    raw: dict[str, Any] = field(repr=False, compare=False)
    _client: Any = field(repr=False, compare=False)

    @classmethod
    def from_created(cls, body: dict[str, Any], key: str | None, client: Any) -> TaskHandle:
        return cls(body["task_id"], body.get("status"), body.get("consent_id"), key, body, client)

    def get(self) -> Any:
        """The current snapshot (:class:`Task`)."""
        return self._client.generations.get(self.task_id)

    def stream(self, *, after: int = 0) -> Any:
        """The task's events, resumed transparently, each once and in order."""
        return self._client.generations.stream(self.task_id, after=after)

    def wait(self, **options: Any) -> Any:
        """Block (or await) until the task ends; see ``generations.wait``."""
        return self._client.generations.wait(self.task_id, **options)
