"""The tables of a cost report, each a query of the ledger engine, shared by the HTML report
and the exports.

:data:`TABLES` is the registry: each :class:`Table` has a name (its CSV file and Excel sheet),
a line saying what it holds, and how it is made from an open ledger. :func:`build` takes a
tasks frame, an Arrow table, a :class:`LedgerStore` or the path of its directory and returns
a :class:`ReportData` (immutable once built): the period, as-of time, forecast and budgets,
and every table by name. :func:`build_from` does the same on a
:class:`~songlab.ledger.engine.Ledger` already open, so one report opens the source once: the
tables, the CSV of every task and the figures all read the one relation ``ledger`` through
its cube (one scan of every task: ``relation.CUBE_SQL``) plus a few bounded queries (the
month's window, the newest tasks, the Agent One traces). None grows with the number of
tasks (the per-day table grows with the number of days). A new table is one entry of
:data:`TABLES` (and, to show it in the HTML, a section of ``report.SECTIONS``).

A task with no ``created_at`` (a snapshot that does not show one) has no day: it counts in
the all-time totals and shows as **date unknown**; a bounded period cannot place it, so it
is counted apart. A task with no ``cost_usd`` is **of unknown cost** (or **pending**, still
running): counted, never summed as 0.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from types import MappingProxyType
from typing import Any, Final

import pandas as pd
import pyarrow as pa

import songlab.ledger._schema as _schema
import songlab.ledger.agent_costs as agent_costs
import songlab.ledger.month as month
import songlab.ledger.tiers as tiers
from songlab.ledger.budgets import Budgets, parse_budgets
from songlab.ledger.dates import Period, period
from songlab.ledger.engine import Ledger, open_ledger
from songlab.ledger.month import Forecast
from songlab.ledger.reconcile import reconcile_on
from songlab.ledger.rollups import rollup_on
from songlab.ledger.summary import DATE_UNKNOWN, summary

__all__ = [
    "AGENT_STEP_ROWS",
    "DATE_UNKNOWN",
    "NO_KEY",
    "NO_PROJECT",
    "NO_TAG",
    "ReportData",
    "TABLES",
    "TASK_COLUMNS",
    "TASK_ROWS",
    "Table",
    "Tables",
    "build",
    "build_from",
    "complete",
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
AGENT_STEP_ROWS: Final[int] = agent_costs.AGENT_STEP_ROWS

# How the attribution tables name the tasks that carry no label.
NO_PROJECT, NO_TAG, NO_KEY = "(no project)", "(untagged)", "(not recorded)"
OTHER: Final[str] = "other"


@dataclass(frozen=True)
class ReportData:
    """Everything a report shows, built once by :func:`build_from` and never changed after:
    a frozen dataclass whose mappings are read-only (``types.MappingProxyType``; the tables a
    :class:`Tables`, each made once)."""

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


@dataclass(frozen=True)
class Build:
    """What a table is made from: the open ledger, the period, and what is made once for all
    of them (the month's forecast and budget table, the figures)."""

    lg: Ledger
    p: Period
    forecast: Forecast
    budget_table: pd.DataFrame
    figures: Mapping[str, Any]
    store: Any


@dataclass(frozen=True)
class Table:
    """One table of the report: its name (the CSV file and the Excel sheet), what it holds (a
    line, as the docs list it), and how it is made (None: not made, e.g. no balance yet)."""

    name: str
    doc: str
    make: Callable[[Build], pd.DataFrame | None]


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


def _by_label(key: str, missing: str) -> Callable[[Build], pd.DataFrame]:
    def make(b: Build) -> pd.DataFrame:
        order = f"cost_usd DESC NULLS LAST, {key} NULLS LAST"
        return _named(b.lg.spend([key], p=b.p, order=order), key, missing)

    return make


def _by(*keys: str) -> Callable[[Build], pd.DataFrame]:
    return lambda b: b.lg.spend(list(keys), p=b.p)


def _by_project_month(b: Build) -> pd.DataFrame:
    by_pm = _named(b.lg.spend(["month", "project"], p=b.p), "project", NO_PROJECT)
    return by_pm.assign(month=by_pm["month"].fillna(DATE_UNKNOWN))


def _tasks(b: Build) -> pd.DataFrame:
    rows = b.lg.tasks(TASK_COLUMNS, p=b.p, limit=TASK_ROWS)
    rows.attrs["total_tasks"] = int(b.figures["tasks"]) + int(b.figures["sub_tasks"])
    return rows


def _reconciliation(b: Build) -> pd.DataFrame | None:
    snapshots = b.store.balance_table() if b.store is not None else None
    if snapshots is None or not snapshots.num_rows:  # no balance snapshot: nothing to set beside
        return None
    return reconcile_on(b.lg, snapshots)


# The report's tables, in the order of the CSV files and the Excel sheets.
TABLES: Final[tuple[Table, ...]] = (
    Table(
        "summary",
        "the period's counts and totals, the month to date, run rates and forecast",
        lambda b: summary(b.p, b.forecast, b.figures),
    ),
    Table("budgets", "each budget's month: spent, remaining, used %, forecast, status", lambda b: b.budget_table),
    Table("by_day", "spend per day, every day of the period, with a running total", lambda b: rollup_on(b.lg, "day", p=b.p)),
    Table("by_week", "spend per week (from Monday), with a running total", lambda b: rollup_on(b.lg, "week", p=b.p)),
    Table("by_month", "spend per month, with a running total", lambda b: rollup_on(b.lg, "month", p=b.p)),
    Table("by_project", "spend per project, costliest first", _by_label("project", NO_PROJECT)),
    Table("by_tag", "spend per tag (a task with two tags counts under both)", _by_label("tag", NO_TAG)),
    Table("by_key", "spend per API key id (a hash, never the key)", _by_label("key_id", NO_KEY)),
    Table("by_project_month", "spend per month and project", _by_project_month),
    Table("by_operation", "spend per operation", _by("operation")),
    Table("by_model_tier", "spend per model and license tier", _by("model", "tier")),
    Table("by_tool_tier", "spend per tool and license tier", _by("tool_id", "tier")),
    Table("by_cost_source", "tasks and spend by where their cost comes from (billed, estimate, ...)", _by("cost_source")),
    Table("by_status", "tasks and spend by status (failed ones released, 0)", _by("status")),
    Table("tier_comparison", "the compared tasks priced in every license tier, beside what they cost", lambda b: tiers.compare(b.lg, p=b.p)),
    Table("agent_by_step", "Agent One cost by tier and step: own fee, calls by tool, prose, checks", lambda b: agent_costs.by_step(b.lg, b.p)),
    Table("agent_steps", f"every step of the newest Agent One runs ({AGENT_STEP_ROWS:,} rows at most)", lambda b: agent_costs.newest_steps(b.lg, b.p)),
    Table("tasks", f"the period's newest tasks ({TASK_ROWS:,}; --csv-all-tasks: all of them)", _tasks),
    Table("reconciliation", "the balance spent between snapshots beside billed and estimated spend (with a --ledger)", _reconciliation),
)  # fmt: skip


class Tables(Mapping[str, pd.DataFrame]):
    """The tables of :data:`TABLES` made from a :class:`Build`, by name, in that order, each
    made when it is first read, once (a table made as None, e.g. no balance snapshot yet, is
    not one of them). A read-only mapping, like the rest of :class:`ReportData`. They are
    read while the ledger is open: :func:`build_from` reads them all (:func:`complete`)
    unless asked to be ``lazy``, as ``report.write_report`` is: it reads them as it writes
    the page, section by section, so each section's chart goes to a drawing worker while
    the next sections' tables are made, then reads the rest for the exports."""

    def __init__(self, b: Build) -> None:
        self._b = b
        self._made: dict[str, pd.DataFrame | None] = {}

    def _make(self, name: str) -> pd.DataFrame | None:
        if name not in self._made:
            table = next((t for t in TABLES if t.name == name), None)
            if table is None:
                raise KeyError(name)
            frame = table.make(self._b)
            if name == "agent_steps" and frame is not None:  # every step, not just those listed
                frame.attrs["total_steps"] = self["agent_by_step"].attrs["total_steps"]
            self._made[name] = frame
        return self._made[name]

    def __getitem__(self, name: str) -> pd.DataFrame:
        frame = self._make(name)
        if frame is None:
            raise KeyError(name)
        return frame

    def __iter__(self) -> Iterator[str]:
        return (t.name for t in TABLES if self._make(t.name) is not None)

    def __len__(self) -> int:
        return sum(1 for _ in self)


def complete(d: ReportData) -> ReportData:
    """``d`` with every table made (:class:`Tables`): call it before the ledger closes."""
    for _ in d.tables:
        pass
    return d


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


def _figures(lg: Ledger, p: Period, as_of: datetime) -> dict[str, Any]:
    """The numbers of the header and the summary."""
    totals = lg.totals(p=p)
    undated = lg.totals(p=p, where="day IS NULL")
    outside: Mapping[str, Any] = {"tasks": 0, "cost_usd": Decimal(0)}
    if p.start is not None or p.end is not None:  # a dated period cannot place these
        outside = lg.totals(where="day IS NULL")
    mtd = lg.totals(p=Period(as_of.date().replace(day=1), as_of.date(), "month to date"))
    return {
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


def _charts(lg: Ledger, p: Period, as_of: datetime, days: int) -> dict[str, pd.DataFrame]:
    """What the charts draw: the month by day, spend over time by project (per day up to a
    quarter, per week up to two years, else per month), spend by tier."""
    freq = "day" if days <= 92 else "week" if days <= 750 else "month"
    month_to_date = Period(as_of.date().replace(day=1), as_of.date(), "month to date")
    charts = {
        "month_days": rollup_on(lg, "day", p=month_to_date),
        "project_days": rollup_on(lg, freq, p=p, by="project"),
        "by_tier": lg.spend(["tier"], p=p),
    }
    charts["project_days"].attrs["freq"] = freq
    return charts


def build_from(
    lg: Ledger,
    *,
    p: Period | None = None,
    as_of: datetime | None = None,
    budgets: Any = None,
    source_note: str | None = None,
    store: Any = None,
    found: Any = None,
    lazy: bool = False,
) -> ReportData:
    """The report's data: every table of :data:`TABLES` a query of ``lg``'s relation (with
    ``lazy``, each made when it is first read, :class:`Tables`, while ``lg`` is open).

    ``p`` (default: all time) selects the breakdowns' tasks; the forecast and budgets
    cover the month of ``as_of`` (default: ``found``'s, else the later of now and the newest
    task). ``budgets``: parsed once (``parse_budgets``; a ``Budgets`` is taken as it is).
    ``found``: the guardrails' report of the same ledger (``guardrails.check_ledger``), whose
    forecasts and budget judgements are used as they are (each series is fitted once).
    """
    p = p or period("all")
    parsed = parse_budgets(budgets)
    lg.precompute()
    as_of = (as_of or (found.as_of if found is not None else None) or lg.as_of()).astimezone(UTC)
    fc, budget_table = month.outlook(lg, parsed, as_of=as_of, found=found)
    b = Build(lg, p, fc, budget_table, _figures(lg, p, as_of), store)
    tables = Tables(b)
    data = ReportData(
        period=p,
        as_of=as_of,
        forecast=fc,
        budgets=parsed,
        tables=tables,
        figures=MappingProxyType(b.figures),
        charts=MappingProxyType(_charts(lg, p, as_of, len(tables["by_day"]))),
        source_note=source_note,
        store=store,
        guardrails=found,
    )
    return data if lazy else complete(data)


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
