"""The export folder's journal and its private files: what is written, whole, and 0600.

A killed export leaves nothing half-written under a final name: each file is written to a
``.songlab-part`` temporary (0600) and renamed into place, and then one committed row of
the journal (SQLite, in the folder) names the asset it holds, its size and SHA-256. The
next run trusts a file only if the journal has it and its size and hash still match.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sqlite3
import threading
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

__all__ = [
    "DIR_MODE",
    "FILE_MODE",
    "JOURNAL",
    "Journal",
    "PART_SUFFIX",
    "make_dirs",
    "sha256_of",
    "write_private",
]

JOURNAL: Final[str] = ".songlab-export.sqlite"
PART_SUFFIX: Final[str] = ".songlab-part"
DIR_MODE: Final = 0o700
FILE_MODE: Final = 0o600


def make_dirs(path: Path, root: Path) -> None:
    """``path`` and its parents up to ``root``, each created 0700."""
    missing = []
    p = path
    while p != root and not p.exists():
        missing.append(p)
        p = p.parent
    for d in reversed(missing):
        with contextlib.suppress(FileExistsError):
            d.mkdir(mode=DIR_MODE)
        os.chmod(d, DIR_MODE)


def write_private(
    target: Path, content: bytes, *, before_rename: Callable[[], None] | None = None
) -> None:
    """``content`` at ``target`` whole or not at all: a 0600 temporary file, then a rename.
    ``before_rename`` runs once the bytes are on disk (the journal's row: a kill between it
    and the rename leaves a row whose file is missing, which the next run fetches again)."""
    tmp = target.with_name(f".{target.name}.{uuid.uuid4().hex[:12]}{PART_SUFFIX}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(content)
            fh.flush()
            os.fsync(fh.fileno())
        if before_rename is not None:
            before_rename()
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def sha256_of(path: Path) -> str | None:
    try:
        h = hashlib.sha256()
        with open(path, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
        return h.hexdigest()
    except OSError:
        return None


class Journal:
    """The folder's record of what is written (SQLite, one committed row per file)."""

    def __init__(self, folder: Path) -> None:
        path = folder / JOURNAL
        if not path.exists():
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT, FILE_MODE))
        self._db = sqlite3.connect(path, timeout=60, check_same_thread=False)
        self._lock = threading.Lock()
        with self._lock, self._db:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS files (file_id TEXT PRIMARY KEY, task_id TEXT, "
                "blob_hash TEXT, path TEXT NOT NULL, sha256 TEXT NOT NULL, size INTEGER NOT NULL, "
                "written_at TEXT NOT NULL)"
            )
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS tasks (task_id TEXT PRIMARY KEY, assets TEXT NOT NULL)"
            )

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def assets(self, task_id: str) -> list[dict[str, Any]] | None:
        with self._lock:
            row = self._db.execute(
                "SELECT assets FROM tasks WHERE task_id = ?", (task_id,)
            ).fetchone()
        return None if row is None else list(json.loads(row[0]))

    def keep_assets(self, task_id: str, assets: list[dict[str, Any]]) -> None:
        with self._lock, self._db:
            self._db.execute(
                "INSERT OR REPLACE INTO tasks (task_id, assets) VALUES (?, ?)",
                (task_id, json.dumps(assets)),
            )

    def files(self) -> dict[str, tuple[str, str, int]]:
        """file_id -> (path, sha256, size)."""
        with self._lock:
            rows = self._db.execute("SELECT file_id, path, sha256, size FROM files").fetchall()
        return {r[0]: (r[1], r[2], int(r[3])) for r in rows}

    def wrote(
        self, file_id: str, task_id: str, blob: str | None, path: str, sha: str, size: int
    ) -> None:
        with self._lock, self._db:
            self._db.execute(
                "INSERT OR REPLACE INTO files (file_id, task_id, blob_hash, path, sha256, size, "
                "written_at) VALUES (?,?,?,?,?,?,?)",
                (file_id, task_id, blob, path, sha, size, datetime.now(UTC).isoformat()),
            )
