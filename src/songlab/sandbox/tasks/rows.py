"""Task rows: insertion, the snapshot shape of design.md, and listing pages."""

from __future__ import annotations

import json
import re
import sqlite3
from typing import Any

from songlab.sandbox.storage.billing import usd
from songlab.sandbox.storage.clock import iso
from songlab.sandbox.storage.db import Store


def insert(store: Store, row: dict[str, Any]) -> None:
    cols = ", ".join(row)
    marks = ", ".join("?" for _ in row)
    store.execute(f"INSERT INTO tasks ({cols}) VALUES ({marks})", tuple(row.values()))


def get(store: Store, task_id: str) -> sqlite3.Row | None:
    return store.one("SELECT * FROM tasks WHERE id = ?", (task_id,))


def snapshot(row: sqlite3.Row, base_url: str) -> dict[str, Any]:
    """The task snapshot: fixed fields, then failure/progress/output when they apply."""
    snap: dict[str, Any] = {
        "task_id": row["id"],
        "tool_id": row["tool_id"],
        "model": row["model"],
        "operation": row["operation"],
        "license": row["license"],
        "status": row["status"],
        "created_at": iso(row["created_at"]),
        "updated_at": iso(row["updated_at"]),
        "cost_usd": None if row["cost_units"] is None else usd(row["cost_units"]),
    }
    if row["parent_task_id"] is not None:
        snap["parent_task_id"] = row["parent_task_id"]
    if row["failure"] is not None:
        snap["failure"] = json.loads(row["failure"])
    if row["progress"] is not None:
        snap["progress"] = row["progress"]
    output: dict[str, Any] = {}
    if row["output_text"] is not None:
        output["text"] = row["output_text"]
    if row["output_metadata"] is not None:
        output["metadata_json"] = row["output_metadata"]
    if row["output_assets"] is not None:
        assets = json.loads(row["output_assets"])
        for a in assets:
            a["url"] = base_url + a["url"]
        output["assets"] = assets
    snap["output"] = output
    return snap


CURSOR_PATTERN = r"^[0-9]{1,18}$"  # the listing's cursor: the rowid to continue before


def encode_cursor(rowid: int) -> str:
    return str(rowid)


def decode_cursor(cursor: str) -> int:
    """The rowid of a cursor; raises ValueError for anything that is not one."""
    if not re.fullmatch(CURSOR_PATTERN, cursor):
        raise ValueError("cursor: must be a next_cursor returned by this listing (digits)")
    return int(cursor)


def page(
    store: Store, account_id: str, limit: int, before: int | None
) -> tuple[list[sqlite3.Row], int | None]:
    """Newest first; returns rows and the rowid to continue before (or None)."""
    if before is None:
        rows = store.all(
            "SELECT * FROM tasks WHERE account_id = ? ORDER BY rowid DESC LIMIT ?",
            (account_id, limit + 1),
        )
    else:
        rows = store.all(
            "SELECT * FROM tasks WHERE account_id = ? AND rowid < ? ORDER BY rowid DESC LIMIT ?",
            (account_id, before, limit + 1),
        )
    more = len(rows) > limit
    rows = rows[:limit]
    return rows, (rows[-1]["rowid"] if more else None)
