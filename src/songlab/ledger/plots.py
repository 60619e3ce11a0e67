"""Plots of the ledger frames, as matplotlib Figures (no pyplot state, no GUI backend).

Amounts are exact Decimals in the frames; they become floats here only to be
drawn. Each function takes the frame it plots and returns a new ``Figure``;
``png_bytes`` renders one with the Agg canvas.
"""

from __future__ import annotations

import io
from typing import Any

import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from songlab.ledger.periods import period, rollup
from songlab.ledger.spend import spend
from songlab.ledger.tiers import tier_comparison
from songlab.ledger.trace import AGENT_FEE

__all__ = [
    "agent_cost_per_step",
    "month_forecast",
    "png_bytes",
    "spend_by_project",
    "spend_by_tier",
    "spend_over_time",
    "step_label",
    "tier_comparison_plot",
]


# Up to this many periods, spend over time is drawn as stacked bars, else as areas.
BARS_UP_TO = 40


def _floats(series: pd.Series) -> list[float]:
    return [float(v) if v is not None and not pd.isna(v) else 0.0 for v in series.tolist()]


def _empty(ax: Any, what: str) -> None:
    ax.text(0.5, 0.5, f"no {what}", ha="center", va="center", transform=ax.transAxes)
    ax.set_axis_off()


def spend_over_time(tasks: pd.DataFrame, *, by: str = "operation", period: str = "day") -> Figure:
    """Cost per ``period`` (day, week or month; empty periods drawn as 0), stacked by ``by``:
    bars, or areas past 40 periods."""
    fig = Figure(figsize=(9, 4), layout="constrained")
    ax = fig.add_subplot()
    ax.set_title(f"Spend per {period} by {by} (USD)")
    table = rollup(tasks, period, by=by)
    if table.empty:
        _empty(ax, "tasks")
        return fig
    table = table.assign(usd=_floats(table["cost_usd"]),
                         key=[str(k) if isinstance(k, str) else f"(no {by})"
                              for k in table[by].tolist()])  # fmt: skip
    wide = table.pivot_table(index="period", columns="key", values="usd", aggfunc="sum",
                             fill_value=0.0)  # fmt: skip
    x = list(range(len(wide.index)))
    series = [wide[c].astype(float).tolist() for c in wide.columns]
    if len(x) <= BARS_UP_TO:  # few periods: stacked bars (an area needs two points)
        bottom = [0.0] * len(x)
        for col, values in zip(wide.columns, series, strict=True):
            ax.bar(x, values, bottom=bottom, label=str(col))
            bottom = [b + v for b, v in zip(bottom, values, strict=True)]
    else:
        ax.stackplot(x, *series, labels=[str(c) for c in wide.columns], step="mid")
    ticks = x[:: max(1, len(x) // 12)]
    ax.set_xticks(ticks, [str(wide.index[i]) for i in ticks])
    ax.set_ylabel("USD")
    ax.tick_params(axis="x", rotation=60, labelsize=7)
    ax.legend(fontsize=7, ncols=2, loc="upper left")
    return fig


def spend_by_tier(tasks: pd.DataFrame) -> Figure:
    """Bars of cost and task counts per license tier."""
    fig = Figure(figsize=(6, 3.5), layout="constrained")
    ax = fig.add_subplot()
    ax.set_title("Spend by license tier (USD)")
    table = spend(tasks, ["license", "tier"])
    if table.empty:
        _empty(ax, "tasks")
        return fig
    bars = ax.bar(table["tier"].fillna("unknown").astype(str).tolist(), _floats(table["cost_usd"]))
    ax.bar_label(bars, labels=[f"{n} tasks" for n in table["tasks"].tolist()], fontsize=7)
    ax.set_ylabel("USD")
    return fig


def tier_comparison_plot(tasks: pd.DataFrame) -> Figure:
    """The compared tasks priced in each tier, with a line at what they actually cost."""
    fig = Figure(figsize=(6, 3.5), layout="constrained")
    ax = fig.add_subplot()
    ax.set_title("The same tasks in every license tier (USD)")
    comp = tier_comparison(tasks)
    if comp.empty or int(comp["tasks"].iloc[0]) == 0:
        _empty(ax, "billed tasks to compare")
        return fig
    ax.bar(comp["tier"].astype(str).tolist(), _floats(comp["priced_usd"]), label="priced in tier")
    actual = float(comp["actual_usd"].iloc[0])
    ax.axhline(actual, color="black", linestyle="--", label=f"actually spent ({actual:.2f})")
    ax.set_ylabel("USD")
    ax.legend(fontsize=8)
    return fig


def step_label(kind: str, tool: Any) -> str:
    """A trace step in words: ``called generate_song``, ``wrote its answer``, ``own fee`` ..."""
    if kind == AGENT_FEE:
        return "own fee"
    if kind == "tool_call":
        return f"called {tool}" if isinstance(tool, str) and tool else "called a tool"
    if kind == "prose":
        return "wrote text"
    if kind == "verification":
        return "checked its work"
    return str(kind)


def agent_cost_per_step(trace: pd.DataFrame) -> Figure:
    """One bar per step of each Agent One run, labelled in words ("run 2 (pro): called
    generate_song"); the run's own fee in red."""
    fig = Figure(figsize=(9, 4), layout="constrained")
    ax = fig.add_subplot()
    ax.set_title("Agent One cost per step (USD)")
    if trace.empty:
        _empty(ax, "Agent One runs")
        return fig
    runs: dict[str, int] = {}
    labels, values, colours = [], [], []
    for row in trace.itertuples(index=False):
        n = runs.setdefault(row.run_task_id, len(runs) + 1)
        labels.append(f"run {n} ({row.run_model}): {step_label(row.kind, row.tool)}")
        values.append(float(row.cost_usd) if not pd.isna(row.cost_usd) else 0.0)
        colours.append("tab:red" if row.kind == AGENT_FEE else "tab:blue")
    y = list(range(len(values)))[::-1]
    ax.barh(y, values, color=colours)
    ax.set_yticks(y, labels, fontsize=6)
    ax.set_xlabel("USD (red: the run's own fee; blue: a step)")
    fig.set_figheight(min(12.0, max(3.0, 0.16 * len(values) + 1.2)))
    return fig


def spend_by_project(tasks: pd.DataFrame) -> Figure:
    """Horizontal bars of cost per project (tasks without a project as "(no project)")."""
    fig = Figure(figsize=(6, 3.5), layout="constrained")
    ax = fig.add_subplot()
    ax.set_title("Spend by project (USD)")
    table = spend(tasks, "project")
    if table.empty:
        _empty(ax, "tasks")
        return fig
    names = [p if isinstance(p, str) else "(no project)" for p in table["project"].tolist()]
    bars = ax.barh(names, _floats(table["cost_usd"]))
    ax.bar_label(bars, labels=[f"{n} tasks" for n in table["tasks"].tolist()], fontsize=7)
    ax.set_xlabel("USD")
    return fig


def month_forecast(tasks: pd.DataFrame, fc: Any, *, budget: Any = None) -> Figure:
    """Cumulative spend of ``fc.month`` to ``fc.as_of``, the straight-line forecast to the
    month's end (dashed) and the overall budget (red), if any."""
    fig = Figure(figsize=(7, 3.5), layout="constrained")
    ax = fig.add_subplot()
    ax.set_title(f"{fc.as_of:%B %Y}: month to date and forecast (USD)")
    p = period(start=fc.as_of.date().replace(day=1), end=fc.as_of.date())
    daily = rollup(tasks, "day", p=p)
    days = [d.day for d in daily["period"].tolist()]
    ax.plot(days, _floats(daily["cumulative_usd"]), marker="o", markersize=3,
            label=f"spent: {float(fc.month_to_date_usd):,.2f}")  # fmt: skip
    elapsed = float(fc.days_elapsed)
    ax.plot([elapsed, fc.days_in_month], [float(fc.month_to_date_usd), float(fc.forecast_usd)],
            linestyle="--", color="tab:gray",
            label=f"forecast: {float(fc.forecast_usd):,.2f}")  # fmt: skip
    if budget is not None:
        ax.axhline(float(budget), color="tab:red", label=f"budget: {float(budget):,.2f}")
    ax.set_xlim(0.5, fc.days_in_month + 0.5)
    ax.set_xlabel(f"day of {fc.as_of:%B} (UTC)")
    ax.set_ylabel("USD, cumulative")
    ax.legend(fontsize=8, loc="upper left")
    return fig


def png_bytes(fig: Figure, *, dpi: int = 100) -> bytes:
    """The figure rendered as PNG with the Agg canvas."""
    FigureCanvasAgg(fig)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    return buf.getvalue()
