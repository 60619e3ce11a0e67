"""The tables of a cost report, aggregated in DuckDB, shared by the HTML report and the exports.

:func:`build` takes a tasks frame, an Arrow table, a :class:`LedgerStore` or the
path of its directory and returns a :class:`ReportData`: the period, as-of time,
forecast and budgets, and every table by name (the CSV file names and Excel
sheet names). Nothing is done per row in Python: DuckDB scans the Arrow table
(zero copy) or the month-partitioned Parquet dataset in place, out of core, on
all cores, and makes one fine-grained aggregate (the *cube*: one row per day,
label, operation, model, tier, status and cost source) plus three bounded scans
(the forecast window, the newest tasks, the Agent One runs). Every table of the
report comes from those; none grows with the number of tasks (the per-day
table grows with the number of days).

The SQL is kept portable (standard SQL: ``FILTER``, ``CAST``, ``GROUP BY``
columns; ``docs/ledger.md`` shows it for Spark SQL and Trino); money is
``DECIMAL(18, 8)``, summed as ``DECIMAL(38, 8)``: exact, never a float.

A task with no ``created_at`` (a snapshot that does not show one) has no day:
it counts in the all-time totals and shows as **date unknown**; a bounded
period cannot place it, so it is counted apart. A task with no ``cost_usd`` is
**of unknown cost**: counted, never summed as 0.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any, Final

import pandas as pd
import pyarrow as pa

from songlab.ledger import _estimate, _schema
from songlab.ledger.periods import (
    Forecast,
    Period,
    budget_rows,
    forecast_of,
    parse_budgets,
    period,
    period_starts,
)
from songlab.spec import LICENSE_NAMES

__all__ = [
    "AGENT_STEP_ROWS",
    "DATE_UNKNOWN",
    "NO_KEY",
    "NO_PROJECT",
    "NO_TAG",
    "ReportData",
    "TASK_COLUMNS",
    "TASK_ROWS",
    "build",
    "copy_tasks_csv",
    "spend_of",
    "spend_over_time_table",
    "tier_comparison_of",
    "top_n",
]

TASK_COLUMNS = [
    "created_at",
    "task_id",
    "project",
    "tags",
    "key_id",
    "operation",
    "model",
    "tier",
    "status",
    "cost_usd",
    "cost_source",
]
# The tasks table holds the newest TASK_ROWS of the period (the CSV export holds them all);
# the per-step table of Agent One the steps of the newest runs, AGENT_STEP_ROWS at most.
TASK_ROWS: Final[int] = 1_000
AGENT_STEP_ROWS: Final[int] = 1_000

# How the attribution tables name the tasks that carry no label.
NO_PROJECT, NO_TAG, NO_KEY = "(no project)", "(untagged)", "(not recorded)"
DATE_UNKNOWN: Final[str] = "date unknown"
OTHER: Final[str] = "other"

# The one scan of every task: the cube, two facets of it in one pass (GROUPING SETS): per
# day and kind of task (operation, model, tier, status, cost source) and per day and label
# (project, tags, key). Standard SQL (Spark SQL and Trino run it as is).
CUBE_SQL: Final[str] = """
SELECT CASE WHEN GROUPING(operation) = 0 THEN 'kind' ELSE 'label' END AS facet,
       CAST(created_at AS DATE) AS day,
       operation, model, license, tier, status,
       project, tags, key_id,
       cost_source,
       parent_task_id IS NULL AS top_level,
       CAST(count(*) AS BIGINT) AS tasks,
       CAST(count(*) FILTER (WHERE cost_source = 'billed') AS BIGINT) AS billed_tasks,
       CAST(count(*) FILTER (WHERE cost_source = 'estimate') AS BIGINT) AS estimated_tasks,
       CAST(count(*) FILTER (WHERE cost_usd IS NULL) AS BIGINT) AS unknown_cost_tasks,
       CAST(sum(cost_usd) AS DECIMAL(38, 8)) AS cost_usd,
       CAST(sum(billed_usd) AS DECIMAL(38, 8)) AS billed_usd,
       CAST(sum(cost_usd) FILTER (WHERE cost_source = 'estimate') AS DECIMAL(38, 8))
           AS estimated_usd,
       min(created_at) AS first_at,
       max(created_at) AS last_at
FROM tasks
GROUP BY GROUPING SETS (
  (CAST(created_at AS DATE), operation, model, license, tier, status, cost_source,
   parent_task_id IS NULL),
  (CAST(created_at AS DATE), project, tags, key_id, cost_source, parent_task_id IS NULL)
)
"""
LABEL_KEYS: Final[frozenset[str]] = frozenset({"project", "tags", "key_id", "tag"})

# The month-to-date and trailing-7-day spend per project, for the forecast and budgets.
WINDOW_SQL: Final[str] = """
SELECT project,
       CAST(sum(cost_usd) FILTER (WHERE created_at >= $month_start) AS DECIMAL(38, 8)) AS mtd,
       CAST(sum(cost_usd) FILTER (WHERE created_at >= $week_ago) AS DECIMAL(38, 8)) AS last7
FROM tasks
WHERE parent_task_id IS NULL AND created_at >= $since AND created_at <= $as_of
GROUP BY project
"""

# Agent One runs' steps, from each run's trace (output.metadata_json), plus the run's own fee.
_TRACE_TYPE = (
    '{"steps": [{"index": "INTEGER", "kind": "VARCHAR", "tool": "VARCHAR", '
    '"tool_id": "VARCHAR", "status": "VARCHAR", "cost_usd": "VARCHAR", '
    '"task_id": "VARCHAR", "text": "VARCHAR"}], "agent_fee_usd": "VARCHAR", '
    '"stopped_by": "VARCHAR"}'
)
STEPS_SQL: Final[str] = f"""
WITH runs AS (
  SELECT task_id AS run_task_id, model AS run_model, status AS run_status,
         tool_id AS run_tool_id, created_at,
         from_json(metadata_json, '{_TRACE_TYPE}') AS m
  FROM tasks
  WHERE operation = 'agent' AND parent_task_id IS NULL AND metadata_json IS NOT NULL
    AND json_valid(metadata_json) AND {{period}}
), calls AS (
  SELECT run_task_id, run_model, created_at, unnest(m.steps) AS s FROM runs
)
SELECT run_task_id, run_model, created_at, s."index" AS step_index, s.kind AS kind,
       s.tool AS tool, s.tool_id AS tool_id, s.status AS status,
       CAST(s.cost_usd AS DECIMAL(18, 8)) AS cost_usd, s.task_id AS task_id, s.text AS text
FROM calls
UNION ALL
SELECT run_task_id, run_model, created_at, NULL, 'agent_fee', NULL, run_tool_id, run_status,
       CAST(m.agent_fee_usd AS DECIMAL(18, 8)), run_task_id, m.stopped_by
FROM runs
"""

_STEP_WORDS: Final[str] = """CASE kind WHEN 'agent_fee' THEN 'own fee'
  WHEN 'tool_call' THEN 'called ' || coalesce(tool, 'a tool')
  WHEN 'prose' THEN 'wrote text' WHEN 'verification' THEN 'checked its work' ELSE kind END"""


@dataclass
class ReportData:
    period: Period
    as_of: datetime
    forecast: Forecast
    budgets: dict[str | None, Decimal]
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    figures: dict[str, Any] = field(default_factory=dict)  # numbers of the header and summary
    agent_by_step: pd.DataFrame | None = None  # Agent One cost by tier and step (for the chart)
    charts: dict[str, pd.DataFrame] = field(default_factory=dict)  # what the charts draw
    source_note: str | None = None
    store: Any = None  # the LedgerStore reported from, if any (for sections that need it)

    @property
    def total(self) -> Decimal:
        return Decimal(self.figures["spend"])


# ---------------------------------------------------------------------------------- sources


def _dataset_files(path: Path) -> list[str]:
    """The dataset's files, newest month first (rows are newest first in each)."""
    return [str(f) for f in sorted(path.glob("month=*/*.parquet"), reverse=True)]


@contextmanager
def connect(source: Any) -> Iterator[Any]:
    """A DuckDB connection with the view ``tasks`` over ``source`` (in place, nothing copied).

    ``source``: a tasks frame, an Arrow table with the tasks columns, a
    ``LedgerStore`` or the path of its directory (``month=YYYY-MM/part.parquet``).
    """
    import duckdb

    scratch = tempfile.mkdtemp(prefix="songlab-duckdb-")
    con = duckdb.connect(
        config={
            "threads": max(1, os.cpu_count() or 1),
            "memory_limit": "1GB",
            "temp_directory": scratch,
            "preserve_insertion_order": False,
        }
    )
    try:
        con.execute("SET TimeZone = 'UTC'")
        con.execute("SET enable_progress_bar = false")
        _register(con, source)
        yield con
    finally:
        con.close()
        import shutil

        shutil.rmtree(scratch, ignore_errors=True)


def _register(con: Any, source: Any) -> None:
    from songlab.ledger.spend import as_table

    store = None
    if isinstance(source, str | os.PathLike):
        from songlab.ledger.store import LedgerStore

        store = LedgerStore(source)
    elif hasattr(source, "files") and hasattr(source, "path"):
        store = source
    if store is None:
        table = as_table(source, keep_dictionary=True)  # DuckDB reads dictionaries in place
        con.register("tasks", table)
        return
    files = _dataset_files(Path(store.path))
    cols = ", ".join(_schema.TASKS.names)
    if not files:
        con.register("tasks", _schema.empty_table(_schema.TASKS))
        return
    listed = ", ".join("'" + f.replace("'", "''") + "'" for f in files)
    con.execute(
        f"CREATE VIEW raw_tasks AS SELECT {cols} FROM read_parquet([{listed}], "
        "hive_partitioning = true, union_by_name = true)"
    )
    labels = getattr(store, "labels", None)
    lab = labels.table() if labels is not None and hasattr(labels, "table") else None
    if lab is None or lab.num_rows == 0:
        con.execute("CREATE VIEW tasks AS SELECT * FROM raw_tasks")
        return
    # the labels recorded after a refresh (LedgerStore.read_table joins them the same way)
    con.register("labels_raw", lab.select(["task_id", "project", "tags", "key_id"]))
    con.execute(
        "CREATE TEMP TABLE labels AS SELECT task_id, first(project) AS project, "
        "first(tags) AS tags, first(key_id) AS key_id FROM labels_raw GROUP BY task_id"
    )
    others = ", ".join(c for c in _schema.TASKS.names if c not in _schema.LABEL_COLUMNS)
    fill = ", ".join(f"coalesce(t.{c}, o.{c}, p.{c}) AS {c}" for c in _schema.LABEL_COLUMNS)
    con.execute(
        f"CREATE VIEW tasks AS SELECT {', '.join('t.' + c for c in others.split(', '))}, {fill} "
        "FROM raw_tasks t LEFT JOIN labels o ON o.task_id = t.task_id "
        "LEFT JOIN labels p ON p.task_id = t.parent_task_id"
    )


def _one(con: Any, sql: str, params: Any = None) -> tuple[Any, ...]:
    """The first row of a query."""
    rows = con.sql(sql, params=params).fetchall()
    return tuple(rows[0]) if rows else ()


def _frame(con: Any, sql: str, params: Any = None) -> pd.DataFrame:
    return _schema.to_frame(con.sql(sql, params=params).to_arrow_table())


# ------------------------------------------------------------------------------------- cube


_SPEND_VALUES = """CAST(sum(tasks) AS BIGINT) AS tasks,
  CAST(sum(cost_usd) AS DECIMAL(38, 8)) AS cost_usd,
  CAST(sum(estimated_tasks) AS BIGINT) AS estimated_tasks,
  CAST(coalesce(sum(estimated_usd), 0) AS DECIMAL(38, 8)) AS estimated_usd,
  CAST(sum(unknown_cost_tasks) AS BIGINT) AS unknown_cost_tasks"""


def _spend(con: Any, keys: Sequence[str], *, order: str | None = None) -> pd.DataFrame:
    source = _view_for(keys)
    cols = ", ".join(keys)
    order = order or ", ".join(f"{k} NULLS LAST" for k in keys)
    sql = (
        f"SELECT {cols}, {_SPEND_VALUES} FROM {source} WHERE top_level "
        f"GROUP BY {cols} ORDER BY {order}"
    )
    out = _frame(con, sql)
    money = pd.ArrowDtype(_schema.MONEY_SUM)
    for c in ("cost_usd", "estimated_usd"):
        if c in out.columns:
            out[c] = out[c].astype(money)
    return out


def top_n(frame: pd.DataFrame, key: str, n: int = 12, *, missing: str) -> pd.DataFrame:
    """The ``n`` groups that cost most (nulls named ``missing``), the rest summed as ``other``."""
    f = frame.assign(**{key: frame[key].fillna(missing)})
    f = f.sort_values(["cost_usd", key], ascending=[False, True], na_position="last", kind="stable")
    if len(f) <= n + 1:
        return f.reset_index(drop=True)
    head, rest = f.iloc[:n], f.iloc[n:]
    other: dict[str, Any] = {c: None for c in f.columns}
    other[key] = f"{OTHER} ({len(rest)} more)"
    for c in f.columns:
        if c == key:
            continue
        if c.endswith("_usd"):
            other[c] = sum(
                (v for v in rest[c].tolist() if v is not None and not pd.isna(v)), Decimal(0)
            )
        elif c.endswith("tasks"):
            other[c] = int(rest[c].fillna(0).sum())
    tail = pd.DataFrame([other]).astype({c: f[c].dtype for c in f.columns})
    return pd.concat([head, tail], ignore_index=True)


# -------------------------------------------------------------------------------- rollups


def _rollup(con: Any, freq: str, p: Period, *, by: str | None = None) -> pd.DataFrame:
    """Spend per day / week (Monday) / month of the period, every period present (0 if
    nothing), then a ``date unknown`` row if any task has no date (period null)."""
    trunc = {
        "day": "day",
        "week": "CAST(date_trunc('week', day) AS DATE)",
        "month": "CAST(date_trunc('month', day) AS DATE)",
    }[freq]
    keys = f"{trunc} AS period" + (f", {by}" if by else "")
    group = "1" + (", 2" if by else "")
    view = _view_for([by] if by else [])
    g = _frame(con, f"SELECT {keys}, {_SPEND_VALUES} FROM {view} WHERE top_level GROUP BY {group}")
    dated = g[g["period"].notna()]
    lo: date | None
    hi: date | None
    if p.start and p.end:
        lo, hi = p.start, p.end
    elif len(dated):
        lo = p.start or min(dated["period"].tolist())
        hi = p.end or max(dated["period"].tolist())
    else:
        lo = hi = None
    starts = period_starts(lo, hi, freq) if lo and hi else []
    groups: list[Any] = [None]
    if by:
        groups = sorted(v for v in g[by].dropna().unique().tolist())
        if g[by].isna().any():
            groups.append(None)
    index = pd.MultiIndex.from_product([starts, groups], names=["period", "_by"])
    g2 = g.assign(_by=g[by] if by else None)
    merged = (
        g2[g2["period"].notna()]
        .set_index(["period", "_by"])[
            ["tasks", "cost_usd", "estimated_tasks", "estimated_usd", "unknown_cost_tasks"]
        ]
        .reindex(index)
        .reset_index()
    )
    undated = g2[g2["period"].isna()]
    if len(undated):
        merged = pd.concat([merged, undated[merged.columns]], ignore_index=True)
    money = pd.ArrowDtype(_schema.MONEY_SUM)
    ints = pd.ArrowDtype(pa.int64())
    for c in ("tasks", "estimated_tasks", "unknown_cost_tasks"):
        merged[c] = merged[c].fillna(0).astype(ints)
    for c in ("cost_usd", "estimated_usd"):
        merged[c] = pd.array(
            [Decimal(0) if v is None or pd.isna(v) else v for v in merged[c].tolist()], dtype=money
        )
    merged["period"] = merged["period"].astype(pd.ArrowDtype(pa.date32()))
    if by:
        merged = merged.rename(columns={"_by": by})
    else:
        merged = merged.drop(columns="_by")
    running: dict[Any, Decimal] = {}
    cum = []
    for k, v in zip(
        merged[by].tolist() if by else [None] * len(merged),
        merged["cost_usd"].tolist(),
        strict=True,
    ):
        running[k] = running.get(k, Decimal(0)) + v
        cum.append(running[k])
    merged["cumulative_usd"] = pd.array(cum, dtype=money)
    return merged


def spend_over_time_table(
    source: Any, *, by: str | None = "project", freq: str = "day", p: Period | None = None
) -> pd.DataFrame:
    """Spend per ``freq`` by ``by`` of a source (what the spend-over-time chart draws)."""
    with connect(source) as con:
        _cube_views(con, p or period("all"))
        return _rollup(con, freq, p or period("all"), by=by)


def _cube_views(con: Any, p: Period, *, make: bool = True) -> None:
    """``cube`` (made once), and the period's views of it: ``pc`` (kinds), ``pl`` (labels),
    ``pl_tags`` (a row per tag) and ``pl_month`` (labels with the month)."""
    if make:
        con.execute(f"CREATE OR REPLACE TEMP TABLE cube AS {CUBE_SQL}")
    days = _day_filter(p)
    con.execute(
        f"CREATE OR REPLACE TEMP VIEW pc AS SELECT * FROM cube WHERE facet = 'kind' AND {days}"
    )
    con.execute(
        f"CREATE OR REPLACE TEMP VIEW pl AS SELECT * FROM cube WHERE facet = 'label' AND {days}"
    )
    con.execute(
        "CREATE OR REPLACE TEMP VIEW pl_tags AS SELECT *, NULLIF(unnest(string_split("
        "coalesce(tags, ''), ',')), '') AS tag FROM pl"
    )
    con.execute(
        "CREATE OR REPLACE TEMP VIEW pl_month AS SELECT *, coalesce(strftime(day, "
        f"'%Y-%m'), '{DATE_UNKNOWN}') AS month FROM pl"
    )


def _view_for(keys: Sequence[str]) -> str:
    if "tag" in keys:
        return "pl_tags"
    if "month" in keys:
        return "pl_month" if LABEL_KEYS & set(keys) else "pc_month"
    return "pl" if LABEL_KEYS & set(keys) else "pc"


def _day_filter(p: Period) -> str:
    """The cube rows of ``p``; all time keeps the rows of unknown date."""
    if p.start is None and p.end is None:
        return "TRUE"
    parts = ["day IS NOT NULL"]
    if p.start:
        parts.append(f"day >= DATE '{p.start.isoformat()}'")
    if p.end:
        parts.append(f"day <= DATE '{p.end.isoformat()}'")
    return " AND ".join(parts)


def _ts_filter(p: Period) -> str:
    lo, hi = p.bounds()
    if lo is None and hi is None:
        return "TRUE"
    parts = ["created_at IS NOT NULL"]
    if lo is not None:
        parts.append(f"created_at >= TIMESTAMPTZ '{lo.isoformat()}'")
    if hi is not None:
        parts.append(f"created_at < TIMESTAMPTZ '{hi.isoformat()}'")
    return " AND ".join(parts)


# ---------------------------------------------------------------------------------- build


def _as_of(con: Any, now: datetime | None = None) -> datetime:
    now = now or datetime.now(UTC)
    (newest,) = _one(con, "SELECT max(last_at) FROM cube WHERE facet = 'kind'")
    if newest is None:
        return now
    at: datetime = newest.astimezone(UTC) if newest.tzinfo else newest.replace(tzinfo=UTC)
    return max(now, at)


def _window(con: Any, as_of: datetime) -> pd.DataFrame:
    month_start = datetime.combine(as_of.date().replace(day=1), time(), UTC)
    week_ago = as_of - timedelta(days=7)
    params = {
        "month_start": month_start,
        "week_ago": week_ago,
        "since": min(month_start, week_ago),
        "as_of": as_of,
    }
    return _frame(con, WINDOW_SQL, params)


def _sum(values: Any) -> Decimal:
    return sum((v for v in values if v is not None and not pd.isna(v)), Decimal(0))


def _tier_comparison(con: Any) -> pd.DataFrame:
    """The period's billed tasks priced in every tier (list prices per operation and model)."""
    pairs = con.sql("SELECT DISTINCT operation, model FROM pc").fetchall()
    rows = []
    for op, model in pairs:
        prices = [_estimate.estimate(op, model, t) for t in LICENSE_NAMES]
        if all(x is not None for x in prices):
            rows.append(
                {
                    "operation": op,
                    "model": model,
                    **{f"p{t}": x for t, x in zip(LICENSE_NAMES, prices, strict=True)},
                }
            )
    schema = pa.schema(
        [("operation", pa.string()), ("model", pa.string())]
        + [(f"p{t}", _schema.MONEY) for t in LICENSE_NAMES]
    )
    con.register("prices", pa.Table.from_pylist(rows, schema=schema))
    sums = ", ".join(
        f"CAST(sum(c.tasks * p.p{t}) AS DECIMAL(38, 8)) AS p{t}" for t in LICENSE_NAMES
    )
    (n, actual, *priced) = _one(
        con,
        f"SELECT CAST(coalesce(sum(c.tasks), 0) AS BIGINT), CAST(sum(c.cost_usd) AS "
        f"DECIMAL(38, 8)), {sums} FROM pc c JOIN prices p ON c.operation = p.operation "
        "AND c.model = p.model WHERE c.top_level AND c.cost_source = 'billed'",
    )
    (total,) = _one(con, "SELECT CAST(coalesce(sum(tasks), 0) AS BIGINT) FROM pc")
    actual = actual or Decimal(0)
    out = pd.DataFrame(
        {
            "tier": pd.array(list(LICENSE_NAMES.values()), dtype=pd.ArrowDtype(pa.string())),
            "tasks": pd.array([n] * len(LICENSE_NAMES), dtype=pd.ArrowDtype(pa.int64())),
            "priced_usd": pd.array(
                [x or Decimal(0) for x in priced], dtype=pd.ArrowDtype(_schema.MONEY_SUM)
            ),
            "actual_usd": pd.array(
                [actual] * len(LICENSE_NAMES), dtype=pd.ArrowDtype(_schema.MONEY_SUM)
            ),
        }
    )
    out["difference_usd"] = pd.array(
        [
            a - b
            for a, b in zip(out["priced_usd"].tolist(), out["actual_usd"].tolist(), strict=True)
        ],
        dtype=pd.ArrowDtype(_schema.MONEY_SUM),
    )
    out.attrs["excluded_tasks"] = int(total) - int(n)
    return out


def _agent(con: Any, p: Period) -> tuple[pd.DataFrame, pd.DataFrame, int]:
    con.execute(f"CREATE TEMP TABLE steps AS {STEPS_SQL.replace('{period}', _ts_filter(p))}")
    by_step = _frame(
        con,
        f"""
        SELECT coalesce(run_model, '(unknown)') AS tier, {_STEP_WORDS} AS step,
               CAST(count(DISTINCT run_task_id) AS BIGINT) AS runs,
               CAST(count(*) AS BIGINT) AS steps,
               CAST(sum(cost_usd) AS DECIMAL(38, 8)) AS cost_usd,
               CAST(count(*) FILTER (WHERE kind <> 'agent_fee' AND cost_usd IS NULL)
                    AS BIGINT) AS unknown_cost_steps
        FROM steps GROUP BY 1, 2 ORDER BY 1, 5 DESC NULLS LAST, 2""",
    )
    (total,) = _one(con, "SELECT CAST(count(*) AS BIGINT) FROM steps")
    detail = _frame(
        con,
        f"""
        SELECT created_at AS run_created_at, run_task_id, run_model, step_index,
               {_STEP_WORDS} AS step, status, cost_usd, task_id, text
        FROM steps WHERE run_task_id IN (
            SELECT run_task_id FROM steps WHERE kind = 'agent_fee'
            ORDER BY created_at DESC NULLS LAST, run_task_id DESC LIMIT {AGENT_STEP_ROWS})
        ORDER BY run_created_at DESC NULLS LAST, run_task_id, kind = 'agent_fee', step_index
        LIMIT {AGENT_STEP_ROWS}""",
    )
    return by_step, detail, int(total)


def build(
    source: Any, *, p: Period | None = None, as_of: datetime | None = None, budgets: Any = None
) -> ReportData:
    """The report's data of ``source`` (frame, Arrow table, LedgerStore or its directory).

    ``p`` (default: all time) selects the breakdowns' tasks; the forecast and
    budgets cover the month of ``as_of`` (default: the later of now and the
    newest task).
    """
    p = p or period("all")
    parsed = parse_budgets(budgets) if budgets else {}
    with connect(source) as con:
        _cube_views(con, p)
        as_of = (as_of or _as_of(con)).astimezone(UTC)
        win = _window(con, as_of)
        fc = forecast_of(_sum(win["mtd"].tolist()), _sum(win["last7"].tolist()), as_of)
        per_project = {
            k: (m, w)
            for k, m, w in zip(
                win["project"].tolist(), win["mtd"].tolist(), win["last7"].tolist(), strict=True
            )
        }
        budget_table = budget_rows(
            parsed,
            fc,
            {
                k: forecast_of(_sum([m]), _sum([w]), as_of)
                for k, (m, w) in per_project.items()
                if k is not None
            },
        )
        d = ReportData(p, as_of, fc, parsed)
        t = d.tables
        totals = _one(
            con,
            """
            SELECT CAST(coalesce(sum(tasks), 0) AS BIGINT),
                   CAST(coalesce(sum(cost_usd), 0) AS DECIMAL(38, 8)),
                   CAST(coalesce(sum(billed_usd), 0) AS DECIMAL(38, 8)),
                   CAST(coalesce(sum(estimated_tasks), 0) AS BIGINT),
                   CAST(coalesce(sum(estimated_usd), 0) AS DECIMAL(38, 8)),
                   CAST(coalesce(sum(unknown_cost_tasks), 0) AS BIGINT),
                   CAST(coalesce(sum(tasks) FILTER (WHERE status = 'failed'), 0) AS BIGINT),
                   CAST(coalesce(sum(tasks) FILTER (WHERE day IS NULL), 0) AS BIGINT),
                   CAST(coalesce(sum(cost_usd) FILTER (WHERE day IS NULL), 0)
                        AS DECIMAL(38, 8)),
                   CAST(coalesce(sum(billed_tasks), 0) AS BIGINT)
            FROM pc WHERE top_level""",
        )
        (subs,) = _one(
            con, "SELECT CAST(coalesce(sum(tasks), 0) AS BIGINT) FROM pc WHERE NOT top_level"
        )
        outside_n, outside_usd = 0, Decimal(0)
        if _day_filter(p) != "TRUE":  # a dated period cannot place a task of unknown date
            (outside_n, outside_usd) = _one(
                con,
                "SELECT CAST(coalesce(sum(tasks), 0) AS BIGINT), CAST(coalesce(sum(cost_usd), 0)"
                " AS DECIMAL(38, 8)) FROM cube WHERE facet = 'kind' AND top_level AND day IS NULL",
            )
        (mtd_est_n, mtd_est, mtd_unknown) = _one(
            con,
            "SELECT CAST(coalesce(sum(estimated_tasks), 0) AS BIGINT), "
            "CAST(coalesce(sum(estimated_usd), 0) AS DECIMAL(38, 8)), "
            "CAST(coalesce(sum(unknown_cost_tasks), 0) AS BIGINT) FROM cube WHERE facet = 'kind' "
            "AND top_level "
            f"AND day >= DATE '{as_of.date().replace(day=1)}' AND day <= DATE '{as_of.date()}'",
        )
        d.figures = {
            "tasks": totals[0],
            "spend": totals[1],
            "billed": totals[2],
            "estimated_tasks": totals[3],
            "estimated": totals[4],
            "unknown_tasks": totals[5],
            "failed": totals[6],
            "undated_tasks": totals[7],
            "undated": totals[8],
            "sub_tasks": subs,
            "undated_outside_tasks": outside_n,
            "undated_outside": outside_usd,
            "billed_tasks": totals[9],
            "mtd_estimated_tasks": mtd_est_n,
            "mtd_estimated": mtd_est,
            "mtd_unknown_tasks": mtd_unknown,
        }
        t["summary"] = _summary(d)
        t["budgets"] = budget_table
        for freq in ("day", "week", "month"):
            t[f"by_{freq}"] = _rollup(con, freq, p)
        t["by_project"] = _named(
            _spend(con, ["project"], order="cost_usd DESC NULLS LAST, project NULLS LAST"),
            "project",
            NO_PROJECT,
        )
        t["by_tag"] = _named(
            _spend(con, ["tag"], order="cost_usd DESC NULLS LAST, tag NULLS LAST"), "tag", NO_TAG
        )
        t["by_key"] = _named(
            _spend(con, ["key_id"], order="cost_usd DESC NULLS LAST, key_id NULLS LAST"),
            "key_id",
            NO_KEY,
        )
        t["by_project_month"] = _named(_spend(con, ["month", "project"]), "project", NO_PROJECT)
        t["by_operation"] = _spend(con, ["operation"])
        t["by_model_tier"] = _spend(
            con, ["model", "tier"], order="model NULLS LAST, min(license) NULLS LAST"
        )
        t["by_cost_source"] = _spend(con, ["cost_source"])
        t["tier_comparison"] = _tier_comparison(con)
        d.agent_by_step, t["agent_steps"], steps_total = _agent(con, p)
        t["agent_by_step"] = d.agent_by_step
        t["agent_steps"].attrs["total_steps"] = steps_total
        t["tasks"] = _frame(
            con,
            f"SELECT {', '.join(TASK_COLUMNS)} FROM tasks WHERE "
            f"{_ts_filter(p)} ORDER BY created_at DESC NULLS LAST, task_id DESC "
            f"LIMIT {TASK_ROWS}",
        )
        t["tasks"].attrs["total_tasks"] = int(totals[0]) + int(subs)
        c = d.charts
        month = Period(as_of.date().replace(day=1), as_of.date(), "month to date")
        _cube_views(con, month, make=False)
        c["month_days"] = _rollup(con, "day", month)
        _cube_views(con, p, make=False)
        days = len(t["by_day"])
        freq = "day" if days <= 92 else "week" if days <= 750 else "month"
        c["project_days"] = _rollup(con, freq, p, by="project")
        c["project_days"].attrs["freq"] = freq
        c["by_tier"] = _spend(con, ["tier"], order="min(license) NULLS LAST")
    return d


def _named(frame: pd.DataFrame, column: str, missing: str) -> pd.DataFrame:
    """``frame`` with the nulls of ``column`` named (a new frame)."""
    return frame.assign(**{column: frame[column].fillna(missing)})


def _summary(d: ReportData) -> pd.DataFrame:
    f, fc = d.figures, d.forecast
    rows: list[tuple[str, int | None, Decimal | None, str]] = [
        ("period", None, None, d.period.label),
        (
            "tasks in the period",
            f["tasks"],
            None,
            "top-level; Agent One sub-tasks count in their run",
        ),
        ("spent in the period", None, f["spend"], "tasks of known cost, exact"),
        ("billed by the service", f.get("billed_tasks"), f["billed"], ""),
        (
            "of which estimated",
            f["estimated_tasks"],
            f["estimated"],
            "price-list estimates: the service has not reported these costs",
        ),
        ("tasks of unknown cost", f["unknown_tasks"], None, "not summed: their cost is unknown"),
        ("failed tasks (released, not billed)", f["failed"], None, ""),
    ]
    if f["undated_tasks"]:
        rows.append(
            (
                f"{DATE_UNKNOWN} (in the period's totals)",
                f["undated_tasks"],
                f["undated"],
                "snapshots that show no created_at",
            )
        )
    if f["undated_outside_tasks"]:
        rows.append(
            (
                f"{DATE_UNKNOWN} (outside any dated period)",
                f["undated_outside_tasks"],
                f["undated_outside"],
                "not in this period's totals",
            )
        )
    rows += [
        (
            f"month to date ({fc.month})",
            None,
            fc.month_to_date_usd,
            f"as of {fc.as_of:%Y-%m-%d %H:%M:%S} UTC",
        ),
        ("run rate per day", None, fc.run_rate_usd_per_day, f"over {fc.days_elapsed} days elapsed"),
        ("trailing 7 days, per day", None, fc.trailing_7d_usd_per_day, "the last 7 days / 7"),
        (f"forecast for {fc.month}", None, fc.forecast_usd, fc.method),
    ]
    return pd.DataFrame(
        {
            "item": pd.array([r[0] for r in rows], dtype=pd.ArrowDtype(pa.string())),
            "count": pd.array([r[1] for r in rows], dtype=pd.ArrowDtype(pa.int64())),
            "amount_usd": pd.array([r[2] for r in rows], dtype=pd.ArrowDtype(_schema.MONEY_SUM)),
            "note": pd.array([r[3] for r in rows], dtype=pd.ArrowDtype(pa.string())),
        }
    )


def day_range(frame: pd.DataFrame) -> tuple[date | None, date | None]:
    days = frame["period"].dropna().tolist() if len(frame) else []
    return (min(days), max(days)) if days else (None, None)


def spend_of(source: Any, keys: Sequence[str], *, order: str | None = None) -> pd.DataFrame:
    """Spend of a source grouped by cube columns ``keys`` (tasks, cost, estimated, unknown)."""
    with connect(source) as con:
        _cube_views(con, period("all"))
        return _spend(con, keys, order=order)


def tier_comparison_of(source: Any) -> pd.DataFrame:
    """The tier comparison of a source (the report's table)."""
    with connect(source) as con:
        _cube_views(con, period("all"))
        return _tier_comparison(con)


# Text that a spreadsheet would evaluate (OWASP, CSV injection): starts with = + - @ tab CR;
# or with any other control character (kept as it is, but a leading ' makes it inert), as
# export.inert does.
FORMULA_START: Final[str] = "^[=+\\-@\\x00-\\x1f]"


def _inert(column: str) -> str:
    """SQL: ``column`` with a leading ``'`` if a spreadsheet would read it as a formula."""
    text = f"CAST({column} AS VARCHAR)"
    return (
        f"CASE WHEN regexp_matches({text}, '{FORMULA_START}') THEN '''' || {text} ELSE {text} END"
    )


def copy_tasks_csv(source: Any, path: str | os.PathLike[str], *, p: Period | None = None) -> Path:
    """Every task of the period as CSV, streamed by DuckDB in the source's order (a ledger's
    and ``tasks_frame``'s: newest first): money as exact 8-place decimals, times in UTC to
    the microsecond, text made inert for spreadsheets."""
    from songlab.ledger.export import atomic

    p = p or period("all")
    cols = []
    for c in TASK_COLUMNS:
        f = _schema.TASKS.field(c)
        if pa.types.is_timestamp(f.type):
            cols.append(f"strftime({c}, '%Y-%m-%d %H:%M:%S.%f') AS \"{c} (UTC)\"")
        elif pa.types.is_string(f.type) or pa.types.is_dictionary(f.type):
            cols.append(f"{_inert(c)} AS {c}")
        else:
            cols.append(c)

    def write(tmp: Path) -> None:
        target = str(tmp).replace("'", "''")
        with connect(source) as con:
            # the source's order (a ledger's: newest first), streamed: a sort of every task
            # would cost more than the whole rest of the report
            con.execute("SET preserve_insertion_order = true")
            con.execute(
                f"COPY (SELECT {', '.join(cols)} FROM tasks WHERE {_ts_filter(p)}) TO "
                f"'{target}' (FORMAT csv, HEADER true)"
            )

    return atomic(Path(path), write)
