"""The tables of a cost report, built once and shared by the HTML report and the exports.

:func:`build` takes a tasks frame and returns a :class:`ReportData`: the period's
tasks, the month-to-date forecast and budgets as of ``as_of``, and every table
by name (the CSV file names and Excel sheet names). Breakdowns cover the chosen
period; the forecast and budgets always cover the month of ``as_of``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any

import pandas as pd
import pyarrow as pa

from songlab.ledger import _schema
from songlab.ledger.periods import (
    Forecast,
    Period,
    as_of_for,
    budget_status,
    forecast,
    in_period,
    parse_budgets,
    period,
    rollup,
)
from songlab.ledger.plots import step_label
from songlab.ledger.spend import spend
from songlab.ledger.tiers import tier_comparison
from songlab.ledger.trace import trace_frame

__all__ = ["NO_KEY", "NO_PROJECT", "NO_TAG", "TASK_COLUMNS", "ReportData", "build"]

TASK_COLUMNS = ["created_at", "task_id", "project", "tags", "key_id", "operation", "model",
                "tier", "status", "cost_usd", "cost_source"]  # fmt: skip


# How the attribution tables name the tasks that carry no label.
NO_PROJECT, NO_TAG, NO_KEY = "(no project)", "(untagged)", "(not recorded)"


def _named(frame: pd.DataFrame, column: str, missing: str) -> pd.DataFrame:
    """``frame`` with the nulls of ``column`` named (a new frame)."""
    return frame.assign(**{column: frame[column].fillna(missing)})


@dataclass
class ReportData:
    period: Period
    as_of: datetime
    tasks: pd.DataFrame  # the period's tasks
    all_tasks: pd.DataFrame
    trace: pd.DataFrame
    forecast: Forecast
    budgets: dict[str | None, Decimal]
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)

    @property
    def total(self) -> Decimal:
        return self.tasks.songlab.total()


def _summary(d: ReportData) -> pd.DataFrame:
    top = d.tasks[d.tasks["parent_task_id"].isna()]
    fc = d.forecast
    rows: list[tuple[str, int | None, Decimal | None, str]] = [
        ("period", None, None, d.period.label),
        ("tasks in the period", len(top), None, "top-level; Agent One sub-tasks count in their run"),
        ("spent in the period", None, d.total, "exact"),
        ("billed by the service", None, d.tasks.songlab.total("billed_usd"), ""),
        ("failed tasks (released, not billed)", int((top["status"] == "failed").sum()), None, ""),
        (f"month to date ({fc.month})", None, fc.month_to_date_usd,
         f"as of {fc.as_of:%Y-%m-%d %H:%M} UTC"),
        ("run rate per day", None, fc.run_rate_usd_per_day, f"over {fc.days_elapsed} days elapsed"),
        ("trailing 7 days, per day", None, fc.trailing_7d_usd_per_day, "the last 7 days / 7"),
        (f"forecast for {fc.month}", None, fc.forecast_usd, fc.method),
    ]  # fmt: skip
    return pd.DataFrame({
        "item": pd.array([r[0] for r in rows], dtype=pd.ArrowDtype(pa.string())),
        "count": pd.array([r[1] for r in rows], dtype=pd.ArrowDtype(pa.int64())),
        "usd": pd.array([r[2] for r in rows], dtype=pd.ArrowDtype(_schema.MONEY_SUM)),
        "note": pd.array([r[3] for r in rows], dtype=pd.ArrowDtype(pa.string())),
    })  # fmt: skip


def _agent_steps(trace: pd.DataFrame) -> pd.DataFrame:
    out = trace.drop(columns=["file_ids"])
    words = [step_label(k, t) for k, t in zip(out["kind"], out["tool"], strict=True)]
    out.insert(3, "step", pd.array(words, dtype=pd.ArrowDtype(pa.string())))
    return out


def build(tasks: pd.DataFrame, *, p: Period | None = None, as_of: datetime | None = None,
          budgets: Any = None) -> ReportData:
    """The report's data: ``p`` (default: all time) selects the breakdowns' tasks."""
    as_of = as_of or as_of_for(tasks)
    p = p or period("all")
    chosen = in_period(tasks, p)
    parsed = parse_budgets(budgets) if budgets else {}
    d = ReportData(p, as_of, chosen, tasks, trace_frame(chosen), forecast(tasks, as_of=as_of),
                   parsed)  # fmt: skip
    t = d.tables
    t["summary"] = _summary(d)
    t["budgets"] = budget_status(tasks, parsed, as_of=as_of)
    for freq in ("day", "week", "month"):
        t[f"by_{freq}"] = rollup(chosen, freq, p=p if p.start and p.end else None)
    t["by_project"] = _named(spend(chosen, "project"), "project", NO_PROJECT)
    t["by_tag"] = _named(spend(chosen, "tag"), "tag", NO_TAG)
    t["by_key"] = _named(spend(chosen, "key_id"), "key_id", NO_KEY)
    t["by_project_month"] = _named(spend(chosen, ["month", "project"]), "project", NO_PROJECT)
    t["by_operation"] = spend(chosen, "operation")
    t["by_model_tier"] = spend(chosen, ["model", "tier"])
    t["tier_comparison"] = tier_comparison(chosen)
    t["agent_steps"] = _agent_steps(d.trace)
    t["tasks"] = chosen[TASK_COLUMNS]
    return d
