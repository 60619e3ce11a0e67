"""The client's record of what it asked: one local SQLite file, one row per accepted create.

The rows are :class:`~songlab.client._create_record.CreateRecord` s; the file itself (opened
checked, a damaged one set aside) is ``_record_file``'s; this module reads and writes it.

Every client writes every create the service accepted (``Client(record=...)``,
default :class:`RecordStore` ``()``): task id, Idempotency-Key, route, tool,
operation, model, license, the SHA-256 of the canonical request, the list-price
estimate, labels, reuse scope and take, the notebook or script that asked, and
the client's clock at send and at acceptance. Nothing secret (the key is named
by its non-secret ``key_id``) and no payload text unless ``keep_payloads=True``.

Where: ``RecordStore(path=None)``: ``$SONGLAB_RECORD`` if set, else
``platformdirs.user_data_dir("songlab")/record.sqlite``. WAL mode, a busy
timeout and one transaction per write make it safe for several processes and
kernels at once; a row is committed before the create returns, so a killed
kernel loses nothing it was told. The ledger reads it (``table()``,
:data:`RECORD_SCHEMA`); the client reads it to re-attach instead of re-buying
(:meth:`RecordStore.find_request`).
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import songlab.client._create_record as create_record
import songlab.client._record_file as record_file
from songlab.client._create_record import CreateRecord

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["RecordStore", "shared_store"]

log = logging.getLogger("songlab.client")
_T = TypeVar("_T")


class RecordStore:
    """The record (one SQLite file). ``path=None``: ``$SONGLAB_RECORD``, else
    ``user_data_dir("songlab")/record.sqlite``.

    ``keep_payloads=True`` also keeps each request's canonical text (off by default:
    prompts and lyrics may be confidential); read it back with :meth:`payload`.

    **Never silently lost.** The file is made ``0600`` in a ``0700`` folder, whole (built
    under a temporary name, then linked into place); an existing one open to other users
    is warned about. Opening it checks it: an emptied, cut-off or garbage file, or one
    SQLite finds malformed at any later read or write, is *named* in a warning (its path,
    what is wrong, what songlab does), moved aside as ``<name>.damaged-<UTC time>`` (with
    its ``-wal``/``-shm``; never overwritten) and a new record is started. A record that
    cannot be opened at all (permissions, a full disk, a folder in the way) is named the
    same way and the client carries on without it. Either way nothing is bought twice:
    creates are named by what they ask (their Idempotency-Key is derived from the request,
    uploads by their bytes), so the service returns a task made before instead of billing
    it again (docs/reliability.md, "what survives a lost record"). No
    ``sqlite3.DatabaseError`` reaches the caller.
    """

    def __init__(
        self, path: str | os.PathLike[str] | None = None, *, keep_payloads: bool = False
    ) -> None:
        self.path = Path(path) if path is not None else record_file.default_record_path()
        self.keep_payloads = keep_payloads
        self._lock = threading.Lock()
        self._con: sqlite3.Connection | None = None
        self._pid = 0
        self._ino: tuple[int, int] | None = None
        self._said: set[str] = set()

    def __repr__(self) -> str:
        return f"RecordStore({str(self.path)!r})"

    # -- the connection: opened checked, a damaged file set aside (``_record_file``) ----------

    # one connection per process, used under a lock (a fork opens its own)
    def _connection(self) -> sqlite3.Connection:
        if self._con is None or self._pid != os.getpid():
            self._con, self._pid = record_file.open_connection(self.path), os.getpid()
            self._ino = record_file.identity(self.path)
        return self._con

    def _drop_connection(self) -> None:
        if self._con is not None and self._pid == os.getpid():
            try:
                self._con.close()
            except sqlite3.Error:
                pass
        self._con = None

    def _run(self, work: Callable[[sqlite3.Connection], _T], default: _T) -> _T:
        """``work(connection)`` under the lock. A file found damaged (now or at a later
        read or write) is set aside and the work done again on a new record; a record that
        cannot be used at all is named once and ``default`` is the answer."""
        with self._lock:
            for attempt in (1, 2):
                try:
                    return work(self._connection())
                except sqlite3.DatabaseError as exc:
                    if not record_file.is_damage(exc) or attempt == 2:
                        self._unusable(exc)
                        return default
                    mine = self._ino
                    self._drop_connection()
                    if mine is not None and record_file.identity(self.path) == mine:
                        record_file.set_aside(self.path, f"is damaged ({exc})")
                    # else another process set it aside already: open the new one
                except (sqlite3.Error, OSError) as exc:
                    self._drop_connection()
                    self._unusable(exc)
                    return default
            return default

    def _unusable(self, exc: BaseException) -> None:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        if why in self._said:
            return
        self._said.add(why)
        log.warning(
            "songlab: could not read the record %s (%s). Continuing without it: creates are "
            "still named by what they ask, so the service deduplicates a repeat (nothing is "
            "bought twice), but nothing is written down until the record can be opened "
            "again (check the file and its folder, or pass record=PATH or record=False).",
            self.path,
            why,
        )

    def close(self) -> None:
        with self._lock:
            self._drop_connection()

    # -- rows ---------------------------------------------------------------------------

    def write(
        self, row: CreateRecord, *, payload: str | None = None, consent_id: str | None = None
    ) -> bool:
        """Commit one accepted create; False if (task_id, key_id) was already recorded
        (an idempotent repeat adds no row) or the record cannot be written (said once)."""
        values = (
            *create_record.sqlite_values(row),
            payload if self.keep_payloads else None,
            consent_id,
        )
        cols = (*create_record.COLUMNS, "payload", "consent_id")

        def work(con: sqlite3.Connection) -> bool:
            con.execute("BEGIN IMMEDIATE")
            try:
                cur = con.execute(
                    f"INSERT OR IGNORE INTO creates ({', '.join(cols)}) "
                    f"VALUES ({', '.join('?' * len(cols))})",
                    values,
                )
                con.execute("COMMIT")
            except BaseException:
                _rollback(con)
                raise
            return cur.rowcount == 1

        return self._run(work, False)

    def _one(self, sql: str, args: tuple[object, ...]) -> tuple[object, ...] | None:
        def work(con: sqlite3.Connection) -> tuple[object, ...] | None:
            row: tuple[object, ...] | None = con.execute(sql, args).fetchone()
            return row

        return self._run(work, None)

    def _change(self, sql: str, args: tuple[object, ...]) -> int:
        return self._run(lambda con: con.execute(sql, args).rowcount, 0)

    def finish(
        self, *, task_id: str, key_id: str, at: datetime, status: str | None, via: str
    ) -> bool:
        """Note that the client saw the task end at ``at`` (its own clock), with ``status``
        (None when what it saw did not say, e.g. a terminal event without a status), and
        how (``via``). The first sighting keeps its time; a status not known then is
        filled in by the next sighting that shows it. True while a fact was still missing
        (the row exists and was changed); False when the row is absent or already full."""
        changed = self._change(
            "UPDATE creates SET finished_at = COALESCE(finished_at, ?), "
            "finished_via = COALESCE(finished_via, ?), "
            "final_status = COALESCE(final_status, ?) "
            "WHERE task_id = ? AND key_id = ? "
            "AND (finished_at IS NULL OR final_status IS NULL)",
            (create_record.iso(at), via, status, task_id, key_id),
        )
        return changed > 0

    def find_request(
        self,
        *,
        key_id: str,
        base_url: str | None,
        route: str,
        payload_sha256: str,
        scope: str,
        take: int,
    ) -> CreateRecord | None:
        """The first recorded create of this request (route, canonical request, reuse scope
        and take) on this account, or None: what a create re-attaches to. Found by what it
        asks, so a row written with a key of an older songlab is found too."""
        row = self._one(
            f"SELECT {', '.join(create_record.COLUMNS)} FROM creates WHERE key_id = ? "
            "AND payload_sha256 = ? AND base_url IS ? AND route = ? AND scope = ? "
            "AND take = ? ORDER BY seq LIMIT 1",
            (key_id, payload_sha256, base_url, route, scope, take),
        )
        return None if row is None else create_record.from_sqlite(row)

    def forget(self, *, task_id: str, key_id: str) -> None:
        """Remove a row whose task the service no longer has (e.g. a restarted in-memory
        sandbox): the record keeps only tasks that exist."""

        def work(con: sqlite3.Connection) -> None:
            con.execute("BEGIN IMMEDIATE")
            try:
                con.execute(
                    "DELETE FROM creates WHERE task_id = ? AND key_id = ?", (task_id, key_id)
                )
                con.execute("COMMIT")
            except BaseException:
                _rollback(con)
                raise

        self._run(work, None)

    def upload_of(
        self, key_id: str, base_url: str | None, content_sha256: str, mime_type: str | None
    ) -> tuple[str, int | None] | None:
        """(file id, size) of the same bytes uploaded before on this account, or None."""
        row = self._one(
            "SELECT file_id, size_bytes FROM uploads WHERE key_id = ? AND base_url IS ? "
            "AND content_sha256 = ? AND mime_type IS ?",
            (key_id, base_url, content_sha256, mime_type),
        )
        return None if row is None else (str(row[0]), create_record.int_or_none(row[1]))

    def write_upload(
        self,
        key_id: str,
        base_url: str | None,
        content_sha256: str,
        mime_type: str | None,
        file_id: str,
        size_bytes: int | None,
    ) -> None:
        self._change(
            "INSERT OR REPLACE INTO uploads VALUES (?,?,?,?,?,?,?)",
            (
                key_id,
                base_url,
                content_sha256,
                mime_type,
                file_id,
                size_bytes,
                datetime.now(UTC).isoformat(),
            ),
        )

    def forget_upload(self, key_id: str, base_url: str | None, file_id: str) -> None:
        self._change(
            "DELETE FROM uploads WHERE key_id = ? AND base_url IS ? AND file_id = ?",
            (key_id, base_url, file_id),
        )

    def consent_id(self, *, task_id: str, key_id: str) -> str | None:
        """The ``consent_id`` a voice-clone create answered with (kept to re-attach)."""
        row = self._one(
            "SELECT consent_id FROM creates WHERE task_id = ? AND key_id = ?", (task_id, key_id)
        )
        return None if row is None else create_record.text_or_none(row[0])

    def payload(self, task_id: str) -> str | None:
        """The canonical request text of a task (kept only with ``keep_payloads=True``)."""
        row = self._one(
            "SELECT payload FROM creates WHERE task_id = ? ORDER BY seq LIMIT 1", (task_id,)
        )
        return None if row is None else create_record.text_or_none(row[0])

    def rows(self, *, key_id: str | None = None) -> list[CreateRecord]:
        """Every row (of ``key_id``, if given), oldest first."""
        if not self.path.exists():
            return []
        where, args = ("WHERE key_id = ?", (key_id,)) if key_id is not None else ("", ())

        def work(con: sqlite3.Connection) -> list[tuple[object, ...]]:
            sql = f"SELECT {', '.join(create_record.COLUMNS)} FROM creates {where} ORDER BY seq"
            found: list[tuple[object, ...]] = con.execute(sql, args).fetchall()
            return found

        empty: list[tuple[object, ...]] = []
        return [create_record.from_sqlite(r) for r in self._run(work, empty)]

    def table(self, *, key_id: str | None = None) -> pa.Table:
        """Every row (of ``key_id``, if given) as Arrow (:data:`RECORD_SCHEMA`), oldest first."""
        return create_record.arrow_table(self.rows(key_id=key_id))


def _rollback(con: sqlite3.Connection) -> None:
    try:
        con.execute("ROLLBACK")
    except sqlite3.Error:  # a damaged file may refuse even that
        pass


_SHARED: dict[tuple[str, bool], RecordStore] = {}
_SHARED_LOCK = threading.Lock()


def shared_store(path: str | os.PathLike[str] | None = None) -> RecordStore:
    """One :class:`RecordStore` per file in this process (clients share its connection)."""
    p = str(Path(path) if path is not None else record_file.default_record_path())
    with _SHARED_LOCK:
        store = _SHARED.get((p, False))
        if store is None:
            store = _SHARED[(p, False)] = RecordStore(p)
        return store
