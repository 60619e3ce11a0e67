"""Plots of the ledger, as matplotlib Figures (no pyplot state, no GUI backend).

Every chart summarises: its number of marks is bounded whatever the number of
tasks (the top ``TOP`` groups and "other", one series per group over the
periods, Agent One cost by tier and step kind). Each function takes a tasks
frame (aggregated by the ledger engine, ``songlab.ledger.engine``, the same queries
as the report's) or the aggregate table the report already made, and returns a new
``Figure``. Amounts are exact Decimals in the tables; they become floats here only to be
drawn. ``png_bytes`` renders a figure with the Agg canvas. Each Figure is made by
:func:`songlab.figures.figure`, so a notebook shows it as a picture with or without pyplot.

Each chart is scaled to its data:

- the axes hold every mark and every label: a bar's end and the text beside it are inside
  the plot (room is made for them), a line's budget or interval too;
- a few periods are a few readable bars in the middle of the axis (one day is one bar, a
  seventh of the width, with its total above it), never a sliver at the left edge;
- a legend lists only what is drawn: a group or a step that cost nothing is left out;
- legends sit below the axes, outside them, so they never cover a mark.

The layout is computed here from the texts that sit outside the axes (tick labels, the
legend's rows), not by matplotlib's constrained layout, which draws each chart twice.
"""

from __future__ import annotations

import io
import math
from collections.abc import Sequence
from decimal import Decimal
from typing import Any, Final

import pandas as pd
from matplotlib.axes import Axes
from matplotlib.axis import Axis
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter

from songlab.figures import figure
from songlab.ledger.dates import period as make_period
from songlab.ledger.trace import AGENT_FEE

__all__ = [
    "BARS_UP_TO",
    "MIN_SLOTS",
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
# Fewer periods than this are drawn in the middle of this many bar widths (one day: a bar
# a seventh of the axis wide, not the whole axis, not a sliver at its left).
MIN_SLOTS: Final[int] = 7
# Up to this many bars carry their total above them.
TOTALS_UP_TO: Final[int] = 14
# Groups drawn by name; the rest are one "other" group.
TOP: Final[int] = 8
DPI: Final[int] = 100
# Text sizes (points) and the width of one character, as a share of its size (DejaVu Sans,
# matplotlib's font, is at most 0.66 em wide on average for labels like these).
SMALL: Final[float] = 7.0
TICKS: Final[float] = 8.0
CHAR_EM: Final[float] = 0.66


# ------------------------------------------------------------------------------ layout


def _px(points: float) -> float:
    return points * DPI / 72


def _text_px(text: str, points: float) -> float:
    """The width of ``text`` at ``points``, in pixels (an upper estimate)."""
    return len(text) * _px(points) * CHAR_EM


def _new(width: float, height: float, title: str) -> tuple[Figure, Axes]:
    fig = figure(figsize=(width, height), dpi=DPI)  # shown as a picture in a notebook
    FigureCanvasAgg(fig)  # the layout measures its texts with Agg's renderer
    ax = fig.add_subplot()
    ax.set_title(title, fontsize=11)
    ax.tick_params(labelsize=TICKS)
    return fig, ax


def _usd_axis(axis: Axis) -> None:
    """Tick labels of USD amounts: thousands separated, no offset text (``1,200``, ``0.5``)."""
    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}" if abs(v) >= 100 else f"{v:g}"))


def _tick_texts(axis: Axis) -> list[str]:
    """The labels the axis will draw at its ticks (view limits as they are now)."""
    locs = [v for v in axis.get_majorticklocs() if _inside(v, axis.get_view_interval())]
    fmt = axis.get_major_formatter()
    fmt.set_locs(locs)
    return [str(fmt(v, i)) for i, v in enumerate(locs)]


def _inside(v: float, interval: Sequence[float]) -> bool:
    lo, hi = min(interval), max(interval)
    return lo - 1e-9 * (abs(lo) + 1) <= v <= hi + 1e-9 * (abs(hi) + 1)


def _layout(
    fig: Figure,
    ax: Axes,
    *,
    legend: bool = False,
    ncols: int = 4,
    rotated: float = 0.0,
    xlabel: bool = False,
) -> None:
    """Place the axes so what sits outside them fits the figure: the y tick labels and the
    y label at the left, the x tick labels (``rotated`` degrees), the x label and the legend
    (in as many columns, up to ``ncols``, as its labels fit) below, the title above."""
    ax.get_xlim(), ax.get_ylim()  # the view limits, autoscaled if they are pending
    w, h = fig.bbox.width, fig.bbox.height
    left = max((_text_px(t, TICKS) for t in _tick_texts(ax.yaxis)), default=0.0) + 10
    if ax.get_ylabel():
        left += _px(10) + 6
    xticks = _tick_texts(ax.xaxis)
    widest = max((_text_px(t, TICKS) for t in xticks), default=0.0)
    angle = math.radians(rotated)
    below = widest * math.sin(angle) + _px(TICKS) * math.cos(angle) + 10
    if xlabel:
        below += _px(TICKS) * 1.4 + 4
    handles, labels = ax.get_legend_handles_labels() if legend else ([], [])
    cols = 0
    if labels:
        entry = max(_text_px(t, SMALL) for t in labels) + _px(SMALL) * 3  # the handle, gaps
        cols = max(1, min(ncols, len(labels), int((w - 16) // entry)))
        rows = -(-len(labels) // cols)
        below += rows * _px(SMALL) * 1.6 + 8
    top = _px(11) * 1.6 + 8
    right = max(14.0, widest * math.cos(angle) / 2 + 4)  # the last x label's overhang
    ax.set_position((left / w, below / h, 1 - (left + right) / w, 1 - (below + top) / h))
    for old in fig.legends:
        old.remove()
    if labels:
        fig.legend(
            handles,
            labels,
            loc="lower center",
            bbox_to_anchor=(0.5, 2 / h),
            ncols=cols,
            fontsize=SMALL,
            frameon=False,
        )


def _room_right(ax: Axes, ends: Sequence[float], labels: Sequence[str]) -> None:
    """x limits of a horizontal bar chart that hold each bar's end and its label beside it."""
    axes_px = ax.get_position().width * ax.figure.bbox.width
    longest = max((_text_px(t, SMALL) for t in labels), default=0.0) + 8
    share = min(0.6, longest / max(axes_px, 1.0))  # of the axes' width, for the labels
    top = max(ends, default=0.0) or 1.0
    ax.set_xlim(0, top / (1 - share) * 1.02)


def _room_above(ax: Axes, tops: Sequence[float], *, also: Sequence[float] = ()) -> None:
    """y limits of a bar chart that hold each bar, a label above it, and the lines ``also``."""
    high = max([*tops, *also], default=0.0) or 1.0
    ax.set_ylim(0, high * 1.15)


# ------------------------------------------------------------------------------ data


def _label(value: object, width: int = 32) -> str:
    """Text from the data as a chart label: one line, no control characters, no mathtext
    (``$``), at most ``width`` characters."""
    text = " ".join("".join(ch if ch.isprintable() else " " for ch in str(value)).split())
    if len(text) > width:
        text = text[: width - 1] + "\u2026"
    return text.replace("$", r"\$")


def _tasks(n: float) -> str:
    n = int(n)
    return f"{n:,} task{'' if n == 1 else 's'}"


def _usd(v: float) -> str:
    return f"{v:,.2f}"


def _floats(series: pd.Series) -> list[float]:
    return [float(v) if v is not None and not pd.isna(v) else 0.0 for v in series.tolist()]


def _empty(ax: Axes, what: str) -> None:
    ax.text(0.5, 0.5, f"no {what}", ha="center", va="center", transform=ax.transAxes)
    ax.set_axis_off()


def _is_tasks(frame: pd.DataFrame) -> bool:
    return "task_id" in frame.columns and "cost_source" in frame.columns


def _fold(values: dict[str, float], n: int = TOP) -> dict[str, float]:
    """The ``n`` largest of ``values`` that are above 0, by name, the rest as one
    ``other (k)`` entry (if it is above 0): nothing that cost nothing is drawn or listed."""
    ranked = sorted(((k, v) for k, v in values.items() if v > 0), key=lambda kv: (-kv[1], kv[0]))
    if len(ranked) <= n + 1:
        return dict(ranked)
    rest = ranked[n:]
    return dict(ranked[:n]) | {f"other ({len(rest)})": sum(v for _, v in rest)}


# ------------------------------------------------------------------------------ spend over time


def spend_over_time(
    tasks: pd.DataFrame, *, by: str = "operation", period: str = "day", top: int = TOP
) -> Figure:
    """Cost per ``period`` (day, week or month; empty periods drawn as 0), stacked by ``by``
    (its ``top`` groups and "other"): bars, or areas past ``BARS_UP_TO`` periods.

    ``tasks``: a tasks frame, or a roll-up by ``by`` (``period``, ``by``, ``cost_usd``).
    """
    from songlab.ledger.rollups import rollup

    fig, ax = _new(9, 4, f"Spend per {period} by {by} (USD)")
    table = rollup(tasks, period, by=by) if _is_tasks(tasks) else tasks
    undated = table[table["period"].isna()]
    table = table[table["period"].notna()]
    if table.empty:
        _empty(ax, "tasks with a date")
        return fig
    wide = _wide(table, by, top)
    if len(wide.index) <= BARS_UP_TO:
        _stacked_bars(ax, wide)
    else:
        x = list(range(len(wide.index)))
        series = [wide[c].astype(float).tolist() for c in wide.columns]
        ax.stackplot(x, *series, labels=[str(c) for c in wide.columns], step="mid")
        ax.set_xlim(-0.5, len(x) - 0.5)
        ax.set_ylim(0, max(sum(col) for col in zip(*series, strict=True)) * 1.05 or 1.0)
    ticks = list(range(len(wide.index)))[:: max(1, len(wide.index) // 12)]
    ax.set_xticks(ticks, [str(wide.index[i]) for i in ticks])
    ax.tick_params(axis="x", rotation=60, labelsize=SMALL)
    _usd_axis(ax.yaxis)
    ax.set_ylabel("USD")
    if len(undated):
        n = int(undated["tasks"].sum())
        ax.set_xlabel(f"not drawn: {_tasks(n)} of unknown date", fontsize=SMALL)
    _layout(fig, ax, legend=True, ncols=4, rotated=60, xlabel=bool(len(undated)))
    return fig


def _wide(table: pd.DataFrame, by: str, top: int) -> pd.DataFrame:
    """Spend per period (rows) and group (columns: the ``top`` that cost something, "other")."""
    keys = [_label(k) if isinstance(k, str) else f"(no {by})" for k in table[by].tolist()]
    table = table.assign(usd=_floats(table["cost_usd"]), key=keys)
    totals = {str(k): float(v) for k, v in table.groupby("key")["usd"].sum().items()}
    kept = _fold(totals, top)
    other = next((k for k in kept if k not in totals), None)  # "other (k)", if folded
    folded = [k if k in kept else other for k in table["key"]]
    table = table.assign(key=pd.Series(folded, index=table.index, dtype=object))
    wide = table.pivot_table(
        index="period", columns="key", values="usd", aggfunc="sum", fill_value=0.0
    )
    full = table.drop_duplicates("period").set_index("period").index  # every period, 0s too
    wide = wide.reindex(full, fill_value=0.0)
    return wide[[k for k in kept if k in wide.columns]]


def _stacked_bars(ax: Axes, wide: pd.DataFrame) -> None:
    """Stacked bars, at least ``MIN_SLOTS`` bar widths of axis with the bars in the middle,
    each bar's total above it when there are few."""
    n = len(wide.index)
    x = list(range(n))
    bottom = [0.0] * n
    for col in wide.columns:
        values = wide[col].astype(float).tolist()
        ax.bar(x, values, bottom=bottom, label=str(col), width=0.8)
        bottom = [b + v for b, v in zip(bottom, values, strict=True)]
    slots = max(n, MIN_SLOTS)
    middle = (n - 1) / 2
    ax.set_xlim(middle - slots / 2, middle + slots / 2)
    _room_above(ax, bottom)
    if n <= TOTALS_UP_TO:
        for xi, total in zip(x, bottom, strict=True):
            ax.text(xi, total, _usd(total), ha="center", va="bottom", fontsize=SMALL)


# ------------------------------------------------------------------------------ by tier


def _bar_table(tasks: pd.DataFrame, key: str) -> pd.DataFrame:
    from songlab.ledger.engine import open_ledger

    if not _is_tasks(tasks):
        return tasks
    order = None if key == "tier" else "cost_usd DESC NULLS LAST"
    with open_ledger(tasks) as lg:
        return lg.spend([key], order=order)


def spend_by_tier(tasks: pd.DataFrame) -> Figure:
    """Bars of cost and task counts per license tier (by name)."""
    fig, ax = _new(6, 3.5, "Spend by license tier (USD)")
    table = _bar_table(tasks, "tier")
    if table.empty:
        _empty(ax, "tasks")
        return fig
    names = [_label(t, 16) if isinstance(t, str) else "(unknown)" for t in table["tier"].tolist()]
    heights = _floats(table["cost_usd"])
    bars = ax.bar(names, heights)
    ax.bar_label(bars, labels=[_tasks(n) for n in table["tasks"].tolist()], fontsize=SMALL)
    _room_above(ax, heights)
    _usd_axis(ax.yaxis)
    ax.set_ylabel("USD")
    _layout(fig, ax)
    return fig


def tier_comparison_plot(tasks: pd.DataFrame) -> Figure:
    """The compared tasks priced in each tier, with a line at what they actually cost.

    ``tasks``: a tasks frame or the tier comparison table (``tier``, ``priced_usd`` ...).
    """
    from songlab.ledger.tiers import tier_comparison

    fig, ax = _new(6, 3.5, "The same tasks in every license tier (USD)")
    comp = tier_comparison(tasks) if _is_tasks(tasks) else tasks
    if comp.empty or int(comp["tasks"].iloc[0]) == 0:
        _empty(ax, "billed tasks to compare")
        return fig
    heights = _floats(comp["priced_usd"])
    ax.bar(comp["tier"].astype(str).tolist(), heights, label="priced in tier")
    actual = float(comp["actual_usd"].iloc[0])
    ax.axhline(actual, color="black", linestyle="--", label=f"actually spent ({_usd(actual)})")
    _room_above(ax, heights, also=[actual])
    _usd_axis(ax.yaxis)
    ax.set_ylabel("USD")
    _layout(fig, ax, legend=True, ncols=2)
    return fig


# ------------------------------------------------------------------------------ Agent One


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


_PALETTE: Final[tuple[str, ...]] = (
    "tab:blue",
    "tab:green",
    "tab:purple",
    "tab:orange",
    "tab:cyan",
    "tab:olive",
    "tab:brown",
    "tab:pink",
    "tab:gray",
)
_TIER_ORDER: Final[tuple[str, ...]] = ("flash", "standard", "pro")


def _step_cells(table: pd.DataFrame, top: int) -> tuple[list[str], list[str], dict[Any, float]]:
    """(tiers, steps, (tier, step) -> USD): the steps that cost something, the own fee first,
    then the ``top`` costliest calls and "other"."""
    usd = _floats(table["cost_usd"])
    steps_of = [_label(s, 40) for s in table["step"].tolist()]
    tiers_of = [_label(t) for t in table["tier"].tolist()]
    per_step: dict[str, float] = {}
    for s, v in zip(steps_of, usd, strict=True):
        per_step[s] = per_step.get(s, 0.0) + v
    fee = per_step.pop("own fee", 0.0)
    kept = _fold(per_step, top)
    other = next((k for k in kept if k.startswith("other (")), None)
    steps = (["own fee"] if fee > 0 else []) + list(kept)
    cells: dict[tuple[str, str], float] = {}
    for t, s, v in zip(tiers_of, steps_of, usd, strict=True):
        s = s if s in steps else other or s
        cells[(t, s)] = cells.get((t, s), 0.0) + v
    tiers = sorted(
        set(tiers_of), key=lambda t: (_TIER_ORDER.index(t) if t in _TIER_ORDER else 9, t)
    )
    return tiers, [s for s in steps if any(cells.get((t, s), 0) > 0 for t in tiers)], cells


def agent_cost_per_step(trace: pd.DataFrame, *, top: int = TOP) -> Figure:
    """Agent One cost by tier (one bar each, its total beside it) and step kind: its own fee
    (red), then the calls by tool (the ``top`` costliest and "other"), prose and checks; a
    step that cost nothing is neither drawn nor in the legend.

    ``trace``: a trace frame (``trace_frame``) or the report's cost by tier and step.
    """
    fig, ax = _new(9, 3.5, "Agent One cost by tier and step (USD)")
    table = _by_step(trace)
    if table.empty:
        _empty(ax, "Agent One runs")
        return fig
    tiers, steps, cells = _step_cells(table, top)
    y = list(range(len(tiers)))[::-1]
    left = [0.0] * len(tiers)
    for i, s in enumerate(steps):
        widths = [cells.get((t, s), 0.0) for t in tiers]
        colour = "tab:red" if s == "own fee" else _PALETTE[(i - (steps[0] == "own fee")) % 9]
        ax.barh(y, widths, left=left, label=s, color=colour)
        left = [a + b for a, b in zip(left, widths, strict=True)]
    totals = [f"{_usd(v)}" for v in left]
    ax.set_yticks(y, tiers)
    ax.set_xlabel("USD (red: the runs' own fee, usage-priced; then the calls they made)")
    _usd_axis(ax.xaxis)
    _layout(fig, ax, legend=True, ncols=4, xlabel=True)
    _room_right(ax, left, totals)
    _layout(fig, ax, legend=True, ncols=4, xlabel=True)  # again: the x ticks of the new limits
    for yi, end, text in zip(y, left, totals, strict=True):
        ax.text(end, yi, " " + text, va="center", ha="left", fontsize=SMALL)
    return fig


# ------------------------------------------------------------------------------ by project


def spend_by_project(tasks: pd.DataFrame, *, top: int = 12) -> Figure:
    """Horizontal bars of cost per project, the ``top`` costliest and "other" (tasks without a
    project as "(no project)"), each with its number of tasks beside it."""
    fig, ax = _new(6, 3.5, "Spend by project (USD)")
    table = _bar_table(tasks, "project")
    if table.empty:
        _empty(ax, "tasks")
        return fig
    names = [
        _label(p, 24) if isinstance(p, str) else "(no project)" for p in table["project"].tolist()
    ]
    values: dict[str, float] = {}
    counts: dict[str, int] = {}
    for name, v, n in zip(names, _floats(table["cost_usd"]), table["tasks"].tolist(), strict=True):
        values[name] = values.get(name, 0.0) + v  # two long names may shorten alike
        counts[name] = counts.get(name, 0) + int(n)
    kept = _fold(values, top)
    if not kept:
        _empty(ax, "spend")
        return fig
    rest = sum(int(c) for n, c in counts.items() if n not in kept)
    labels = [_tasks(counts[n]) if n in counts else _tasks(rest) for n in kept]
    bars = ax.barh(list(kept)[::-1], list(kept.values())[::-1])
    ax.set_xlabel("USD")
    _usd_axis(ax.xaxis)
    _layout(fig, ax, xlabel=True)
    _room_right(ax, list(kept.values()), labels)
    _layout(fig, ax, xlabel=True)  # again: the x ticks of the new limits
    ax.bar_label(bars, labels=labels[::-1], fontsize=SMALL, padding=3)
    return fig


# ------------------------------------------------------------------------------ the month


def month_forecast(tasks: pd.DataFrame, fc: Any, *, budget: Any = None) -> Figure:
    """Cumulative spend of ``fc.month`` by days elapsed (the end of each day, then the as-of
    time), the forecast of the month's total at its end (dashed, with its interval as a bar
    where there is one) and the overall budget (red), if any: all inside the axes.

    ``tasks``: a tasks frame, or the daily roll-up of the month (``period``, ``cumulative_usd``).
    """
    from songlab.ledger.rollups import rollup

    fig, ax = _new(7, 3.5, f"{fc.as_of:%B %Y}: month to date and forecast (USD)")
    if _is_tasks(tasks):
        p = make_period(start=fc.as_of.date().replace(day=1), end=fc.as_of.date())
        daily = rollup(tasks, "day", p=p)
    else:
        daily = tasks
    daily = daily[daily["period"].notna()]
    elapsed = float(fc.days_elapsed)
    today = fc.as_of.day
    xs = [0.0] + [float(d.day) if d.day < today else elapsed for d in daily["period"].tolist()]
    ys = [0.0, *_floats(daily["cumulative_usd"])]
    ax.plot(xs, ys, marker="o", markersize=3, label=f"spent: {_usd(float(fc.month_to_date_usd))}")
    forecast = float(fc.forecast_usd)
    ax.plot(
        [elapsed, fc.days_in_month],
        [float(fc.month_to_date_usd), forecast],
        linestyle="--",
        color="tab:gray",
        label=f"forecast: {_usd(forecast)}",
    )
    marks = [*ys, forecast]
    low, high = fc.low_usd, fc.high_usd
    if low is not None and high is not None:
        ax.plot(  # one mark: the interval as a bar with its ends
            [fc.days_in_month, fc.days_in_month],
            [float(low), float(high)],
            color="tab:gray",
            marker="_",
            markersize=10,
            label=f"{fc.level:.0%} interval: {_usd(float(low))} to {_usd(float(high))}",
        )
        marks.append(float(high))
    if budget is not None:
        ax.axhline(float(budget), color="tab:red", label=f"budget: {_usd(float(budget))}")
        marks.append(float(budget))
    ax.set_xlim(0, fc.days_in_month + 0.7)
    ax.set_ylim(0, max(marks) * 1.08 or 1.0)
    ax.set_xlabel(f"days of {fc.as_of:%B} elapsed (UTC)")
    _usd_axis(ax.yaxis)
    ax.set_ylabel("USD, cumulative")
    _layout(fig, ax, legend=True, ncols=2, xlabel=True)
    return fig


def png_bytes(fig: Figure, *, dpi: int = DPI) -> bytes:
    """The figure rendered as PNG with the Agg canvas (light compression: a report holds six)."""
    FigureCanvasAgg(fig)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, pil_kwargs={"compress_level": 1})
    return buf.getvalue()
