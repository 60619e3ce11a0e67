"""Synthetic task snapshots and Agent One traces, in design.md's shapes.

For tests, benchmarks and docs: deterministic from a seed, priced from
songlab.pricing, so a synthetic ledger adds up exactly like a real one.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import numpy as np

from songlab import pricing

__all__ = ["CATALOG", "agent_trace", "synthetic_tasks"]

# (operation, model) pairs a realistic workload uses, with weights.
CATALOG: tuple[tuple[str, str, float], ...] = (
    ("generate_song", "v5", 0.12),
    ("generate_song", "v6", 0.12),
    ("generate_song", "v7", 0.18),
    ("generate_music", "v7", 0.10),
    ("generate_singing", "v6", 0.08),
    ("extend_song", "v7", 0.06),
    ("remix_song", "v5", 0.04),
    ("separate_stems", "2stem", 0.08),
    ("write_lyrics", "v5", 0.08),
    ("transcribe", "whisper-transcribe-v1", 0.05),
    ("sfx_gen", "v5", 0.03),
    ("audio_effect", "v5", 0.03),
    ("copyright", "v5", 0.02),
    ("agent", "flash", 0.003),
    ("agent", "standard", 0.002),
)
STATUSES = (("completed", 0.85), ("failed", 0.08), ("processing", 0.04), ("queued", 0.03))
_EPOCH = datetime(2026, 9, 1, tzinfo=UTC)


def _iso(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def agent_trace(
    run_id: str, *, tier: str = "flash", sub_tools: int = 2, failed_call: bool = True, seed: int = 0
) -> dict[str, Any]:
    """An Agent One trace: prose, ``sub_tools`` song calls, a failed call, a verification."""
    steps: list[dict[str, Any]] = [
        {"index": 0, "kind": "prose", "text": "Planning the songs."},
    ]
    for k in range(sub_tools):
        steps.append(
            {
                "index": len(steps), "kind": "tool_call", "tool": "generate_song",
                "tool_id": "tool_generate_song_v7", "operation": "generate_song", "model": "v7",
                "status": "completed", "cost_usd": str(pricing.price("generate_song", "v7")),
                "task_id": f"{run_id}-sub{k}", "file_ids": [f"{run_id}-file{k}"],
                "text": "generated a song",
            }
        )  # fmt: skip
    if failed_call:
        steps.append(
            {
                "index": len(steps), "kind": "tool_call", "tool": "web_search",
                "tool_id": "tool_web_search", "status": "failed", "cost_usd": "0",
                "task_id": f"{run_id}-search", "file_ids": [], "text": "search failed",
            }
        )  # fmt: skip
    steps.append({"index": len(steps), "kind": "verification", "text": "Checked both songs."})
    calls = sum(s["kind"] == "tool_call" for s in steps)
    usage = {"input_tokens": 500 + seed * 7919 % 4500, "output_tokens": 100 + seed * 104729 % 800}
    fee = pricing.estimate_agent(tier, sub_tool_calls=calls, **usage)
    total = fee + sum((Decimal(s.get("cost_usd", "0")) for s in steps), Decimal(0))
    for s in steps:
        s.setdefault("tool", None)
        s.setdefault("tool_id", None)
        s.setdefault("status", "completed")
        s.setdefault("cost_usd", "0")
        s.setdefault("task_id", None)
        s.setdefault("file_ids", [])
    return {
        "steps": steps,
        "usage": usage,
        "agent_fee_usd": str(fee),
        "total_cost_usd": str(total),
        "stopped_by": None,
    }


def synthetic_tasks(n: int, *, seed: int = 0, start: datetime = _EPOCH) -> Iterator[dict[str, Any]]:
    """``n`` task snapshots, newest first, created over the 100 days after ``start``.

    Completed tasks carry the list price as ``cost_usd`` (Agent One runs their
    trace's total); failed ones a ``failure`` and no cost; queued and
    processing ones no cost. Strings that repeat (tool ids, prices) are shared.
    """
    rng = np.random.default_rng(seed)
    weights = np.array([w for *_, w in CATALOG])
    kinds = rng.choice(len(CATALOG), size=n, p=weights / weights.sum())
    st_w = np.array([w for _, w in STATUSES])
    statuses = rng.choice(len(STATUSES), size=n, p=st_w / st_w.sum())
    licenses = rng.choice(6, size=n, p=[0.05, 0.55, 0.2, 0.1, 0.06, 0.04])
    t0 = np.datetime64(start.replace(tzinfo=None), "us")
    offsets = np.sort(rng.integers(0, 100 * 86400 * 10**6, size=n))[::-1]  # newest first
    created = t0 + offsets.astype("timedelta64[us]")
    runtimes = rng.integers(2_000_000, 90_000_000, size=n).astype("timedelta64[us]")
    terminal = statuses < 2  # completed, failed
    updated = np.where(terminal, created + runtimes, created)
    tool_ids = [f"tool_{op}_{m}" for op, m, _ in CATALOG]
    prices = [
        [str(pricing.price(op, m, lic)) if op != "agent" else None for lic in range(6)]
        for op, m, _ in CATALOG
    ]
    status_names = [s for s, _ in STATUSES]
    failure = {"error": "GenerationFailed", "message": "synthetic failure"}
    block = 65_536  # timestamps become strings a block at a time: a long run stays small
    created_s: list[str] = []
    updated_s: list[str] = []
    for i, (k, st, lic) in enumerate(
        zip(kinds.tolist(), statuses.tolist(), licenses.tolist(), strict=True)
    ):
        if i % block == 0:
            created_s = np.datetime_as_string(created[i : i + block], unit="us",
                                              timezone="UTC").tolist()  # fmt: skip
            updated_s = np.datetime_as_string(updated[i : i + block], unit="us",
                                              timezone="UTC").tolist()  # fmt: skip
        op, model, _ = CATALOG[k]
        status = status_names[st]
        task_id = f"task_{seed}_{i:08d}"
        rec: dict[str, Any] = {
            "task_id": task_id, "tool_id": tool_ids[k], "model": model, "operation": op,
            "license": lic, "status": status, "created_at": created_s[i % block],
            "updated_at": updated_s[i % block], "cost_usd": None, "output": {},
        }  # fmt: skip
        if status == "completed":
            if op == "agent":
                trace = agent_trace(task_id, tier=model, seed=i)
                rec["output"] = {"text": "done", "metadata_json": json.dumps(trace)}
                rec["cost_usd"] = trace["total_cost_usd"]
            else:
                rec["cost_usd"] = prices[k][lic]
                rec["output"] = {
                    "assets": [{"file_id": f"file_{seed}_{i}", "blob_hash": "h", "url": "u"}]
                }
        elif status == "failed":
            rec["failure"] = failure
        else:
            rec["progress"] = 0.5 if status == "processing" else 0.0
        yield rec
