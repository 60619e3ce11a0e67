"""The record's SQLite file: where it lives, its tables, opening it whole, and a damaged file
named and set aside (never overwritten) so that a new record can start."""

from __future__ import annotations

import logging
import os
import sqlite3
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Final

import songlab.localfiles as localfiles

__all__ = [
    "RECORD_ENV",
    "default_record_path",
    "diagnose",
    "identity",
    "is_damage",
    "open_connection",
    "set_aside",
]

log = logging.getLogger("songlab.client")

RECORD_ENV: Final = "SONGLAB_RECORD"

_DDL: Final = (
    "CREATE TABLE IF NOT EXISTS creates ("
    "task_id TEXT NOT NULL, key_id TEXT NOT NULL, base_url TEXT, idempotency_key TEXT, "
    "route TEXT, tool_id TEXT, operation TEXT, model TEXT, license INTEGER, "
    "payload_sha256 TEXT, estimate_usd TEXT, project TEXT, tags TEXT, scope TEXT, "
    "take INTEGER, origin TEXT, sent_at TEXT, accepted_at TEXT, finished_at TEXT, "
    "final_status TEXT, finished_via TEXT, payload TEXT, consent_id TEXT, "
    "seq INTEGER PRIMARY KEY AUTOINCREMENT, UNIQUE (task_id, key_id))",
    # a create is found again by what it asks (re-attach), whatever key it was sent with
    "CREATE INDEX IF NOT EXISTS creates_by_request ON creates (key_id, payload_sha256)",
    # uploads sent once: the same bytes (and type) on the same account reuse their file id
    "CREATE TABLE IF NOT EXISTS uploads (key_id TEXT NOT NULL, base_url TEXT, "
    "content_sha256 TEXT NOT NULL, mime_type TEXT, file_id TEXT NOT NULL, size_bytes INTEGER, "
    "uploaded_at TEXT, PRIMARY KEY (key_id, base_url, content_sha256, mime_type))",
)
_DAMAGE_CODES: Final = frozenset({11, 26})  # SQLITE_CORRUPT, SQLITE_NOTADB
_MAGIC: Final = b"SQLite format 3\x00"
_SIDE_FILES: Final = ("-wal", "-shm", "-journal")


def default_record_path() -> Path:
    """``$SONGLAB_RECORD`` if set, else ``user_data_dir("songlab")/record.sqlite``."""
    env = os.environ.get(RECORD_ENV)
    if env:
        return Path(env)
    import platformdirs

    return Path(platformdirs.user_data_dir("songlab")) / "record.sqlite"


def is_damage(exc: sqlite3.Error) -> bool:
    """The error says the file is not a whole database (SQLITE_CORRUPT, SQLITE_NOTADB)."""
    code = getattr(exc, "sqlite_errorcode", None)
    if isinstance(code, int):
        return code & 0xFF in _DAMAGE_CODES
    text = str(exc)
    return "malformed" in text or "not a database" in text


def diagnose(path: Path) -> str | None:
    """What is wrong with the record file at ``path``, or None when it is absent or looks
    whole (its SQLite header read, its size checked against the pages it announces).
    Raises :class:`OSError` when the file cannot be read at all."""
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return None
    if not path.is_file():
        raise IsADirectoryError(f"{path} is not a file")
    if size == 0:
        return "is empty (0 bytes)"
    with open(path, "rb") as fh:
        head = fh.read(100)
    if not head.startswith(_MAGIC[: len(head)]) or len(head) < len(_MAGIC):
        return f"is not an SQLite database (it starts with {head[:16]!r})"
    if len(head) < 100:
        return f"is cut off ({size:,} bytes, shorter than its own header)"
    page = int.from_bytes(head[16:18], "big")
    page = 65536 if page == 1 else page
    if page < 512 or page & (page - 1):
        return f"has a damaged header (page size {page})"
    if size % page:
        return f"is cut off ({size:,} bytes, not a whole number of {page:,}-byte pages)"
    if head[24:28] == head[92:96]:  # the page count in the header is current
        announced = int.from_bytes(head[28:32], "big") * page
        if announced > size:
            return f"is cut off ({size:,} bytes; its header says {announced:,})"
    return None


def identity(path: Path) -> tuple[int, int] | None:
    """(device, inode) of the file at ``path``, or None: which file a connection opened."""
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_dev, st.st_ino


def _free_aside_name(path: Path) -> Path:
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    n = 0
    while True:
        aside = path.with_name(f"{path.name}.damaged-{stamp}" + (f"-{n}" if n else ""))
        if not any(Path(f"{aside}{s}").exists() for s in ("", *_SIDE_FILES)):
            return aside
        n += 1


def set_aside(path: Path, problem: str) -> None:
    """Move the damaged file (and its side files) aside, never over anything, and say so."""
    aside = _free_aside_name(path)
    try:
        os.link(path, aside)  # fails rather than replace anything
    except FileExistsError:
        raise
    except OSError:
        os.rename(path, aside)
    else:
        os.unlink(path)
    for suffix in _SIDE_FILES:
        side = Path(f"{path}{suffix}")
        if side.exists():
            os.rename(side, f"{aside}{suffix}")
    log.warning(
        "songlab: the record %s %s. It is kept as %s (never overwritten) and a new "
        "record is started at %s. Nothing is bought twice: every create is named by what "
        "it asks (its Idempotency-Key comes from the request and uploads from their "
        "bytes), so the service returns a task made before instead of billing it again; "
        "only the record's history (labels, timings) of the creates before is in %s.",
        path,
        problem,
        aside.name,
        path.name,
        aside.name,
    )


def _create_new(path: Path) -> None:
    """A new, empty record, whole: built under a temporary name, then linked into place
    (another process that made one first wins)."""
    localfiles.private_dir(path.parent)
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    localfiles.create_exclusive(tmp, b"")
    try:
        con = sqlite3.connect(tmp, isolation_level=None)
        try:
            con.execute("PRAGMA journal_mode = WAL")
            for ddl in _DDL:
                con.execute(ddl)
        finally:
            con.close()
        try:
            os.link(tmp, path)
        except FileExistsError:
            pass
        except OSError:  # no hard links here: the first to rename wins
            if not path.exists():
                os.replace(tmp, path)
    finally:
        for suffix in ("", *_SIDE_FILES):
            Path(f"{tmp}{suffix}").unlink(missing_ok=True)


def _add_missing_columns(con: sqlite3.Connection) -> None:
    """Columns a record made by an older songlab lacks (added empty: facts it never saw)."""
    have = {r[1] for r in con.execute("PRAGMA table_info(creates)")}
    for name in ("finished_at", "final_status", "finished_via"):
        if name not in have:
            try:
                con.execute(f"ALTER TABLE creates ADD COLUMN {name} TEXT")
            except sqlite3.OperationalError:  # another process added it first
                if name not in {r[1] for r in con.execute("PRAGMA table_info(creates)")}:
                    raise


def _connect(path: Path) -> sqlite3.Connection:
    con = sqlite3.connect(path, timeout=60, check_same_thread=False, isolation_level=None)
    try:
        con.execute("PRAGMA busy_timeout = 60000")
        con.execute("PRAGMA journal_mode = WAL")
        con.execute("PRAGMA synchronous = NORMAL")
        for ddl in _DDL:
            con.execute(ddl)
        _add_missing_columns(con)
    except sqlite3.DatabaseError:
        con.close()
        raise
    return con


def open_connection(path: Path) -> sqlite3.Connection:
    """A connection to the record at ``path``, checked: a damaged file is set aside (named in
    a warning) and a new record made, once; a file found damaged again is an error."""
    for attempt in (1, 2):
        problem = diagnose(path)
        if problem is not None:
            set_aside(path, problem)
        if not path.exists():
            _create_new(path)
        else:
            localfiles.check_private(path, what="the client's record")
        try:
            return _connect(path)
        except sqlite3.DatabaseError as exc:
            if not is_damage(exc) or attempt == 2:
                raise
            set_aside(path, f"is damaged ({exc})")
    raise AssertionError("unreachable")
