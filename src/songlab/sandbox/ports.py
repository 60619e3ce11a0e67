"""The small interfaces the sandbox's parts are handed: one ``typing.Protocol`` per service role.

:func:`songlab.sandbox.assembly.build` makes the concrete parts and hands each
one only the roles it calls, typed by these Protocols (never the whole
assembled sandbox). The concrete classes satisfy them structurally:

* :class:`Now` - :class:`~songlab.sandbox.storage.clock.Clock`
* :class:`EventSink` - :class:`~songlab.sandbox.tasks.events.EventLog`
* :class:`Links` - :class:`~songlab.sandbox.storage.file_store.Links`
* :class:`Authenticator` - :class:`~songlab.sandbox.storage.accounts.Accounts`
* :class:`FaultGate` - :class:`~songlab.sandbox.tasks.faults.Faults`
* :class:`Scheduler` - :class:`~songlab.sandbox.tasks.worker.Worker`
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from songlab.sandbox.tasks.faults import FaultSettings


class Now(Protocol):
    """The sandbox clock, read-only."""

    def now(self) -> float: ...


class EventSink(Protocol):
    """Appends a task's events (and wakes its stream readers after the commit)."""

    def emit(
        self, task_id: str, kind: str, data: dict[str, Any], *, persist: bool = True
    ) -> int: ...


class Links(Protocol):
    """The sandbox's own address: signed file URLs, and which URLs are its own."""

    @property
    def base_url(self) -> str: ...

    def netlocs(self) -> set[str]: ...

    def signed_url(self, file_id: str) -> tuple[str, str]: ...

    def verify(self, token: str) -> str: ...


class Authenticator(Protocol):
    """The account of an ``Authorization`` header, or the spec's 401 bodies."""

    def authenticate(self, header: str | None) -> str: ...


class FaultGate(Protocol):
    """The injected faults, as the create path, the worker and the HTTP layer read them."""

    @property
    def settings(self) -> FaultSettings: ...

    def check_create(self) -> None: ...

    def fail_task(self) -> bool: ...


class Scheduler(Protocol):
    """Queues an inserted task for the worker."""

    def submit(self, task_id: str) -> None: ...
