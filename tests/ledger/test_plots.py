"""The plots render (Agg) for real frames and for empty ones."""

from __future__ import annotations

from typing import Any

import pytest
from matplotlib.figure import Figure

from songlab.ledger import plots, tasks_frame, trace_frame
from songlab.ledger.engine import spend
from tests.ledger._util import snap

PNG = b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("empty", [False, True], ids=["data", "empty"])
def test_every_plot_renders(records: list[dict[str, Any]], empty: bool) -> None:
    tasks = tasks_frame([] if empty else records[:400])
    trace = trace_frame(tasks)
    figs = [
        plots.spend_over_time(tasks),
        plots.spend_by_tier(tasks),
        plots.tier_comparison_plot(tasks),
        plots.agent_cost_per_step(trace),
    ]
    for fig in figs:
        assert isinstance(fig, Figure)
        assert plots.png_bytes(fig, dpi=40).startswith(PNG)
    if not empty:
        bars = figs[1].axes[0].patches
        # one bar per tier of the spend (Agent One runs their own, "agent run")
        assert len(bars) == len(spend(tasks, "tier"))


def test_one_day_of_spend_is_drawn_as_bars() -> None:
    fig = plots.spend_over_time(
        tasks_frame([snap("a"), snap("b", operation="generate_music", cost_usd="0.07")])
    )
    heights = sorted(round(p.get_height(), 2) for p in fig.axes[0].patches)
    assert heights == [0.07, 0.12]


# -- every chart scaled to its data ---------------------------------------------------------


def _inside(inner: Any, outer: Any, slack: float = 1.5) -> bool:
    return (
        inner.x0 >= outer.x0 - slack
        and inner.x1 <= outer.x1 + slack
        and inner.y0 >= outer.y0 - slack
        and inner.y1 <= outer.y1 + slack
    )


def assert_scaled(fig: Figure) -> None:
    """Every bar, bar label and line point inside the axes; every text (ticks, titles, labels,
    legend) inside the figure; the legend's rows name only what was drawn with a size."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    for ax in fig.axes:
        _assert_marks_inside(ax, renderer)
        _assert_texts_inside(ax, renderer, fig.bbox)
    _assert_legends(fig, renderer)


def _assert_marks_inside(ax: Any, renderer: Any) -> None:
    import matplotlib.patches

    box = ax.get_window_extent(renderer)
    for patch in ax.patches:
        if isinstance(patch, matplotlib.patches.Rectangle) and patch.get_width() > 0:
            assert _inside(patch.get_window_extent(renderer), box), patch
    for text in ax.texts:
        if text.get_text():
            assert _inside(text.get_window_extent(renderer), box), text.get_text()
    for line in ax.lines:
        if line.get_linestyle() in ("None", "") and line.get_marker() in (None, "None"):
            continue
        if len(line.get_xydata()) == 2 and line.get_transform() != ax.transData:
            continue  # an axhline: checked through its y below
        xs, ys = zip(*line.get_xydata(), strict=True)
        lo, hi = ax.get_xlim(), ax.get_ylim()
        assert all(lo[0] <= x <= lo[1] for x in xs), (line.get_label(), xs, lo)
        assert all(hi[0] <= y <= hi[1] for y in ys), (line.get_label(), ys, hi)


def _assert_texts_inside(ax: Any, renderer: Any, page: Any) -> None:
    texts = [ax.title, ax.xaxis.label, ax.yaxis.label]
    lo, hi = sorted(ax.get_xlim()), sorted(ax.get_ylim())
    texts += [t for t in ax.get_xticklabels() if lo[0] <= t.get_position()[0] <= lo[1]]
    texts += [t for t in ax.get_yticklabels() if hi[0] <= t.get_position()[1] <= hi[1]]
    for t in texts:
        if t.get_text() and t.get_visible():
            assert _inside(t.get_window_extent(renderer), page), t.get_text()


def _assert_legends(fig: Figure, renderer: Any) -> None:
    import matplotlib.lines
    import matplotlib.text

    for legend in fig.legends:
        assert _inside(legend.get_window_extent(renderer), fig.bbox)
        for t in legend.get_texts():
            assert isinstance(t, matplotlib.text.Text)
    drawn = set()
    for ax in fig.axes:
        for patch in ax.patches:
            if patch.get_width() > 0 and patch.get_height() > 0:
                drawn.add(patch.get_label() if not patch.get_label().startswith("_") else None)
        drawn |= {
            line.get_label() for line in ax.lines if isinstance(line, matplotlib.lines.Line2D)
        }
        drawn |= {c.get_label() for c in ax.containers}
        drawn |= {c.get_label() for c in ax.collections}
    for legend in fig.legends:
        for t in legend.get_texts():
            assert t.get_text() in drawn, (t.get_text(), drawn)


def _frame(days: int, n: int, *, seed: int = 3, **edit: Any) -> Any:
    from datetime import UTC, datetime, timedelta

    import pyarrow as pa

    from songlab.ledger import _schema
    from songlab.ledger.synthetic import synthetic_table

    as_of = datetime(2027, 1, 14, 14, 9, 29, tzinfo=UTC)
    t = synthetic_table(
        n,
        seed=seed,
        labels=True,
        start=as_of - timedelta(days=days),
        days=days,
        settled_before=as_of,
    )
    for name, value in edit.items():
        i = t.schema.get_field_index(name)
        col = pa.array([value(v) for v in t[name].to_pylist()], t.schema.field(i).type)
        t = t.set_column(i, t.schema.field(i), col)
    return _schema.to_frame(t), as_of


def _charts(frame: Any, as_of: Any, budget: Any = None) -> dict[str, Figure]:
    from songlab.ledger import tables

    d = tables.build(frame, as_of=as_of, budgets=[budget] if budget else None)
    days = d.charts["project_days"]
    return {
        "month": plots.month_forecast(d.charts["month_days"], d.forecast, budget=budget),
        "time": plots.spend_over_time(days, by="project", period=days.attrs["freq"]),
        "project": plots.spend_by_project(d.tables["by_project"]),
        "tier": plots.spend_by_tier(d.charts["by_tier"]),
        "comparison": plots.tier_comparison_plot(d.tables["tier_comparison"]),
        "agent": plots.agent_cost_per_step(d.tables["agent_by_step"]),
    }


CASES = {
    "one-day": dict(days=1, n=40),
    "two-days": dict(days=2, n=60),
    "six-weeks": dict(days=45, n=400),
    "four-months-of-areas": dict(days=120, n=600),
    "long-project-names": dict(
        days=10, n=200, project=lambda p: None if p is None else f"{p}-" + "x" * 60
    ),
    "big-amounts": dict(
        days=10, n=200, cost_usd=lambda c: None if c is None else c * 100_000,
        billed_usd=lambda c: None if c is None else c * 100_000,
    ),
}  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize("case", list(CASES), ids=list(CASES))
def test_every_chart_holds_its_marks_and_labels(case: str) -> None:
    kw = dict(CASES[case])
    frame, as_of = _frame(kw.pop("days"), kw.pop("n"), **kw)
    for name, fig in _charts(frame, as_of, budget="1000000").items():
        try:
            assert_scaled(fig)
        except AssertionError as exc:
            raise AssertionError(f"{case}: {name}: {exc}") from None


def test_a_budget_or_an_interval_above_the_data_is_inside_the_month_chart() -> None:
    frame, as_of = _frame(20, 100)
    fig = _charts(frame, as_of, budget="9000")["month"]
    assert_scaled(fig)
    ax = fig.axes[0]
    assert ax.get_ylim()[1] > 9000  # the budget line is drawn inside, not past the top


def test_one_day_is_one_readable_bar_in_the_middle_with_its_total() -> None:
    fig = plots.spend_over_time(
        tasks_frame([snap("a"), snap("b", operation="generate_music", cost_usd="0.07")])
    )
    assert_scaled(fig)
    ax = fig.axes[0]
    fig.canvas.draw()
    box = ax.get_window_extent()
    bars = [p.get_window_extent() for p in ax.patches]
    left, right = min(b.x0 for b in bars), max(b.x1 for b in bars)
    width, middle = right - left, (left + right) / 2
    assert box.width / 10 <= width <= box.width / 5  # a seventh of the axis, give or take
    assert abs(middle - (box.x0 + box.x1) / 2) < box.width * 0.02  # in the middle
    assert [t.get_text() for t in ax.texts] == ["0.19"]  # its total, above it


def test_a_step_that_cost_nothing_is_not_in_the_legend() -> None:
    from decimal import Decimal

    import pandas as pd

    by_step = pd.DataFrame(
        {
            "tier": ["pro", "pro", "pro", "pro", "flash"],
            "step": [
                "own fee",
                "called generate_song",
                "checked its work",
                "wrote text",
                "own fee",
            ],
            "cost_usd": [
                Decimal("0.115"),
                Decimal("0.21"),
                Decimal(0),
                Decimal(0),
                Decimal("0.006"),
            ],
        }
    )
    fig = plots.agent_cost_per_step(by_step)
    assert_scaled(fig)
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert legend == ["own fee", "called generate_song"]
    ax = fig.axes[0]
    assert ax.get_xlim()[1] > 0.325  # the pro bar's end (0.325) and its total inside
