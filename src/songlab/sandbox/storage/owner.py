"""One sandbox per database file: who serves it, at which address, and taking over.

Two sandboxes on one SQLite file would each run its worker over the same tasks: each
recovers the other's tasks in flight at its start and runs them a second time. So a
sandbox that keeps its state in a file holds an exclusive lock on ``<db>.lock`` for as
long as it serves (``fcntl.flock``: the operating system drops it when the process ends,
however it ends, so a killed kernel never leaves a stale lock), and publishes where it
answers in ``<db>.serving.json`` (``0600``, beside the database: the address, the admin
token, the process id, the speed; once it stops, only the address it had, which the next
sandbox on the file takes again when it can, so the client's record, keyed by the address,
finds what was made before a kernel restart). Another process that finds the file locked reads that
address and uses the running sandbox instead of opening a second one; a process can also
wait for the lock (:func:`wait`) and take over the file when its server stops.

``:memory:`` databases are nobody's to share and are never locked. On Windows (no
``flock``) the lock is not taken: one sandbox per file is then the user's to keep.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import songlab.localfiles as localfiles

if sys.platform == "win32":  # no flock: one sandbox per file is the user's to keep

    def _lock(fd: int, *, block: bool) -> bool:
        return True

else:
    import fcntl

    def _lock(fd: int, *, block: bool) -> bool:
        """``flock`` the file: True once held, False when another holds it (not blocking)."""
        try:
            fcntl.flock(fd, fcntl.LOCK_EX if block else fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True


__all__ = ["Claim", "SandboxInUse", "address_file", "claim", "serving", "wait"]


def _lock_file(db: str) -> Path:
    return Path(db).expanduser().with_name(Path(db).name + ".lock")


def address_file(db: str) -> Path:
    """Where the sandbox serving ``db`` says it answers: ``<db>.serving.json``."""
    return Path(db).expanduser().with_name(Path(db).name + ".serving.json")


class SandboxInUse(RuntimeError):
    """Another process serves this database file; ``serving`` is what it published (or
    None while it starts)."""

    def __init__(self, db: str, serving: dict[str, Any] | None) -> None:
        self.db = db
        self.serving = serving
        where = (
            f"process {serving.get('pid')} serves it at {serving.get('base_url')}"
            if serving
            else "another process holds it (starting, or not answering)"
        )
        super().__init__(
            f"the sandbox database {db} is in use: {where}; use that sandbox, or start "
            "this one with another --db (or --db :memory:)"
        )


@dataclass(eq=False)
class Claim:
    """The lock on one database file, held until :meth:`release` or the process ends."""

    db: str
    fd: int | None
    base_url: str | None = None

    def publish(self, **address: Any) -> None:
        """Write where this sandbox answers (``base_url``, ``admin_token``, ...; the process
        id is added), for the processes that find the file locked."""
        self.base_url = address.get("base_url")
        body = {"pid": os.getpid(), "db": self.db, **address}
        localfiles.write_atomic(address_file(self.db), json.dumps(body, sort_keys=True))

    def release(self) -> None:
        """Say that nothing serves the file now (the address it had is kept, with no process
        and no token: the next sandbox on the file takes the same port when it can, so the
        client's record, keyed by the address, still finds what was made) and drop the lock
        (a waiting process takes over)."""
        if self.fd is None:
            return
        try:
            if self.base_url:
                stopped = {"pid": None, "db": self.db, "base_url": self.base_url}
                localfiles.write_atomic(address_file(self.db), json.dumps(stopped, sort_keys=True))
        finally:
            fd, self.fd = self.fd, None
            os.close(fd)  # closing the descriptor drops the flock


def _open_lock(db: str) -> int:
    path = _lock_file(db)
    localfiles.ensure_private_file(path, what="the sandbox's lock file")
    return os.open(path, os.O_RDWR)


def claim(db: str) -> Claim:
    """The lock on ``db`` now, or :class:`SandboxInUse` (with what its holder published)."""
    fd = _open_lock(db)
    if not _lock(fd, block=False):
        os.close(fd)
        raise SandboxInUse(db, serving(db))
    return Claim(db, fd)


def wait(db: str) -> Claim:
    """The lock on ``db``, waiting (in this thread) for its holder to release it or end."""
    fd = _open_lock(db)
    _lock(fd, block=True)
    return Claim(db, fd)


def serving(db: str) -> dict[str, Any] | None:
    """What the sandbox serving ``db`` published (None: nothing, or unreadable; ``pid``
    None: the address of the last sandbox, stopped)."""
    try:
        found = json.loads(address_file(db).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return found if isinstance(found, dict) else None
