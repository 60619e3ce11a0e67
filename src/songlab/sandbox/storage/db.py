"""SQLite persistence of the sandbox: one connection, its schema and transactions.

No HTTP here. Everything the sandbox keeps (accounts, keys, tasks, events,
files, ledger, idempotency records, rate-limit hits, voices, consents) lives in
one SQLite database, the URL-signing secret excepted (``files.Signer``): a file
(0600, its folder 0700 when made here; WAL, ``synchronous=FULL``, so a SIGKILL loses
nothing committed) or ``:memory:``. One connection is shared by the event loop
and the worker threads under a re-entrant lock; :meth:`Store.tx` is an
``IMMEDIATE`` transaction that nests, with callbacks run after the outermost
commit (used to wake stream readers).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import songlab.localfiles as localfiles

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS accounts (
    id TEXT PRIMARY KEY, name TEXT, created_at REAL NOT NULL, base_expires_at REAL NOT NULL,
    base_units INTEGER NOT NULL, extra_units INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS api_keys (
    key_hash TEXT PRIMARY KEY, account_id TEXT NOT NULL, created_at REAL NOT NULL,
    revoked_at REAL);
CREATE TABLE IF NOT EXISTS tasks (
    rowid INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT UNIQUE NOT NULL, account_id TEXT NOT NULL,
    tool_id TEXT, operation TEXT NOT NULL, model TEXT NOT NULL, license INTEGER NOT NULL,
    kind TEXT NOT NULL, ledger_kind TEXT NOT NULL, status TEXT NOT NULL,
    payload TEXT NOT NULL, inputs TEXT NOT NULL, parent_task_id TEXT,
    price_units INTEGER NOT NULL, reserved_base INTEGER NOT NULL DEFAULT 0,
    reserved_extra INTEGER NOT NULL DEFAULT 0, cost_units INTEGER,
    progress REAL, output_text TEXT, output_metadata TEXT, output_assets TEXT, failure TEXT,
    next_seq INTEGER NOT NULL DEFAULT 1, fail_fault INTEGER NOT NULL DEFAULT 0,
    created_at REAL NOT NULL, updated_at REAL NOT NULL);
CREATE INDEX IF NOT EXISTS tasks_account ON tasks (account_id, rowid);
CREATE INDEX IF NOT EXISTS tasks_status ON tasks (status);
CREATE TABLE IF NOT EXISTS events (
    task_id TEXT NOT NULL, seq INTEGER NOT NULL, kind TEXT NOT NULL, data TEXT NOT NULL,
    at REAL NOT NULL, PRIMARY KEY (task_id, seq));
CREATE TABLE IF NOT EXISTS files (
    id TEXT PRIMARY KEY, account_id TEXT NOT NULL, origin TEXT NOT NULL, task_id TEXT,
    name TEXT, mime_type TEXT NOT NULL, size_bytes INTEGER NOT NULL, sha256 TEXT NOT NULL,
    data BLOB NOT NULL, recipe TEXT, fingerprint TEXT, duration_s REAL,
    created_at REAL NOT NULL, probe TEXT);
CREATE INDEX IF NOT EXISTS files_sha ON files (sha256);
CREATE INDEX IF NOT EXISTS files_origin ON files (origin);
CREATE TABLE IF NOT EXISTS ledger (
    id INTEGER PRIMARY KEY AUTOINCREMENT, account_id TEXT NOT NULL, task_id TEXT NOT NULL,
    parent_task_id TEXT, tool_id TEXT, operation TEXT NOT NULL, model TEXT NOT NULL,
    license INTEGER NOT NULL, kind TEXT NOT NULL, amount_units INTEGER NOT NULL,
    created_at REAL NOT NULL);
CREATE INDEX IF NOT EXISTS ledger_account ON ledger (account_id, id);
CREATE TABLE IF NOT EXISTS idempotency (
    account_id TEXT NOT NULL, key TEXT NOT NULL, status_code INTEGER NOT NULL,
    body TEXT NOT NULL, created_at REAL NOT NULL, PRIMARY KEY (account_id, key));
CREATE TABLE IF NOT EXISTS rate_hits (account_id TEXT NOT NULL, bucket TEXT NOT NULL, at REAL NOT NULL);
CREATE INDEX IF NOT EXISTS rate_hits_idx ON rate_hits (account_id, bucket, at);
CREATE TABLE IF NOT EXISTS consents (
    id TEXT PRIMARY KEY, account_id TEXT NOT NULL, reference_file_id TEXT NOT NULL,
    rights_attestation TEXT NOT NULL, active INTEGER NOT NULL DEFAULT 1, created_at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS voices (
    id TEXT PRIMARY KEY, account_id TEXT NOT NULL, consent_id TEXT NOT NULL, task_id TEXT,
    name TEXT, description TEXT, version TEXT, timbre TEXT NOT NULL, created_at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS transcripts (
    account_id TEXT NOT NULL, sha256 TEXT NOT NULL, text TEXT NOT NULL, metadata TEXT NOT NULL,
    PRIMARY KEY (account_id, sha256));
CREATE TABLE IF NOT EXISTS tool_overrides (
    tool_id TEXT PRIMARY KEY, active INTEGER NOT NULL, priced_licenses TEXT NOT NULL);
"""


class DamagedDatabase(RuntimeError):
    """The database file is not a usable SQLite database (named, left untouched)."""


class Store:
    """One SQLite connection shared by all threads under a re-entrant lock."""

    def __init__(self, path: str) -> None:
        self.path = path
        if path != ":memory:":
            # 0600 in a 0700 folder when made here (its -wal and -shm files follow the
            # database's mode); an existing file open to other users is warned about
            localfiles.ensure_private_file(Path(path).expanduser(), what="the sandbox database")
        self._conn = sqlite3.connect(
            path, check_same_thread=False, isolation_level=None, timeout=30.0
        )
        self._conn.row_factory = sqlite3.Row
        self.lock = threading.RLock()
        self._depth = 0
        self._after: list[Callable[[], None]] = []
        try:
            if path != ":memory:":
                self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=FULL")
            self._conn.executescript(SCHEMA)
            self._migrate()
        except sqlite3.DatabaseError as exc:
            self._conn.close()
            raise DamagedDatabase(
                f"the sandbox database {path} cannot be used ({exc}); it is left as it is: "
                "move it aside to keep it, or start with another --db (or --db :memory:)"
            ) from None

    def _migrate(self) -> None:
        """Columns added since a database was made (its data is kept)."""
        cols = {r[1] for r in self._conn.execute("PRAGMA table_info(files)")}
        if "probe" not in cols:  # the cached verdict of the audio probe (storage.probe_of)
            self._conn.execute("ALTER TABLE files ADD COLUMN probe TEXT")

    def close(self) -> None:
        with self.lock:
            self._conn.close()

    @contextmanager
    def tx(self) -> Iterator[Store]:
        """An IMMEDIATE transaction; nested calls join the outer one."""
        with self.lock:
            if self._depth:
                self._depth += 1
                try:
                    yield self
                finally:
                    self._depth -= 1
                return
            self._conn.execute("BEGIN IMMEDIATE")
            self._depth = 1
            try:
                yield self
            except BaseException:
                self._depth = 0
                self._after.clear()
                self._conn.execute("ROLLBACK")
                raise
            self._depth = 0
            self._conn.execute("COMMIT")
            callbacks, self._after = self._after, []
        for cb in callbacks:
            cb()

    def after_commit(self, callback: Callable[[], None]) -> None:
        """Run ``callback`` once the current transaction commits (at once outside one)."""
        with self.lock:
            if self._depth:
                self._after.append(callback)
                return
        callback()

    def execute(self, sql: str, args: Sequence[Any] = ()) -> sqlite3.Cursor:
        with self.lock:
            return self._conn.execute(sql, args)

    def one(self, sql: str, args: Sequence[Any] = ()) -> sqlite3.Row | None:
        with self.lock:
            row: sqlite3.Row | None = self._conn.execute(sql, args).fetchone()
            return row

    def value(self, sql: str, args: Sequence[Any] = ()) -> Any:
        """The first column of a query that always returns a row (``COUNT``, ``SUM``...)."""
        row = self.one(sql, args)
        if row is None:
            raise LookupError(sql)
        return row[0]

    def all(self, sql: str, args: Sequence[Any] = ()) -> list[sqlite3.Row]:
        with self.lock:
            rows: list[sqlite3.Row] = self._conn.execute(sql, args).fetchall()
            return rows

    def get_meta(self, key: str) -> str | None:
        row = self.one("SELECT value FROM meta WHERE key = ?", (key,))
        return None if row is None else row[0]

    def erase_meta(self, key: str) -> None:
        """Delete a meta row, its bytes overwritten in the file (``secure_delete``), and
        checkpoint the WAL so no copy stays in the log."""
        with self.lock:
            self._conn.execute("PRAGMA secure_delete=ON")
            try:
                self._conn.execute("DELETE FROM meta WHERE key = ?", (key,))
            finally:
                self._conn.execute("PRAGMA secure_delete=OFF")
            if self.path != ":memory:":
                self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def set_meta(self, key: str, value: str) -> None:
        self.execute(
            "INSERT INTO meta (key, value) VALUES (?, ?) "
            "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (key, value),
        )
