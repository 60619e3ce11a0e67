"""Helpers of the ledger tests."""

from __future__ import annotations

from typing import Any


def snap(task_id: str, **fields: Any) -> dict[str, Any]:
    """One task snapshot with sensible defaults (a completed v7 song, royalty-free)."""
    base: dict[str, Any] = {
        "task_id": task_id,
        "tool_id": "t-song-v7",
        "model": "v7",
        "operation": "generate_song",
        "license": 1,
        "status": "completed",
        "created_at": "2026-11-20T10:00:00.000000Z",
        "updated_at": "2026-11-20T10:00:05.000000Z",
        "cost_usd": "0.12000000",
        "output": {},
    }
    base.update(fields)
    return base
