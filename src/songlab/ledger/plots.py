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

from songlab.ledger.spend import spend
from songlab.ledger.tiers import tier_comparison
from songlab.ledger.trace import AGENT_FEE

__all__ = [
    "agent_cost_per_step",
    "png_bytes",
    "spend_by_tier",
    "spend_over_time",
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
    """Cost per ``period`` (day or month), stacked by ``by``: bars, or areas past 40 periods."""
    fig = Figure(figsize=(9, 4), layout="constrained")
    ax = fig.add_subplot()
    ax.set_title(f"Spend per {period} by {by} (USD)")
    table = spend(tasks, [period, by])
    if table.empty:
        _empty(ax, "tasks")
        return fig
    wide = table.assign(usd=_floats(table["cost_usd"])).pivot_table(
        index=period, columns=by, values="usd", aggfunc="sum", fill_value=0.0
    )
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
    bars = ax.bar(table["tier"].astype(str).tolist(), _floats(table["cost_usd"]))
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


def agent_cost_per_step(trace: pd.DataFrame) -> Figure:
    """One bar per step of each Agent One run (the run's fee in its own colour)."""
    fig = Figure(figsize=(9, 3.5), layout="constrained")
    ax = fig.add_subplot()
    ax.set_title("Agent One cost per step (USD)")
    if trace.empty:
        _empty(ax, "Agent One runs")
        return fig
    labels, values, colours = [], [], []
    for i, row in enumerate(trace.itertuples(index=False)):
        name = row.tool if isinstance(row.tool, str) else row.kind
        step = "fee" if row.kind == AGENT_FEE else f"{row.step_index}:{name}"
        labels.append(f"{str(row.run_task_id)[-6:]} {step}#{i}")
        values.append(float(row.cost_usd))
        colours.append("tab:red" if row.kind == AGENT_FEE else "tab:blue")
    ax.bar(range(len(values)), values, color=colours)
    ax.set_xticks(range(len(values)), [lab.rsplit("#", 1)[0] for lab in labels])
    ax.tick_params(axis="x", rotation=75, labelsize=6)
    ax.set_ylabel("USD (red: the run's own fee)")
    return fig


def png_bytes(fig: Figure, *, dpi: int = 100) -> bytes:
    """The figure rendered as PNG with the Agg canvas."""
    FigureCanvasAgg(fig)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    return buf.getvalue()
