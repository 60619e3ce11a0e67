"""Parity: every view of the ledger gives the same totals and counts, Decimal for Decimal.

Random task lists (hypothesis) mix billed, estimated and unknown costs, running and failed
tasks, Agent One runs (with and without a trace) and their sub-tasks, undated rows and
labels, in each answer profile's shape: ``default`` (the sandbox shows every fact),
``spec`` (only what the spec shows: no cost, no time, no operation; the client's record
and the tool listing fill what songlab made) and ``noisy`` (extra fields the ledger must
ignore). Each view is read back the way a user reads it (the accessor, the engine's
relation and its cube, ``CostPanel``, the report's tables, its Excel workbook and CSV
files) and compared with an oracle summed in Python from the frame's rows.

A new view is one more function in ``VIEWS`` returning :class:`Totals`. The FOCUS export
is one: its usage rows read back from the Parquet file plus what the export counts as
having no row (undated, unknown, pending, released tasks); per operation it holds its
rows only (``focus_oracle``).
"""

from __future__ import annotations

import csv
import json
from collections.abc import Callable
from dataclasses import dataclass, replace
from decimal import Decimal
from pathlib import Path
from typing import Any

import openpyxl
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from songlab.ledger import engine, export, tables, tasks_frame
from songlab.ledger.synthetic import agent_trace

PROFILES = ("default", "spec", "noisy")
KINDS = [  # (tool id, operation, model)
    ("t-song-v5", "generate_song", "v5"),
    ("t-song-v7", "generate_song", "v7"),
    ("t-stems", "separate_stems", "6-stem"),
    ("t-agent-flash", "agent", "flash"),
    ("t-mystery", "mystery_tool", "x1"),  # no list price: unknown unless billed
]
TOOLS = {tool: (op, model) for tool, op, model in KINDS}
STATUSES = ("completed", "completed", "failed", "queued", "processing")


@dataclass(frozen=True)
class Totals:
    tasks: int
    cost_usd: Decimal
    estimated_tasks: int
    estimated_usd: Decimal
    unknown_tasks: int
    pending_tasks: int
    by_operation: dict[str | None, tuple[int, Decimal]]


@st.composite
def workloads(draw: Any) -> tuple[list[dict[str, Any]], dict[str, dict[str, Any]]]:
    """(task snapshots as the sandbox shows them, the client's record of them by id)."""
    n = draw(st.integers(0, 18))
    tasks: list[dict[str, Any]] = []
    runs: list[str] = []
    for i in range(n):
        tid = f"task-{i:03d}"
        tool, op, model = draw(st.sampled_from(KINDS))
        status = draw(st.sampled_from(STATUSES))
        billed = draw(
            st.one_of(
                st.none(),
                st.decimals(min_value=0, max_value=50, places=8, allow_nan=False).map(str),
            )
        )
        day = draw(st.one_of(st.none(), st.integers(1, 30)))
        created = (
            None if day is None else f"2026-11-{day:02d}T{draw(st.integers(0, 23)):02d}:00:00Z"
        )
        rec: dict[str, Any] = {
            "task_id": tid,
            "tool_id": tool,
            "operation": op,
            "model": model,
            "license": draw(st.sampled_from([0, 1, 2, 5, None])),
            "status": status,
            "created_at": created,
            "updated_at": created,
            "cost_usd": None if status in ("queued", "processing") else billed,
            "output": {},
        }
        if op == "agent" and status == "completed" and draw(st.booleans()):
            rec["output"] = {"metadata_json": json.dumps(agent_trace(tid, seed=i))}
            runs.append(tid)
        if runs and op != "agent" and draw(st.integers(0, 3)) == 0:
            rec["parent_task_id"] = draw(st.sampled_from(runs))  # a sub-tool call
        tasks.append(rec)
    record = {
        t["task_id"]: {
            "project": draw(st.sampled_from([None, "jingles", "podcast"])),
            "tags": draw(st.sampled_from([None, "q4", "draft,q4"])),
            "key_id": draw(st.sampled_from([None, "key-a"])),
        }
        for t in tasks
    }
    return tasks, record


def _shown(tasks: list[dict[str, Any]], profile: str) -> list[dict[str, Any]]:
    if profile == "spec":  # the spec shows task_id, status and output only
        return [{k: t[k] for k in ("task_id", "status", "output")} for t in tasks]
    if profile == "noisy":
        return [{**t, "x_vendor": {"a": [1, 2]}, "cost_cents": 7} for t in tasks]
    return tasks


def _record(tasks: list[dict[str, Any]], labels: dict[str, dict[str, Any]], profile: str) -> Any:
    """The client's record: what songlab sent (tool, operation, model, license, when) and the
    labels; in the spec profile it is where the facts come from."""
    rows = [
        {
            "task_id": t["task_id"],
            "tool_id": t["tool_id"],
            "operation": t["operation"],
            "model": t["model"],
            "license": t["license"],
            "accepted_at": pd.Timestamp(t["created_at"]) if t["created_at"] else None,
            **labels[t["task_id"]],
        }
        for t in tasks
    ]
    if not rows or profile != "spec":  # elsewhere only the labels come from the record
        rows = [{"task_id": t["task_id"], **labels[t["task_id"]]} for t in tasks]
    return pa.Table.from_pylist(rows) if rows else None


def frame_of(tasks: list[dict[str, Any]], labels: dict[str, Any], profile: str) -> pd.DataFrame:
    return tasks_frame(_shown(tasks, profile), record=_record(tasks, labels, profile), tools=TOOLS)


def oracle(frame: pd.DataFrame) -> Totals:
    """The totals summed in Python, row by row, from the frame's cost_source and cost_usd."""
    top = frame[frame["parent_task_id"].isna()]
    rows = list(zip(top["operation"], top["cost_source"], top["cost_usd"], strict=True))

    def money(v: Any) -> Decimal:
        return Decimal(0) if v is None or pd.isna(v) else Decimal(v)

    by_op: dict[str | None, tuple[int, Decimal]] = {}
    for op, _, cost in rows:
        k = None if op is None or pd.isna(op) else op
        n, v = by_op.get(k, (0, Decimal(0)))
        by_op[k] = (n + 1, v + money(cost))
    return Totals(
        tasks=len(rows),
        cost_usd=sum((money(c) for _, _, c in rows), Decimal(0)),
        estimated_tasks=sum(1 for _, s, _ in rows if s == "estimate"),
        estimated_usd=sum((money(c) for _, s, c in rows if s == "estimate"), Decimal(0)),
        unknown_tasks=sum(1 for _, s, _ in rows if s == "unknown"),
        pending_tasks=sum(1 for _, s, _ in rows if s == "pending"),
        by_operation=by_op,
    )


def _from_spend(total: Any, by_op: pd.DataFrame) -> Totals:
    ops = {
        (None if pd.isna(o) else o): (int(n), Decimal(c))
        for o, n, c in zip(by_op["operation"], by_op["tasks"], by_op["cost_usd"], strict=True)
    }
    return Totals(
        tasks=int(total["tasks"]),
        cost_usd=Decimal(total["cost_usd"]),
        estimated_tasks=int(total["estimated_tasks"]),
        estimated_usd=Decimal(total["estimated_usd"]),
        unknown_tasks=int(total["unknown_tasks"]),
        pending_tasks=int(total["pending_tasks"]),
        by_operation=ops,
    )


def view_accessor(frame: pd.DataFrame, _: Path) -> Totals:
    total = frame.songlab.spend(()).iloc[0]
    assert frame.songlab.total() == total["cost_usd"]
    return _from_spend(total, frame.songlab.spend("operation"))


def view_cube(frame: pd.DataFrame, _: Path) -> Totals:
    with engine.open_ledger(frame) as lg:
        lg.precompute()
        return _from_spend(lg.spend(()).iloc[0], lg.spend("operation"))


def view_panel(frame: pd.DataFrame, _: Path) -> Totals:
    from songlab.widgets.cost import CostPanel

    panel = CostPanel(client=None, refresh=False)
    panel.show(frame)
    by_op = panel.by_operation
    assert by_op is not None
    grouped = by_op.groupby("operation", dropna=False)[["tasks"]].sum()
    costs: dict[Any, Decimal] = {}
    for o, c in zip(by_op["operation"], by_op["cost_usd"], strict=True):
        k = None if pd.isna(o) else o
        costs[k] = costs.get(k, Decimal(0)) + Decimal(c)
    ops = {
        (None if pd.isna(o) else o): (int(n), costs[None if pd.isna(o) else o])
        for o, n in zip(grouped.index, grouped["tasks"], strict=True)
    }
    return Totals(
        tasks=int(panel.totals["tasks"]),
        cost_usd=panel.total_usd or Decimal(0),
        estimated_tasks=int(panel.totals["estimated_tasks"]),
        estimated_usd=panel.totals["estimated_usd"],
        unknown_tasks=int(panel.totals["unknown_tasks"]),
        pending_tasks=int(panel.totals["pending_tasks"]),
        by_operation=ops,
    )


_REPORTS: dict[int, tuple[pd.DataFrame, tables.ReportData]] = {}


def _report(frame: pd.DataFrame) -> tables.ReportData:
    """The report's data of ``frame``, built once for the report, Excel and CSV views."""
    kept = _REPORTS.get(id(frame))
    if kept is None or kept[0] is not frame:
        _REPORTS.clear()
        kept = _REPORTS[id(frame)] = (frame, tables.build(frame, budgets=["5"]))
    return kept[1]


def view_report(frame: pd.DataFrame, _: Path) -> Totals:
    d = _report(frame)
    f = d.figures
    total = {
        "tasks": f["tasks"],
        "cost_usd": f["spend"],
        "estimated_tasks": f["estimated_tasks"],
        "estimated_usd": f["estimated"],
        "unknown_tasks": f["unknown_tasks"],
        "pending_tasks": f["pending_tasks"],
    }
    by_day = d.tables["by_day"]
    assert sum(by_day["cost_usd"].tolist(), Decimal(0)) == f["spend"]
    assert int(by_day["tasks"].sum()) == f["tasks"]
    return _from_spend(total, d.tables["by_operation"])


def _sheet(rows: list[list[Any]]) -> pd.DataFrame:
    header, *body = rows
    return pd.DataFrame(body, columns=header)


def _exported(read: Callable[[str], list[list[Any]]]) -> Totals:
    by_op = _sheet(read("by_operation"))
    src = _sheet(read("by_cost_source"))
    n = {s: int(t) for s, t in zip(src["cost_source"], src["tasks"], strict=True)}
    est = {s: Decimal(str(c)) for s, c in zip(src["cost_source"], src["cost_usd"], strict=True)}
    ops = {
        (None if o in (None, "") else o): (int(t), Decimal(str(c)))
        for o, t, c in zip(by_op["operation"], by_op["tasks"], by_op["cost_usd"], strict=True)
    }
    return Totals(
        tasks=sum(n.values()),
        cost_usd=sum(est.values(), Decimal(0)),
        estimated_tasks=n.get("estimate", 0),
        estimated_usd=est.get("estimate", Decimal(0)),
        unknown_tasks=n.get("unknown", 0),
        pending_tasks=n.get("pending", 0),
        by_operation=ops,
    )


def view_excel(frame: pd.DataFrame, tmp: Path) -> Totals:
    path = export.export_excel(_report(frame).tables, tmp / "r.xlsx")
    wb = openpyxl.load_workbook(path)
    return _exported(lambda name: [list(r) for r in wb[name].iter_rows(values_only=True)])


def view_csv(frame: pd.DataFrame, tmp: Path) -> Totals:
    export.export_csv(_report(frame).tables, tmp / "csv")

    def read(name: str) -> list[list[Any]]:
        with open(tmp / "csv" / f"{name}.csv", newline="", encoding="utf-8") as fh:
            return [list(r) for r in csv.reader(fh)]

    return _exported(read)


def view_focus(frame: pd.DataFrame, tmp: Path) -> Totals:
    """The FOCUS 1.2 file, read back: its usage rows, plus what the export says has no row
    (undated, unknown, pending, released). ``by_operation`` holds what the file holds: the
    usage rows per operation (``SkuMeter``), see ``focus_oracle``."""
    import pyarrow.parquet as pq

    from songlab.ledger.focus import write_focus

    rep = write_focus(frame, tmp / "focus.parquet", account="acct")
    rows = pq.read_table(tmp / "focus.parquet").to_pylist()
    usage = [r for r in rows if r["ChargeCategory"] == "Usage"]
    assert rep.usage_rows == len(usage) and rep.purchase_rows == 0 == len(rows) - len(usage)
    est = [r for r in usage if r["x_CostSource"] == "estimate"]
    by_op: dict[str | None, tuple[int, Decimal]] = {}
    for r in usage:
        n, v = by_op.get(r["SkuMeter"], (0, Decimal(0)))
        by_op[r["SkuMeter"]] = (n + 1, v + r["EffectiveCost"])
    effective = sum((r["EffectiveCost"] for r in usage), Decimal(0))
    assert effective == rep.effective_usd
    return Totals(
        tasks=len(usage)
        + rep.undated_tasks
        + rep.unknown_cost_tasks
        + rep.pending_tasks
        + rep.released_tasks,
        cost_usd=effective + rep.undated_usd,
        estimated_tasks=len(est) + rep.undated_estimated_tasks,
        estimated_usd=sum((r["EffectiveCost"] for r in est), Decimal(0))
        + rep.undated_estimated_usd,
        unknown_tasks=rep.unknown_cost_tasks,
        pending_tasks=rep.pending_tasks,
        by_operation=by_op,
    )


def focus_oracle(frame: pd.DataFrame, want: Totals) -> Totals:
    """``want`` with ``by_operation`` of the rows a FOCUS file holds: top-level, dated, cost
    billed or estimated, per operation (summed in Python)."""
    top = frame[frame["parent_task_id"].isna()]
    by_op: dict[str | None, tuple[int, Decimal]] = {}
    for op, src, cost, at in zip(
        top["operation"], top["cost_source"], top["cost_usd"], top["created_at"], strict=True
    ):
        if src in ("billed", "estimate") and not pd.isna(at):
            n, v = by_op.get(op, (0, Decimal(0)))
            by_op[op] = (n + 1, v + Decimal(cost))
    return replace(want, by_operation=by_op)


VIEWS: dict[str, Callable[[pd.DataFrame, Path], Totals]] = {
    "accessor": view_accessor,
    "cube": view_cube,
    "panel": view_panel,
    "report": view_report,
    "excel": view_excel,
    "csv": view_csv,
    "focus": view_focus,
}


@pytest.mark.slow  # 36 random workloads, each through six views (about 90 s a profile here)
@pytest.mark.parametrize("profile", PROFILES)
@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(work=workloads())
def test_every_view_gives_the_same_totals(
    profile: str, work: tuple[list[dict[str, Any]], dict[str, Any]], tmp_path: Path
) -> None:
    tasks, labels = work
    frame = frame_of(tasks, labels, profile)
    want = oracle(frame)
    for name, view in VIEWS.items():
        out = tmp_path / f"{name}-{len(tasks)}"
        out.mkdir(exist_ok=True)
        got = view(frame, out)
        expected = focus_oracle(frame, want) if name == "focus" else want
        assert got == expected, (profile, name)
