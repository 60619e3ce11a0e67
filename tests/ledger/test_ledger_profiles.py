"""Ledger journeys against the sandbox in each answer profile: default, spec, noisy.

One workload per profile (module-scoped, the profiles one after another): a fresh
account; a Parquet ledger tracking a songlab client and refreshed once (the first
balance snapshot); then songlab's own work (lyrics, a v7 song in the standard tier)
and one create made outside songlab (raw httpx, the same key: a v7 song in the
standard tier, $0.25), waited for, and a second refresh; then an Agent One flash run
(its fee has sub-cent digits, below the balance's one-token resolution) and a third.

The ``spec`` sandbox shows only what the spec shows (no created_at, operation, model,
license or cost on a task), so songlab's tasks are costed from the client's record at
the list price (``estimate``) and the outside one is of unknown cost, which the
reconciliation shows as unexplained spend of exactly its price. ``default`` and
``noisy`` show every cost: everything is billed and explained.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import pandas as pd
import pytest

from songlab import pricing
from songlab.ledger import LedgerStore, spend, tasks_frame, tier_comparison, trace_frame
from songlab.ledger.reconcile import reconcile_store
from tests._profiles import PROFILES, ProfileSandbox, running, songlab_command

OUTSIDE_PRICE = Decimal("0.25")  # generate_song v7, standard tier
SONG_V7_STANDARD = pricing.price("generate_song", "v7", 2)
LYRICS = pricing.price("write_lyrics", "v5", 1)


@dataclass
class Journey:
    profile: str
    sandbox: ProfileSandbox
    api_key: str
    client: Any
    store: LedgerStore
    ours: dict[str, str]  # kind -> task id (made by songlab)
    outside: str  # task id made with raw httpx


def _wait_all(http: httpx.Client, ids: list[str], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    for tid in ids:
        while http.get(f"/v1/generations/{tid}").json()["status"] not in ("completed", "failed"):
            assert time.monotonic() < deadline, f"task {tid} did not finish"
            time.sleep(0.05)


@pytest.fixture(scope="module", params=PROFILES)
def journey(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Journey]:
    from songlab.client import Client

    profile = request.param
    root = tmp_path_factory.mktemp(f"ledger-{profile}")
    saved = os.environ.get("SONGLAB_RECORD")
    os.environ["SONGLAB_RECORD"] = str(root / "record.sqlite")  # never the user's own record
    sb = running(profile)
    try:
        with sb.admin() as admin:
            api_key = admin.post("/_sandbox/accounts", json={"name": f"ledger-{profile}"}).json()[
                "api_key"
            ]
        client = Client(api_key, base_url=sb.base_url)
        store = LedgerStore(root / "ledger").track(client)
        store.refresh(client)  # the first balance snapshot: nothing spent yet
        ours = {
            "lyrics": client.generations.create(
                operation="write_lyrics", model="v5", payload={"prompt": "the sea"}
            ).task_id,
            "song": client.generations.create(
                operation="generate_song",
                model="v7",
                license="standard",
                payload={"prompt": "surf rock", "duration_seconds": 5},
            ).task_id,
        }
        with sb.http(api_key) as http:
            tools = {
                (t["operation"], t["model"]): t["id"] for t in http.get("/v1/tools").json()["data"]
            }
            body = {
                "tool_id": tools[("generate_song", "v7")],
                "license": 2,
                "payload_json": json.dumps({"prompt": "elsewhere", "duration_seconds": 5}),
            }
            outside = http.post("/v1/generations", json=body).json()["task_id"]
            _wait_all(http, [*ours.values(), outside])
            store.refresh(client)
            ours["agent"] = client.agent.start(
                tier="flash", prompt="a short jingle about tea", max_budget=100
            ).task_id
            _wait_all(http, [ours["agent"]])
        store.refresh(client)
        yield Journey(profile, sb, api_key, client, store, ours, outside)
        client.close()
    finally:
        sb.stop()
        if saved is None:
            os.environ.pop("SONGLAB_RECORD", None)
        else:
            os.environ["SONGLAB_RECORD"] = saved


@pytest.fixture(scope="module")
def frame(journey: Journey) -> pd.DataFrame:
    return tasks_frame(journey.client, record=journey.store.record_table())


def _top(frame: pd.DataFrame) -> pd.DataFrame:
    return frame[frame["parent_task_id"].isna()].set_index("task_id")


def test_tasks_frame_says_where_each_fact_comes_from(journey: Journey, frame: pd.DataFrame) -> None:
    top = _top(frame)
    ours = top.loc[list(journey.ours.values())]
    outside = top.loc[journey.outside]
    assert (ours["operation"].tolist(), ours["model"].tolist()) == (
        ["write_lyrics", "generate_song", "agent"],
        ["v5", "v7", "flash"],
    )
    assert ours.loc[journey.ours["song"], "tier"] == "standard"
    assert ours["created_at"].notna().all() and not (ours["cost_usd"] == 0).any()
    assert set(ours["labels_source"]) == {"record"}
    if journey.profile == "spec":
        for fact in ("operation", "model", "license", "created_at"):
            assert set(ours[f"{fact}_source"]) == {"record"}, fact
        # costs are the list-price estimates of what songlab asked for, never 0
        assert ours.loc[journey.ours["lyrics"], ["cost_usd", "cost_source"]].tolist() == [
            LYRICS,
            "estimate",
        ]
        assert ours.loc[journey.ours["song"], ["cost_usd", "cost_source"]].tolist() == [
            SONG_V7_STANDARD,
            "estimate",
        ]
        assert ours.loc[journey.ours["agent"], "cost_usd"] > 0
        # made outside songlab and not described by the service: of unknown cost
        assert pd.isna(outside["cost_usd"]) and outside["cost_source"] == "unknown"
        assert pd.isna(outside["operation"]) and outside["operation_source"] == "unknown"
        assert pd.isna(outside["created_at"]) and outside["created_at_source"] == "unknown"
    else:
        assert set(ours["cost_source"]) == {"billed"}
        assert set(ours["operation_source"]) == {"service"}
        assert ours.loc[journey.ours["song"], "cost_usd"] == SONG_V7_STANDARD
        assert outside["cost_usd"] == OUTSIDE_PRICE and outside["cost_source"] == "billed"
        assert outside["labels_source"] == "unknown"


def test_spend_counts_estimated_and_unknown_rows(journey: Journey, frame: pd.DataFrame) -> None:
    total = spend(frame, ()).iloc[0]
    top = _top(frame)
    assert total["tasks"] == len(top)
    assert total["unknown_tasks"] == (top["cost_source"] == "unknown").sum()
    assert total["estimated_tasks"] == (top["cost_source"] == "estimate").sum()
    assert total["cost_usd"] == top["cost_usd"].dropna().sum() > 0
    if journey.profile == "spec":
        assert total["unknown_tasks"] >= 1 and total["estimated_tasks"] >= 3
    else:
        assert (total["unknown_tasks"], total["estimated_tasks"]) == (0, 0)


def test_ledger_store_files_by_month_never_1970(journey: Journey, frame: pd.DataFrame) -> None:
    months = {p.parent.name for p in journey.store.files()}
    assert "month=1970-01" not in months
    stored = journey.store.read().set_index("task_id")
    assert set(stored.index) == set(frame["task_id"])
    this_month = f"month={stored.loc[journey.ours['lyrics'], 'created_at']:%Y-%m}"
    assert this_month in months
    assert ("month=unknown" in months) == (journey.profile == "spec")
    assert stored["seen_at"].notna().all()
    # incremental: nothing new, one snapshot read, nothing rewritten
    again = journey.store.refresh(journey.client)
    assert (again.added, again.updated, again.months_written) == (0, 0, ())
    assert again.read == 1


def test_reconciliation(journey: Journey) -> None:
    recon = reconcile_store(journey.store)
    assert recon["status"].tolist()[0] == "baseline" and pd.isna(recon["balance_spent_usd"][0])
    stored = _top(journey.store.read())
    songs = stored.loc[[journey.ours["lyrics"], journey.ours["song"]], "cost_usd"].sum()
    first, agent = recon.iloc[1], recon.iloc[2]
    for period in (first, agent):
        assert period["explained_usd"] + period["unexplained_usd"] == period["balance_spent_usd"]
    if journey.profile == "spec":
        # songlab's own work is explained; the outside create is unexplained, to the cent
        assert first["explained_usd"] == songs == LYRICS + SONG_V7_STANDARD
        assert first["unexplained_usd"] == OUTSIDE_PRICE
        assert first["status"] == "unexplained" and first["unknown_tasks"] == 1
    else:
        assert first["explained_usd"] == songs + OUTSIDE_PRICE == first["balance_spent_usd"]
        assert first["unexplained_usd"] == 0 and first["status"] == "explained"
    # the run's fee is exact in the ledger; the balance resolves whole tokens only
    assert agent["explained_usd"] == stored.loc[journey.ours["agent"], "cost_usd"] > 0
    assert abs(agent["unexplained_usd"]) < Decimal("0.01") and agent["status"] == "explained"
    assert agent["tasks"] == 1


def test_tier_comparison(journey: Journey, frame: pd.DataFrame) -> None:
    comp = tier_comparison(frame).set_index("tier")
    compared = 2 if journey.profile == "spec" else 3  # lyrics, our song (+ the outside song)
    assert set(comp["tasks"]) == {compared}
    songs = 1 if journey.profile == "spec" else 2
    assert comp.loc["master", "priced_usd"] == (
        pricing.price("write_lyrics", "v5", 5) + songs * pricing.price("generate_song", "v7", 5)
    )
    assert comp.attrs["estimated_tasks"] == (2 if journey.profile == "spec" else 0)


def test_agent_one_trace(journey: Journey, frame: pd.DataFrame) -> None:
    trace = trace_frame(frame)
    run = journey.ours["agent"]
    rows = trace[trace["run_task_id"] == run]
    assert len(rows) >= 2 and rows["kind"].iloc[-1] == "agent_fee"
    assert set(rows["run_model"]) == {"flash"}
    assert rows["cost_usd"].sum() == _top(frame).loc[run, "cost_usd"]
    # from a client too (its tool listing and record say which task is the run)
    again = trace_frame(tasks_frame(journey.client, record=journey.store.record_table()))
    assert run in set(again["run_task_id"])


@pytest.mark.slow  # a `songlab report` process per profile
def test_report_cli_in_its_own_process(journey: Journey, tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    env = {
        **os.environ,
        **journey.sandbox.env(),
        "SONGLAB_API_KEY": journey.api_key,
        "SONGLAB_RECORD": str(journey.client.record.path),
    }  # the user's record
    for ledger in (["--ledger", str(journey.store.path)], []):  # with a Parquet ledger, without
        proc = subprocess.run(
            [*songlab_command(), "report", "--out", str(out), *ledger],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert proc.returncode == 0, proc.stderr[-2000:]
        assert journey.api_key not in proc.stdout + proc.stderr
        document = out.read_text()
        assert "total cost <b>$0.00</b>" not in document and journey.api_key not in document
        # the summary counts rows by cost source: songlab's three estimates, one unknown
        spec = journey.profile == "spec"
        assert ("estimate: 3" in document and "unknown: 1" in document) == spec
        assert "Reconciliation with the balance" in document
        assert ("<td>unexplained</td>" in document) == (spec and bool(ledger))
