"""Against the sandbox: the frames reconcile with its billing ledger to the cent (and below).

One workload per module: the demo (``songlab.ledger.demo.run_demo``), six
weeks of work on the sandbox clock by three keys of one account for four
projects (songs in three models and all five tiers, music, lyrics, sound
effects, stems, karaoke workflows, song translations, Agent One runs, two
tasks failed with the ``fail_tasks`` fault). The module runs its own sandbox,
since the demo moves the clock. The truth is the admin route
``GET /_sandbox/accounts/{id}/ledger``: every billing line.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb
import httpx
import pandas as pd
import pytest

from songlab.ledger import (
    LedgerStore,
    http_listing,
    spend,
    tasks_frame,
    tasks_frame_from_pages,
    trace_frame,
)
from songlab.ledger.demo import run_demo
from songlab.ledger.relation import AGENT_TIER

# the demo's six weeks on a sandbox of its own (about 35 s of a worker): `make test` runs it
pytestmark = pytest.mark.slow


@dataclass
class Workload:
    client: Any
    admin: httpx.Client
    account_id: str
    api_key: str
    created: list[str]

    def ledger(self) -> list[dict[str, Any]]:
        r = self.admin.get(f"/_sandbox/accounts/{self.account_id}/ledger")
        r.raise_for_status()
        return r.json()["entries"]


@pytest.fixture(scope="module")
def own_sandbox() -> Iterator[Any]:
    from songlab.sandbox.http.server import serve_in_thread

    srv = serve_in_thread(db=":memory:", speed=500, admin_token="reconcile-admin")
    try:
        yield srv
    finally:
        srv.stop()


@pytest.fixture(scope="module")
def labels_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("reconcile-ledger")


@pytest.fixture(scope="module")
def workload(own_sandbox: Any, labels_dir: Path) -> Iterator[Workload]:
    from songlab.client import Client

    sandbox = own_sandbox
    admin = httpx.Client(
        base_url=sandbox.base_url,
        headers={"X-Sandbox-Admin-Token": sandbox.admin_token},
        timeout=30.0,
    )
    acct = admin.post("/_sandbox/accounts", json={"name": "ledger-reconcile"}).json()
    client = Client(acct["api_key"], base_url=sandbox.base_url, reuse=False)  # distinct work
    try:
        created = run_demo(
            client,
            admin=admin,
            account_id=acct["account_id"],
            labels=LedgerStore(labels_dir),
            timeout=120.0,
            log=lambda _: None,
        )
        yield Workload(client, admin, acct["account_id"], acct["api_key"], created)
    finally:
        client.close()
        admin.close()


@pytest.fixture(scope="module")
def tasks(workload: Workload) -> pd.DataFrame:
    return tasks_frame(workload.client)


def _by_top_level(entries: list[dict[str, Any]]) -> dict[str, Decimal]:
    """Ledger amounts per top-level task (a line belongs to its parent run or workflow)."""
    out: dict[str, Decimal] = defaultdict(Decimal)
    for e in entries:
        out[e["parent_task_id"] or e["task_id"]] += Decimal(e["amount_usd"])
    return out


def test_total_equals_the_billing_ledger(workload: Workload, tasks: pd.DataFrame) -> None:
    entries = workload.ledger()
    truth = sum((Decimal(e["amount_usd"]) for e in entries), Decimal(0))
    assert truth > 0
    assert tasks.songlab.total() == truth
    assert spend(tasks, ())["cost_usd"].iloc[0] == truth
    assert set(tasks["cost_source"]) == {"billed"}  # everything finished and reported


def test_every_task_equals_its_ledger_lines(workload: Workload, tasks: pd.DataFrame) -> None:
    per_task = _by_top_level(workload.ledger())
    top = tasks[tasks["parent_task_id"].isna()]
    assert set(top["task_id"]) >= set(per_task)
    for task_id, billed in top[["task_id", "billed_usd"]].itertuples(index=False):
        assert billed == per_task.get(task_id, Decimal(0)), task_id


def test_spend_by_operation_and_tier_matches_the_ledger(
    workload: Workload, tasks: pd.DataFrame
) -> None:
    top = tasks[tasks["parent_task_id"].isna()].set_index("task_id")
    expected: dict[tuple[str, str], Decimal] = defaultdict(Decimal)
    for task_id, amount in _by_top_level(workload.ledger()).items():
        op = top.loc[task_id, "operation"]
        tier = AGENT_TIER if op == "agent" else top.loc[task_id, "tier"]  # runs have no tier
        expected[(op, tier)] += amount
    table = spend(tasks, ["operation", "tier"])
    got = {
        (o, t): c
        for o, t, c in table[["operation", "tier", "cost_usd"]].itertuples(index=False)
        if c
    }
    assert got == dict(expected)


def test_each_create_was_billed_its_estimate(tasks: pd.DataFrame) -> None:
    done = tasks[(tasks["status"] == "completed") & tasks["parent_task_id"].isna()]
    assert len(done) >= 11
    # Translations of the same source after the first hit the transcription cache and bill
    # the transcription step (0.03) less than the estimate, as docs/ledger/using.md says.
    tr = done[done["operation"] == "song_translation"].sort_values("created_at")
    assert len(tr) >= 2
    assert tr["billed_usd"].iloc[0] == tr["estimate_usd"].iloc[0]
    assert ((tr["estimate_usd"] - tr["billed_usd"]).iloc[1:] == Decimal("0.03")).all()
    done = done[done["operation"] != "song_translation"]
    mismatched = done[done["estimate_usd"] != done["billed_usd"]]
    assert mismatched.empty, mismatched[
        ["operation", "model", "license", "estimate_usd", "billed_usd"]
    ]


def test_failed_tasks_are_released_not_billed(workload: Workload, tasks: pd.DataFrame) -> None:
    failed = tasks[tasks["status"] == "failed"]
    assert len(failed) == 2
    assert (failed["cost_usd"] == 0).all()
    assert failed["failure_error"].notna().all()
    billed_ids = {e["task_id"] for e in workload.ledger()}
    assert not billed_ids & set(failed["task_id"])


def test_song_translation_has_six_lines(workload: Workload, tasks: pd.DataFrame) -> None:
    ids = tasks.loc[tasks["operation"] == "song_translation", "task_id"].tolist()
    assert ids
    for tid in ids:
        lines = [e for e in workload.ledger() if e["task_id"] == tid]
        assert [e["kind"] for e in lines] == ["translation_step"] * 6
        billed = tasks.loc[tasks["task_id"] == tid, "billed_usd"].iloc[0]
        assert billed == sum((Decimal(e["amount_usd"]) for e in lines), Decimal(0))


def test_agent_trace_matches_the_ledger(workload: Workload, tasks: pd.DataFrame) -> None:
    runs = tasks[tasks["operation"] == "agent"]
    if runs.empty:
        pytest.skip("this sandbox offers no Agent One tool yet (demo skipped the run)")
    trace = trace_frame(tasks)
    entries = workload.ledger()
    for run_id, billed in runs[["task_id", "billed_usd"]].itertuples(index=False):
        rows = trace[trace["run_task_id"] == run_id]
        lines = [e for e in entries if run_id in (e["task_id"], e["parent_task_id"])]
        assert rows["cost_usd"].sum() == billed
        assert billed == sum((Decimal(e["amount_usd"]) for e in lines), Decimal(0))
        (fee_line,) = [e for e in lines if e["kind"] == "agent_fee"]
        assert rows.loc[rows["kind"] == "agent_fee", "cost_usd"].tolist() == [
            Decimal(fee_line["amount_usd"])
        ]
        sub = {
            e["task_id"]: Decimal(e["amount_usd"]) for e in lines if e["kind"] == "agent_sub_tool"
        }
        calls = rows[
            (rows["kind"] == "tool_call") & rows["task_id"].notna() & (rows["cost_usd"] > 0)
        ]
        assert dict(calls[["task_id", "cost_usd"]].itertuples(index=False)) == sub


def test_plain_httpx_listing_gives_the_same_frame(
    workload: Workload, own_sandbox: Any, tasks: pd.DataFrame
) -> None:
    with httpx.Client(
        base_url=own_sandbox.base_url, headers={"Authorization": f"Bearer {workload.api_key}"}
    ) as http:
        listing = http_listing(http, page_size=5)
        frame = tasks_frame(listing, record=workload.client.record)  # the client's own record
        bare = tasks_frame(http_listing(http, page_size=100))
    assert listing.pages_fetched >= 3
    pd.testing.assert_frame_equal(frame, tasks)
    # without the record the listing still prices everything (the service shows it) ...
    pd.testing.assert_series_equal(bare["cost_usd"], tasks["cost_usd"])
    # ... but cannot say who asked for what
    assert bare["project"].isna().all() and tasks["project"].notna().any()


def test_parquet_ledger_refreshes_and_reconciles(workload: Workload, tmp_path: Path) -> None:
    store = LedgerStore(tmp_path / "ledger")
    first = store.refresh(workload.client)
    assert first.added == len(tasks_frame(workload.client))
    h = workload.client.generations.create(
        operation="write_lyrics", model="v5", payload={"prompt": "one more"}
    )
    workload.client.generations.wait(h.task_id, timeout=60)
    second = store.refresh(workload.client)
    assert (second.added, second.updated) == (1, 0)
    assert second.read == 2  # the new task, then one it has: stop
    truth = sum((Decimal(e["amount_usd"]) for e in workload.ledger()), Decimal(0))
    assert store.read().songlab.total() == truth
    glob = str(tmp_path / "ledger" / "**" / "*.parquet")
    (total,) = (
        duckdb.connect()
        .execute(
            f"SELECT sum(cost_usd) FROM read_parquet('{glob}', hive_partitioning = true) "
            "WHERE parent_task_id IS NULL"
        )
        .fetchone()
    )
    assert total == truth


def test_the_demo_spans_six_weeks_of_three_keys_and_four_projects(
    workload: Workload, labels_dir: Path
) -> None:
    store = LedgerStore(labels_dir)
    store.refresh(workload.client)
    frame = store.read()
    top = frame[frame["parent_task_id"].isna()]
    days = top["created_at"].dt.date
    assert (days.max() - days.min()).days >= 40
    assert top["created_at"].dt.day.min() == 1  # it starts on the 1st of a month
    assert top["created_at"].dt.strftime("%Y-%m").nunique() == 2
    assert set(top["license"]) == {1, 2, 3, 4, 5}
    assert set(top["model"]) >= {"v5", "v6", "v7", "flash"}
    # every task the demo made carries its labels and key, and nothing else does
    ours = top[top["task_id"].isin(workload.created)]
    # made by other tests: unlabelled (the client's record still names its key)
    others = top[~top["task_id"].isin(workload.created)]
    assert len(ours) == len(set(workload.created))
    assert ours["project"].notna().all() and ours["key_id"].notna().all()
    assert others["project"].isna().all()
    assert set(others["key_id"].dropna()) <= {workload.client.key_id}
    assert set(ours["project"]) == {"jingles", "podcast", "game-audio", "research"}
    assert ours["key_id"].nunique() == 3
    assert workload.client.key_id in set(ours["key_id"])
    # per-project spend reconciles with the billing ledger through the task ids
    per_task = _by_top_level(workload.ledger())
    expected: dict[str, Decimal] = defaultdict(Decimal)
    for tid, project in top[["task_id", "project"]].itertuples(index=False):
        expected[project] += per_task.get(tid, Decimal(0))
    expected = {k: v for k, v in expected.items() if k is not pd.NA}
    by_project = spend(frame, "project")
    got = {
        p: c
        for p, c in by_project[["project", "cost_usd"]].itertuples(index=False)
        if p is not pd.NA
    }
    assert got == expected


def test_client_listing_read_from_page_bytes_equals_the_listings_dicts(
    workload: Workload, monkeypatch: pytest.MonkeyPatch
) -> None:
    client = workload.client
    # tasks_frame(client) joins the client's record: so do the others, given it
    from_dicts = tasks_frame(
        [t.raw for t in client.generations.list(limit=100)], record=client.record
    )
    pd.testing.assert_frame_equal(tasks_frame(client), from_dicts)
    assert from_dicts["failure_error"].notna().any()
    if (from_dicts["operation"] == "agent").any():  # the demo's Agent One run, if offered
        assert from_dicts["metadata_json"].notna().any()
    pages = list(client.generations.raw_pages(limit=5))
    assert len(pages) >= 3 and pages[-1].next_cursor is None
    pd.testing.assert_frame_equal(
        tasks_frame_from_pages((p.content for p in pages), record=client.record), from_dicts
    )
    # tasks_frame(client) takes the bytes path, not the dict listing
    monkeypatch.setattr(type(client.generations), "list", None)
    pd.testing.assert_frame_equal(tasks_frame(client), from_dicts)
