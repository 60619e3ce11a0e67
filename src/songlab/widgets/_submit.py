"""Submit once: the gate check, one Idempotency-Key per submission, repeat clicks answered.

Shared by the generation form and the voice-clone panel. A *submission* is the
panel's current values (its fingerprint) and its take. While the client re-attaches
instead of re-buying (``reuse``, on by default) the client derives the key from the
request and the take, so the same submission after a kernel restart re-attaches to
its recorded task; with ``reuse=False`` a key is minted once per submission and
reused on every retry or double click. Either way a submission that already made a
task answers with that task's row instead of creating another.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar

import songlab.widgets._api as _api
from songlab.ledger.labels import attribution, default_project

# The project a panel's creates are labelled with when neither the panel nor its client names
# one (labels stay local: see songlab.ledger.attribution).
DEFAULT_PROJECT = "widgets"

Row = TypeVar("Row")


class SubmitOnce:
    """State and the one ``send`` path; the panel supplies ``gate``, ``sink``,
    ``progress``, ``submit``, ``_refresh()`` and ``_fingerprint()``.

    ``project``: the label of this panel's creates (None: the client's default project,
    else ``"widgets"``); each create is also tagged ``widget:<panel class>``."""

    project: str | None = None

    def _init_submit(self) -> None:
        self._key: str | None = None
        self._key_for: str | None = None  # the submission the key belongs to
        self._submitted: dict[str, str] = {}  # submission fingerprint -> task id
        self._takes: dict[str, int] = {}  # submission fingerprint -> its take (default 1)
        self._busy = threading.Lock()

    def take(self) -> int:
        """The take the current values would be submitted as (1 unless "New take")."""
        return self._takes.get(self._fingerprint(), 1)  # type: ignore[attr-defined]

    def _submit_once(
        self, create: Callable[[str | None], Any], created: Callable[[Any], Row]
    ) -> Row | None:
        """``create(key)`` sends the request (key None: the client derives it);
        ``created(handle)`` tracks it and returns its row."""
        self._refresh()  # type: ignore[attr-defined]
        gate = self.gate  # type: ignore[attr-defined]
        if not gate.valid:
            self.sink.info(f"not sent: {gate.reason}", "warn")  # type: ignore[attr-defined]
            return None
        fingerprint = self._fingerprint()  # type: ignore[attr-defined]
        if fingerprint in self._submitted:  # a repeat click of a sent submission
            sent: Row | None = self.progress.rows.get(self._submitted[fingerprint])  # type: ignore[attr-defined]
            return sent
        if not self._busy.acquire(blocking=False):  # a click while the first is in flight
            return None
        try:
            self.submit.disabled = True  # type: ignore[attr-defined]
            if getattr(self.client, "reuse", False) is not False:  # type: ignore[attr-defined]
                self._key, self._key_for = None, fingerprint  # the client derives it
            elif self._key_for != fingerprint or self._key is None:
                self._key, self._key_for = _api.new_key(), fingerprint
            project = self.project or default_project(self.client) or DEFAULT_PROJECT  # type: ignore[attr-defined]
            with attribution(project=project, tags=[f"widget:{type(self).__name__}"]):
                handle = create(self._key)
        finally:
            self._busy.release()
            self._refresh()  # type: ignore[attr-defined]
        self._submitted[fingerprint] = handle.task_id
        row = created(handle)
        self._refresh()  # type: ignore[attr-defined]
        return row
