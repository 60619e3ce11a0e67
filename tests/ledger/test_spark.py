"""The ledger on Apache Spark gives DuckDB's figures to the cent.

One million synthetic tasks written as the ``LedgerStore`` dataset (Hive ``month=``
partitions), read in place by a local Spark session (``local[2]``, four shuffle
partitions) and by DuckDB; the same queries (sqlglot transpiles DuckDB's dialect to
Spark's) must give the same report, every table and figure Decimal for Decimal, and the
same FOCUS rows. Also: a SparkSession that was given keeps its own settings, and a real
Spark Connect server (``sc://``), from another process, gives the same report (of 100,000
tasks: the interface, the million is checked on the local session).

Slow (a JVM starts, a million rows are aggregated twice): ``make test`` runs it, ``make
test-fast`` does not. Skipped where there is no Java (``make java-deps`` installs one).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pandas as pd
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
AS_OF = datetime(2026, 10, 10, 12, tzinfo=UTC)  # inside the synthetic data's second month
BUDGETS = ["5000", "jingles=100"]


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> LedgerStore:
    root = tmp_path_factory.mktemp("ledger-1m")
    write_synthetic_dataset(root, MILLION, seed=7, days=45)
    return LedgerStore(root)


@pytest.fixture(scope="module")
def small_dataset(tmp_path_factory: pytest.TempPathFactory) -> LedgerStore:
    """For the cluster interface (the million is checked on the local session)."""
    root = tmp_path_factory.mktemp("ledger-100k")
    write_synthetic_dataset(root, 100_000, seed=8, days=40)
    return LedgerStore(root)


@pytest.fixture(scope="module")
def session() -> Iterator[Any]:
    from songlab.ledger.spark import local_session

    s = local_session()
    try:
        yield s
    finally:
        s.stop()


def _cells(frame: pd.DataFrame) -> list[tuple[Any, ...]]:
    return [
        tuple(None if v is None or v is pd.NA else v for v in row)
        for row in frame.itertuples(index=False)
    ]


def test_a_million_tasks_report_on_spark_is_duckdbs_to_the_cent(
    dataset: LedgerStore, session: Any
) -> None:
    from songlab.ledger.spark import Spark

    on_duckdb = tables.build(dataset, as_of=AS_OF, budgets=BUDGETS)
    on_spark = tables.build(dataset, as_of=AS_OF, budgets=BUDGETS, engine=Spark(session))
    assert on_spark.figures["tasks"] == on_duckdb.figures["tasks"] == MILLION
    assert dict(on_spark.figures) == dict(on_duckdb.figures)
    spend = on_spark.figures["spend"]
    assert isinstance(spend, Decimal) and spend.as_tuple().exponent == -8 and spend > 0
    assert on_spark.forecast == on_duckdb.forecast
    assert set(on_spark.tables) == set(on_duckdb.tables)
    for name, frame in on_duckdb.tables.items():
        other = on_spark.tables[name]
        assert list(other.columns) == list(frame.columns), name
        assert [str(t) for t in other.dtypes] == [str(t) for t in frame.dtypes], name
        assert _cells(other) == _cells(frame), name
    for name, frame in on_duckdb.charts.items():
        assert _cells(on_spark.charts[name]) == _cells(frame), name


def _focus_by_day(source: Any, engine: Any) -> tuple[focus.FocusExport, dict[Any, Decimal]]:
    report = focus.FocusExport()
    days: dict[Any, Decimal] = {}
    for rows in focus.focus_batches(
        source, account="acct-spark", engine=engine, report=report, balances=None
    ):
        for start, cost in zip(
            rows["ChargePeriodStart"].to_pylist(), rows["EffectiveCost"].to_pylist(), strict=True
        ):
            days[start] = days.get(start, Decimal(0)) + cost
    return report, days


def test_focus_on_spark_is_duckdbs(dataset: LedgerStore, session: Any) -> None:
    from songlab.ledger.spark import Spark

    on_spark, spark_days = _focus_by_day(dataset, Spark(session))
    on_duckdb, duck_days = _focus_by_day(dataset, "duckdb")
    assert on_spark.usage_rows == on_duckdb.usage_rows > 800_000
    assert on_spark.effective_usd == on_duckdb.effective_usd
    assert (on_spark.unknown_cost_tasks, on_spark.released_tasks) == (
        on_duckdb.unknown_cost_tasks,
        on_duckdb.released_tasks,
    )
    assert spark_days == duck_days and len(spark_days) >= 44
    report = tables.build(dataset, as_of=AS_OF)
    assert on_spark.effective_usd + on_spark.undated_usd == report.figures["spend"]


def test_a_given_session_keeps_its_own_settings(session: Any) -> None:
    from songlab.ledger.spark import Spark

    session.conf.set("spark.sql.session.timeZone", "America/New_York")
    try:
        lent = Spark(session)
        (row,) = lent.arrow("SELECT current_timezone() AS tz").to_pylist()
        assert row["tz"] == "UTC"  # the ledger's days are UTC days
        lent.register("probe", pa.table({"x": [1]}))
        lent.close()
        assert session.conf.get("spark.sql.session.timeZone") == "America/New_York"
        assert not session.catalog.tableExists("probe")
        assert session.range(1).count() == 1  # not ours to stop
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
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                pytest.fail(f"Spark Connect server exited with {proc.returncode}")
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(1)
        else:
            pytest.fail("Spark Connect server did not listen within 300 s")
        yield f"sc://127.0.0.1:{port}"
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


# A Python process can hold a classic Spark session or a Spark Connect one, not both: the
# Connect client runs in its own process, as a user's would.
CONNECT_CLIENT = r"""
import json, sys
from datetime import datetime
from songlab.ledger import tables
from songlab.ledger.spark import Spark
d = tables.build(sys.argv[2], as_of=datetime.fromisoformat(sys.argv[3]),
                 engine=Spark(remote=sys.argv[1]))
print(json.dumps({k: str(v) for k, v in d.figures.items()}))
"""


def test_spark_connect_gives_the_same_report(
    small_dataset: LedgerStore, connect_server: str
) -> None:
    import sys

    done = subprocess.run(
        [
            sys.executable,
            "-c",
            CONNECT_CLIENT,
            connect_server,
            str(small_dataset.path),
            AS_OF.isoformat(),
        ],
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    want = tables.build(small_dataset, as_of=AS_OF).figures
    assert got == {k: str(v) for k, v in want.items()}
    assert Decimal(got["spend"]) > 0
    from songlab.ledger.spark import Spark

    with pytest.raises(ValueError, match="sc://HOST:PORT"):
        Spark(remote="127.0.0.1:15002")


def test_cli_report_and_focus_on_spark_are_duckdbs(
    sandbox: Any, new_account: Any, tmp_path: Path
) -> None:
    """``songlab report --engine spark --focus`` in its own process, on a ledger refreshed
    from the sandbox, writes the report and FOCUS rows DuckDB's run writes."""
    import sys

    from songlab.client import Client

    acct = new_account()
    ledger = tmp_path / "ledger"
    with Client(acct.api_key, base_url=sandbox.base_url) as c:
        LedgerStore(ledger).track(c)
        for prompt in ("a", "b"):
            h = c.generations.create(
                operation="write_lyrics", model="v5", payload={"prompt": prompt}
            )
            c.generations.wait(h.task_id, timeout=30)
    env = {**os.environ, "SONGLAB_API_KEY": acct.api_key, "SONGLAB_BASE_URL": sandbox.base_url}
    runs = {}
    for engine in ("duckdb", "spark"):
        focus_path = tmp_path / f"{engine}.csv"
        done = subprocess.run(
            [sys.executable, "-m", "songlab.cli", "report", "--out", str(tmp_path / f"{engine}.html"),
             "--ledger", str(ledger), "--focus", str(focus_path), "--engine", engine,
             "--as-of", "2030-01-01"],
            env=env, capture_output=True, text=True, timeout=900,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-3000:]
        assert "FOCUS 1.2: 2 usage rows" in done.stdout
        assert acct.api_key not in done.stdout + done.stderr
        runs[engine] = sorted(focus_path.read_text().splitlines()[1:])
    assert runs["spark"] == runs["duckdb"] and len(runs["spark"]) == 2
