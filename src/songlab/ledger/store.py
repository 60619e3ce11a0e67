"""A tasks ledger kept on disk as a Parquet dataset partitioned by month, refreshed incrementally.

Layout (Hive style, readable by DuckDB, pyarrow.dataset, Spark, polars ...)::

    PATH/month=2026-11/part.parquet
    PATH/month=2026-12/part.parquet
    PATH/month=unknown/part.parquet   tasks whose creation time nobody knows
    PATH/_balance.arrow               the account balance at each refresh (Arrow IPC)
    PATH/_state.arrow                 what refresh needs of the rows: newest, not terminal

Each month file holds the tasks created in that UTC month with ``_schema.TASKS``
(the ``month`` key lives only in the directory name). ``created_at`` is the
service's, else the client's record's (its clock at acceptance); a task that has
neither goes to ``month=unknown``, never to 1970-01, and moves to its month once
the record names it. A refresh walks the listing newest first and stops at the
first task it already has (or one older than its newest row), so it pulls only
new pages; rows that were not terminal are re-fetched (``generations.get`` when
the source has it, else by walking the listing back to the oldest of them). Only
the months that changed are rewritten, each through a temporary file renamed over
the old one (``os.replace``), so an error never leaves a half-written file behind.
No refresh reads every row: ``_state.arrow`` steers the walk, stored ids are looked up
in the ``task_id`` column, and a month is rewritten one at a time (memory grows with the
largest month, not the dataset).

The client's record (``songlab.client.RecordStore``) is joined at every refresh
and read (``tasks.resolve``): labels and the facts the service does not show.
Each refresh of a client also snapshots ``GET /v1/account/balance`` into
``_balance.arrow`` (``songlab.ledger.reconcile`` compares the balance spent
between snapshots with the ledger's cost of the tasks each refresh added).
"""

from __future__ import annotations

import inspect
import json
import os
from collections import deque
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from itertools import islice
from pathlib import Path
from typing import Any, Final, cast

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

import songlab.ledger._arrow as _arrow
import songlab.ledger._parquet as _parquet
import songlab.ledger._schema as _schema
from songlab.ledger._arrow import Column, ColumnLike
from songlab.ledger._record import record_table
from songlab.ledger._source import AUTO, getter, iter_tasks, tool_lookup
from songlab.ledger.tasks import first, resolve, tasks_table
from songlab.spec import Status

__all__ = ["BALANCE", "LedgerStore", "RefreshResult"]

PART: Final[str] = "part.parquet"
# Arrow IPC, named with "_": outside every reader's view of the month files (DuckDB's
# PATH/**/*.parquet glob, pyarrow.dataset and Spark, which skip "_" and "." names)
BALANCE_FILE: Final[str] = "_balance.arrow"
UNKNOWN_MONTH: Final[str] = "unknown"
# What a refresh needs to know of the stored rows, kept small (Arrow IPC, "_" name as above):
# the newest service timestamp, the ids at it, and the rows not terminal yet.
STATE_FILE: Final[str] = "_state.arrow"
LOOKUP_BATCH: Final[int] = 1024  # undated listed tasks looked up together, at most
PENDING: Final[pa.Schema] = pa.schema(
    [
        pa.field("task_id", pa.string()),
        pa.field("month", pa.string()),
        pa.field("created_at", _schema.TIMESTAMP),
        pa.field("created_at_source", pa.string()),
    ]
)
_TERMINAL = [s.value for s in Status if s.terminal]

BALANCE: Final[pa.Schema] = pa.schema(
    [
        pa.field(
            "taken_at",
            _schema.TIMESTAMP,
            metadata={"doc": "when the balance answered (client clock, UTC)"},
        ),
        pa.field("total_effective", pa.int64(), metadata={"doc": "tokens (1 token = $0.01)"}),
        pa.field("base_effective", pa.int64(), metadata={"doc": "tokens"}),
        pa.field("extra_tokens", pa.int64(), metadata={"doc": "tokens"}),
        pa.field("base_expires_at", _schema.TIMESTAMP, metadata={"doc": "as the service says"}),
        pa.field("tasks_added", pa.int64(), metadata={"doc": "tasks this refresh added"}),
    ]
)


@dataclass(frozen=True, slots=True)
class RefreshResult:
    added: int  # tasks new to the ledger
    updated: int  # known tasks re-fetched (were not terminal)
    read: int  # task snapshots read from the source
    months_written: tuple[str, ...]
    balance: dict[str, object] | None = None  # the snapshot taken (None: the source has no balance)


@dataclass(frozen=True, slots=True)
class _State:
    """What a refresh knows of the stored rows without reading them: the rows not terminal
    (``PENDING``), the newest ``created_at`` the service showed and the ids at it, and the
    month files it describes (``LedgerStore._signature``)."""

    pending: pa.Table
    newest: datetime | None
    newest_ids: frozenset[str]
    files: dict[str, list[int]]

    def after(self, changed: pa.Table, months: Column, files: dict[str, list[int]]) -> _State:
        """This state once ``changed`` (rows written, in ``months``) is stored."""
        pending = self.pending.filter(
            pc.invert(pc.is_in(self.pending["task_id"], value_set=changed["task_id"]))
        )
        waiting = pc.invert(
            _arrow.fill_null(pc.is_in(changed["status"], pa.array(_TERMINAL)), pa.scalar(False))
        )
        src = pc.cast(changed["created_at_source"], pa.string())
        rows = _pending_rows(
            changed["task_id"].filter(waiting),
            changed["created_at"].filter(waiting),
            src.filter(waiting),
            months.filter(waiting),
        )
        newest, ids = self.newest, set(self.newest_ids)
        by_service = _arrow.fill_null(pc.equal(src, pa.scalar(_schema.SERVICE)), pa.scalar(False))
        top = pc.max(changed["created_at"].filter(by_service)).as_py()
        if top is not None and (newest is None or top >= newest):
            at = _arrow.fill_null(
                pc.and_(
                    by_service, pc.equal(changed["created_at"], pa.scalar(top, _schema.TIMESTAMP))
                ),
                False,
            )
            found = set(_strings(changed["task_id"].filter(at)))
            ids = found if newest is None or top > newest else ids | found
            newest = top
        return _State(pa.concat_tables([pending, rows]), newest, frozenset(ids), files)

    def to_table(self) -> pa.Table:
        meta = {
            "newest": self.newest.isoformat() if self.newest else None,
            "newest_ids": sorted(self.newest_ids),
            "files": self.files,
        }
        return self.pending.replace_schema_metadata({"songlab.state": json.dumps(meta)})

    @classmethod
    def from_table(cls, table: pa.Table) -> _State:
        meta = json.loads((table.schema.metadata or {})[b"songlab.state"])
        newest = datetime.fromisoformat(meta["newest"]) if meta["newest"] else None
        return cls(
            table.cast(PENDING),
            newest,
            frozenset(meta["newest_ids"]),
            {k: list(v) for k, v in meta["files"].items()},
        )


def _strings(column: ColumnLike) -> list[str]:
    """The values of a column of strings that holds no null (task ids, month names)."""
    return [v for v in column.to_pylist() if isinstance(v, str)]


def _pending_rows(
    task_id: ColumnLike, created: ColumnLike, source: ColumnLike, month: ColumnLike | str
) -> pa.Table:
    n = len(task_id)
    months = month if not isinstance(month, str) else _arrow.repeat(month, n, pa.string())
    return pa.Table.from_arrays([task_id, months, created, source], schema=PENDING)


def _plain(table: pa.Table) -> pa.Table:
    """Extension columns (``songlab.decimal``, ``songlab.source``) as their storage."""
    cols = [
        # an extension type's chunks are extension arrays; chunked_array has no overload for
        # a type known at run time
        pa.chunked_array(  # type: ignore[call-overload]
            [c.storage for c in cast("list[pa.ExtensionArray[Any]]", col.chunks)],
            type=col.type.storage_type,
        )
        if isinstance(col.type, pa.BaseExtensionType)
        else col
        for col in table.columns
    ]
    return pa.Table.from_arrays(cols, names=table.column_names)


def _write_ipc(target: Path, table: pa.Table) -> None:
    """An Arrow IPC file written over ``target`` atomically."""

    def write(tmp: Path) -> None:
        with pa.OSFile(str(tmp), "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
            writer.write_table(table)

    _parquet.replace_atomically(target, write)


def _task_id(rec: Mapping[str, object]) -> str:
    """A listed task's ``task_id`` (the spec's task object always carries one)."""
    return cast(str, rec.get("task_id"))


def _created(rec: Mapping[str, object]) -> datetime | None:
    value = first(rec, "created_at")
    if value is None:
        return None
    t = value if isinstance(value, datetime) else datetime.fromisoformat(str(value))
    return t if t.tzinfo else t.replace(tzinfo=UTC)


@dataclass
class _Walk:
    """A walk back through a listing, newest first: what to fetch and where to stop.

    Walking back for pending rows (not terminal yet), only their age stops the walk;
    otherwise the first known, finished task does (all past it is known already). A listed
    task with no timestamp to stop at is looked up in the month files with the next few
    (1, 2, 4 ... at most :data:`LOOKUP_BATCH`), one scan of the ids per batch.
    """

    store: LedgerStore
    state: _State
    pending_ids: set[str]
    boundary: datetime | None  # older than this: stop
    stop_at_known: bool
    fetched: dict[str, Mapping[str, object]] = field(default_factory=dict)
    dated: dict[str, datetime | None] = field(default_factory=dict)  # created_at, as listed
    known: set[str] = field(default_factory=set)  # undated listed tasks found stored
    checked: set[str] = field(default_factory=set)
    batch: int = 1
    read: int = 0

    @classmethod
    def over(cls, state: _State, store: LedgerStore, can_get: bool) -> _Walk:
        """The walk of a refresh from ``state`` (``can_get``: the source fetches one task)."""
        pending_ids = set(_strings(state.pending["task_id"]))
        boundary = state.newest
        served = state.pending.filter(
            pc.equal(state.pending["created_at_source"], pa.scalar(_schema.SERVICE))
        )
        if served.num_rows and not can_get:
            oldest_pending = pc.min(served["created_at"]).as_py()
            boundary = min(boundary, oldest_pending) if boundary else oldest_pending
        return cls(store, state, pending_ids, boundary, can_get or not pending_ids)

    def walk(self, listing: Iterator[Mapping[str, object]]) -> None:
        """Read ``listing`` until :meth:`_take` says stop (or it ends)."""
        ahead: deque[Mapping[str, object]] = deque()
        while True:
            rec = ahead.popleft() if ahead else next(listing, None)
            if rec is None:
                return
            self.read += 1
            if not self._take(rec, listing, ahead):
                return

    def _take(
        self,
        rec: Mapping[str, object],
        listing: Iterator[Mapping[str, object]],
        ahead: deque[Mapping[str, object]],
    ) -> bool:
        """Keep ``rec`` if it is new or pending; whether the walk goes on past it."""
        created = _created(rec)
        if self.boundary is not None and created is not None and created < self.boundary:
            return False
        tid = _task_id(rec)
        if tid in self.pending_ids:
            self.fetched.setdefault(tid, rec)
            return True
        state = self.state
        if created is not None and created == state.newest and tid in state.newest_ids:
            return not self.stop_at_known
        if self.stop_at_known and created is None and tid not in self.checked:
            self._look_up(tid, listing, ahead)
        if tid in self.known:
            return not self.stop_at_known
        if tid not in self.fetched:
            self.fetched[tid] = rec
            self.dated[tid] = created
        return True

    def _look_up(
        self,
        tid: str,
        listing: Iterator[Mapping[str, object]],
        ahead: deque[Mapping[str, object]],
    ) -> None:
        """Whether ``tid`` and the next few undated listed tasks are stored (into ``known``)."""
        ahead.extend(islice(listing, self.batch - 1))
        ids = [tid, *(_task_id(r) for r in ahead if _created(r) is None)]
        ids = [i for i in ids if i not in self.checked and i not in self.pending_ids]
        self.known |= self.store._stored_ids(ids, None)
        self.checked.update(ids)
        self.batch = min(self.batch * 2, LOOKUP_BATCH)


class LedgerStore:
    """The tasks ledger of one account in the directory ``path``.

    ``record``: the client's record to join (a ``songlab.client.RecordStore``, a path to
    its SQLite file, or an Arrow table of it); by default the record of the client
    :meth:`track` was given, else of the client :meth:`refresh` reads, else the default
    ``RecordStore()`` (``$SONGLAB_RECORD`` or the user data dir).
    """

    def __init__(self, path: str | os.PathLike[str], *, record: object = AUTO) -> None:
        self.path = Path(path)
        if isinstance(record, str | os.PathLike):
            record = _record_store(record)
        self._record = record
        self._tracked: list[object] = []  # records of tracked clients
        self._source_record: object = None
        self._tools: dict[str, tuple[str, str]] | None = None

    def track(self, client: object) -> LedgerStore:
        """Join ``client``'s record at every refresh and read: labels (project, tags, key)
        and the facts the service does not show. Labels only: tracking fetches no task,
        writes nothing and never refreshes by itself; the tasks come from
        :meth:`refresh` (``store.refresh(client)``).

        A songlab client writes every accepted create to its record (``client.record``); the
        ledger reads that record. A client without a record (``record=False``) is refused:
        the ledger could not say which project, tags or key a task belongs to.
        """
        rec = getattr(client, "record", None)
        if rec is None or rec is False:
            raise ValueError(
                "client: made with record=False, so its creates are not recorded; "
                "connect(record=...) with a path or leave the default"
            )
        if all(r is not rec for r in self._tracked):
            self._tracked.append(rec)
        return self

    def untrack(self) -> None:
        """Forget the tracked clients' records (the records themselves stay on disk)."""
        self._tracked.clear()

    def __repr__(self) -> str:
        return f"LedgerStore({str(self.path)!r})"

    def files(self) -> list[Path]:
        return sorted(self.path.glob(f"month=*/{PART}"))

    def _records(self) -> list[object]:
        if self._record is not AUTO:
            return [self._record]
        found = [*self._tracked]
        if self._source_record is not None and all(r is not self._source_record for r in found):
            found.append(self._source_record)
        if not found:
            default = _record_store(None)
            if default is not None:
                found.append(default)
        return found

    def record_table(self) -> pa.Table | None:
        """The record this ledger joins (the tracked clients'), oldest first; None if there
        is none."""
        parts = [t for r in self._records() if (t := record_table(r)) is not None]
        parts = [p for p in parts if p.num_rows]
        if not parts:
            return None
        return parts[0] if len(parts) == 1 else pa.concat_tables(parts)

    def _read_stored(self) -> tuple[pa.Table, Column]:
        """Every stored row as written, and the month partition each came from."""
        tables, months = [], []
        for f in self.files():
            t = _older_sources(_parquet.read_table(f, _schema.TASKS))
            tables.append(t)
            months.append(pa.repeat(pa.scalar(f.parent.name.removeprefix("month=")), t.num_rows))
        if not tables:
            return _schema.empty_table(_schema.TASKS), pa.array([], pa.string())
        return pa.concat_tables(tables), pa.concat_arrays(months)

    def read_table(self) -> pa.Table:
        """All rows, newest first (schema ``_schema.TASKS``), joined with the client's record
        (labels, and facts the service does not show)."""
        stored, _ = self._read_stored()
        if stored.num_rows == 0:
            return stored
        return _newest_first(resolve(stored, self.record_table(), self._tools))

    def iter_tables(self) -> Iterator[pa.Table]:
        """The rows of each month file in turn, joined with the client's record as
        :meth:`read_table` joins them (schema ``_schema.TASKS``; one month in memory)."""
        record = self.record_table()
        for f in self.files():
            t = _older_sources(_parquet.read_table(f, _schema.TASKS))
            if t.num_rows:
                yield resolve(t, record, self._tools)

    def read(self) -> pd.DataFrame:
        """The tasks frame kept on disk (same columns as ``tasks_frame``)."""
        return _schema.to_frame(self.read_table())

    def balances(self) -> pd.DataFrame:
        """Every balance snapshot, oldest first (columns: ``BALANCE``)."""
        return _schema.to_frame(self.balance_table())

    def balance_table(self) -> pa.Table:
        target = self.path / BALANCE_FILE
        if not target.exists():
            return BALANCE.empty_table()
        with pa.memory_map(str(target)) as source:
            table = pa.ipc.open_file(source).read_all()
        return table.cast(BALANCE).sort_by("taken_at")

    def refresh(self, source: object) -> RefreshResult:
        """Pull tasks newer than the newest row, re-fetch rows that were not terminal, join the
        client's record, and snapshot the account balance (when the source is a client).

        ``source``: a client (``generations.list()``, optionally ``.get``,
        ``account.balance()``, ``tools.list()``) or an iterable of task dicts, newest first
        (a listing).

        Memory stays bounded by the month files it rewrites, not by the dataset: the
        walk is steered by the small state in ``_state.arrow`` (the newest service
        timestamp, the ids at it, the rows not terminal yet), and whether a listed task
        is already stored is looked up in the month files' ``task_id`` column, a batch
        at a time, never as a Python set of every id.
        """
        self._adopt(source)
        record = self.record_table()
        state, rebuilt = self._state()
        get = getter(source)
        walk = _Walk.over(state, self, get is not None)
        walk.walk(iter_tasks(source))
        fetched = walk.fetched
        self._drop_stored(walk)
        if get is not None:
            for tid in walk.pending_ids - fetched.keys():
                fetched[tid] = get(tid)
        updated = sum(1 for tid in fetched if tid in walk.pending_ids)
        added = len(fetched) - updated
        snapshot, taken = _balance(source, added)
        moved = self._dated_now(record)
        if not fetched and moved.num_rows == 0:
            if snapshot is not None:
                self._append_balance(snapshot)
            if rebuilt:
                self._save_state(state)
            return RefreshResult(0, 0, walk.read, (), snapshot)
        if fetched:
            listed = tasks_table(list(fetched.values()), record=None, tools=None)
            new = self._keep_seen(resolve(listed, record, self._tools), state, taken)
            moved = moved.filter(pc.invert(pc.is_in(moved["task_id"], new["task_id"])))
            changed = pa.concat_tables([moved, new])
        else:
            changed = moved
        months = self._store_changed(changed, state, record, moved=moved.num_rows > 0)
        if snapshot is not None:
            self._append_balance(snapshot)
        self._save_state(state.after(changed, _months(changed), self._signature()))
        return RefreshResult(added, updated, walk.read, months, snapshot)

    def _adopt(self, source: object) -> None:
        """Remember the source's record (a client's) and tool listing for the joins."""
        src_record = getattr(source, "record", None)
        if src_record is not None and src_record is not False:
            self._source_record = src_record
        self._tools = tool_lookup(source) or self._tools

    def _drop_stored(self, walk: _Walk) -> None:
        """Drop from ``walk.fetched`` the listed tasks not looked up yet (dated ones, or a
        walk back) that are stored already: finished, a refresh never fetches them again."""
        unchecked = [t for t in walk.fetched if t not in walk.pending_ids and t not in walk.checked]
        if not unchecked:
            return
        by_month: dict[str | None, list[str]] = {}
        for t in unchecked:
            at = walk.dated.get(t)
            by_month.setdefault(at.strftime("%Y-%m") if at else None, []).append(t)
        stored: set[str] = set()
        if None in by_month:
            stored |= self._stored_ids(unchecked, None)
        else:
            for month, ids in by_month.items():
                stored |= self._stored_ids(ids, {str(month), UNKNOWN_MONTH})
        for t in stored:
            del walk.fetched[t]

    def _dated_now(self, record: pa.Table | None) -> pa.Table:
        """The rows filed under month=unknown that the record now dates (they move)."""
        unknown_file = self.path / f"month={UNKNOWN_MONTH}" / PART
        if not unknown_file.exists() or record is None:
            return _schema.empty_table(_schema.TASKS)
        undated = resolve(self._read_month(UNKNOWN_MONTH), record, self._tools)
        return undated.filter(pc.is_valid(undated["created_at"]))

    def _store_changed(
        self, changed: pa.Table, state: _State, record: pa.Table | None, *, moved: bool
    ) -> tuple[str, ...]:
        """Write the months ``changed`` goes to, and those its rows leave (a row may change
        month; ``moved``: some leave month=unknown)."""
        leaving = pc.is_in(state.pending["task_id"], changed["task_id"])
        extra = set(_strings(state.pending["month"].filter(leaving)))
        if moved:
            extra.add(UNKNOWN_MONTH)
        return self._write_months(changed, extra, record)

    def _read_month(self, month: str) -> pa.Table:
        target = self.path / f"month={month}" / PART
        if not target.exists():
            return _schema.empty_table(_schema.TASKS)
        return _older_sources(_parquet.read_table(target, _schema.TASKS))

    def _stored_ids(self, ids: list[str], months: set[str] | None) -> set[str]:
        """Which of ``ids`` are stored (in ``months``' files, or any): the ``task_id``
        column read a row group at a time and matched in Arrow. (Row groups, not
        ``iter_batches``: pyarrow 26 aborts at the end of a batch iterator over an
        extension column.)"""
        if not ids:
            return set()
        files = (
            self.files()
            if months is None
            else [p for m in sorted(months) if (p := self.path / f"month={m}" / PART).exists()]
        )
        wanted = pa.array(ids, pa.string())
        found: set[str] = set()
        for f in files:
            pf = pq.ParquetFile(f)
            for group in range(pf.metadata.num_row_groups):
                col = pf.read_row_group(group, columns=["task_id"]).column(0)
                found.update(_strings(col.filter(pc.is_in(col, value_set=wanted))))
        return found

    def _keep_seen(self, new: pa.Table, state: _State, taken: datetime) -> pa.Table:
        """``seen_at``: the refresh that first added a task (``taken``), kept across updates."""
        seen_at = _arrow.repeat(taken, new.num_rows, _schema.TIMESTAMP)
        again = state.pending.filter(pc.is_in(state.pending["task_id"], new["task_id"]))
        if again.num_rows:
            ids = again["task_id"].combine_chunks()
            rows = []
            for month in set(again["month"].to_pylist()):
                target = self.path / f"month={month}" / PART
                if target.exists() and "seen_at" in pq.read_schema(target).names:
                    t = _plain(pq.read_table(target, columns=["task_id", "seen_at"]))
                    rows.append(t.filter(pc.is_in(t["task_id"], value_set=ids)))
            if rows:
                old = pa.concat_tables(rows)
                at = pc.index_in(new["task_id"], value_set=old["task_id"].combine_chunks())
                seen_at = _arrow.coalesce(pc.take(old["seen_at"], at), seen_at)
        i = new.schema.get_field_index("seen_at")
        return new.set_column(i, _schema.TASKS.field("seen_at"), seen_at)

    def _signature(self) -> dict[str, list[int]]:
        """What the month files are now (size, mtime, inode): a state made for other files is
        stale (a refresh that failed half way, a dataset written by someone else)."""
        out = {}
        for f in self.files():
            st = f.stat()
            out[f.parent.name] = [st.st_size, st.st_mtime_ns, st.st_ino]
        return out

    def _state(self) -> tuple[_State, bool]:
        """The refresh state, from ``_state.arrow`` if it matches the month files, else
        rebuilt by one pass, a row group at a time, over their ``task_id, status, created_at`` columns."""
        target = self.path / STATE_FILE
        signature = self._signature()
        if target.exists():
            try:
                with pa.memory_map(str(target)) as source:
                    table = pa.ipc.open_file(source).read_all()
                state = _State.from_table(table)
            except (pa.ArrowInvalid, OSError, KeyError, ValueError):
                state = None
            if state is not None and state.files == signature:
                return state, False
        return self._scan_state(signature), True

    def _scan_state(self, signature: dict[str, list[int]]) -> _State:
        pending, newest, newest_ids = [], None, set()
        terminal = pa.array(_TERMINAL)
        for f in self.files():
            month = f.parent.name.removeprefix("month=")
            pf = pq.ParquetFile(f)
            names = pf.schema_arrow.names
            cols = [
                c for c in ("task_id", "status", "created_at", "created_at_source") if c in names
            ]
            for group in range(pf.metadata.num_row_groups):
                t = _plain(pf.read_row_group(group, columns=cols))
                created = (
                    t["created_at"]
                    if "created_at" in t.column_names
                    else _arrow.nulls(t.num_rows, _schema.TIMESTAMP)
                )
                src: ColumnLike
                if "created_at_source" in t.column_names:
                    src = pc.cast(t["created_at_source"], pa.string())
                    src = _arrow.if_else(
                        pc.is_null(src),
                        _arrow.if_else(pc.is_valid(created), _schema.SERVICE, _schema.UNKNOWN),
                        src,
                    )
                else:
                    src = _arrow.if_else(pc.is_valid(created), _schema.SERVICE, _schema.UNKNOWN)
                waiting = pc.invert(
                    _arrow.fill_null(pc.is_in(t["status"], terminal), pa.scalar(False))
                )
                if pc.any(waiting).as_py():
                    pending.append(
                        _pending_rows(
                            t["task_id"].filter(waiting),
                            pc.filter(created, waiting),
                            pc.filter(src, waiting),
                            month,
                        )
                    )
                by_service = _arrow.fill_null(
                    pc.equal(src, pa.scalar(_schema.SERVICE)), pa.scalar(False)
                )
                top = pc.max(pc.filter(created, by_service)).as_py()
                if top is not None and (newest is None or top >= newest):
                    at = _arrow.fill_null(
                        pc.and_(by_service, pc.equal(created, pa.scalar(top, _schema.TIMESTAMP))),
                        False,
                    )
                    ids = set(_strings(t["task_id"].filter(at)))
                    newest_ids = ids if newest is None or top > newest else newest_ids | ids
                    newest = top
        table = pa.concat_tables(pending) if pending else PENDING.empty_table()
        return _State(table, newest, frozenset(newest_ids), signature)

    def _save_state(self, state: _State) -> None:
        _write_ipc(self.path / STATE_FILE, state.to_table())

    def _append_balance(self, snapshot: dict[str, object]) -> None:
        row = pa.Table.from_pylist([snapshot], schema=BALANCE)
        _write_ipc(self.path / BALANCE_FILE, pa.concat_tables([self.balance_table(), row]))

    def _write_months(
        self, changed: pa.Table, extra: set[str], record: pa.Table | None
    ) -> tuple[str, ...]:
        """Rewrite the months ``changed`` rows go to and those in ``extra`` (that rows leave),
        one month in memory at a time: its stored rows (joined with the record again) less
        the changed ones, plus the changed rows of that month."""
        touched = sorted(set(_strings(_months(changed))) | extra)
        changed_months = _months(changed)
        ids = changed["task_id"].combine_chunks()
        for month in touched:
            stored = self._read_month(month)
            if stored.num_rows:
                stored = resolve(stored, record, self._tools)
                leaving = pc.is_in(stored["task_id"], value_set=ids)
                if pc.any(leaving).as_py():
                    stored = stored.filter(pc.invert(leaving))
            part = _put_in(stored, changed.filter(pc.equal(changed_months, pa.scalar(month))))
            target = self.path / f"month={month}" / PART
            if part.num_rows == 0:
                target.unlink(missing_ok=True)
                continue
            self._write_atomic(target, part)
        return tuple(touched)

    @staticmethod
    def _write_atomic(target: Path, table: pa.Table) -> None:
        _parquet.write_atomic(target, table)


def _record_store(path: str | os.PathLike[str] | None) -> object:
    """``songlab.client.RecordStore(path)``; None when this songlab's client has none."""
    try:
        from songlab.client import RecordStore
    except ImportError:
        return None
    return RecordStore(path)


def _balance(source: object, added: int) -> tuple[dict[str, object] | None, datetime]:
    """A snapshot of the source's balance (None if it has no ``account.balance()``)."""
    account = getattr(source, "account", None)
    fetch = getattr(account, "balance", None)
    if not callable(fetch):
        return None, datetime.now(UTC)
    bal = fetch()
    if inspect.isawaitable(bal):
        close = getattr(bal, "close", None)
        if callable(close):
            close()
        return None, datetime.now(UTC)
    taken = datetime.now(UTC)
    raw = (
        bal
        if isinstance(bal, Mapping)
        else {
            "total_effective": bal.total_effective,
            "base_effective": bal.base_effective,
            "extra_tokens": bal.extra_tokens,
            "base_expires_at": bal.base_expires_at,
        }
    )
    expires = raw.get("base_expires_at")
    if isinstance(expires, str):
        expires = datetime.fromisoformat(expires)
    snap = {
        "taken_at": taken,
        "total_effective": int(raw["total_effective"]),
        "base_effective": int(raw["base_effective"]),
        "extra_tokens": int(raw.get("extra_tokens") or 0),
        "base_expires_at": expires,
        "tasks_added": added,
    }
    return snap, taken


def _older_sources(table: pa.Table) -> pa.Table:
    """A file written before the ``*_source`` columns: its facts came from the service (the
    labels, where present, from the label store)."""
    if table.num_rows == 0 or table["labels_source"].null_count < table.num_rows:
        return table
    for fact in _schema.FACTS:
        i = table.schema.get_field_index(f"{fact}_source")
        known = pc.is_valid(table[fact].combine_chunks())
        src = _schema.source_array(_arrow.if_else(known, 0, 2))
        table = table.set_column(i, _schema.TASKS.field(i), src)
    i = table.schema.get_field_index("labels_source")
    labelled = pc.or_(
        pc.is_valid(table["project"].combine_chunks()),
        pc.is_valid(table["key_id"].combine_chunks()),
    )
    src = _schema.source_array(_arrow.if_else(labelled, 1, 2))
    return table.set_column(i, _schema.TASKS.field(i), src)


def _months(table: pa.Table) -> Column:
    if table.num_rows == 0:
        return pa.array([], pa.string())
    months = pc.strftime(table["created_at"].combine_chunks(), format="%Y-%m")
    return _arrow.fill_null(months, UNKNOWN_MONTH)


def _put_in(stored: pa.Table, rows: pa.Table) -> pa.Table:
    """``stored`` (a month's rows) with ``rows`` added, newest first. The common case, rows
    newer than every stored one that is in order already, is a concatenation: no copy of
    the month is sorted."""
    rows = _newest_first(rows)
    if stored.num_rows == 0 or rows.num_rows == 0:
        return (
            stored
            if rows.num_rows == 0 and _in_order(stored)
            else _newest_first(pa.concat_tables([rows, stored]))
        )
    created = stored["created_at"]
    if (
        rows["created_at"].null_count == 0
        and _in_order(stored)
        and pc.min(rows["created_at"]).as_py() > pc.max(created).as_py()
    ):
        return pa.concat_tables([rows, stored])
    return _newest_first(pa.concat_tables([rows, stored]))


def _in_order(table: pa.Table) -> bool:
    """Dated rows, newest first, each ``created_at`` strictly older than the one before (so
    no tie whose order by ``task_id`` would need checking)."""
    created = table["created_at"].combine_chunks()
    if created.null_count or len(created) < 2:
        return bool(created.null_count == 0)
    return bool(pc.all(pc.greater(created[:-1], created[1:])).as_py())


def _newest_first(table: pa.Table) -> pa.Table:
    return table.sort_by([("created_at", "descending"), ("task_id", "descending")])
