"""Quality per dollar against hand-computed prices (the spec's price list, via the ledger)."""

from __future__ import annotations

from decimal import Decimal

import pandas as pd
import pytest

from songlab.ledger import tasks_frame
from songlab.listening import ListeningError, plot_quality_per_dollar, quality_per_dollar

D = Decimal
T0 = "2026-11-20T10:00:00+00:00"


def _task(tid: str, model: str, license: int, cost: str) -> dict:
    return {
        "task_id": tid,
        "tool_id": f"tool-{model}",
        "operation": "generate_song",
        "model": model,
        "license": license,
        "status": "completed",
        "created_at": T0,
        "updated_at": T0,
        "cost_usd": cost,
    }


@pytest.fixture
def ledger() -> pd.DataFrame:
    # standard tier (2): v5 0.11, v6 0.15, v7 0.25 per song (docs: the spec's price list)
    rows = [
        _task(f"t-{m}-{i}", m, 2, c)
        for m, c in (("v5", "0.11"), ("v6", "0.15"), ("v7", "0.25"))
        for i in range(3)
    ]
    rows.append(_task("t-other", "v7", 4, "0.67"))  # not a clip of the campaign
    return tasks_frame(rows)


CLIPS = {m: [f"t-{m}-{i}" for i in range(3)] for m in ("v5", "v6", "v7")}
MUSHRA = pd.DataFrame(
    {
        "model": ["v7", "v6", "v5"],
        "mean": [80.0, 60.0, 40.0],
        "ci_low": [75.0, 55, 35],
        "ci_high": [85.0, 65, 45],
    }
)


def test_cost_per_point_and_savings_by_hand(ledger) -> None:
    table = quality_per_dollar(MUSHRA, ledger, CLIPS)
    own = table[table["measured"]].set_index("model")
    assert own["usd_per_clip"].to_dict() == {"v5": D("0.11"), "v6": D("0.15"), "v7": D("0.25")}
    assert own.loc["v7", "usd_per_point"] == D("0.003125")  # 0.25 / 80
    assert own.loc["v6", "usd_per_point"] == D("0.0025")
    assert own.loc["v5", "usd_per_point"] == D("0.00275")
    assert own.loc["v6", "save_per_clip_usd"] == D("0.10")  # against v7, the best score
    assert own.loc["v6", "save_per_1000_usd"] == D("100.00")
    assert own.loc["v6", "score_change"] == -20.0
    assert own.loc["v7", "points_per_usd"] == pytest.approx(320.0)
    assert table.attrs["reference_model"] == "v7" and table.attrs["license"] == 2
    # other tiers: list prices of the same clips (v7 royalty_free 0.12, master 1.67)
    v7 = table[table["model"] == "v7"].set_index("tier")
    assert v7.loc["royalty_free", "usd_per_clip"] == D("0.12")
    assert v7.loc["royalty_free", "save_per_clip_usd"] == D("0.13")
    assert v7.loc["master", "usd_per_clip"] == D("1.67")
    assert not v7.loc["master", "measured"] and v7.loc["standard", "measured"]
    assert len(table) == 15 and isinstance(table["usd_per_clip"].iloc[0], Decimal)
    fig = plot_quality_per_dollar(table)
    assert len(fig.axes) == 1 and fig.axes[0].get_xscale() == "log"
    _reads_at_a_glance(fig)


def _reads_at_a_glance(fig) -> None:
    """Dollar ticks ($0.10, $0.20, ...; no 10^-1), and a legend that overlaps no data or axes."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    ax = fig.axes[0]
    lo, hi = ax.get_xlim()
    shown = [
        t.get_text()
        for t in ax.get_xticklabels()
        if t.get_text() and lo <= t.get_position()[0] <= hi
    ]
    assert len(shown) >= 2 and all(t.startswith("$") for t in shown), shown
    assert (
        "$0.20" in shown and "$1" in shown and not any("10^" in t or "\\times" in t for t in shown)
    )
    renderer = canvas.get_renderer()
    legend = ax.get_legend().get_window_extent(renderer)
    axes_box = ax.get_window_extent(renderer)
    assert not legend.overlaps(axes_box), "the legend covers the plot"
    assert fig.bbox.contains(legend.x1 - 1, legend.y1 - 1)  # and it is inside the figure


def test_mixed_tiers_missing_tasks_and_unscored_models_are_refused(ledger) -> None:
    with pytest.raises(ListeningError, match="license tiers \\[2, 4\\]"):
        quality_per_dollar(MUSHRA, ledger, {**CLIPS, "v7": CLIPS["v7"] + ["t-other"]})
    with pytest.raises(ListeningError, match="not billed tasks") as info:
        quality_per_dollar(MUSHRA, ledger, {**CLIPS, "v5": ["nope"]})
    assert info.value.argument == "clip_tasks"
    with pytest.raises(ListeningError, match="without a score"):
        quality_per_dollar(MUSHRA[MUSHRA["model"] != "v5"], ledger, CLIPS)
    with pytest.raises(ListeningError, match="score column"):
        quality_per_dollar(pd.DataFrame({"model": ["v5"]}), ledger, CLIPS)


def test_points_per_dollar_carry_the_scores_interval_and_one_verdict_reads_them(ledger) -> None:
    """The ratio's interval is the score's divided by the exact price; the sentence names the
    best value only when that interval clears every other's, and otherwise names none."""
    from songlab.listening.value import value_verdict

    table = quality_per_dollar(MUSHRA, ledger, CLIPS)
    own = table[table["measured"]].set_index("model")
    assert own.loc["v6", "points_per_usd_low"] == pytest.approx(55 / 0.15)
    assert own.loc["v6", "points_per_usd_high"] == pytest.approx(65 / 0.15)
    said = value_verdict(table)  # v6 367-433, v5 318-409, v7 300-340: v6 and v5 overlap
    assert said.winner is None and said.leaders == ("v6", "v5")
    assert said.behind == () and ("v6", "v7") in said.separated  # v7 overlaps v5, not v6
    assert said.text.startswith("No clear winner on points per dollar: v6 and v5 overlap")
    narrow = MUSHRA.assign(ci_low=[79.0, 59.0, 39.0], ci_high=[81.0, 61.0, 41.0])
    clear = value_verdict(quality_per_dollar(narrow, ledger, CLIPS))
    assert clear.winner == "v6" and clear.text.startswith("Highest points per dollar: v6, 400")
    bare = quality_per_dollar(MUSHRA[["model", "mean"]], ledger, CLIPS)  # no interval at all
    assert value_verdict(bare).winner is None
    assert "have no interval to separate by" in value_verdict(bare).text


def test_the_charts_title_and_legend_speak_the_same_unit(ledger) -> None:
    """Notebook 08's chart said "score per dollar" above a legend of "$0.0020 per point"."""
    fig = plot_quality_per_dollar(quality_per_dollar(MUSHRA, ledger, CLIPS))
    ax = fig.axes[0]
    legend = ax.get_legend()
    entries = [t.get_text() for t in legend.get_texts()]
    assert (
        "points per dollar" in ax.get_title()
        and "points per dollar" in legend.get_title().get_text()
    )
    assert all("points per dollar" in e and "per point" not in e and "$" not in e for e in entries)
    assert "v6: 400 points per dollar (367-433)" in entries
