"""A tasks ledger kept on disk as a Parquet dataset partitioned by month, refreshed incrementally.

Layout (Hive style, readable by DuckDB, pyarrow.dataset, Spark, polars ...)::

    PATH/month=2026-11/part.parquet
    PATH/month=2026-12/part.parquet
    PATH/month=unknown/part.parquet   tasks whose creation time nobody knows
    PATH/_balance.arrow               the account balance at each refresh (Arrow IPC)

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

The client's record (``songlab.client.RecordStore``) is joined at every refresh
and read (``tasks.resolve``): labels and the facts the service does not show.
Each refresh of a client also snapshots ``GET /v1/account/balance`` into
``_balance.arrow`` (``songlab.ledger.reconcile`` compares the balance spent
between snapshots with the ledger's cost of the tasks each refresh added).
"""

from __future__ import annotations

import inspect
import os
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from songlab._vocab import Status
from songlab.ledger import _parquet, _schema
from songlab.ledger._source import AUTO, getter, iter_tasks, tool_lookup
from songlab.ledger.labels import LabelStore, record_table
from songlab.ledger.tasks import first, resolve, tasks_table

__all__ = ["BALANCE", "LedgerStore", "RefreshResult"]

PART: Final[str] = "part.parquet"
# Arrow IPC, named with "_": outside every reader's view of the month files (DuckDB's
# PATH/**/*.parquet glob, pyarrow.dataset and Spark, which skip "_" and "." names)
BALANCE_FILE: Final[str] = "_balance.arrow"
UNKNOWN_MONTH: Final[str] = "unknown"
_TERMINAL = [s.value for s in Status if s.terminal]

BALANCE: Final[pa.Schema] = pa.schema(
    [
        pa.field("taken_at", _schema.TIMESTAMP, metadata={"doc": "when the balance answered "
                                                                 "(client clock, UTC)"}),
        pa.field("total_effective", pa.int64(), metadata={"doc": "tokens (1 token = $0.01)"}),
        pa.field("base_effective", pa.int64(), metadata={"doc": "tokens"}),
        pa.field("extra_tokens", pa.int64(), metadata={"doc": "tokens"}),
        pa.field("base_expires_at", _schema.TIMESTAMP, metadata={"doc": "as the service says"}),
        pa.field("tasks_added", pa.int64(), metadata={"doc": "tasks this refresh added"}),
    ]
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class RefreshResult:
    added: int  # tasks new to the ledger
    updated: int  # known tasks re-fetched (were not terminal)
    read: int  # task snapshots read from the source
    months_written: tuple[str, ...]
    balance: dict[str, Any] | None = None  # the snapshot taken (None: the source has no balance)


def _created(rec: Mapping[str, Any]) -> datetime | None:
    value = first(rec, "created_at")
    if value is None:
        return None
    t = value if isinstance(value, datetime) else datetime.fromisoformat(str(value))
    return t if t.tzinfo else t.replace(tzinfo=UTC)


class _Tracker:
    """``LedgerStore.labels``: the old label store's face (``track``, ``untrack``, ``table``)
    over the client's record, so code written for ``labels.sqlite`` keeps working."""

    def __init__(self, store: LedgerStore) -> None:
        self._store = store

    def track(self, client: Any) -> _Tracker:
        self._store.track(client)
        return self

    def untrack(self) -> None:
        self._store.untrack()

    def table(self) -> pa.Table:
        return self._store.record_table() or pa.table({"task_id": pa.array([], pa.string())})

    def __repr__(self) -> str:
        return f"<labels of {self._store!r}>"


class LedgerStore:
    """The tasks ledger of one account in the directory ``path``.

    ``record``: the client's record to join (a ``songlab.client.RecordStore``, a path to
    its SQLite file, or an Arrow table of it); by default the record of the client
    :meth:`track` was given, else of the client :meth:`refresh` reads, else the default
    ``RecordStore()`` (``$SONGLAB_RECORD`` or the user data dir). A ``labels.sqlite`` an
    older songlab left in ``path`` is read too, so its labels are kept.
    """

    def __init__(self, path: str | os.PathLike[str], *, record: Any = AUTO) -> None:
        self.path = Path(path)
        if isinstance(record, str | os.PathLike):
            record = _record_store(record)
        self._record = record
        self._tracked: list[Any] = []  # records of tracked clients
        self._legacy = LabelStore(self.path)  # PATH/labels.sqlite of older songlab versions
        self._source_record: Any = None
        self._tools: dict[str, tuple[str, str]] | None = None

    @property
    def labels(self) -> _Tracker:
        """Compatibility: ``store.labels.track(client)`` is :meth:`track`."""
        return _Tracker(self)

    def track(self, client: Any) -> LedgerStore:
        """Make sure the creates ``client`` makes are in the record this ledger joins.

        A songlab client writes every accepted create to its record (``client.record``); the
        ledger reads that record. A client without a record (``record=False``) is refused:
        the ledger could not say which project, tags or key a task belongs to. A client of
        an older songlab without a record is recorded in ``PATH/labels.sqlite`` as before.
        """
        if not hasattr(client, "record"):
            self._legacy.track(client)
            return self
        rec = client.record
        if rec is None or rec is False:
            raise ValueError("client: made with record=False, so its creates are not recorded; "
                             "connect(record=...) with a path or leave the default")
        if all(r is not rec for r in self._tracked):
            self._tracked.append(rec)
        return self

    def untrack(self) -> None:
        self._legacy.untrack()

    def __repr__(self) -> str:
        return f"LedgerStore({str(self.path)!r})"

    def files(self) -> list[Path]:
        return sorted(self.path.glob(f"month=*/{PART}"))

    def _records(self) -> list[Any]:
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
        """The record this ledger joins (the tracked clients', a legacy ``labels.sqlite``),
        oldest first; None if there is none."""
        parts = [t for r in self._records() if (t := record_table(r)) is not None]
        if self._legacy.path.exists():
            legacy = record_table(self._legacy)
            if legacy is not None:
                parts.append(legacy)
        parts = [p for p in parts if p.num_rows]
        if not parts:
            return None
        return parts[0] if len(parts) == 1 else pa.concat_tables(parts)

    def _read_stored(self) -> tuple[pa.Table, pa.Array]:
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

    def refresh(self, source: Any) -> RefreshResult:
        """Pull tasks newer than the newest row, re-fetch rows that were not terminal, join the
        client's record, and snapshot the account balance (when the source is a client).

        ``source``: a client (``generations.list()``, optionally ``.get``,
        ``account.balance()``, ``tools.list()``) or an iterable of task dicts, newest first
        (a listing).
        """
        src_record = getattr(source, "record", None)
        if src_record is not None and src_record is not False:
            self._source_record = src_record
        self._tools = tool_lookup(source) or self._tools
        record = self.record_table()
        stored, stored_months = self._read_stored()
        old = resolve(stored, record, self._tools) if stored.num_rows else stored
        known = set(old["task_id"].to_pylist())
        pending_mask = pc.invert(pc.fill_null(pc.is_in(old["status"], pa.array(_TERMINAL)), False))
        pending = old.filter(pending_mask)
        pending_ids = set(pending["task_id"].to_pylist())
        # the service's clock only: a created_at from the record is the client's
        by_service = pc.equal(old["created_at_source"], _schema.SERVICE) if old.num_rows else None
        served = old.filter(by_service) if by_service is not None else old
        newest = pc.max(served["created_at"]).as_py() if served.num_rows else None
        get = getter(source)
        boundary = newest
        served_pending = pending.filter(pc.equal(pending["created_at_source"], _schema.SERVICE))
        if served_pending.num_rows and get is None:
            oldest_pending = pc.min(served_pending["created_at"]).as_py()
            boundary = min(boundary, oldest_pending) if boundary else oldest_pending
        # Walking back for pending rows, only their age stops the walk; otherwise
        # the first known, finished task does (all past it is known already).
        stop_at_known = get is not None or not pending_ids
        fetched: dict[str, Mapping[str, Any]] = {}
        read = 0
        for rec in iter_tasks(source):
            read += 1
            created = _created(rec)
            if boundary is not None and created is not None and created < boundary:
                break
            tid = rec.get("task_id")
            if tid in known and tid not in pending_ids:
                if stop_at_known:
                    break
                continue
            fetched.setdefault(tid, rec)
        if get is not None:
            for tid in pending_ids - fetched.keys():
                fetched[tid] = get(tid)
        added = sum(1 for tid in fetched if tid not in known)
        updated = len(fetched) - added
        snapshot, taken = _balance(source, added)
        # rows filed under month=unknown that the record now dates move to their month
        moved = old.filter(pc.and_(pc.equal(stored_months, UNKNOWN_MONTH),
                                   pc.is_valid(old["created_at"]))) if old.num_rows else old
        if not fetched and moved.num_rows == 0:
            if snapshot is not None:
                self._append_balance(snapshot)
            return RefreshResult(0, 0, read, (), snapshot)
        parts = []
        if fetched:
            new = resolve(tasks_table(list(fetched.values()), record=None, tools=None),
                          record, self._tools)
            parts.append(_keep_seen(new, old, taken))
            moved = moved.filter(pc.invert(pc.is_in(moved["task_id"], new["task_id"])))
        changed = pa.concat_tables([moved, *parts])
        was = pc.is_in(old["task_id"], changed["task_id"]) if old.num_rows else None
        keep = old.filter(pc.invert(was)) if was is not None else old
        # the partitions the changed rows leave are rewritten too (a row may change month)
        extra = set(stored_months.filter(was).to_pylist()) if was is not None else set()
        months = self._write_months(keep, changed, extra)
        if snapshot is not None:
            self._append_balance(snapshot)
        return RefreshResult(added, updated, read, months, snapshot)

    def _append_balance(self, snapshot: dict[str, Any]) -> None:
        row = pa.Table.from_pylist([snapshot], schema=BALANCE)
        table = pa.concat_tables([self.balance_table(), row])
        target = self.path / BALANCE_FILE
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".{target.name}.{uuid.uuid4().hex}.tmp")
        try:
            with pa.OSFile(str(tmp), "wb") as sink, pa.ipc.new_file(sink, BALANCE) as writer:
                writer.write_table(table)
            with open(tmp, "rb") as fh:
                os.fsync(fh.fileno())
            os.replace(tmp, target)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise

    def _write_months(self, keep: pa.Table, new: pa.Table,
                      extra: set[str] | None = None) -> tuple[str, ...]:
        touched = sorted(set(_months(new).to_pylist()) | (extra or set()))
        keep_months = _months(keep)
        new_months = _months(new)
        for month in touched:
            part = pa.concat_tables(
                [keep.filter(pc.equal(keep_months, month)), new.filter(pc.equal(new_months, month))]
            )
            target = self.path / f"month={month}" / PART
            if part.num_rows == 0:
                target.unlink(missing_ok=True)
                continue
            self._write_atomic(target, _newest_first(part))
        return tuple(touched)

    @staticmethod
    def _write_atomic(target: Path, table: pa.Table) -> None:
        _parquet.write_atomic(target, table)


def _record_store(path: Any) -> Any:
    """``songlab.client.RecordStore(path)``; None when this songlab's client has none."""
    try:
        from songlab.client import RecordStore  # type: ignore[attr-defined]
    except ImportError:
        return None
    return RecordStore(path)


def _balance(source: Any, added: int) -> tuple[dict[str, Any] | None, datetime]:
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
    raw = bal if isinstance(bal, Mapping) else {
        "total_effective": bal.total_effective, "base_effective": bal.base_effective,
        "extra_tokens": bal.extra_tokens, "base_expires_at": bal.base_expires_at,
    }  # fmt: skip
    expires = raw.get("base_expires_at")
    if isinstance(expires, str):
        expires = datetime.fromisoformat(expires)
    snap = {
        "taken_at": taken, "total_effective": int(raw["total_effective"]),
        "base_effective": int(raw["base_effective"]),
        "extra_tokens": int(raw.get("extra_tokens") or 0), "base_expires_at": expires,
        "tasks_added": added,
    }  # fmt: skip
    return snap, taken


def _keep_seen(new: pa.Table, old: pa.Table, taken: datetime) -> pa.Table:
    """``seen_at``: the refresh that first added a task (``taken``), kept across updates."""
    seen_at = pa.repeat(pa.scalar(taken, _schema.TIMESTAMP), new.num_rows)
    if old.num_rows:
        at = pc.index_in(new["task_id"], value_set=old["task_id"].combine_chunks())
        seen_at = pc.coalesce(pc.take(old["seen_at"], at), seen_at)
    i = new.schema.get_field_index("seen_at")
    return new.set_column(i, _schema.TASKS.field("seen_at"), seen_at)


def _older_sources(table: pa.Table) -> pa.Table:
    """A file written before the ``*_source`` columns: its facts came from the service (the
    labels, where present, from the label store)."""
    if table.num_rows == 0 or table["labels_source"].null_count < table.num_rows:
        return table
    for fact in _schema.FACTS:
        i = table.schema.get_field_index(f"{fact}_source")
        src = _schema.source_array(pc.if_else(pc.is_valid(table[fact]), 0, 2).combine_chunks())
        table = table.set_column(i, _schema.TASKS.field(i), src)
    i = table.schema.get_field_index("labels_source")
    labelled = pc.or_(pc.is_valid(table["project"]), pc.is_valid(table["key_id"]))
    src = _schema.source_array(pc.if_else(labelled, 1, 2).combine_chunks())
    return table.set_column(i, _schema.TASKS.field(i), src)


def _months(table: pa.Table) -> pa.Array:
    if table.num_rows == 0:
        return pa.array([], pa.string())
    months = pc.strftime(table["created_at"], format="%Y-%m")
    return pc.fill_null(months, UNKNOWN_MONTH).combine_chunks()


def _newest_first(table: pa.Table) -> pa.Table:
    return table.sort_by([("created_at", "descending"), ("task_id", "descending")])
