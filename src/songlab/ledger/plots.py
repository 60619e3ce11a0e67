"""Plots of the ledger, as matplotlib Figures (no pyplot state, no GUI backend).

Every chart summarises: its number of marks is bounded whatever the number of
tasks (the top ``TOP`` groups and "other", one series per group over the
periods, Agent One cost by tier and step kind). Each function takes a tasks
frame (aggregated by the ledger engine, ``songlab.ledger.engine``, the same queries
as the report's) or the aggregate table the report already made, and returns a new
``Figure``. Every legend sits outside the axes, so it never covers a mark; bar labels
count in words (``1 task``, ``3 tasks``). Amounts are exact
Decimals in the tables; they become floats here only to be drawn.
``png_bytes`` renders a figure with the Agg canvas. Each Figure is made by
:func:`songlab.figures.figure`, so a notebook shows it as a picture with or without pyplot.
"""

from __future__ import annotations

import io
from decimal import Decimal
from typing import Any, Final

import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from songlab.figures import figure
from songlab.ledger._periods import period as make_period
from songlab.ledger.trace import AGENT_FEE

__all__ = [
    "BARS_UP_TO",
    "TOP",
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
BARS_UP_TO: Final[int] = 40
# Groups drawn by name; the rest are one "other" group.
TOP: Final[int] = 8


def _label(value: Any, width: int = 32) -> str:
    """Text from the data as a chart label: one line, no control characters, no mathtext
    (``$``), at most ``width`` characters."""
    text = " ".join("".join(ch if ch.isprintable() else " " for ch in str(value)).split())
    if len(text) > width:
        text = text[: width - 1] + "\u2026"
    return text.replace("$", r"\$")


def _tasks(n: Any) -> str:
    n = int(n)
    return f"{n:,} task{'' if n == 1 else 's'}"


def _legend(fig: Figure, ax: Any, **kw: Any) -> None:
    """The axes' legend below them, outside the plotting area: it never covers a mark."""
    handles, labels = ax.get_legend_handles_labels()
    if handles:
        fig.legend(handles, labels, loc="outside lower center", fontsize=7, frameon=False, **kw)


def _floats(series: pd.Series) -> list[float]:
    return [float(v) if v is not None and not pd.isna(v) else 0.0 for v in series.tolist()]


def _empty(ax: Any, what: str) -> None:
    ax.text(0.5, 0.5, f"no {what}", ha="center", va="center", transform=ax.transAxes)
    ax.set_axis_off()


def _is_tasks(frame: pd.DataFrame) -> bool:
    return "task_id" in frame.columns and "cost_source" in frame.columns


def _fold(values: dict[str, float], n: int = TOP) -> dict[str, float]:
    """The ``n`` largest of ``values`` by name, the rest as one ``other (k)`` entry."""
    ranked = sorted(values.items(), key=lambda kv: (-kv[1], kv[0]))
    if len(ranked) <= n + 1:
        return dict(ranked)
    rest = ranked[n:]
    return dict(ranked[:n]) | {f"other ({len(rest)})": sum(v for _, v in rest)}


def spend_over_time(
    tasks: pd.DataFrame, *, by: str = "operation", period: str = "day", top: int = TOP
) -> Figure:
    """Cost per ``period`` (day, week or month; empty periods drawn as 0), stacked by ``by``
    (its ``top`` groups and "other"): bars, or areas past ``BARS_UP_TO`` periods.

    ``tasks``: a tasks frame, or a roll-up by ``by`` (``period``, ``by``, ``cost_usd``).
    """
    from songlab.ledger.engine import rollup

    fig = figure(figsize=(9, 4), layout="constrained")
    ax = fig.add_subplot()
    ax.set_title(f"Spend per {period} by {by} (USD)")
    table = rollup(tasks, period, by=by) if _is_tasks(tasks) else tasks
    undated = table[table["period"].isna()]
    table = table[table["period"].notna()]
    if table.empty:
        _empty(ax, "tasks with a date")
        return fig
    keys = [_label(k) if isinstance(k, str) else f"(no {by})" for k in table[by].tolist()]
    table = table.assign(usd=_floats(table["cost_usd"]), key=keys)
    totals = table.groupby("key")["usd"].sum().to_dict()
    kept = _fold(totals, top)
    other = next((k for k in kept if k not in totals), None)  # "other (k)", if folded
    table = table.assign(key=[k if k in kept else other for k in table["key"]])
    wide = table.pivot_table(
        index="period", columns="key", values="usd", aggfunc="sum", fill_value=0.0
    )
    order = [k for k in kept if k in wide.columns]
    wide = wide[order]
    x = list(range(len(wide.index)))
    series = [wide[c].astype(float).tolist() for c in wide.columns]
    if len(x) <= BARS_UP_TO:  # few periods: stacked bars (an area needs two points)
        bottom = [0.0] * len(x)
        for col, values in zip(wide.columns, series, strict=True):
            ax.bar(x, values, bottom=bottom, label=str(col), width=0.8)
            bottom = [b + v for b, v in zip(bottom, values, strict=True)]
        ax.set_xlim(-0.6, max(len(x), 7) - 0.4)  # one day is one bar, not the whole width
    else:
        ax.stackplot(x, *series, labels=[str(c) for c in wide.columns], step="mid")
    ticks = x[:: max(1, len(x) // 12)]
    ax.set_xticks(ticks, [str(wide.index[i]) for i in ticks])
    ax.set_ylabel("USD")
    ax.tick_params(axis="x", rotation=60, labelsize=7)
    _legend(fig, ax, ncols=4)
    if len(undated):
        n = int(undated["tasks"].sum())
        ax.set_xlabel(f"not drawn: {n} tasks of unknown date", fontsize=7)
    return fig


def _bar_table(tasks: pd.DataFrame, key: str) -> pd.DataFrame:
    from songlab.ledger.engine import open_ledger

    if not _is_tasks(tasks):
        return tasks
    order = None if key == "tier" else "cost_usd DESC NULLS LAST"
    with open_ledger(tasks) as lg:
        return lg.spend([key], order=order)


def spend_by_tier(tasks: pd.DataFrame) -> Figure:
    """Bars of cost and task counts per license tier (by name)."""
    fig = figure(figsize=(6, 3.5), layout="constrained")
    ax = fig.add_subplot()
    ax.set_title("Spend by license tier (USD)")
    table = _bar_table(tasks, "tier")
    if table.empty:
        _empty(ax, "tasks")
        return fig
    names = [_label(t) if isinstance(t, str) else "(unknown)" for t in table["tier"].tolist()]
    bars = ax.bar(names, _floats(table["cost_usd"]))
    ax.bar_label(bars, labels=[_tasks(n) for n in table["tasks"].tolist()], fontsize=7)
    ax.margins(y=0.15)  # room for the labels above the bars
    ax.set_ylabel("USD")
    ax.tick_params(axis="x", labelsize=8)
    return fig


def tier_comparison_plot(tasks: pd.DataFrame) -> Figure:
    """The compared tasks priced in each tier, with a line at what they actually cost.

    ``tasks``: a tasks frame or the tier comparison table (``tier``, ``priced_usd`` ...).
    """
    from songlab.ledger.engine import tier_comparison

    fig = figure(figsize=(6, 3.5), layout="constrained")
    ax = fig.add_subplot()
    ax.set_title("The same tasks in every license tier (USD)")
    comp = tier_comparison(tasks) if _is_tasks(tasks) else tasks
    if comp.empty or int(comp["tasks"].iloc[0]) == 0:
        _empty(ax, "billed tasks to compare")
        return fig
    ax.bar(comp["tier"].astype(str).tolist(), _floats(comp["priced_usd"]), label="priced in tier")
    actual = float(comp["actual_usd"].iloc[0])
    ax.axhline(actual, color="black", linestyle="--", label=f"actually spent ({actual:,.2f})")
    ax.set_ylabel("USD")
    ax.tick_params(axis="x", labelsize=8)
    _legend(fig, ax, ncols=2)
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


def _by_step(trace: pd.DataFrame) -> pd.DataFrame:
    """A trace frame summed by tier and step (what the report's SQL makes)."""
    if "step" in trace.columns and "tier" in trace.columns:
        return trace
    steps = [step_label(k, t) for k, t in zip(trace["kind"], trace["tool"], strict=True)]
    tiers = [m if isinstance(m, str) else "(unknown)" for m in trace["run_model"].tolist()]
    rows: dict[tuple[str, str], Decimal] = {}
    for key, cost in zip(zip(tiers, steps, strict=True), trace["cost_usd"].tolist(), strict=True):
        rows[key] = rows.get(key, Decimal(0)) + (
            cost if cost is not None and not pd.isna(cost) else Decimal(0)
        )
    return pd.DataFrame(
        {
            "tier": [k[0] for k in rows],
            "step": [k[1] for k in rows],
            "cost_usd": list(rows.values()),
        }
    )


def agent_cost_per_step(trace: pd.DataFrame, *, top: int = TOP) -> Figure:
    """Agent One cost by tier (one bar each) and step kind: its own fee (red), then the calls
    by tool (the ``top`` costliest and "other"), prose and checks.

    ``trace``: a trace frame (``trace_frame``) or the report's cost by tier and step.
    """
    fig = figure(figsize=(9, 3.5), layout="constrained")
    ax = fig.add_subplot()
    ax.set_title("Agent One cost by tier and step (USD)")
    table = _by_step(trace)
    if table.empty:
        _empty(ax, "Agent One runs")
        return fig
    usd = _floats(table["cost_usd"])
    table = table.assign(
        step=[_label(s, 40) for s in table["step"].tolist()],
        tier=[_label(t) for t in table["tier"].tolist()],
    )
    per_step: dict[str, float] = {}
    for s, v in zip(table["step"].tolist(), usd, strict=True):
        per_step[s] = per_step.get(s, 0.0) + v
    fee = per_step.pop("own fee", None)
    kept = _fold(per_step, top)
    steps = (["own fee"] if fee is not None else []) + list(kept)
    tiers = sorted(
        set(table["tier"].tolist()), key=lambda t: ("flash", "standard", "pro", t).index(t)
    )
    cells: dict[tuple[str, str], float] = {}
    for t, s, v in zip(table["tier"].tolist(), table["step"].tolist(), usd, strict=True):
        s = s if s in steps else next(k for k in kept if k.startswith("other ("))
        cells[(t, s)] = cells.get((t, s), 0.0) + v
    y = list(range(len(tiers)))[::-1]
    left = [0.0] * len(tiers)
    palette = [
        "tab:blue",
        "tab:green",
        "tab:purple",
        "tab:orange",
        "tab:cyan",
        "tab:olive",
        "tab:brown",
        "tab:pink",
        "tab:gray",
    ]
    for i, s in enumerate(steps):
        widths = [cells.get((t, s), 0.0) for t in tiers]
        colour = "tab:red" if s == "own fee" else palette[(i - (fee is not None)) % len(palette)]
        ax.barh(y, widths, left=left, label=s, color=colour)
        left = [a + b for a, b in zip(left, widths, strict=True)]
    ax.set_yticks(y, tiers)
    ax.set_xlabel("USD (red: the runs' own fee, usage-priced; then the calls they made)")
    _legend(fig, ax, ncols=4)
    return fig


def spend_by_project(tasks: pd.DataFrame, *, top: int = 12) -> Figure:
    """Horizontal bars of cost per project, the ``top`` costliest and "other" (tasks without a
    project as "(no project)")."""
    fig = figure(figsize=(6, 3.5), layout="constrained")
    ax = fig.add_subplot()
    ax.set_title("Spend by project (USD)")
    table = _bar_table(tasks, "project")
    if table.empty:
        _empty(ax, "tasks")
        return fig
    names = [_label(p) if isinstance(p, str) else "(no project)" for p in table["project"].tolist()]
    values: dict[str, float] = {}
    counts: dict[str, int] = {}
    for name, v, n in zip(names, _floats(table["cost_usd"]), table["tasks"].tolist(), strict=True):
        values[name] = values.get(name, 0.0) + v  # two long names may shorten alike
        counts[name] = counts.get(name, 0) + int(n)
    kept = _fold(values, top)
    rest = sum(int(c) for n, c in counts.items() if n not in kept)
    labels = [_tasks(counts[n]) if n in counts else _tasks(rest) for n in kept]
    bars = ax.barh(list(kept)[::-1], list(kept.values())[::-1])
    ax.bar_label(bars, labels=labels[::-1], fontsize=7)
    ax.set_xlabel("USD")
    return fig


def month_forecast(tasks: pd.DataFrame, fc: Any, *, budget: Any = None) -> Figure:
    """Cumulative spend of ``fc.month`` to ``fc.as_of``, the forecast of the month's total at
    its end (dashed, with its interval as a bar where there is one) and the overall budget
    (red), if any.

    ``tasks``: a tasks frame, or the daily roll-up of the month (``period``, ``cumulative_usd``).
    """
    from songlab.ledger.engine import rollup

    fig = figure(figsize=(7, 3.5), layout="constrained")
    ax = fig.add_subplot()
    ax.set_title(f"{fc.as_of:%B %Y}: month to date and forecast (USD)")
    if _is_tasks(tasks):
        p = make_period(start=fc.as_of.date().replace(day=1), end=fc.as_of.date())
        daily = rollup(tasks, "day", p=p)
    else:
        daily = tasks
    daily = daily[daily["period"].notna()]
    days = [d.day for d in daily["period"].tolist()]
    ax.plot(
        days,
        _floats(daily["cumulative_usd"]),
        marker="o",
        markersize=3,
        label=f"spent: {float(fc.month_to_date_usd):,.2f}",
    )
    elapsed = float(fc.days_elapsed)
    ax.plot(
        [elapsed, fc.days_in_month],
        [float(fc.month_to_date_usd), float(fc.forecast_usd)],
        linestyle="--",
        color="tab:gray",
        label=f"forecast: {float(fc.forecast_usd):,.2f}",
    )
    low, high = fc.low_usd, fc.high_usd
    if low is not None and high is not None:
        ax.plot(  # one mark: the interval as a bar with its ends
            [fc.days_in_month, fc.days_in_month],
            [float(low), float(high)],
            color="tab:gray",
            marker="_",
            markersize=10,
            label=f"{fc.level:.0%} interval: {float(low):,.2f} to {float(high):,.2f}",
        )
    if budget is not None:
        ax.axhline(float(budget), color="tab:red", label=f"budget: {float(budget):,.2f}")
    ax.set_xlim(0.5, fc.days_in_month + 0.5)
    ax.set_xlabel(f"day of {fc.as_of:%B} (UTC)")
    ax.set_ylabel("USD, cumulative")
    _legend(fig, ax, ncols=3)
    return fig


def png_bytes(fig: Figure, *, dpi: int = 100) -> bytes:
    """The figure rendered as PNG with the Agg canvas."""
    FigureCanvasAgg(fig)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    return buf.getvalue()
