"""Which tasks an export takes, and what is known of each: the ledger's row and the record's.

The ledger's tasks frame gives each task's facts and its cost (``cost_usd``/``cost_source``:
the cost report's); songlab's record of the create adds what the service does not show:
the take, the notebook or script that asked (``origin``) and, when the record keeps
payloads, the request itself (and so its prompt).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any, Final

import pandas as pd

import songlab.ledger.engine as engine
import songlab.ledger.periods as periods
from songlab.ledger.relation import day_filter
from songlab.ledger.tasks import tasks_frame

__all__ = ["Task", "asset_dicts", "select"]

_COLUMNS: Final = (
    "task_id",
    "operation",
    "model",
    "tier",
    "license",
    "status",
    "created_at",
    "cost_usd",
    "cost_source",
    "project",
)

_PROMPT_KEYS: Final = ("prompt", "styleOfMusic", "style_of_music", "song_style", "genre", "task")


@dataclass(slots=True)
class Task:
    task_id: str
    operation: str | None
    model: str | None
    tier: str | None
    license: int | None
    status: str | None
    created_at: datetime | None
    cost_usd: Decimal | None
    cost_source: str | None
    project: str | None
    take: int | None = None
    origin: str | None = None
    request: dict[str, object] | None = None
    prompt: str | None = None


def _value(v: Any) -> Any:
    if v is None or v is pd.NA or v is pd.NaT:
        return None
    if isinstance(v, float) and v != v:
        return None
    if isinstance(v, pd.Timestamp):
        return v.to_pydatetime()
    return v


def _frame_of(client: Any, tasks: object) -> pd.DataFrame:
    if tasks is None:
        return tasks_frame(client)
    if isinstance(tasks, pd.DataFrame):
        if "task_id" not in tasks.columns:
            raise ValueError("tasks: a frame with a task_id column (songlab.ledger.tasks_frame)")
        if {"operation", "model", "cost_usd", "created_at"} <= set(tasks.columns):
            return tasks
        ids = set(tasks["task_id"].astype(str))
    elif isinstance(tasks, str):
        ids = {tasks}
    elif isinstance(tasks, Iterable):
        ids = {str(getattr(t, "task_id", t)) for t in tasks}
    else:
        raise ValueError("tasks: a tasks frame, or task ids, or None for all of the account's")
    frame = tasks_frame(client)
    return frame[frame["task_id"].isin(ids)]


def _record_rows(client: Any) -> dict[str, object]:
    record = getattr(client, "record", None)
    if record is None:
        return {}
    try:
        rows = record.rows(key_id=getattr(client, "key_id", None))
    except Exception:  # noqa: BLE001 - no readable record: the names say "unknown"
        return {}
    return {r.task_id: r for r in rows}


def _request_of(record: Any, task_id: str) -> dict[str, object] | None:
    try:
        text = record.payload(task_id) if record is not None else None
    except Exception:  # noqa: BLE001
        return None
    if not text:
        return None
    try:
        body = json.loads(text)
    except ValueError:
        return None
    return body if isinstance(body, dict) else None


def _prompt_of(request: Mapping[str, object] | None) -> str | None:
    if not request:
        return None
    inner = request.get("payload_json", request.get("payload"))
    if isinstance(inner, str):
        with contextlib.suppress(ValueError):
            inner = json.loads(inner)
    for source in (inner, request):
        if isinstance(source, Mapping):
            for key in _PROMPT_KEYS:
                value = source.get(key)
                if isinstance(value, str) and value.strip():
                    return value
    return None


def _notebook_matches(origin: str | None, notebook: str) -> bool:
    if not origin:
        return False
    if origin == notebook:
        return True
    name = Path(origin.split(":", 1)[-1] if origin.startswith("kernel:") else origin).name
    want = Path(notebook).name
    return name == want or Path(name).stem == want


def select(
    client: Any,
    tasks: object,
    *,
    project: str | None,
    notebook: str | None,
    period: str | None,
    start: object,
    end: object,
    prompts: Mapping[str, str] | Callable[[Mapping[str, object]], str | None] | None,
) -> list[Task]:
    frame = _frame_of(client, tasks)
    p = (
        periods.period(period, start=start, end=end)
        if period is not None or start is not None or end is not None
        else None
    )
    # the rows and their money through the ledger engine's relation: the cost report's
    # cost_usd and cost_source, by its one rule of what counts
    where = [day_filter(p)]
    if project is not None:
        where.append(f"project = '{project.replace(chr(39), chr(39) * 2)}'")
    with engine.open_ledger(frame) as book:
        chosen = book.arrow(
            f"SELECT {', '.join(_COLUMNS)} FROM ledger WHERE {' AND '.join(where)} "
            "ORDER BY created_at NULLS FIRST, task_id"
        )
    rows = [{k: _value(v) for k, v in r.items()} for r in chosen.to_pylist()]
    record = getattr(client, "record", None)
    recorded = _record_rows(client)
    out: list[Task] = []
    for r in rows:
        rec = recorded.get(r["task_id"])
        origin = getattr(rec, "origin", None)
        if notebook is not None and not _notebook_matches(origin, notebook):
            continue
        license_value = r.get("license")
        task = Task(
            task_id=str(r["task_id"]),
            operation=r.get("operation"),
            model=r.get("model"),
            tier=r.get("tier"),
            license=int(license_value) if license_value is not None else None,
            status=r.get("status"),
            created_at=r.get("created_at"),
            cost_usd=r.get("cost_usd"),
            cost_source=r.get("cost_source"),
            project=r.get("project"),
            take=getattr(rec, "take", None),
            origin=origin,
            request=_request_of(record, str(r["task_id"])) if rec is not None else None,
        )
        if callable(prompts):
            task.prompt = prompts(r)
        elif prompts is not None:
            task.prompt = prompts.get(task.task_id)
        if task.prompt is None:
            task.prompt = _prompt_of(task.request)
        out.append(task)
    out.sort(key=lambda t: (t.created_at or datetime.min.replace(tzinfo=UTC), t.task_id))
    return out


def asset_dicts(snapshot: object) -> list[dict[str, object]]:
    assets = getattr(getattr(snapshot, "output", None), "assets", None) or ()
    out = []
    for a in assets:
        raw = getattr(a, "raw", None) or {}
        out.append(
            {
                "file_id": a.file_id,
                "blob_hash": a.blob_hash,
                "name": getattr(a, "name", None) or raw.get("name"),
                "mime_type": getattr(a, "mime_type", None) or raw.get("mime_type"),
            }
        )
    return out
