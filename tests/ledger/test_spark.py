"""The ledger on Apache Spark gives DuckDB's figures to the cent.

One million synthetic tasks written as the ``LedgerStore`` dataset (Hive ``month=``
partitions), read in place by a local Spark session (``local[2]``, four shuffle
partitions) and by DuckDB; the same queries (sqlglot transpiles DuckDB's dialect to
Spark's) must give the same rows, Decimal for Decimal. Also: a SparkSession that was given
keeps its own settings, and a real Spark Connect server (``sc://``) gives the same answer.

Slow (a JVM starts, a million rows are aggregated twice): ``make test`` runs it, ``make
test-fast`` does not. Skipped where there is no Java (``make java-deps`` installs one).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from songlab.ledger import focus, tables
from songlab.ledger.store import LedgerStore
from songlab.ledger.synthetic import write_synthetic_dataset

pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(1500),  # a JVM and a million rows on a loaded 2-core box
    pytest.mark.skipif(shutil.which("java") is None, reason="no java (make java-deps)"),
]
pyspark = pytest.importorskip("pyspark")

MILLION = 1_000_000
LEDGER_VIEW = (
    "CREATE OR REPLACE TEMP VIEW ledger AS SELECT *, CAST(created_at AS DATE) AS day, "
    "parent_task_id IS NULL AS top_level FROM tasks"
)


def _spark_sql(sql: str) -> str:
    import sqlglot

    return ";\n".join(sqlglot.transpile(sql, read="duckdb", write="spark"))


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> LedgerStore:
    root = tmp_path_factory.mktemp("ledger-1m")
    write_synthetic_dataset(root, MILLION, seed=7, days=45)
    return LedgerStore(root)


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    from songlab.ledger.spark import Spark

    backend = Spark()
    try:
        yield backend
    finally:
        backend.close()


def _rows(table: pa.Table) -> list[tuple[Any, ...]]:
    out = [tuple(r.values()) for r in table.to_pylist()]
    return sorted(out, key=lambda r: tuple((v is None, str(v)) for v in r))


def test_the_cube_of_a_million_tasks_is_duckdbs_to_the_cent(
    dataset: LedgerStore, spark: Any
) -> None:
    spark.register_dataset("tasks", Path(dataset.path), dataset.files())
    spark.execute(_spark_sql(LEDGER_VIEW))
    spark.materialize("cube", _spark_sql(tables.CUBE_SQL))
    got = _rows(spark.arrow("SELECT * FROM cube"))
    with tables.connect(dataset) as con:
        want = _rows(con.sql(tables.CUBE_SQL).to_arrow_table())
    assert len(got) == len(want) > 1_000
    assert got == want
    (total,) = spark.arrow(
        "SELECT sum(cost_usd) AS usd FROM cube WHERE facet = 'kind' AND top_level"
    ).to_pylist()
    total = total["usd"]
    assert isinstance(total, Decimal) and total.as_tuple().exponent == -8
    with tables.connect(dataset) as con:
        (want_total,) = con.sql(
            "SELECT sum(cost_usd) FROM tasks WHERE parent_task_id IS NULL"
        ).fetchone()
    assert total == want_total


def test_focus_rows_on_spark_are_duckdbs(dataset: LedgerStore, spark: Any) -> None:
    spark.register_dataset("tasks", Path(dataset.path), dataset.files())
    spark.execute(_spark_sql(LEDGER_VIEW))
    account = focus.Account("acct-spark")
    on_spark = focus.FocusExport()
    spark_days: dict[Any, Decimal] = {}
    for rows in focus.focus_rows(
        lambda sql: spark.arrow(_spark_sql(sql)), account=account, report=on_spark
    ):
        for start, cost in zip(
            rows["ChargePeriodStart"].to_pylist(), rows["EffectiveCost"].to_pylist(), strict=True
        ):
            spark_days[start] = spark_days.get(start, Decimal(0)) + cost
    on_duckdb = focus.FocusExport()
    duck_days: dict[Any, Decimal] = {}
    with tables.connect(dataset) as con:
        con.execute(LEDGER_VIEW)
        for rows in focus.focus_rows(
            lambda sql: con.sql(sql).to_arrow_table(), account=account, report=on_duckdb
        ):
            for start, cost in zip(
                rows["ChargePeriodStart"].to_pylist(),
                rows["EffectiveCost"].to_pylist(),
                strict=True,
            ):
                duck_days[start] = duck_days.get(start, Decimal(0)) + cost
    assert on_spark.usage_rows == on_duckdb.usage_rows > 800_000
    assert on_spark.effective_usd == on_duckdb.effective_usd
    assert spark_days == duck_days and len(spark_days) >= 44


def test_a_given_session_keeps_its_own_settings(spark: Any) -> None:
    from songlab.ledger.spark import Spark

    session = spark.session
    session.conf.set("spark.sql.session.timeZone", "America/New_York")
    try:
        lent = Spark(session)
        (row,) = lent.arrow("SELECT current_timezone() AS tz").to_pylist()
        assert row["tz"] == "UTC"  # the ledger's days are UTC days
        lent.register("probe", pa.table({"x": [1]}))
        lent.close()
        assert session.conf.get("spark.sql.session.timeZone") == "America/New_York"
        assert not session.catalog.tableExists("probe")
        assert not session.sparkContext._jsc.sc().isStopped()  # not ours to stop
    finally:
        session.conf.set("spark.sql.session.timeZone", "UTC")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def connect_server() -> Iterator[str]:
    """A real Spark Connect server (``SparkConnectServer`` via spark-submit) on loopback."""
    home = Path(pyspark.__file__).parent
    port = _free_port()
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"}
    proc = subprocess.Popen(
        [
            str(home / "bin" / "spark-submit"),
            "--class",
            "org.apache.spark.sql.connect.service.SparkConnectServer",
            "--master",
            "local[2]",
            "--conf",
            "spark.connect.grpc.binding.address=127.0.0.1",
            "--conf",
            f"spark.connect.grpc.binding.port={port}",
            "--conf",
            "spark.ui.enabled=false",
            "--conf",
            "spark.sql.shuffle.partitions=4",
            "spark-internal",
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                pytest.fail(f"Spark Connect server exited with {proc.returncode}")
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(1)
        else:
            pytest.fail("Spark Connect server did not listen within 240 s")
        yield f"sc://127.0.0.1:{port}"
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


def test_spark_connect_reads_the_dataset_to_the_cent(
    dataset: LedgerStore, connect_server: str
) -> None:
    from songlab.ledger.spark import Spark

    remote = Spark(remote=connect_server)
    try:
        remote.register_dataset("tasks", Path(dataset.path), dataset.files())
        (got,) = remote.arrow(
            "SELECT count(*) AS n, CAST(sum(cost_usd) AS DECIMAL(38, 8)) AS usd, "
            "current_timezone() AS tz FROM tasks WHERE parent_task_id IS NULL"
        ).to_pylist()
    finally:
        remote.close()
    with tables.connect(dataset) as con:
        want = con.sql(
            "SELECT count(*), sum(cost_usd) FROM tasks WHERE parent_task_id IS NULL"
        ).fetchone()
    assert (got["n"], got["usd"], got["tz"]) == (want[0], want[1], "UTC")
    with pytest.raises(ValueError, match="sc://HOST:PORT"):
        Spark(remote="127.0.0.1:15002")
