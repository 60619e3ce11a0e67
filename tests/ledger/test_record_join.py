"""The service first, the client's record second: facts, their sources, costs never 0 when
unknown, the month=unknown partition, sub-tasks named by a trace, reconciliation by hand."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from songlab import pricing
from songlab.client import RECORD_SCHEMA
from songlab.ledger import LedgerStore, spend, tasks_frame, tasks_table, trace_frame
from songlab.ledger._schema import SOURCE
from songlab.ledger.reconcile import reconcile
from songlab.ledger.synthetic import agent_trace
from tests.ledger._util import snap

T0 = datetime(2026, 11, 3, 9, 30, tzinfo=UTC)


def spec_snap(task_id: str, **fields: Any) -> dict[str, Any]:
    """A task as the spec shows it: id, status, output (and nothing else)."""
    return {"task_id": task_id, "status": "completed", "output": {}, **fields}


def record(*rows: dict[str, Any]) -> pa.Table:
    """A RecordStore-shaped table (``RECORD_SCHEMA``), oldest first."""
    base = {n: None for n in RECORD_SCHEMA.names}
    full = [{**base, "key_id": "key_aaaaaaaaaaaa", **r} for r in rows]
    return pa.Table.from_pylist(full, schema=RECORD_SCHEMA)


def test_record_fills_what_the_service_does_not_show() -> None:
    rec = record(
        {
            "task_id": "song",
            "tool_id": "t-song-v7",
            "operation": "generate_song",
            "model": "v7",
            "license": 2,
            "estimate_usd": Decimal("0.25"),
            "project": "jingles",
            "tags": "a,b",
            "sent_at": T0,
            "accepted_at": T0 + timedelta(seconds=1),
        },
        {
            "task_id": "lyrics",
            "operation": "write_lyrics",
            "model": "v5",
            "license": None,
            "sent_at": T0,
        },
        {"task_id": "song", "key_id": "key_bbbbbbbbbbbb", "project": "second-key"},
    )
    df = tasks_frame(
        [
            spec_snap("song"),
            spec_snap("lyrics"),
            spec_snap("elsewhere"),
            spec_snap("broke", status="failed"),
        ],
        record=rec,
    ).set_index("task_id")
    song, lyrics, other, broke = (df.loc[t] for t in ("song", "lyrics", "elsewhere", "broke"))
    assert (song["operation"], song["model"], song["tier"], song["tool_id"]) == (
        "generate_song",
        "v7",
        "standard",
        "t-song-v7",
    )
    assert song["created_at"] == T0 + timedelta(seconds=1)  # accepted, else sent
    assert lyrics["created_at"] == T0 and lyrics["license"] == 1  # none sent: royalty-free
    for fact in ("operation", "model", "license", "created_at"):
        assert song[f"{fact}_source"] == "record"
    assert (song["project"], song["tags"], song["key_id"]) == (
        "jingles",
        "a,b",
        "key_aaaaaaaaaaaa",
    )  # first row
    assert song["cost_usd"] == pricing.price("generate_song", "v7", 2)
    assert song["cost_source"] == "estimate" and lyrics["cost_usd"] == Decimal("0.02")
    # neither made by songlab nor described by the service: unknown, never 0
    assert pd.isna(other["cost_usd"]) and other["cost_source"] == "unknown"
    assert other["labels_source"] == "unknown" and other["operation_source"] == "unknown"
    assert broke["cost_usd"] == 0 and broke["cost_source"] == "unbilled"  # failed: released
    total = spend(df.reset_index(), ()).iloc[0]
    assert (total["tasks"], total["estimated_tasks"], total["unknown_tasks"]) == (4, 2, 1)
    assert total["cost_usd"] == Decimal("0.27")


def test_the_service_wins_over_the_record() -> None:
    rec = record(
        {
            "task_id": "a",
            "operation": "write_lyrics",
            "model": "v5",
            "license": 1,
            "accepted_at": T0,
        }
    )
    df = tasks_frame([snap("a")], record=rec)  # the service shows a v7 song, billed 0.12
    row = df.iloc[0]
    assert (row["operation"], row["operation_source"]) == ("generate_song", "service")
    assert row["created_at_source"] == "service" and row["cost_source"] == "billed"
    assert row["labels_source"] == "record"


def test_tool_listing_names_the_operation_by_tool_id() -> None:
    rec = record({"task_id": "run", "tool_id": "t-flash", "accepted_at": T0})
    trace = json.dumps(agent_trace("run", tier="flash", seed=3))
    tools = {"t-flash": ("agent", "flash")}
    df = tasks_frame([spec_snap("run", output={"metadata_json": trace})], record=rec, tools=tools)
    row = df.iloc[0]
    assert (row["operation"], row["model"], row["operation_source"]) == (
        "agent",
        "flash",
        "service",
    )
    assert row["tool_id_source"] == "record" and row["cost_source"] == "estimate"
    fee = trace_frame(df)
    assert fee["cost_usd"].sum() == row["cost_usd"] == Decimal(json.loads(trace)["total_cost_usd"])


def test_sub_tasks_named_by_a_trace_are_counted_inside_their_run() -> None:
    meta = agent_trace("run", tier="pro", seed=5)
    calls = [s for s in meta["steps"] if s["kind"] == "tool_call" and s.get("task_id")]
    assert calls
    listing = [
        spec_snap("run", output={"metadata_json": json.dumps(meta)}),
        *(spec_snap(s["task_id"]) for s in calls),
    ]
    rec = record({"task_id": "run", "operation": "agent", "model": "pro", "accepted_at": T0})
    df = tasks_frame(listing, record=rec).set_index("task_id")
    subs = df.loc[[s["task_id"] for s in calls]]
    assert set(subs["parent_task_id"]) == {"run"}
    assert subs["billed_usd"].tolist() == [Decimal(s["cost_usd"]) for s in calls]
    total = spend(df.reset_index(), ()).iloc[0]
    assert total["tasks"] == 1 and total["unknown_tasks"] == 0


def test_source_columns_are_dictionary_encoded_and_read_back(tmp_path: Path) -> None:
    table = tasks_table([snap("a"), spec_snap("b")])
    assert table.schema.field("operation_source").type == SOURCE
    assert table.schema.field("cost_source").type == SOURCE
    store = LedgerStore(tmp_path, record=record())
    store.refresh([snap("a"), spec_snap("b")])
    back = pq.read_table(store.files()[0])
    assert back["operation_source"].to_pylist() == ["service"]  # DuckDB-style readers: strings
    assert store.read()["operation_source"].tolist() == ["service", "unknown"]


def test_undated_tasks_go_to_month_unknown_and_move_once_recorded(tmp_path: Path) -> None:
    store = LedgerStore(tmp_path, record=None)
    store.refresh([snap("dated"), spec_snap("undated")])
    months = sorted(p.parent.name for p in store.files())
    assert months == ["month=2026-11", "month=unknown"]
    # the record names it later (another process's client wrote it): it moves to its month
    moved = LedgerStore(
        tmp_path,
        record=record(
            {"task_id": "undated", "accepted_at": T0, "operation": "write_lyrics", "model": "v5"}
        ),
    )
    result = moved.refresh([snap("dated"), spec_snap("undated")])
    assert set(result.months_written) == {"2026-11", "unknown"}
    assert sorted(p.parent.name for p in moved.files()) == ["month=2026-11"]
    row = moved.read().set_index("task_id").loc["undated"]
    assert row["created_at"] == T0 and row["cost_usd"] == Decimal("0.02")


def _tasks(*rows: tuple[str, str, datetime]) -> pd.DataFrame:
    """Tasks with a cost and a seen_at: (task id, cost or 'unknown', seen_at)."""
    snaps = [
        snap(
            t,
            cost_usd=None if c == "unknown" else c,
            operation="x" if c == "unknown" else "generate_song",
        )
        for t, c, _ in rows
    ]
    frame = tasks_frame(snaps)
    frame["seen_at"] = pd.array([s for *_, s in rows], dtype=frame["seen_at"].dtype)
    return frame


def test_reconcile_by_hand() -> None:
    t = [T0 + timedelta(hours=h) for h in (0, 1, 2, 26)]
    tasks = _tasks(
        ("old", "5.00000000", t[0]),
        ("a", "0.12000000", t[1]),
        ("b", "0.00021577", t[2]),
        ("c", "unknown", t[3]),
    )
    balances = pa.table(
        {
            "taken_at": pa.array(t, pa.timestamp("us", tz="UTC")),
            "total_effective": [100_000, 99_988, 99_987, 99_900],
        }
    )
    r = reconcile(tasks, balances)
    assert r["status"].tolist() == ["baseline", "explained", "explained", "unexplained"]
    assert pd.isna(r["balance_spent_usd"][0]) and r["explained_usd"][0] == Decimal("5")
    assert r["balance_spent_usd"].tolist()[1:] == [
        Decimal("0.12"),
        Decimal("0.01"),
        Decimal("0.87"),
    ]
    assert r["unexplained_usd"].tolist()[1:] == [Decimal(0), Decimal("0.00978423"), Decimal("0.87")]
    assert r["unknown_tasks"].tolist() == [0, 0, 0, 1]
    monthly = reconcile(tasks, balances, freq="day")
    assert monthly["period"].tolist()[1:] == ["2026-11-03", "2026-11-04"]
    assert monthly["balance_spent_usd"][1] == Decimal("0.13")


def test_reconcile_keeps_periods_that_share_a_second_apart() -> None:
    t = [T0, T0 + timedelta(microseconds=10), T0 + timedelta(microseconds=20)]
    tasks = _tasks(("a", "0.12000000", t[1]), ("b", "0.02000000", t[2]))
    balances = pa.table(
        {"taken_at": pa.array(t, pa.timestamp("us", tz="UTC")), "total_effective": [100, 88, 86]}
    )
    r = reconcile(tasks, balances)
    assert len(r) == 3 and r["explained_usd"].tolist()[1:] == [Decimal("0.12"), Decimal("0.02")]


def test_reconcile_refuses_bad_input() -> None:
    with pytest.raises(ValueError, match="freq: one of"):
        reconcile(_tasks(), pa.table({"taken_at": [], "total_effective": []}), freq="week")
    with pytest.raises(ValueError, match="balances: missing column"):
        reconcile(_tasks(), pa.table({"taken_at": [T0]}))


class _SpecClient:
    """A spec-shaped service behind ``generations.list/get`` and ``account.balance``."""

    def __init__(self, tasks: list[dict[str, Any]], tokens: int) -> None:
        self.tasks, self.tokens, self.read = tasks, tokens, 0
        self.generations, self.account = self, self

    def list(self, *, limit: int = 20) -> Any:
        for t in self.tasks:
            self.read += 1
            yield t

    def get(self, task_id: str) -> dict[str, Any]:
        return next(t for t in self.tasks if t["task_id"] == task_id)

    def balance(self) -> dict[str, Any]:
        return {
            "total_effective": self.tokens,
            "base_effective": self.tokens,
            "extra_tokens": 0,
            "base_expires_at": "2027-11-01T00:00:00Z",
        }


def test_spec_refresh_refetches_a_pending_task_and_snapshots_the_balance(tmp_path: Path) -> None:
    rec = record(
        {
            "task_id": "song",
            "operation": "generate_song",
            "model": "v7",
            "license": 1,
            "accepted_at": T0,
        }
    )
    svc = _SpecClient([spec_snap("song", status="processing")], tokens=1000)
    store = LedgerStore(tmp_path, record=rec)
    first = store.refresh(svc)
    assert first.added == 1 and first.balance is not None and first.balance["tasks_added"] == 1
    row = store.read().iloc[0]
    # still running: nothing spent yet, its list price kept apart (and reserved by the service)
    assert row["cost_source"] == "pending" and pd.isna(row["cost_usd"])
    assert row["estimate_usd"] == Decimal("0.12")
    svc.tasks = [spec_snap("newer"), spec_snap("song")]  # done now, and one made elsewhere
    svc.tokens = 988 - 30
    second = store.refresh(svc)
    assert (second.added, second.updated, svc.read) == (1, 1, 3)
    assert sorted(p.parent.name for p in store.files()) == ["month=2026-11", "month=unknown"]
    frame = store.read().set_index("task_id")
    assert frame.loc["song", "status"] == "completed"
    assert frame.loc["song", "seen_at"] == first.balance["taken_at"]  # kept across the update
    snaps = store.balances()
    assert snaps["total_effective"].tolist() == [1000, 958]
    from songlab.ledger.reconcile import reconcile_store

    r = reconcile_store(store)
    assert r["explained_usd"].tolist() == [Decimal("0.12"), Decimal(0)]
    assert r["unexplained_usd"][1] == Decimal("0.42") and r["unknown_tasks"][1] == 1


def test_a_ledger_written_before_the_source_columns_reads_with_them(tmp_path: Path) -> None:
    from songlab.ledger import _parquet
    from songlab.ledger._schema import SOURCE_COLUMNS

    old = tasks_table([snap("a"), snap("b", operation=None)]).drop_columns(
        [*SOURCE_COLUMNS, "seen_at"]
    )
    _parquet.write_atomic(tmp_path / "month=2026-11" / "part.parquet", old)
    frame = LedgerStore(tmp_path, record=None).read().set_index("task_id")
    assert frame["operation_source"].to_dict() == {"a": "service", "b": "unknown"}
    assert set(frame["created_at_source"]) == {"service"} and frame["seen_at"].isna().all()


NAMES_PROBE = r"""
import json
import songlab.client.field_names as fields  # the seam a user edits: a name added per fact
fields.TASK_CREATED_AT = ("created_at", "createdAt")
fields.TASK_COST_USD = ("cost_usd", "cost")
fields.TASK_OPERATION = ("operation", "op")
from songlab.ledger import tasks_frame, tasks_frame_from_pages
tasks = [{"task_id": "a", "status": "completed", "createdAt": "2026-11-02T10:00:00Z",
          "cost": "0.12000000", "op": "generate_song", "model": "v7", "license": 1},
         {"task_id": "b", "status": "completed", "created_at": "2026-11-01T10:00:00Z",
          "createdAt": "2030-01-01T00:00:00Z", "cost_usd": "0.02"}]
page = json.dumps({"data": tasks, "next_cursor": None}).encode()
for frame in (tasks_frame(tasks), tasks_frame_from_pages([page])):
    print(json.dumps([[str(v) for v in row] for row in frame[
        ["created_at", "cost_usd", "operation", "created_at_source"]].itertuples(index=False)]))
"""


def test_names_from_the_mapping_module_are_read_first_present_wins() -> None:
    """A user who learns the service's real name for a fact adds it to ``field_names``: the
    ledger reads it on both paths (run in its own interpreter: names are read at import)."""
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-c", NAMES_PROBE], capture_output=True, text=True, timeout=120, check=True
    ).stdout.splitlines()
    want = [
        ["2026-11-02 10:00:00+00:00", "0.12000000", "generate_song", "service"],
        ["2026-11-01 10:00:00+00:00", "0.02000000", "<NA>", "service"],
    ]
    assert [json.loads(line) for line in out] == [want, want]


def test_a_pending_undated_task_dated_by_its_refetch_leaves_month_unknown(tmp_path: Path) -> None:
    svc = _SpecClient([spec_snap("p", status="processing")], tokens=10)
    store = LedgerStore(tmp_path, record=None)
    store.refresh(svc)
    assert [p.parent.name for p in store.files()] == ["month=unknown"]
    svc.tasks = [snap("p", status="completed")]  # the service now shows it, dated and billed
    result = store.refresh(svc)
    assert (result.added, result.updated) == (0, 1)
    assert [p.parent.name for p in store.files()] == ["month=2026-11"]
    frame = store.read()
    assert frame["task_id"].tolist() == ["p"] and frame["cost_source"].tolist() == ["billed"]
