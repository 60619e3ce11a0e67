"""The export folder's journal and its private files: what is written, whole, and 0600.

A killed export leaves nothing half-written under a final name: each file is written to a
temporary (0600, by :mod:`songlab.localfiles`), one committed row of the journal (SQLite,
in the folder, 0600) names the asset it holds, its size and SHA-256, and then it is renamed
into place. The next run trusts a file only if the journal has it and its size and hash
still match; it deletes the temporaries a kill left.
"""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Final

from songlab.localfiles import ensure_private_file, replace_atomically

__all__ = ["JOURNAL", "Journal", "leftovers", "sha256_of", "write_private"]

JOURNAL: Final[str] = ".songlab-export.sqlite"
_LEFTOVER: Final = re.compile(r"\..+\.[0-9a-f]{32}\.tmp")


def write_private(
    target: Path, content: bytes, *, before_rename: Callable[[], None] | None = None
) -> None:
    """``content`` at ``target`` whole or not at all (:func:`songlab.localfiles.replace_atomically`:
    a 0600 temporary file beside it, fsynced, renamed; its folders made 0700).
    ``before_rename`` runs once the bytes are on disk (the journal's row: a kill between it
    and the rename leaves a row whose file is missing, which the next run fetches again)."""

    def fill(tmp: Path) -> None:
        with open(tmp, "wb") as fh:
            fh.write(content)
        if before_rename is not None:
            before_rename()

    replace_atomically(target, fill)


def leftovers(root: Path) -> list[Path]:
    """The temporary files a killed run left (``.NAME.<32 hex>.tmp``, as ``localfiles``
    names them) anywhere under ``root``."""
    return [p for p in root.rglob(".*.tmp") if _LEFTOVER.fullmatch(p.name)]


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
        path = ensure_private_file(folder / JOURNAL, what="the export's journal")
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

    def assets(self, task_id: str) -> list[dict[str, object]] | None:
        with self._lock:
            row = self._db.execute(
                "SELECT assets FROM tasks WHERE task_id = ?", (task_id,)
            ).fetchone()
        return None if row is None else list(json.loads(row[0]))

    def keep_assets(self, task_id: str, assets: list[dict[str, object]]) -> None:
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
