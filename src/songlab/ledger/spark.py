"""The ledger engine on Apache Spark: a ``Backend`` (``engine.Backend``) over a SparkSession.

The engine writes every query once, in DuckDB's dialect, and sqlglot transpiles it to
Spark SQL; this adapter registers the sources and runs the queries. Three ways to get a
session:

- ``Spark()``: a local session made here (``local[2]``, one shuffle partition, the UI
  off, bound to loopback), stopped on ``close()``; where this process already runs a
  session (a notebook's), that one is used as if given, and left running;
- ``Spark(remote="sc://host:15002")``: a Spark Connect session on a cluster;
- ``Spark(session)``: a SparkSession you already have (never stopped here).

What makes the figures exact and the days right, on any session (set for the ledger's
queries, and put back on ``close()`` for a session that was given):

- ``spark.sql.session.timeZone = UTC``: ``CAST(created_at AS DATE)`` is the UTC day, as in
  DuckDB;
- ``spark.sql.decimalOperations.allowPrecisionLoss = false``: a product or quotient of
  decimals keeps its scale (with precision loss allowed, ``BIGINT * DECIMAL(18, 8)``
  would round to 7 places); sums of ``DECIMAL(18, 8)`` are ``DECIMAL(28, 8)``, exact;
- ANSI mode (Spark 4's default) is left on: an overflow is an error, never a null.

A ``LedgerStore``'s directory is read as what it is, Hive-partitioned Parquet
(``month=YYYY-MM``; partition types not inferred, so ``month`` stays a string and
``month=unknown`` reads as such); a path Spark can read (``s3://...``, ``hdfs://...``)
works the same (:meth:`Spark.register_path`). Money arrives as Parquet ``DECIMAL(18, 8)``,
times as UTC microseconds.
"""

from __future__ import annotations

import atexit
import os
import re
import shutil
import tempfile
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

import pyarrow as pa
import pyarrow.compute as pc

import songlab.ledger._schema as _schema

__all__ = ["EXACT_CONF", "LOCAL_CONF", "Spark", "active_session", "local_session"]

# Session settings the figures depend on (also set on a given or remote session).
EXACT_CONF: Final[dict[str, str]] = {
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.decimalOperations.allowPrecisionLoss": "false",
}
# A local session sized for a laptop or a 2-core CI box. Adaptive execution is off: it
# re-plans each query at every shuffle, a job per stage (a report ran 20 jobs, against 9
# without it, and took twice as long at 5,000 tasks), for skew and partition sizes that one
# machine's data does not have. One shuffle partition: what the ledger's queries shuffle on
# one machine is the groups of their aggregates (thousands of rows, not the tasks), and a
# sorted result of more than one partition costs a job of its own (sampling the rows to
# split them by range): a report ran 14 jobs with 4 partitions, 12 with one. No constraint
# propagation: it infers, in a query of top-level tasks (no parent), that the labels joined
# by parent are none, which makes that join's broadcast of the labels differ from the one
# by task id, so it is not reused: a broadcast, a job, more in each such query (12 jobs, 10
# without); it also costs planning time on the relation's many aliases.
LOCAL_CONF: Final[dict[str, str]] = {
    "spark.sql.shuffle.partitions": "1",
    "spark.sql.constraintPropagation.enabled": "false",
    "spark.sql.adaptive.enabled": "false",
    "spark.default.parallelism": "2",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.driver.host": "127.0.0.1",
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.driver.memory": "2g",
    "spark.sql.sources.partitionColumnTypeInference.enabled": "false",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
}
_VIEW_MADE: Final[re.Pattern[str]] = re.compile(
    r"\s*CREATE\s+(?:OR\s+REPLACE\s+)?TEMP(?:ORARY)?\s+VIEW\s+`?(\w+)`?", re.IGNORECASE
)
_LOG4J: Final[str] = """rootLogger.level = error
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n
"""


# PySpark warns that it "does not yet fully support pandas >= 3" when a session starts; the
# ledger hands Spark Arrow tables, never pandas frames, so the warning is not ours.
_PANDAS_WARNING: Final[str] = ".*PySpark does not yet fully support pandas.*"


def active_session() -> Any:
    """The classic SparkSession this process already runs (a notebook's, a test's), or None.
    ``SparkSession.builder.getOrCreate()`` would hand that one back, ignoring the settings it
    is given, and stopping it would stop its owner's work: songlab uses it as given."""
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    if SparkContext._active_spark_context is None:
        return None
    return SparkSession.getActiveSession() or SparkSession._instantiatedSession


def local_session(
    master: str = "local[2]", config: dict[str, str] | None = None, *, scratch: Path | None = None
) -> Any:
    """A local SparkSession set up for the ledger (``LOCAL_CONF`` and ``EXACT_CONF``, then
    ``config``), bound to loopback; its scratch files go under ``scratch`` (default: a new
    temporary directory, removed when Python exits, after pyspark's own exit handler has
    stopped the JVM). Stop it with ``session.stop()``; hand it to ``Spark(session)`` as
    often as you like (one JVM for a report and its FOCUS export)."""
    from pyspark.sql import SparkSession

    if scratch is None:
        scratch = Path(tempfile.mkdtemp(prefix="songlab-spark-"))
        # registered before the session exists: exit handlers run last-in first-out, so
        # this one runs after the one pyspark registers when it starts the JVM
        atexit.register(shutil.rmtree, scratch, True)
    config = config or {}

    log4j = scratch / "log4j2.properties"
    log4j.write_text(_LOG4J)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    builder = SparkSession.builder.master(master).appName("songlab-ledger")
    conf = {
        **LOCAL_CONF,
        "spark.local.dir": str(scratch / "local"),
        "spark.sql.warehouse.dir": str(scratch / "warehouse"),
        "spark.driver.extraJavaOptions": f"-Dlog4j2.configurationFile=file:{log4j}",
        **EXACT_CONF,
        **config,
    }
    for key, value in conf.items():
        builder = builder.config(key, value)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=_PANDAS_WARNING)
        return builder.getOrCreate()


def _remote(url: str, config: dict[str, str]) -> Any:
    from pyspark.sql import SparkSession

    if not url.startswith("sc://"):
        raise ValueError(f"spark remote: a Spark Connect address sc://HOST:PORT, got {url!r}")
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=_PANDAS_WARNING)
        session = SparkSession.builder.remote(url).getOrCreate()
    for key, value in config.items():
        session.conf.set(key, value)
    return session


def _plain_decimals(table: pa.Table) -> pa.Table:
    """Money columns as plain decimal text (``0.00000000``), as DuckDB's CSV writes them."""
    cols = [
        _schema.plain_text(c.combine_chunks()) if pa.types.is_decimal(c.type) else c
        for c in table.columns
    ]
    return pa.Table.from_arrays(cols, names=table.column_names)


def _for_spark(table: pa.Table) -> pa.Table:
    """What Spark's Arrow reader takes: dictionaries spelled out, durations as microseconds,
    extension types as their storage."""
    cols, fields = [], []
    for f, c in zip(table.schema, table.columns, strict=True):
        t = f.type
        if isinstance(t, pa.ExtensionType):
            # an extension column's chunks are extension arrays (the stub: plain arrays), and
            # chunked_array has no overload for a type known at run time
            c = pa.chunked_array([ch.storage for ch in c.chunks], t.storage_type)  # type: ignore[call-overload, attr-defined]
            t = t.storage_type
        if pa.types.is_dictionary(t):
            c, t = pc.cast(c, t.value_type), t.value_type
        if pa.types.is_duration(t):
            c, t = pc.cast(c, pa.int64()), pa.int64()
        cols.append(c)
        fields.append(pa.field(f.name, t))
    return pa.Table.from_arrays(cols, schema=pa.schema(fields))


class Spark:
    """An ``engine.Backend`` on Spark (see the module's doc). ``config``: more session
    settings (a local session's at start; a remote or given one's at run time)."""

    dialect: str = "spark"
    # a cluster engine: the ledger's cube is one job here, its rows queried on an embedded
    # DuckDB (``Ledger.precompute``)
    cluster: bool = True

    def __init__(
        self,
        session: Any = None,
        *,
        remote: str | None = None,
        master: str = "local[2]",
        config: dict[str, str] | None = None,
    ) -> None:
        if session is not None and remote is not None:
            raise ValueError("spark: give a SparkSession or a remote address, not both")
        self._scratch: Path | None = None
        self._owned = False
        self._restore: dict[str, str | None] = {}
        extra = dict(config or {})
        if session is None and remote is None:
            session = active_session()  # this process's own session: used, never stopped
        if session is not None:
            self.session = session
            self._set({**EXACT_CONF, **extra})
        elif remote is not None:
            self.session = _remote(remote, {})
            self._set({**EXACT_CONF, **extra})
        else:
            self._owned = True
            self._scratch = Path(tempfile.mkdtemp(prefix="songlab-spark-"))
            self.session = local_session(master, extra, scratch=self._scratch)
        self._views: list[str] = []
        self._cached: list[Any] = []

    def _set(self, conf: dict[str, str]) -> None:
        for key, value in conf.items():
            try:
                self._restore.setdefault(key, self.session.conf.get(key))
            except Exception:  # noqa: BLE001 - an unset key has no previous value
                self._restore.setdefault(key, None)
            self.session.conf.set(key, value)

    # -- Backend ----------------------------------------------------------------------

    def register(self, name: str, table: pa.Table) -> None:
        df = self.session.createDataFrame(_for_spark(table))
        df.createOrReplaceTempView(name)
        self._views.append(name)

    def register_dataset(self, name: str, root: Path, files: Sequence[Path]) -> None:
        self.register_path(name, str(root), [str(f) for f in files])

    def register_path(self, name: str, root: str, files: Sequence[str] = ()) -> None:
        """The tasks columns of a Hive-partitioned Parquet dataset at ``root`` (any path
        Spark reads); ``files``: just those files (a ``LedgerStore``'s month files).

        Read with the tasks schema given (``_schema.TASKS``), not inferred: a file of an older
        songlab that lacks a column reads it as null, and no Spark job opens every file's
        footer to merge their schemas before the first query (``mergeSchema``: a job of its
        own, seconds on a cold JVM)."""
        schema = ", ".join(f"`{f.name}` {_spark_type(f.type)}" for f in _schema.TASKS)
        reader = self.session.read.schema(schema).option("basePath", root)
        df = reader.parquet(*(files or [root]))
        df.select(*_schema.TASKS.names).createOrReplaceTempView(name)
        self._views.append(name)

    def execute(self, sql: str) -> None:
        """Run a statement; a view it creates is this backend's, dropped on :meth:`close`."""
        self.session.sql(sql)
        made = _VIEW_MADE.match(sql)
        if made is not None:
            self._views.append(made.group(1))

    def materialize(self, name: str, sql: str) -> None:
        """``sql`` as the view ``name``, kept in memory once the first query that reads it has
        computed it (no job of its own)."""
        df = self.session.sql(sql).cache()
        df.createOrReplaceTempView(name)
        self._cached.append(df)
        self._views.append(name)

    def arrow(self, sql: str) -> pa.Table:
        table: pa.Table = self.session.sql(sql).toArrow()
        return table

    def write_csv(self, sql: str, path: Path) -> None:
        """The rows of ``sql`` as CSV at ``path`` (on this machine), money as plain decimal
        text. Spark does not promise the source's order (it reads files in parallel)."""
        import pyarrow.csv as pacsv

        table = _plain_decimals(self.arrow(sql))
        pacsv.write_csv(table, str(path), pacsv.WriteOptions(quoting_style="needed"))

    def close(self) -> None:
        """Drop what this backend cached; stop the session it made, or give a session it was
        given back as it was (its views dropped, its settings put back)."""
        for df in self._cached:
            _quietly(df.unpersist)
        self._cached.clear()
        if self._owned:
            self.session.stop()
        else:
            for view in dict.fromkeys(self._views):
                _quietly(self.session.catalog.dropTempView, view)
            for key, value in self._restore.items():
                if value is None:
                    _quietly(self.session.conf.unset, key)
                else:
                    _quietly(self.session.conf.set, key, value)
        self._views.clear()
        if self._scratch is not None:
            shutil.rmtree(self._scratch, ignore_errors=True)
            self._scratch = None


def _quietly(call: Any, *args: Any) -> None:
    """``call(*args)``, whatever it raises ignored: a clean-up step on a session that may be
    gone or remote (py4j, gRPC and Spark's own errors share no base class but Exception)."""
    try:
        call(*args)
    except Exception:  # noqa: BLE001 - see the doc: nothing narrower covers every session
        pass


def _spark_type(t: pa.DataType) -> str:
    if pa.types.is_decimal(t):
        return f"DECIMAL({t.precision}, {t.scale})"
    if pa.types.is_timestamp(t):
        return "TIMESTAMP"
    if pa.types.is_int8(t):
        return "TINYINT"
    if pa.types.is_integer(t) or pa.types.is_duration(t):
        return "BIGINT"
    return "STRING"
