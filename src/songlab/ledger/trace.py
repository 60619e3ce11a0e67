"""The Agent One trace frame: one row per step of each run, plus the run's own fee.

A run's ``output.metadata_json`` (design.md's trace shape) lists its steps
(``tool_call``, ``prose``, ``verification``) with each sub-tool call's billed
cost; the run's own usage fee (``agent_fee_usd``) becomes one more row of kind
``agent_fee``, so a run's rows sum to its ``total_cost_usd`` exactly.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from decimal import Decimal, InvalidOperation
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

import songlab.ledger._schema as _schema

__all__ = ["AGENT_FEE", "STEP_KINDS", "trace_frame", "trace_rows", "trace_table"]

STEP_KINDS = ("tool_call", "prose", "verification")
AGENT_FEE = "agent_fee"


def _money(value: Any, where: str) -> Decimal:
    if value is None:
        return Decimal(0)
    if isinstance(value, float):
        raise ValueError(f"{where}: must be a decimal string, got float {value!r}")
    try:
        return Decimal(str(value))
    except InvalidOperation:
        raise ValueError(f"{where}: not a decimal amount: {value!r}") from None


def _parse(metadata: str | Mapping[str, Any], run_id: str) -> Mapping[str, Any]:
    if isinstance(metadata, str):
        try:
            metadata = json.loads(metadata)
        except ValueError:
            raise ValueError(f"task {run_id}: output.metadata_json is not JSON") from None
    if not isinstance(metadata, Mapping) or not isinstance(metadata.get("steps"), list):
        raise ValueError(f"task {run_id}: output.metadata_json has no 'steps' list")
    return metadata


def trace_rows(
    run_task_id: str,
    metadata: str | Mapping[str, Any],
    *,
    run_model: str | None = None,
    run_tool_id: str | None = None,
    run_status: str | None = None,
) -> list[dict[str, Any]]:
    """The rows of one run (steps in trace order, then the fee row), as dicts."""
    trace = _parse(metadata, run_task_id)
    rows: list[dict[str, Any]] = []
    for pos, step in enumerate(trace["steps"]):
        where = f"task {run_task_id}: steps[{pos}]"
        if not isinstance(step, Mapping):
            raise ValueError(f"{where}: must be an object")
        kind = step.get("kind")
        if kind not in STEP_KINDS:
            raise ValueError(f"{where}.kind: must be one of {', '.join(STEP_KINDS)}, got {kind!r}")
        rows.append(
            {
                "run_task_id": run_task_id,
                "run_model": run_model,
                "step_index": step.get("index", pos),
                "kind": kind,
                "tool": step.get("tool"),
                "tool_id": step.get("tool_id"),
                "status": step.get("status"),
                "cost_usd": _money(step.get("cost_usd"), f"{where}.cost_usd"),
                "task_id": step.get("task_id"),
                "file_ids": list(step.get("file_ids") or []),
                "text": step.get("text"),
            }
        )
    rows.append(
        {
            "run_task_id": run_task_id,
            "run_model": run_model,
            "step_index": None,
            "kind": AGENT_FEE,
            "tool": None,
            "tool_id": run_tool_id,
            "status": run_status,
            "cost_usd": _money(trace.get("agent_fee_usd"), f"task {run_task_id}: agent_fee_usd"),
            "task_id": run_task_id,
            "file_ids": [],
            "text": trace.get("stopped_by"),
        }
    )
    return rows


def _runs(source: Any) -> Iterable[tuple[str, Any, str | None, str | None, str | None]]:
    """(run id, metadata, model, tool id, status) of each Agent One run with a trace.

    A run is a task whose operation is ``agent`` as the tasks table resolves it: the
    service's, else the client's record's, else the tool listing's entry of its tool id
    (Agent One has one tool per tier), never a guess from the snapshot's other fields.
    """
    if isinstance(source, pd.DataFrame):
        need = ("task_id", "operation", "metadata_json")
        missing = [c for c in need if c not in source.columns]
        if missing:
            raise ValueError(f"source: tasks frame lacks column(s) {', '.join(missing)}")
        runs = source[
            (source["operation"] == "agent").fillna(False) & source["metadata_json"].notna()
        ]

        def get(c: str) -> list[Any]:
            return runs[c].tolist() if c in runs.columns else [None] * len(runs)

        yield from zip(
            get("task_id"),
            get("metadata_json"),
            get("model"),
            get("tool_id"),
            get("status"),
            strict=True,
        )
        return
    from songlab.ledger.tasks import tasks_table

    table = source if isinstance(source, pa.Table) else tasks_table(source)
    is_run = pc.and_(
        pc.fill_null(pc.equal(table["operation"], "agent"), False),
        pc.is_valid(table["metadata_json"]),
    )
    runs = table.filter(is_run).select(["task_id", "metadata_json", "model", "tool_id", "status"])
    yield from zip(*(runs[c].to_pylist() for c in runs.column_names), strict=True)


def trace_table(source: Any) -> pa.Table:
    """The trace rows of every Agent One run in ``source`` (schema ``_schema.TRACE``).

    ``source``: a tasks frame or table (it keeps each run's ``metadata_json``), an
    iterable of task dicts, or a client (read through ``tasks_table``: its record and
    tool listing say which tasks are runs). Runs without a trace are skipped; a trace is
    parsed from ``metadata_json`` alone.
    """
    rows: list[dict[str, Any]] = []
    for run_id, meta, model, tool_id, status in _runs(source):
        rows.extend(
            trace_rows(run_id, meta, run_model=model, run_tool_id=tool_id, run_status=status)
        )
    columns = {name: [r[name] for r in rows] for name in _schema.TRACE.names}
    return pa.Table.from_pydict(columns, schema=_schema.TRACE)


def trace_frame(source: Any) -> pd.DataFrame:
    """One row per Agent One step plus one ``agent_fee`` row per run; columns in docs/ledger.md."""
    return _schema.to_frame(trace_table(source))
