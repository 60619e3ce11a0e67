"""The ledger on Apache Spark gives DuckDB's figures to the cent.

Every test here shares ONE local Spark session (``spark_jvm`` in ``conftest.py``:
``local[1]``, one shuffle partition, no UI, Spark Connect's plugin on a loopback port).
A year of a busy account (a million synthetic tasks, a ``LedgerStore`` dataset in Hive
``month=`` partitions) is read in place by Spark and by DuckDB; the same queries (sqlglot
transpiles DuckDB's dialect to Spark's) give the same report, every table and figure
Decimal for Decimal. A smaller dataset (5,000 tasks over two months) gives the same report
and FOCUS rows on both. Then the interfaces: ``Spark()`` in a process that runs a session uses it and
leaves it running, a given session keeps its own settings, ``songlab report --engine spark
--focus`` in this process, and ``songlab report --spark-remote sc://...`` from another
process (a Spark Connect client: no JVM of its own) on the same JVM.

A Spark report is a few jobs: one scan of every task (the cube's, kept on the session as it
computes it; its rows are queried on an embedded DuckDB) and a few reads of just the rows and
columns the other queries need, counted here by the SparkContext's status tracker.
``benchmarks/report_spark.py`` times both engines side by side. Skipped with the
reason where there is no Java and none can be installed (``make java-deps``); ``make
test-fast`` skips it (slow).
"""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pytest

from songlab.ledger import focus, tables
from songlab.ledger.engine import open_ledger
from songlab.ledger.store import LedgerStore
from songlab.ledger.synthetic import write_synthetic_dataset
from tests.ledger._spark import SparkJVM

pytestmark = [pytest.mark.slow]

TASKS = 5_000  # the queries' count, not the rows, makes Spark's time here
SCALE = 1_000_000  # a year of a busy account: about 30 s more on the shared session here
AS_OF = datetime(2026, 10, 10, 12, tzinfo=UTC)  # inside the synthetic data's second month
BUDGETS = ["500", "jingles=10"]
# the jobs a report runs here (five): the cube's scan, the period's Agent One runs (their
# traces parsed on this side), the month's last 7 days and the newest tasks, a job or two each
# (a broadcast of the recorded labels is one)
MAX_JOBS = 5


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> LedgerStore:
    root = tmp_path_factory.mktemp("ledger-spark")
    write_synthetic_dataset(root, TASKS, seed=7, days=45)
    return LedgerStore(root)


@pytest.fixture(scope="module")
def duck_report(dataset: LedgerStore) -> tables.ReportData:
    return tables.build(dataset, as_of=AS_OF, budgets=BUDGETS)


def _cells(frame: pd.DataFrame) -> list[tuple[Any, ...]]:
    return [
        tuple(None if v is None or v is pd.NA else v for v in row)
        for row in frame.itertuples(index=False)
    ]


def _assert_same(on_spark: tables.ReportData, on_duckdb: tables.ReportData, tasks: int) -> None:
    assert on_spark.figures["tasks"] == on_duckdb.figures["tasks"] == tasks
    assert dict(on_spark.figures) == dict(on_duckdb.figures)
    spend = on_spark.figures["spend"]
    assert isinstance(spend, Decimal) and spend.as_tuple().exponent == -8 and spend > 0
    assert on_spark.forecast == on_duckdb.forecast
    assert set(on_spark.tables) == set(on_duckdb.tables) and len(on_duckdb.tables) >= 8
    for name, frame in on_duckdb.tables.items():
        other = on_spark.tables[name]
        assert list(other.columns) == list(frame.columns), name
        assert [str(t) for t in other.dtypes] == [str(t) for t in frame.dtypes], name
        assert _cells(other) == _cells(frame), name
    assert any(len(f) > 1 for f in on_duckdb.tables.values())  # not empty tables compared
    for name, frame in on_duckdb.charts.items():
        assert _cells(on_spark.charts[name]) == _cells(frame), name


def test_a_year_of_a_busy_account_on_spark_is_duckdbs_to_the_cent(
    tmp_path_factory: pytest.TempPathFactory, spark_jvm: SparkJVM
) -> None:
    """A million tasks over a year, Hive-partitioned by month, read in place by both
    engines: every figure, table and chart of the report equal."""
    from songlab.ledger.spark import Spark

    root = tmp_path_factory.mktemp("ledger-spark-scale")
    write_synthetic_dataset(root, SCALE, seed=11, days=365)
    data = LedgerStore(root)
    as_of = datetime(2027, 8, 20, 12, tzinfo=UTC)  # in the year's last month
    on_duckdb = tables.build(data, as_of=as_of, budgets=BUDGETS)
    on_spark = tables.build(data, as_of=as_of, budgets=BUDGETS, engine=Spark(spark_jvm.session))
    _assert_same(on_spark, on_duckdb, SCALE)


def test_a_spark_report_is_a_few_jobs_over_one_cached_scan_and_duckdbs_to_the_cent(
    dataset: LedgerStore, duck_report: tables.ReportData, spark_jvm: SparkJVM
) -> None:
    """The report's thirty-odd queries on Spark: every task read once (the cube's scan, its
    result cached as it computes it), the cube's groups queried on this side, the few queries
    of the tasks that remain reading only their rows and columns: at most ``MAX_JOBS`` Spark
    jobs, counted under a job group
    by the status tracker (a job or more per query before: 34 here). The same report, to the
    cent, as DuckDB's."""
    from songlab.ledger.spark import Spark

    session = spark_jvm.session
    context = session.sparkContext
    group = "songlab-report-jobs"
    context.setJobGroup(group, "one Spark report")
    try:
        with open_ledger(dataset, engine=Spark(session)) as lg:
            on_spark = tables.build_from(lg, as_of=AS_OF, budgets=BUDGETS)
            cached = session.catalog.isCached("cube_sums")
        jobs = context.statusTracker().getJobIdsForGroup(group)
    finally:
        context.setLocalProperty("spark.jobGroup.id", None)
    assert 1 <= len(jobs) <= MAX_JOBS, f"{len(jobs)} Spark jobs"
    assert cached  # the cube's rows kept on the cluster as its one scan computed them
    assert not session.catalog.tableExists("ledger")  # closed: nothing left on the session
    _assert_same(on_spark, duck_report, TASKS)


def _focus(source: Any, engine: Any) -> tuple[focus.FocusExport, list[tuple[Any, ...]]]:
    report = focus.FocusExport()
    rows: list[tuple[Any, ...]] = []
    for part in focus.focus_batches(
        source, account="acct-spark", engine=engine, report=report, balances=None
    ):
        rows.extend(tuple(r.values()) for r in part.to_pylist())
    return report, sorted(rows, key=repr)


def test_focus_on_spark_is_duckdbs_row_for_row(
    dataset: LedgerStore, duck_report: tables.ReportData, spark_jvm: SparkJVM
) -> None:
    from songlab.ledger.spark import Spark

    on_spark, spark_rows = _focus(dataset, Spark(spark_jvm.session))
    on_duckdb, duck_rows = _focus(dataset, "duckdb")
    assert on_spark.usage_rows == on_duckdb.usage_rows > TASKS * 0.8
    assert spark_rows == duck_rows  # every column of every row, Decimal for Decimal
    assert on_spark.effective_usd == on_duckdb.effective_usd
    assert (on_spark.unknown_cost_tasks, on_spark.released_tasks, on_spark.undated_tasks) == (
        on_duckdb.unknown_cost_tasks,
        on_duckdb.released_tasks,
        on_duckdb.undated_tasks,
    )
    assert on_spark.effective_usd + on_spark.undated_usd == duck_report.figures["spend"]


def test_spark_uses_the_running_session_and_leaves_it_running(spark_jvm: SparkJVM) -> None:
    from songlab.ledger.spark import Spark

    session = spark_jvm.session
    session.conf.set("spark.sql.session.timeZone", "America/New_York")
    try:
        for make in (lambda: Spark(session), Spark):  # given; found running in this process
            lent = make()
            assert lent.session is session
            (row,) = lent.arrow("SELECT current_timezone() AS tz").to_pylist()
            assert row["tz"] == "UTC"  # the ledger's days are UTC days
            lent.register("probe", pa.table({"x": [1]}))
            lent.close()
            assert session.conf.get("spark.sql.session.timeZone") == "America/New_York"
            assert not session.catalog.tableExists("probe")
            assert session.range(1).count() == 1  # not ours to stop
    finally:
        session.conf.set("spark.sql.session.timeZone", "UTC")
    with pytest.raises(ValueError, match="sc://HOST:PORT"):
        Spark(remote="127.0.0.1:15002")
    with pytest.raises(ValueError, match="not both"):
        Spark(session, remote="sc://127.0.0.1:1")


@pytest.fixture
def sandbox_ledger(sandbox: Any, new_account: Any, tmp_path: Path) -> Any:
    """A ledger refreshed from the sandbox: two finished tasks of a fresh account."""
    from songlab.client import Client

    acct = new_account()
    ledger = tmp_path / "cli-ledger"
    with Client(acct.api_key, base_url=sandbox.base_url) as c:
        LedgerStore(ledger).track(c)
        for prompt in ("a", "b"):
            h = c.generations.create(
                operation="write_lyrics", model="v5", payload={"prompt": prompt}
            )
            c.generations.wait(h.task_id, timeout=30)
    return acct, ledger


def _report_args(out: Path, ledger: Path, engine: list[str]) -> list[str]:
    return [
        "report", "--out", str(out / "r.html"), "--ledger", str(ledger),
        "--focus", str(out / "focus.csv"), "--csv", str(out / "csv"),
        "--as-of", "2030-01-01", *engine,
    ]  # fmt: skip


def _written(out: Path) -> dict[str, list[str]]:
    files = {"focus.csv": out / "focus.csv", **{p.name: p for p in (out / "csv").glob("*.csv")}}
    # FOCUS rows and the tasks CSV come in the engine's order; the tables in the report's
    written = {name: sorted(p.read_text().splitlines()) for name, p in files.items()}
    # the reconciliation reads the balance snapshots, and each report run records one more
    # (its own, at its own time), so its rows differ from run to run on any engine: compared
    # between these runs by its columns only
    recon = written.pop("reconciliation.csv")
    written["reconciliation.csv columns"] = [line for line in recon if line.startswith("period,")]
    return written


def test_cli_report_on_spark_local_and_remote_writes_duckdbs_files(
    sandbox: Any,
    sandbox_ledger: Any,
    spark_jvm: SparkJVM,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``songlab report --engine spark --focus`` here (it finds the running session, and
    leaves it running), and ``--spark-remote sc://...`` from another process, a Spark
    Connect client on the same JVM: the same CSV tables and FOCUS rows as DuckDB's run."""
    from songlab.cli import main

    acct, ledger = sandbox_ledger
    env = {"SONGLAB_API_KEY": acct.api_key, "SONGLAB_BASE_URL": sandbox.base_url}
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    runs: dict[str, dict[str, list[str]]] = {}
    for name, engine in (("duckdb", []), ("spark", ["--engine", "spark"])):
        out = tmp_path / name
        assert main(_report_args(out, ledger, engine)) == 0
        said = capsys.readouterr()
        assert "FOCUS 1.2: 2 usage rows" in said.out
        assert acct.api_key not in said.out + said.err
        runs[name] = _written(out)
    assert spark_jvm.session.range(1).count() == 1  # the CLI did not stop the running session
    out = tmp_path / "remote"
    done = subprocess.run(
        [sys.executable, "-m", "songlab.cli",
         *_report_args(out, ledger, ["--spark-remote", spark_jvm.remote])],
        env={**os.environ, **env}, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert "FOCUS 1.2: 2 usage rows" in done.stdout
    assert acct.api_key not in done.stdout + done.stderr
    runs["remote"] = _written(out)
    assert len(runs["duckdb"]["focus.csv"]) == 3  # the header and two usage rows
    assert len(runs["duckdb"]) >= 5
    assert runs["spark"] == runs["duckdb"]
    assert runs["remote"] == runs["duckdb"]


def test_a_month_file_of_an_older_songlab_reads_its_missing_columns_as_null(
    tmp_path: Path, spark_jvm: SparkJVM
) -> None:
    """The tasks are read with their schema given (no job merging every file's): a month
    file written before a column existed reads that column as null, on Spark as on DuckDB,
    and the columns it has as they are."""
    import pyarrow.parquet as pq

    from songlab.ledger._duckdb import DuckDB
    from songlab.ledger.spark import Spark
    from songlab.ledger.synthetic import synthetic_table

    table = synthetic_table(40, seed=3, labels=True)
    old = table.slice(20).drop_columns(["seen_at", "key_id", "failure_error"])
    for month, part in (("2026-10", table.slice(0, 20)), ("2026-09", old)):
        (tmp_path / f"month={month}").mkdir()
        pq.write_table(part, tmp_path / f"month={month}" / "part.parquet")
    files = sorted(tmp_path.glob("month=*/part.parquet"))
    query = "SELECT task_id, key_id, seen_at, cost_usd FROM t ORDER BY task_id"
    got = {}
    for name, backend in (("spark", Spark(spark_jvm.session)), ("duckdb", DuckDB())):
        try:
            backend.register_dataset("t", tmp_path, files)
            got[name] = backend.arrow(query).to_pylist()
        finally:
            backend.close()
    assert got["spark"] == got["duckdb"]
    assert len(got["spark"]) == 40
    older = {r["task_id"] for r in old.to_pylist()}
    assert all(
        r["key_id"] is None and r["seen_at"] is None for r in got["spark"] if r["task_id"] in older
    )
    assert any(r["key_id"] is not None for r in got["spark"] if r["task_id"] not in older)
