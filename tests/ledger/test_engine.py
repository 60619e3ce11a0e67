"""The ledger engine: one relation, the cube equal to it, SQL that carries over to Spark."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pandas as pd
import pyarrow as pa
import pytest
import sqlglot
from sqlglot.errors import ErrorLevel

from songlab.ledger import _schema, dialects, engine, relation, tables, tiers
from songlab.ledger._duckdb import DuckDB
from songlab.ledger.dates import period
from songlab.ledger.reconcile import reconcile_on
from songlab.ledger.synthetic import synthetic_table


class Recording(DuckDB):
    """DuckDB, keeping every statement it was given."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[str] = []

    def arrow(self, sql: str) -> Any:
        self.seen.append(sql)
        return super().arrow(sql)

    def execute(self, sql: str) -> None:
        self.seen.append(sql)
        super().execute(sql)

    def materialize(self, name: str, sql: str) -> None:
        self.seen.append(sql)
        super().materialize(name, sql)


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    return _schema.to_frame(synthetic_table(3_000, labels=True, seed=4))


KEY_SETS = [
    (),
    ("operation",),
    ("model", "tier"),
    ("cost_source",),
    ("day",),
    ("week",),
    ("month", "project"),
    ("tag",),
    ("key_id",),
    ("status", "license"),
]


@pytest.mark.parametrize("keys", KEY_SETS, ids=lambda k: ",".join(k) or "total")
def test_the_cube_gives_what_the_relation_gives(frame: pd.DataFrame, keys: tuple[str, ...]) -> None:
    p = period(start="2026-09-10", end="2026-10-20")
    with engine.open_ledger(frame) as lg:
        rows = [lg.spend(keys), lg.spend(keys, p=p)]
        lg.precompute()
        cubed = [lg.spend(keys), lg.spend(keys, p=p)]
    for a, b in zip(rows, cubed, strict=True):
        pd.testing.assert_frame_equal(a, b)
        assert all(isinstance(v, Decimal) for v in a["cost_usd"].tolist())


def test_every_query_of_a_report_transpiles_to_spark_sql(frame: pd.DataFrame) -> None:
    backend = Recording()
    seen = frame.assign(seen_at=frame["created_at"])  # as if each task had its own refresh
    snaps = pa.table(
        {
            "taken_at": pa.array(
                sorted(frame["created_at"].dropna().tolist())[::500], _schema.TIMESTAMP
            ),
            "total_effective": pa.array(range(10_000, 9_994, -1), pa.int64()),
        }
    )
    with engine.open_ledger(seen, engine=backend) as lg:
        tables.build_from(lg, budgets=["100", "jingles=5"], p=period(start="2026-09-01"))
        tiers.prices_of(lg)
        tiers.compare(lg, by=["project"])
        for freq in (None, "day", "month"):  # the reconciliation with the balance
            assert len(reconcile_on(lg, snaps, freq=freq))
    assert len(backend.seen) > 25
    for sql in backend.seen:
        if "json_valid" in sql:  # the trace: each engine's own JSON schema (TRACE_PARSE)
            trace, valid = dialects.TRACE_PARSE["spark"]
            duck_trace, duck_valid = dialects.TRACE_PARSE["duckdb"]
            sql = sql.replace(duck_trace, trace).replace(duck_valid, valid)
        spark = sqlglot.transpile(
            sql, read="duckdb", write="spark", unsupported_level=ErrorLevel.RAISE
        )
        for statement in spark:
            sqlglot.parse_one(statement, read="spark")  # Spark SQL reads it back


class Cluster(Recording):
    """DuckDB as a cluster engine looks to the ledger (``cluster``, as Spark), counting the
    queries it is sent."""

    cluster = True

    def __init__(self) -> None:
        super().__init__()
        self.queries: list[str] = []

    def arrow(self, sql: str) -> Any:
        self.queries.append(sql)
        return super().arrow(sql)


def _report_of(frame: pd.DataFrame, backend: Any, snaps: pa.Table) -> tuple[list[Any], int]:
    """The report's figures and frames, then a tier comparison by project and the
    reconciliation (queries of the tasks and small tables); how many queries the report
    sent the backend, when it counts them."""
    as_of = frame["created_at"].max().to_pydatetime()
    with engine.open_ledger(frame, engine=backend) as lg:
        data = tables.build_from(lg, budgets=["100", "jingles=5"], as_of=as_of)
        sent = len(getattr(backend, "queries", ()))
        return [
            data.figures,
            data.forecast,
            *data.tables.values(),
            *data.charts.values(),
            tiers.compare(lg, by=["project"]),
            reconcile_on(lg, snaps, freq="day"),
        ], sent


def test_on_a_cluster_the_report_sends_it_a_few_scans_and_asks_the_cube_here(
    frame: pd.DataFrame,
) -> None:
    """A cluster engine is sent the cube's scan and the few queries of the tasks (the
    report's: four, the cube, the month's last 7 days, the period's Agent One runs and the
    newest tasks; on the old code, thirty-odd, each a job or more on Spark); every query of
    the cube, of the small tables (prices, balance snapshots) and of the runs' traces runs on
    the embedded DuckDB (the cluster gets none of them), and the answers are DuckDB's, to
    the cent."""
    snaps = pa.table(
        {
            "taken_at": pa.array(
                sorted(frame["created_at"].dropna().tolist())[::500], _schema.TIMESTAMP
            ),
            "total_effective": pa.array(range(10_000, 9_994, -1), pa.int64()),
        }
    )
    cluster = Cluster()
    on_cluster, sent = _report_of(frame, cluster, snaps)
    assert 1 <= sent <= 4, sent
    # what the embedded DuckDB holds
    here = {"cube", "cube_all", "prices", "tiers", "snapshots", "agent_runs_0"}
    assert not [sql for sql in cluster.queries if engine._tables_of(sql) <= here]
    assert not [
        sql for sql in cluster.queries if "from_json" in sql.lower()
    ]  # no trace parsed there
    on_duckdb, _ = _report_of(frame, "duckdb", snaps)
    assert on_cluster[:2] == on_duckdb[:2]
    for mine, theirs in zip(on_cluster[2:], on_duckdb[2:], strict=True):
        pd.testing.assert_frame_equal(mine, theirs)


def test_agent_runs_have_their_own_tier_row_and_no_tier_price(frame: pd.DataFrame) -> None:
    by_tier = engine.spend(frame, "tier")
    assert by_tier["tier"].tolist()[-1] == relation.AGENT_TIER
    runs = frame[(frame["operation"] == "agent") & frame["parent_task_id"].isna()]
    assert by_tier.iloc[-1]["tasks"] == len(runs) > 0
    comp = tiers.tier_comparison(frame)
    assert relation.AGENT_TIER not in comp["tier"].tolist() and len(comp) == 5


def test_pending_tasks_are_not_spent_and_unknown_is_never_zero() -> None:
    from songlab.ledger import tasks_frame
    from tests.ledger._util import snap

    tasks = tasks_frame(
        [
            snap("billed"),
            snap("done", cost_usd=None),
            snap("running", status="processing", cost_usd=None),
            snap("mystery", operation="mystery", model="x", cost_usd=None),
            snap("failed", status="failed", cost_usd=None),
        ]
    )
    t = engine.spend(tasks, ()).iloc[0]
    assert t["tasks"] == 5 and t["cost_usd"] == Decimal("0.24")
    assert (t["billed_tasks"], t["estimated_tasks"], t["pending_tasks"]) == (1, 1, 1)
    assert (t["unknown_tasks"], t["failed_tasks"]) == (1, 1)
    assert t["pending_usd"] == Decimal("0.12") and t["estimated_usd"] == Decimal("0.12")


def test_a_backend_is_an_adapter_and_an_unknown_engine_is_refused(frame: pd.DataFrame) -> None:
    with pytest.raises(ValueError, match="engine"):
        with engine.open_ledger(frame, engine="oracle"):
            pass
    assert dialects.transpile("SELECT 1", "duckdb") == "SELECT 1"
    assert "EXPLODE" in dialects.transpile("SELECT unnest(string_split(a, ',')) FROM t", "spark")
