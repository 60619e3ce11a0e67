"""Where the ledger's queries run: the backend protocol, the registry of engines, and a source
registered on one.

A :class:`Backend` is a small adapter over a SQL engine: DuckDB (``_duckdb.DuckDB``,
embedded, the default) or Spark (``spark.Spark``). :data:`ENGINES` names them, so
``open_ledger(source, engine="spark")`` works; another engine is one adapter, one entry
here and its dialect's trace schema (``dialects.TRACE_PARSE``). :func:`register_source`
registers what a ledger reads as the view ``tasks``: a tasks frame or Arrow table, a
``LedgerStore``'s month-partitioned Parquet files (read in place, its recorded labels
joined), a path a cluster reads itself (``s3://...``), or anything ``tasks_table`` reads.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Final, Protocol

import pandas as pd
import pyarrow as pa

import songlab.ledger._schema as _schema
from songlab.ledger.dialects import transpile

__all__ = ["Backend", "ENGINES", "make_backend", "register_source"]


class Backend(Protocol):
    """What the engine needs of a SQL engine.

    ``dialect``: sqlglot's name for its SQL (the queries are transpiled to it);
    ``register``: an Arrow table as a view; ``register_dataset``: a ``LedgerStore``'s
    month-partitioned Parquet files (Hive ``month=YYYY-MM``) as a view, read in place;
    ``materialize``: a query's result kept as a table; ``arrow``: a query's rows;
    ``write_csv``: a query's rows as CSV with a header, in the source's order. A backend
    whose ``cluster`` is true (Spark's) is a cluster engine: ``Ledger.precompute`` makes the
    cube there in one job and asks the cube's rows on an embedded DuckDB.
    """

    dialect: str

    def register(self, name: str, table: pa.Table) -> None: ...

    def register_dataset(self, name: str, root: Path, files: Sequence[Path]) -> None: ...

    def execute(self, sql: str) -> None: ...

    def materialize(self, name: str, sql: str) -> None: ...

    def arrow(self, sql: str) -> pa.Table: ...

    def write_csv(self, sql: str, path: Path) -> None: ...

    def close(self) -> None: ...


def _duckdb() -> Backend:
    import songlab.ledger._duckdb as _duckdb

    return _duckdb.DuckDB()


def _spark() -> Backend:  # a local session; a given one or a cluster: spark.Spark(...)
    from songlab.ledger.spark import Spark

    return Spark()


ENGINES: Final[dict[str, Callable[[], Backend]]] = {"duckdb": _duckdb, "spark": _spark}


def make_backend(engine: str | Backend) -> Backend:
    """The backend of ``engine``: a name of :data:`ENGINES`, or a backend object as it is."""
    if not isinstance(engine, str):
        return engine
    make = ENGINES.get(engine)
    if make is None:
        raise ValueError(
            f"engine: {', '.join(map(repr, ENGINES))} or a Backend object, got {engine!r}"
        )
    return make()


def _is_store(source: Any) -> bool:
    return hasattr(source, "files") and hasattr(source, "path") and hasattr(source, "record_table")


def register_source(backend: Backend, source: Any) -> None:
    """``source`` as the view ``tasks`` on ``backend`` (see the module's doc)."""
    register_path = getattr(backend, "register_path", None)
    if isinstance(source, str) and "://" in source and callable(register_path):
        register_path("tasks", source)  # a dataset the engine reads itself (s3://, hdfs://)
        return
    store = None
    if isinstance(source, str | os.PathLike):
        from songlab.ledger.store import LedgerStore

        store = LedgerStore(source)
    elif _is_store(source):
        store = source
    if store is not None:
        _register_store(backend, store)
    elif isinstance(source, pd.DataFrame | pa.Table):
        backend.register("tasks", _schema.as_table(source, keep_dictionary=True))
    else:
        from songlab.ledger.tasks import tasks_table

        backend.register("tasks", tasks_table(source))


def _register_store(backend: Backend, store: Any) -> None:
    """A ``LedgerStore``'s month files, read in place, with the labels recorded after a refresh:
    a task's own, else its run's (as ``tasks.resolve`` gives a sub-task its run's labels)."""
    files = store.files()
    if not files:
        backend.register("tasks", _schema.empty_table(_schema.TASKS))
        return
    backend.register_dataset("raw_tasks", Path(store.path), files)
    lab = store.record_table()
    sql = "CREATE OR REPLACE TEMP VIEW tasks AS SELECT * FROM raw_tasks"
    if lab is not None and lab.num_rows:
        backend.register("labels_raw", lab.select(["task_id", "project", "tags", "key_id"]))
        backend.materialize(
            "labels",
            transpile(
                "SELECT task_id, min(project) AS project, min(tags) AS tags, "
                "min(key_id) AS key_id FROM labels_raw GROUP BY task_id",
                backend.dialect,
            ),
        )
        others = [c for c in _schema.TASKS.names if c not in _schema.LABEL_COLUMNS]
        fill = ", ".join(f"coalesce(t.{c}, o.{c}, p.{c}) AS {c}" for c in _schema.LABEL_COLUMNS)
        sql = (
            f"CREATE OR REPLACE TEMP VIEW tasks AS SELECT "
            f"{', '.join('t.' + c for c in others)}, {fill} FROM raw_tasks t "
            "LEFT JOIN labels o ON o.task_id = t.task_id "
            "LEFT JOIN labels p ON p.task_id = t.parent_task_id"
        )
    backend.execute(transpile(sql, backend.dialect))
