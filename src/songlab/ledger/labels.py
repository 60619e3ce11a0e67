"""Attribution: which project, tags and API key each task was made for, kept locally.

The API has no label field. songlab scopes labels on the client side
(``with attribution(project="jingles", tags=["q4"]):``, or a client-level
default with :func:`set_default_attribution`), and every client writes every
accepted create, with its labels, to the client's record
(``songlab.client.RecordStore``). Labels are never sent to the service; they
survive a kernel restart because they are on disk. :func:`record_table` reads a
record (or a legacy :class:`LabelStore`, the ``labels.sqlite`` of older songlab
versions, still written for clients without a record) as the :data:`RECORD`
columns the ledger joins; :func:`attach` joins it onto a tasks table (labels, and
the facts the service does not show: ``tasks.resolve``).

Project names and tags: 1-64 characters of ``A-Z a-z 0-9 _ . : -`` and space
(tags without spaces); tags are stored sorted, joined by ``,``.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Final

import pyarrow as pa

import songlab.localfiles as localfiles
from songlab.client import (
    CreateRecord,
    Labels,
    default_labels,
    label_scope,
    make_labels,
    on_create,
    set_default_labels,
)
from songlab.ledger._record import record_table

__all__ = [
    "LABEL_FILE",
    "LabelStore",
    "attach",
    "attribution",
    "default_project",
    "make_labels",
    "set_default_attribution",
]

LABEL_FILE: Final[str] = "labels.sqlite"


# make_labels: the rule lives with the client (songlab.connect(project=...) applies it too)


@contextmanager
def attribution(project: str | None = None, tags: Iterable[str] | str = ()) -> Iterator[Any]:
    """Label every create made in this block (this thread / async task and what it starts).

    Nested blocks merge: the inner project wins, tags add up. Labels stay
    local: they are recorded by a tracking :class:`LabelStore`, never sent.
    """
    with label_scope(make_labels(project, tags)) as active:
        yield active


def set_default_attribution(
    client: Any, project: str | None = None, tags: Iterable[str] | str = ()
) -> None:
    """Labels every create of ``client`` carries outside any ``attribution`` block (and under one,
    merged). ``project=None`` with no tags removes the default."""
    lab = make_labels(project, tags)
    set_default_labels(client, None if lab == Labels() else lab)


def default_project(client: Any) -> str | None:
    """The project ``client`` labels its creates with by default (None if it has none)."""
    return default_labels(client).project


_COLUMNS = (
    "task_id",
    "key_id",
    "project",
    "tags",
    "idempotency_key",
    "route",
    "tool_id",
    "operation",
    "model",
    "license",
    "estimate_usd",
    "recorded_at",
)
_DDL = f"""CREATE TABLE IF NOT EXISTS attribution (
    {", ".join(f"{c} TEXT" if c != "license" else "license INTEGER" for c in _COLUMNS)},
    PRIMARY KEY (task_id, key_id)
)"""

LABELS: Final[pa.Schema] = pa.schema(
    [pa.field(c, pa.int8() if c == "license" else pa.string()) for c in _COLUMNS]
)


class LabelStore:
    """The labels of the creates a client made, in one SQLite file (``labels.sqlite``).

    ``path``: the file, or a directory (a ledger directory) to hold ``labels.sqlite``.
    Each record is committed at once, so a killed kernel loses nothing it was told.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        p = Path(path)
        self.path = p / LABEL_FILE if p.suffix != ".sqlite" else p
        self._lock = threading.Lock()
        self._removers: list[Any] = []

    def __repr__(self) -> str:
        return f"LabelStore({str(self.path)!r})"

    def _connect(self) -> sqlite3.Connection:
        localfiles.ensure_private_file(self.path, what="the ledger's labels")
        con = sqlite3.connect(self.path, timeout=30)
        con.execute(_DDL)
        return con

    def record(self, rec: CreateRecord) -> None:
        """Store one create's labels (an idempotent repeat overwrites its own row)."""
        row = (
            rec.task_id,
            rec.key_id,
            rec.project,
            ",".join(sorted(rec.tags)) or None,
            rec.idempotency_key,
            rec.route,
            rec.tool_id,
            rec.operation,
            rec.model,
            rec.license,
            None if rec.estimate_usd is None else str(rec.estimate_usd),
            rec.recorded_at.isoformat(),
        )
        with self._lock:
            con = self._connect()
            try:
                with con:
                    con.execute(
                        f"INSERT OR REPLACE INTO attribution ({', '.join(_COLUMNS)}) "
                        f"VALUES ({', '.join('?' * len(_COLUMNS))})",
                        row,
                    )
            finally:
                con.close()

    def track(self, client: Any) -> LabelStore:
        """Record every create ``client`` makes from now on (until :meth:`untrack`), through
        the client's public create hook (``songlab.client.on_create``)."""
        self._removers.append(on_create(self.record, client=client))
        return self

    def untrack(self) -> None:
        for remove in self._removers:
            remove()
        self._removers.clear()

    def table(self) -> pa.Table:
        """Every recorded create (schema ``LABELS``), oldest first."""
        if not self.path.exists():
            return LABELS.empty_table()
        con = self._connect()
        try:
            rows = con.execute(
                f"SELECT {', '.join(_COLUMNS)} FROM attribution ORDER BY recorded_at, task_id"
            ).fetchall()
        finally:
            con.close()
        cols: list[Sequence[Any]] = (
            list(zip(*rows, strict=True)) if rows else [[] for _ in _COLUMNS]
        )
        return pa.Table.from_arrays(
            [pa.array(list(c), f.type) for c, f in zip(cols, LABELS, strict=True)], schema=LABELS
        )


def attach(tasks: pa.Table, record: Any) -> pa.Table:
    """``tasks`` joined with the client's record (see ``tasks.resolve``): labels (project,
    tags, key_id; a sub-task inherits its run's), and the facts the service did not show.

    A task created by two keys (the same idempotency key used from both) keeps the first
    record. Tasks nobody recorded keep nulls (the listing cannot say which key made a task).
    """
    from songlab.ledger.tasks import resolve

    return resolve(tasks, record_table(record))
