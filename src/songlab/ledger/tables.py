"""The tables of a cost report, each a query of the ledger engine, shared by the HTML report
and the exports.

:func:`build` takes a tasks frame, an Arrow table, a :class:`LedgerStore` or the path of
its directory and returns a :class:`ReportData` (immutable once built): the period, as-of
time, forecast and budgets, and every table by name (the CSV file names and Excel sheet
names). :func:`build_from` does the same on a :class:`~songlab.ledger.engine.Ledger`
already open, so one report opens the source once: the tables, the CSV of every task and
the figures all read the one relation ``ledger`` (``engine.RELATION_SQL``) through its
cube (one scan of every task: ``engine.CUBE_SQL``) plus three bounded queries (the
forecast window, the newest tasks, the Agent One runs). None grows with the number of
tasks (the per-day table grows with the number of days).

A task with no ``created_at`` (a snapshot that does not show one) has no day: it counts in
the all-time totals and shows as **date unknown**; a bounded period cannot place it, so it
is counted apart. A task with no ``cost_usd`` is **of unknown cost** (or **pending**, still
running): counted, never summed as 0.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from types import MappingProxyType
from typing import Any, Final

import pandas as pd
import pyarrow as pa

import songlab.ledger._schema as _schema
import songlab.ledger.derived as derived
from songlab.ledger._periods import (
    Budgets,
    Forecast,
    Period,
    elapsed_text,
    parse_budgets,
    period,
)
from songlab.ledger.engine import TRACE_PARSE, Ledger, day_filter, open_ledger
from songlab.ledger.reconcile import reconcile_on

__all__ = [
    "AGENT_STEP_ROWS",
    "DATE_UNKNOWN",
    "NO_KEY",
    "NO_PROJECT",
    "NO_TAG",
    "ReportData",
    "STEPS_SQL",
    "TASK_COLUMNS",
    "TASK_ROWS",
    "build",
    "build_from",
    "copy_tasks_csv",
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

# Agent One runs' steps, from each run's trace (output.metadata_json), plus the run's own fee.
# ``{trace}`` is the trace parsed as a struct, ``{valid}`` the rows whose text is JSON: the one
# part of the report's SQL each engine says its own way (``engine.TRACE_PARSE``).
STEPS_SQL: Final[str] = """
WITH runs AS (
  SELECT task_id AS run_task_id, model AS run_model, status AS run_status,
         tool_id AS run_tool_id, created_at, {trace} AS m
  FROM ledger
  WHERE operation = 'agent' AND top_level AND metadata_json IS NOT NULL
    AND {valid} AND {period}
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


@dataclass(frozen=True)
class ReportData:
    """Everything a report shows, built once by :func:`build_from` and never changed after:
    a frozen dataclass whose mappings are read-only views (``types.MappingProxyType``)."""

    period: Period
    as_of: datetime
    forecast: Forecast
    budgets: Budgets
    tables: Mapping[str, pd.DataFrame]
    figures: Mapping[str, Any]  # numbers of the header and summary
    charts: Mapping[str, pd.DataFrame]  # what the charts draw
    source_note: str | None = None
    store: Any = field(default=None, repr=False)  # the LedgerStore reported from, if any
    # the guardrails' findings the report opens with (songlab.ledger.guardrails.GuardrailReport)
    guardrails: Any = field(default=None, repr=False)

    @property
    def total(self) -> Decimal:
        return Decimal(self.figures["spend"])

    @property
    def agent_by_step(self) -> pd.DataFrame:
        return self.tables["agent_by_step"]


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


def _named(frame: pd.DataFrame, column: str, missing: str) -> pd.DataFrame:
    """``frame`` with the nulls of ``column`` named (a new frame)."""
    return frame.assign(**{column: frame[column].fillna(missing)})


def _agent(lg: Ledger, p: Period) -> tuple[pd.DataFrame, pd.DataFrame, int]:
    trace, valid = TRACE_PARSE[lg.backend.dialect]
    steps = STEPS_SQL.format(trace=trace, valid=valid, period=day_filter(p))
    lg.backend.materialize("steps", lg.sql(steps))
    by_step = lg.frame(
        f"""
        SELECT coalesce(run_model, '(unknown)') AS tier, {_STEP_WORDS} AS step,
               CAST(count(DISTINCT run_task_id) AS BIGINT) AS runs,
               CAST(count(*) AS BIGINT) AS steps,
               CAST(sum(cost_usd) AS DECIMAL(38, 8)) AS cost_usd,
               CAST(sum(CASE WHEN kind <> 'agent_fee' AND cost_usd IS NULL THEN 1 ELSE 0 END)
                    AS BIGINT) AS unknown_cost_steps
        FROM steps GROUP BY 1, 2 ORDER BY 1, 5 DESC NULLS LAST, 2"""
    )
    (total,) = lg.one("SELECT CAST(count(*) AS BIGINT) FROM steps")
    detail = lg.frame(
        f"""
        SELECT created_at AS run_created_at, run_task_id, run_model, step_index,
               {_STEP_WORDS} AS step, status, cost_usd, task_id, text
        FROM steps WHERE run_task_id IN (
            SELECT run_task_id FROM steps WHERE kind = 'agent_fee'
            ORDER BY created_at DESC NULLS LAST, run_task_id DESC LIMIT {AGENT_STEP_ROWS})
        ORDER BY run_created_at DESC NULLS LAST, run_task_id, kind = 'agent_fee', step_index
        LIMIT {AGENT_STEP_ROWS}"""
    )
    return by_step, detail, int(total)


def build(
    source: Any,
    *,
    p: Period | None = None,
    as_of: datetime | None = None,
    budgets: Any = None,
    source_note: str | None = None,
    engine: Any = "duckdb",
) -> ReportData:
    """The report's data of ``source`` (frame, Arrow table, LedgerStore or its directory),
    on ``engine`` (DuckDB by default; ``"spark"`` or a backend: see :func:`build_from`)."""
    with open_ledger(source, engine=engine) as lg:
        return build_from(lg, p=p, as_of=as_of, budgets=budgets, source_note=source_note)


def build_from(
    lg: Ledger,
    *,
    p: Period | None = None,
    as_of: datetime | None = None,
    budgets: Any = None,
    source_note: str | None = None,
    store: Any = None,
) -> ReportData:
    """The report's data: every table a query of ``lg``'s relation.

    ``p`` (default: all time) selects the breakdowns' tasks; the forecast and budgets
    cover the month of ``as_of`` (default: the later of now and the newest task).
    ``budgets``: parsed once (``parse_budgets``; a ``Budgets`` is taken as it is).
    """
    p = p or period("all")
    parsed = parse_budgets(budgets)
    lg.precompute()
    as_of = (as_of or lg.as_of()).astimezone(UTC)
    fc, budget_table = lg.budget_status(parsed, as_of=as_of)
    totals = lg.totals(p=p)
    undated = lg.totals(p=p, where="day IS NULL")
    outside: Mapping[str, Any] = {"tasks": 0, "cost_usd": Decimal(0)}
    if p.start is not None or p.end is not None:  # a dated period cannot place these
        outside = lg.totals(where="day IS NULL")
    month = Period(as_of.date().replace(day=1), as_of.date(), "month to date")
    mtd = lg.totals(p=month)
    figures = {
        "tasks": totals["tasks"],
        "spend": totals["cost_usd"],
        "billed": totals["billed_usd"],
        "billed_tasks": totals["billed_tasks"],
        "estimated_tasks": totals["estimated_tasks"],
        "estimated": totals["estimated_usd"],
        "unknown_tasks": totals["unknown_tasks"],
        "pending_tasks": totals["pending_tasks"],
        "pending": totals["pending_usd"],
        "failed": totals["failed_tasks"],
        "undated_tasks": undated["tasks"],
        "undated": undated["cost_usd"],
        "sub_tasks": lg.sub_tasks(p=p),
        "undated_outside_tasks": outside["tasks"],
        "undated_outside": outside["cost_usd"],
        "mtd_estimated_tasks": mtd["estimated_tasks"],
        "mtd_estimated": mtd["estimated_usd"],
        "mtd_unknown_tasks": mtd["unknown_tasks"],
    }
    t: dict[str, pd.DataFrame] = {"summary": _summary(p, fc, figures), "budgets": budget_table}
    for freq in ("day", "week", "month"):
        t[f"by_{freq}"] = lg.rollup(freq, p=p)
    t["by_project"] = _named(
        lg.spend(["project"], p=p, order="cost_usd DESC NULLS LAST, project NULLS LAST"),
        "project",
        NO_PROJECT,
    )
    t["by_tag"] = _named(
        lg.spend(["tag"], p=p, order="cost_usd DESC NULLS LAST, tag NULLS LAST"), "tag", NO_TAG
    )
    t["by_key"] = _named(
        lg.spend(["key_id"], p=p, order="cost_usd DESC NULLS LAST, key_id NULLS LAST"),
        "key_id",
        NO_KEY,
    )
    by_pm = _named(lg.spend(["month", "project"], p=p), "project", NO_PROJECT)
    t["by_project_month"] = by_pm.assign(month=by_pm["month"].fillna(DATE_UNKNOWN))
    t["by_operation"] = lg.spend(["operation"], p=p)
    t["by_model_tier"] = lg.spend(["model", "tier"], p=p)
    t["by_cost_source"] = lg.spend(["cost_source"], p=p)
    t["by_status"] = lg.spend(["status"], p=p)  # a figure added in two files (architecture.md)
    t["tier_comparison"] = lg.tier_comparison(p=p)
    t["agent_by_step"], t["agent_steps"], steps_total = _agent(lg, p)
    t["agent_steps"].attrs["total_steps"] = steps_total
    t["tasks"] = lg.tasks(TASK_COLUMNS, p=p, limit=TASK_ROWS)
    t["tasks"].attrs["total_tasks"] = int(totals["tasks"]) + int(figures["sub_tasks"])
    snapshots = store.balance_table() if store is not None else None
    if snapshots is not None and snapshots.num_rows:  # a ledger with balance snapshots
        t["reconciliation"] = reconcile_on(lg, snapshots)
    days = len(t["by_day"])
    freq = "day" if days <= 92 else "week" if days <= 750 else "month"
    charts = {
        "month_days": lg.rollup("day", p=month),
        "project_days": lg.rollup(freq, p=p, by="project"),
        "by_tier": lg.spend(["tier"], p=p),
    }
    charts["project_days"].attrs["freq"] = freq
    return ReportData(
        period=p,
        as_of=as_of,
        forecast=fc,
        budgets=parsed,
        tables=MappingProxyType(t),
        figures=MappingProxyType(figures),
        charts=MappingProxyType(charts),
        source_note=source_note,
        store=store,
    )


def _summary(p: Period, fc: Forecast, f: Mapping[str, Any]) -> pd.DataFrame:
    rows: list[tuple[str, int | None, Decimal | None, str]] = [
        ("period", None, None, p.label),
        (
            "tasks in the period",
            f["tasks"],
            None,
            "top-level; Agent One sub-tasks count in their run",
        ),
        ("spent in the period", None, f["spend"], "tasks of known cost, exact"),
        ("billed by the service", f["billed_tasks"], f["billed"], ""),
        (
            "of which estimated",
            f["estimated_tasks"],
            f["estimated"],
            "completed tasks the service shows no cost for, at list price",
        ),
        ("tasks of unknown cost", f["unknown_tasks"], None, "not summed: their cost is unknown"),
        (
            "tasks still running",
            f["pending_tasks"],
            f["pending"],
            "queued or processing: nothing spent yet (their list price, not in the spend)",
        ),
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
    rows += _month_rows(fc)
    return pd.DataFrame(
        {
            "item": pd.array([r[0] for r in rows], dtype=pd.ArrowDtype(pa.string())),
            "count": pd.array([r[1] for r in rows], dtype=pd.ArrowDtype(pa.int64())),
            "amount_usd": pd.array(
                [r[2] for r in rows], dtype=_schema.MoneyDtype(_schema.MONEY_SUM)
            ),
            "note": pd.array([r[3] for r in rows], dtype=pd.ArrowDtype(pa.string())),
        }
    )


def _month_rows(fc: Forecast) -> list[tuple[str, int | None, Decimal | None, str]]:
    """The month's facts and forecast; each rate with the stated figures it is made of."""
    mtd, last7 = derived.stated_usd(fc.month_to_date_usd), derived.stated_usd(fc.trailing_7d_usd)
    days = elapsed_text(fc.days_elapsed)
    rate_note = (
        f"${mtd:,} month to date / {days} elapsed"
        if fc.run_rate_usd_per_day is not None
        else "no rate yet: under 0.01 day of the month elapsed"
    )
    return [
        (
            f"month to date ({fc.month})",
            None,
            fc.month_to_date_usd,
            f"as of {fc.as_of:%Y-%m-%d %H:%M:%S} UTC; {derived.stated_days(fc.days_elapsed)} of "
            f"{fc.days_in_month} days elapsed",
        ),
        ("run rate per day", None, fc.run_rate_usd_per_day, rate_note),
        ("spent in the 7 days to the as-of time", None, fc.trailing_7d_usd, ""),
        ("trailing 7 days, per day", None, fc.trailing_7d_usd_per_day, f"${last7:,} / 7 days"),
        (f"forecast for {fc.month}", None, fc.forecast_usd, f"{fc.method}; {fc.interval_text()}"),
    ]


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
    """Every task of the period as CSV, streamed in the source's order (a ledger's and
    ``tasks_frame``'s: newest first): money as exact 8-place decimals, times in UTC to the
    microsecond, text made inert for spreadsheets. ``source``: an open ``Ledger`` (the
    report's: the source is not opened again) or anything ``open_ledger`` takes."""
    from songlab.ledger.export import atomic

    cols = []
    for c in TASK_COLUMNS:
        f = _schema.TASKS.field(c)
        if pa.types.is_timestamp(f.type):
            cols.append(f"strftime({c}, '%Y-%m-%d %H:%M:%S.%f') AS \"{c} (UTC)\"")
        elif pa.types.is_string(f.type) or pa.types.is_dictionary(f.type):
            cols.append(f"{_inert(c)} AS {c}")
        else:
            cols.append(c)
    select = ", ".join(cols)

    def write(tmp: Path) -> None:
        if isinstance(source, Ledger):
            source.write_csv(select, tmp, p=p)
            return
        with open_ledger(source) as lg:
            lg.write_csv(select, tmp, p=p)

    return atomic(Path(path), write)
