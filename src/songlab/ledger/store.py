"""A tasks ledger kept on disk as a Parquet dataset partitioned by month, refreshed incrementally.

Layout (Hive style, readable by DuckDB, pyarrow.dataset, Spark, polars ...)::

    PATH/month=2026-11/part.parquet
    PATH/month=2026-12/part.parquet

Each file holds the tasks created in that UTC month with ``_schema.TASKS``
(the ``month`` key lives only in the directory name). A refresh walks the
listing newest first and stops at the first task it already has (or one
older than its newest row), so it pulls only new pages; rows that were not terminal are
re-fetched (``generations.get`` when the source has it, else by walking the
listing back to the oldest of them). Only the months that changed are
rewritten, each through a temporary file renamed over the old one
(``os.replace``), so an error never leaves a half-written file behind.
"""

from __future__ import annotations

import os
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
from songlab.ledger._source import getter, iter_tasks
from songlab.ledger.labels import LabelStore, attach
from songlab.ledger.tasks import tasks_table

__all__ = ["LedgerStore", "RefreshResult"]

PART: Final[str] = "part.parquet"
_TERMINAL = [s.value for s in Status if s.terminal]


@dataclass(frozen=True, slots=True)
class RefreshResult:
    added: int  # tasks new to the ledger
    updated: int  # known tasks re-fetched (were not terminal)
    read: int  # task snapshots read from the source
    months_written: tuple[str, ...]


def _created(rec: Mapping[str, Any]) -> datetime | None:
    value = rec.get("created_at")
    if value is None:
        return None
    t = value if isinstance(value, datetime) else datetime.fromisoformat(str(value))
    return t if t.tzinfo else t.replace(tzinfo=UTC)


class LedgerStore:
    """The tasks ledger of one account in the directory ``path``."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.labels = LabelStore(self.path)  # PATH/labels.sqlite: the local attribution

    def track(self, client: Any) -> LedgerStore:
        """Record the labels of every create ``client`` makes (see ``songlab.ledger.attribution``)."""
        self.labels.track(client)
        return self

    def __repr__(self) -> str:
        return f"LedgerStore({str(self.path)!r})"

    def files(self) -> list[Path]:
        return sorted(self.path.glob(f"month=*/{PART}"))

    def read_table(self) -> pa.Table:
        """All rows, newest first (schema ``_schema.TASKS``), labels joined from ``labels.sqlite``."""
        tables = [_parquet.read_table(f, _schema.TASKS) for f in self.files()]
        if not tables:
            return _schema.empty_table(_schema.TASKS)
        return attach(_newest_first(pa.concat_tables(tables)), self.labels.table())

    def read(self) -> pd.DataFrame:
        """The tasks frame kept on disk (same columns as ``tasks_frame``)."""
        return _schema.to_frame(self.read_table())

    def refresh(self, source: Any) -> RefreshResult:
        """Pull tasks newer than the newest row and re-fetch rows that were not terminal.

        ``source``: a client (``generations.list()``, optionally ``.get``) or an
        iterable of task dicts, newest first (a listing).
        """
        old = self.read_table()
        known = set(old["task_id"].to_pylist())
        pending_mask = pc.invert(pc.fill_null(pc.is_in(old["status"], pa.array(_TERMINAL)), False))
        pending = old.filter(pending_mask)
        pending_ids = set(pending["task_id"].to_pylist())
        newest = pc.max(old["created_at"]).as_py() if old.num_rows else None
        get = getter(source)
        boundary = newest
        if pending.num_rows and get is None:
            oldest_pending = pc.min(pending["created_at"]).as_py()
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
        if not fetched:
            return RefreshResult(0, 0, read, ())
        new = attach(tasks_table(list(fetched.values())), self.labels.table())
        keep = old.filter(pc.invert(pc.is_in(old["task_id"], new["task_id"])))
        months = self._write_months(keep, new)
        return RefreshResult(added, updated, read, months)

    def _write_months(self, keep: pa.Table, new: pa.Table) -> tuple[str, ...]:
        touched = sorted(set(_months(new).to_pylist()))
        keep_months = _months(keep)
        new_months = _months(new)
        for month in touched:
            part = pa.concat_tables(
                [keep.filter(pc.equal(keep_months, month)), new.filter(pc.equal(new_months, month))]
            )
            self._write_atomic(self.path / f"month={month}" / PART, _newest_first(part))
        return tuple(touched)

    @staticmethod
    def _write_atomic(target: Path, table: pa.Table) -> None:
        _parquet.write_atomic(target, table)


def _months(table: pa.Table) -> pa.Array:
    col = table["created_at"]
    if table.num_rows == 0:
        return pa.array([], pa.string())
    filled = pc.fill_null(col, pa.scalar(datetime(1970, 1, 1, tzinfo=UTC), _schema.TIMESTAMP))
    return pc.strftime(filled, format="%Y-%m").combine_chunks()


def _newest_first(table: pa.Table) -> pa.Table:
    return table.sort_by([("created_at", "descending"), ("task_id", "descending")])
