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
