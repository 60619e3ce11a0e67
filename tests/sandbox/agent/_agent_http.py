"""Helpers of the HTTP-level Agent One tests: a bearer client, creates, waits, the ledger."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import httpx

from tests.sandbox._util import ledger, wait

MULTI = (
    "Write lyrics about a rainy night in Lisbon, then make a jazz song with them, "
    "split it into stems and check it for copyright."
)


def api(sandbox: Any, account: Any) -> httpx.Client:
    return httpx.Client(
        base_url=sandbox.base_url,
        headers={"Authorization": f"Bearer {account.api_key}"},
        timeout=30.0,
    )


def tool_ids(client: httpx.Client) -> dict[tuple[str, str], str]:
    r = client.get("/v1/tools")
    assert r.status_code == 200, r.text
    return {(t["operation"], t["model"]): t["id"] for t in r.json()["data"]}


def create(client: httpx.Client, tier: str, **payload: Any) -> httpx.Response:
    tid = tool_ids(client)[("agent", tier)]
    return client.post(
        "/v1/generations", json={"tool_id": tid, "payload_json": json.dumps(payload)}
    )


def run(client: httpx.Client, tier: str, **payload: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """Create a run, wait for it; returns (snapshot, parsed trace)."""
    r = create(client, tier, **payload)
    assert r.status_code == 201, r.text
    snap = wait(client, r.json()["task_id"])
    assert snap["status"] == "completed", snap
    return snap, json.loads(snap["output"]["metadata_json"])


def lines_of(admin: httpx.Client, account_id: str, run_id: str) -> list[dict[str, Any]]:
    return [
        e
        for e in ledger(admin, account_id)
        if e["task_id"] == run_id or e.get("parent_task_id") == run_id
    ]


def tool_calls(trace: dict[str, Any], status: str | None = None) -> list[dict[str, Any]]:
    return [
        s
        for s in trace["steps"]
        if s["kind"] == "tool_call" and (status is None or s["status"] == status)
    ]


def total(lines: list[dict[str, Any]]) -> Decimal:
    return sum((Decimal(e["amount_usd"]) for e in lines), Decimal(0))
