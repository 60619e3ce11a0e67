"""The Agent One trace frame: one row per step of each run, plus the run's own fee.

A run's ``output.metadata_json`` (design.md's trace shape) lists its steps
(``tool_call``, ``prose``, ``verification``) with each sub-tool call's billed
cost; the run's own usage fee (``agent_fee_usd``) becomes one more row of kind
``agent_fee``, so a run's rows sum to its ``total_cost_usd`` exactly.

A run is read from anything that names it: a tasks frame or table, a client, task dicts,
a ``Task``, an ``AgentRun`` or a task handle (its snapshot is fetched; its client's record
and tool listing say which tasks are runs). Where the service shows no operation (the spec
profile), a task whose ``metadata_json`` is a trace (a ``steps`` list of known kinds) is
read as a run: the trace itself is the evidence. A finished run that yields no steps is
never dropped without a word: :func:`trace_frame` warns (``TraceWarning``) naming it.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterable, Mapping
from decimal import Decimal, InvalidOperation
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

import songlab.ledger._arrow as _arrow
import songlab.ledger._schema as _schema

__all__ = ["AGENT_FEE", "STEP_KINDS", "TraceWarning", "trace_frame", "trace_rows", "trace_table"]

STEP_KINDS = ("tool_call", "prose", "verification")
AGENT_FEE = "agent_fee"


class TraceWarning(UserWarning):
    """A finished Agent One run gave no trace rows (no ``metadata_json``, or not a trace)."""


def looks_like_trace(metadata: object) -> bool:
    """Whether ``metadata`` (text or a mapping) is an Agent One trace: a ``steps`` list whose
    entries are objects of the known kinds."""
    if isinstance(metadata, str):
        if '"steps"' not in metadata:
            return False
        try:
            metadata = json.loads(metadata)
        except ValueError:
            return False
    if not isinstance(metadata, Mapping) or not isinstance(metadata.get("steps"), list):
        return False
    steps = metadata["steps"]
    return all(isinstance(x, Mapping) and x.get("kind") in STEP_KINDS for x in steps)


def _money(value: object, where: str) -> Decimal:
    if value is None:
        return Decimal(0)
    if isinstance(value, float):
        raise ValueError(f"{where}: must be a decimal string, got float {value!r}")
    try:
        return Decimal(str(value))
    except InvalidOperation:
        raise ValueError(f"{where}: not a decimal amount: {value!r}") from None


def _parse(metadata: str | Mapping[str, object], run_id: str) -> Mapping[str, Any]:
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
    metadata: str | Mapping[str, object],
    *,
    run_model: str | None = None,
    run_tool_id: str | None = None,
    run_status: str | None = None,
) -> list[dict[str, object]]:
    """The rows of one run (steps in trace order, then the fee row), as dicts."""
    trace = _parse(metadata, run_task_id)
    rows: list[dict[str, object]] = []
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


def _snapshots(source: object) -> tuple[list[object], Any] | None:
    """Task snapshots and the client they came from, if ``source`` names tasks one by one: a
    ``Task``, an ``AgentRun``, a task handle (fetched), a dict, or a list of these."""
    items = source if isinstance(source, list | tuple) else [source]
    if not items or isinstance(source, pd.DataFrame | pa.Table):
        return None
    out, client = [], None
    for item in items:
        task = getattr(item, "task", None)  # an AgentRun carries its Task
        if task is not None and hasattr(task, "raw"):
            item = task
        if hasattr(item, "get") and hasattr(item, "task_id") and not isinstance(item, Mapping):
            client = client or getattr(item, "_client", None)
            item = item.get()  # a handle: its snapshot now
        if not (isinstance(item, Mapping) or isinstance(getattr(item, "raw", None), Mapping)):
            return None
        out.append(item)
    return out, client


def _table(source: object) -> pa.Table:
    from songlab.ledger._source import tool_lookup
    from songlab.ledger.tasks import tasks_table

    if isinstance(source, pa.Table):
        return source
    if isinstance(source, pd.DataFrame):
        need = ("task_id", "operation", "metadata_json")
        missing = [c for c in need if c not in source.columns]
        if missing:
            raise ValueError(f"source: tasks frame lacks column(s) {', '.join(missing)}")
        cols = ("task_id", "metadata_json", "model", "tool_id", "status", "operation")
        t = pa.Table.from_pandas(
            source[[c for c in cols if c in source.columns]], preserve_index=False
        )
        return pa.Table.from_pydict(
            {
                c: pc.cast(t[c], pa.string())
                if c in t.column_names
                else _arrow.nulls(len(source), pa.string())
                for c in cols
            }
        )
    named = _snapshots(source)
    if named is not None:
        tasks, client = named
        record = getattr(client, "record", None) if client is not None else None
        tools = tool_lookup(client) if client is not None else None
        return tasks_table(tasks, record=record or None, tools=tools)
    return tasks_table(source)


def _runs(source: object) -> Iterable[tuple[str, Any, str | None, str | None, str | None]]:
    """(run id, metadata, model, tool id, status) of each Agent One run with a trace.

    A run is a task whose operation is ``agent`` as the tasks table resolves it (the
    service's, else the client's record's, else the tool listing's entry of its tool id),
    or, where no operation is known, a task whose ``metadata_json`` is a trace. A finished
    run without a trace is named in a :class:`TraceWarning`.
    """
    table = _table(source)
    rows = table.select(["task_id", "metadata_json", "model", "tool_id", "status", "operation"])
    quiet = []
    for tid, meta, model, tool, status, op in zip(
        *(rows[c].to_pylist() for c in rows.column_names), strict=True
    ):
        if op == "agent" and meta is not None:
            yield tid, meta, model, tool, status
        elif op is None and meta is not None and looks_like_trace(meta):
            yield tid, meta, model, tool, status
        elif op == "agent" and status == "completed":
            quiet.append(tid)
    if quiet:
        shown = ", ".join(quiet[:5]) + (f" and {len(quiet) - 5} more" if len(quiet) > 5 else "")
        warnings.warn(
            f"{len(quiet)} finished Agent One run(s) show no trace (output.metadata_json): "
            f"{shown}; their steps are not in the trace frame",
            TraceWarning,
            stacklevel=4,
        )


def trace_table(source: object) -> pa.Table:
    """The trace rows of every Agent One run in ``source`` (schema ``_schema.TRACE``).

    ``source``: a tasks frame or table (it keeps each run's ``metadata_json``), a client,
    task dicts, a ``Task``, an ``AgentRun`` or a task handle, or a list of them (read
    through ``tasks_table`` with the client's record and tool listing, which say which
    tasks are runs). A trace is parsed from ``metadata_json`` alone; a finished run without
    one is named in a :class:`TraceWarning`.
    """
    rows: list[dict[str, object]] = []
    for run_id, meta, model, tool_id, status in _runs(source):
        rows.extend(
            trace_rows(run_id, meta, run_model=model, run_tool_id=tool_id, run_status=status)
        )
    columns = {name: [r[name] for r in rows] for name in _schema.TRACE.names}
    return pa.Table.from_pydict(columns, schema=_schema.TRACE)


def trace_frame(source: object) -> pd.DataFrame:
    """One row per Agent One step plus one ``agent_fee`` row per run; columns in docs/ledger/using.md."""
    return _schema.to_frame(trace_table(source))
