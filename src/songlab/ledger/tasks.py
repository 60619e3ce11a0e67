"""The tasks frame: one row per task, built column by column in Arrow.

Input is any source of task snapshots (see ``_source``): a list or generator
of dicts in design.md's snapshot shape, or a client. Records are read in
chunks straight into an Arrow struct array (C++, no per-field Python loop),
then every column is derived with Arrow compute; the only Python work per
distinct value is the price-list lookup of each distinct (operation, model,
license) and the trace of each Agent One run. A generator is consumed one
chunk at a time, so a long listing never sits in memory as a list of dicts.
A client with ``generations.raw_pages()`` is read from the listing's page
bytes instead (``_pages``: Arrow's JSON reader, no Python dict per task); both
ways end in :func:`assemble`, so they give the same frame.

**The service first, the record second.** :func:`assemble` reads what the service
shows; :func:`resolve` then fills what it does not show from the client's record
of the creates songlab made (``songlab.client.RecordStore``: tool, operation, model,
license, labels, the client's clock at acceptance, the list-price estimate) and the
tool listing (a tool id names its operation and model: Agent One runs are known by
it). Each fact column has a ``*_source`` column (service / record / unknown);
``cost_source`` says whether ``cost_usd`` was billed, estimated, unbilled (failed)
or is unknown (null: never 0).

Rows keep the source's order (the listing's: newest first).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from itertools import islice
from typing import Any, Final, cast

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

import songlab.client.field_names as field_names
import songlab.ledger._arrow as _arrow
import songlab.ledger._estimate as _estimate
import songlab.ledger._pages as _pages
import songlab.ledger._schema as _schema
from songlab.ledger._arrow import Column
from songlab.ledger._record import record_table
from songlab.ledger._source import AUTO, Auto, as_dict, iter_tasks, raw_pages, tool_lookup
from songlab.spec import LICENSE_NAMES_WITH_UNSET

__all__ = [
    "NAMES",
    "RAW_TASK",
    "assemble",
    "fact",
    "first",
    "resolve",
    "tasks_frame",
    "tasks_frame_from_pages",
    "tasks_table",
    "tasks_table_from_pages",
]

CHUNK: Final[int] = 131_072


# The names tried for each fact of a snapshot the spec does not show (first present wins):
# ``songlab.client.field_names``, the one seam a user edits, shared with the client.
_NAMED_BY: Final[dict[str, tuple[str, ...]]] = {
    "tool_id": field_names.TASK_TOOL_ID,
    "operation": field_names.TASK_OPERATION,
    "model": field_names.TASK_MODEL,
    "license": field_names.TASK_LICENSE,
    "created_at": field_names.TASK_CREATED_AT,
    "updated_at": field_names.TASK_UPDATED_AT,
    "cost_usd": field_names.TASK_COST_USD,
    "parent_task_id": field_names.TASK_PARENT_ID,
    "failure": field_names.TASK_FAILURE,
    "failure.error": field_names.FAILURE_CODE,
}


# The facts of a snapshot the ledger reads besides task_id and status (both shown), and
# their types; each is read under every name NAMES gives it.
_FACTS: Final[dict[str, pa.DataType]] = {
    "tool_id": pa.string(),
    "operation": pa.string(),
    "model": pa.string(),
    "license": pa.int64(),
    "created_at": pa.string(),
    "updated_at": pa.string(),
    "cost_usd": pa.string(),
    "parent_task_id": pa.string(),
}
NAMES: Final[dict[str, tuple[str, ...]]] = dict(_NAMED_BY)
_FAILURE: Final[pa.DataType] = pa.struct([(n, pa.string()) for n in NAMES["failure.error"]])

# The part of a snapshot the ledger reads; other keys are ignored.
RAW_TASK: Final[pa.StructType] = pa.struct(
    [
        ("task_id", pa.string()),
        ("status", pa.string()),
        *((name, type_) for fact, type_ in _FACTS.items() for name in NAMES[fact]),
        *((name, _FAILURE) for name in NAMES["failure"]),
    ]
)


def fact(raw: pa.StructArray, name: str) -> Column:
    """A fact's column of RAW_TASK rows: the first of its names that is present, per row."""
    columns = [raw.field(n) for n in NAMES[name]]
    return columns[0] if len(columns) == 1 else _arrow.coalesce(*columns)


def _failure_column(raw: pa.StructArray) -> Column:
    codes: list[Column] = [
        pc.struct_field(raw.field(outer), [i])
        for outer in NAMES["failure"]
        for i in range(len(NAMES["failure.error"]))
    ]
    return codes[0] if len(codes) == 1 else _arrow.coalesce(*codes)


def first(rec: Mapping[str, Any], name: str) -> object:
    """The value of a fact in one snapshot: its first name present (not null), else None."""
    for n in NAMES[name]:
        value = rec.get(n)
        if value is not None:
            return value
    return None


# Read only where they matter, from the records themselves: failure.error of
# failed tasks and output.metadata_json of Agent One runs (nested structs for
# every row would double the conversion time).
_TIER_NAMES = pa.array([LICENSE_NAMES_WITH_UNSET[i] for i in range(6)], pa.string())


_TEXT_FACTS: Final = ("tool_id", "operation", "model", "parent_task_id", "created_at", "updated_at")


def _clean(rec: Mapping[str, Any]) -> dict[str, Any]:
    """One record coerced to RAW_TASK's types; errors name the task and field."""
    tid = rec.get("task_id")
    out: dict[str, Any] = {"task_id": tid, "status": rec.get("status")}
    for k in ("task_id", "status"):
        if out[k] is not None and not isinstance(out[k], str):
            raise ValueError(
                f"task {tid}: {k} must be a string, got {type(out[k]).__name__} {out[k]!r}"
            )
    for name in _TEXT_FACTS:
        for k in NAMES[name]:
            v = rec.get(k)
            if isinstance(v, datetime) and name in ("created_at", "updated_at"):
                v = v.isoformat()
            if v is not None and not isinstance(v, str):
                raise ValueError(f"task {tid}: {k} must be a string, got {type(v).__name__} {v!r}")
            out[k] = v
    for k in NAMES["license"]:
        out[k] = _license(rec.get(k), k, tid)
    for k in NAMES["cost_usd"]:
        cost = rec.get(k)
        if isinstance(cost, float):
            raise ValueError(f"task {tid}: {k} must be a decimal string, got float {cost!r}")
        out[k] = None if cost is None else str(cost)
    for outer in NAMES["failure"]:
        out[outer] = _failure_codes(rec.get(outer), outer, tid)
    return out


def _license(lic: object, k: str, tid: object) -> int | None:
    """A license tier as an integer (0-5 is checked later, over the column)."""
    if isinstance(lic, float) and lic.is_integer():
        lic = int(lic)  # 3.0 is the integer 3 (as JSON Schema reads it); 3.5 is refused
    if lic is None:
        return None
    if isinstance(lic, bool) or not isinstance(lic, int | str):
        raise ValueError(f"task {tid}: {k} must be an integer 0-5, got {lic!r}")
    try:
        return int(lic)
    except ValueError:
        raise ValueError(f"task {tid}: {k} must be an integer 0-5, got {lic!r}") from None


def _failure_codes(failure: object, outer: str, tid: object) -> dict[str, str | None]:
    """The error code(s) of a ``failure`` object, each a string or None."""
    codes: dict[str, str | None] = {}
    for code in NAMES["failure.error"]:
        v = failure.get(code) if isinstance(failure, Mapping) else None
        if v is not None and not isinstance(v, str):
            raise ValueError(f"task {tid}: {outer}.{code} must be a string, got {v!r}")
        codes[code] = v
    return codes


def _metadata_json(rec: Mapping[str, Any]) -> str | None:
    output = rec.get("output")
    meta = output.get("metadata_json") if isinstance(output, Mapping) else None
    if meta is not None and not isinstance(meta, str):
        meta = json.dumps(meta)
    return meta


def _sparse(
    records: Sequence[Mapping[str, Any]],
    mask: Column,
    read: Callable[[Mapping[str, Any]], str | None],
) -> Column:
    """A string column read from the records only where ``mask`` is true, else null."""
    rows = pc.indices_nonzero(mask).to_pylist()
    if not rows:
        return _arrow.nulls(len(mask), pa.string())
    values = pa.array([read(records[i]) for i in rows if i is not None], pa.string())
    out: Column = pc.replace_with_mask(_arrow.nulls(len(mask), pa.string()), mask, values)
    return out


def _float_license(records: Sequence[object]) -> bool:
    return any(
        isinstance(r, Mapping) and type(r.get(n)) is float
        for r in records
        for n in NAMES["license"]
    )


def _raw_chunk(records: Sequence[Mapping[str, Any]]) -> pa.StructArray:
    # pyarrow converts a float license to int64 by truncating (3.5 -> 3): such chunks are
    # cleaned record by record, where 3.0 is 3 and 3.5 is refused naming the task.
    if not _float_license(records):
        try:
            return cast(pa.StructArray, pa.array(records, type=RAW_TASK))  # a struct type
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError):
            pass  # values of another type (a Decimal cost, a datetime, a numeric string ...)
    return cast(pa.StructArray, pa.array([_clean(as_dict(r)) for r in records], type=RAW_TASK))


def _timestamps(strings: Column, field: str, tid: Column) -> Column:
    try:
        return pc.cast(strings, _schema.TIMESTAMP)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        pass
    out: list[datetime | None] = []
    for i, s in enumerate(strings.to_pylist()):
        if s is None:
            out.append(None)
            continue
        try:
            t = datetime.fromisoformat(s)
        except ValueError:
            raise ValueError(f"task {tid[i]}: {field}: not an ISO 8601 timestamp: {s!r}") from None
        out.append(t if t.tzinfo else t.replace(tzinfo=UTC))
    return pa.array(out, _schema.TIMESTAMP)


def _money(strings: Column, field: str, tid: Column) -> Column:
    try:
        return pc.cast(strings, _schema.MONEY)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        error = exc
    for i, s in enumerate(strings.to_pylist()):  # only on failure: find the task to name
        try:
            pc.cast(pa.array([s], pa.string()), _schema.MONEY)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
            raise ValueError(
                f"task {tid[i]}: {field}: not a decimal amount with at most 8 "
                f"decimals, got {s!r} ({exc})"
            ) from None
    raise ValueError(f"{field}: not a decimal amount with at most 8 decimals ({error})")


def _estimates(op: Column, model: Column, lic: Column, meta: Column) -> Column:
    """The price-list estimate of each row (null where the list has none). An unknown
    license (null) is priced only where the price is the same in every tier."""
    key = _arrow.join_strings(op, model, pc.cast(lic, pa.string()), "\x1f", null_handling="replace")
    enc = _arrow.dictionary_encode(key)
    est_by_key = []
    for k in enc.dictionary.to_pylist():
        o, m, n = str(k).split("\x1f")  # never null: nulls are joined as
        if n:
            est_by_key.append(_estimate.estimate(o or None, m or None, int(n)))
        else:
            low, high = (_estimate.estimate(o or None, m or None, t) for t in (1, 5))
            est_by_key.append(low if low == high else None)
    est = pc.take(pa.array(est_by_key, _schema.MONEY), enc.indices)
    is_agent = _arrow.fill_null(pc.equal(op, pa.scalar("agent")), pa.scalar(False))
    if pc.any(is_agent).as_py():
        rows = pc.indices_nonzero(is_agent)
        models, metas = pc.take(model, rows).to_pylist(), pc.take(meta, rows).to_pylist()
        agent = [_estimate.estimate_agent_run(m, j) for m, j in zip(models, metas, strict=True)]
        est = pc.replace_with_mask(est, is_agent, pa.array(agent, _schema.MONEY))
    return est


def _maybe_agent(op: Column) -> Column:
    """Rows whose output.metadata_json is kept: Agent One runs, and rows whose operation
    the service does not show (the client's record or the tool listing may name it)."""
    return _arrow.fill_null(pc.equal(op, pa.scalar("agent")), pa.scalar(True))


def _build(records: Sequence[Mapping[str, Any]], seen_at: datetime | None = None) -> pa.Table:
    raw = _raw_chunk(records)
    meta = _sparse(records, _maybe_agent(fact(raw, "operation")), _metadata_json)
    return assemble(raw, meta, seen_at=seen_at)


def _fact_source(values: Column) -> Column:
    """service where the service showed a value, else unknown."""
    return _schema.source_array(_arrow.if_else(pc.is_valid(values), 0, 2))


def _cost(billed: Column, est: Column, status: Column) -> tuple[Column, Column]:
    """cost_usd and cost_source by the one rule (``_schema.cost_of``)."""
    return _schema.cost_of(billed, est, status)


def assemble(raw: pa.StructArray, meta: Column, *, seen_at: datetime | None = None) -> pa.Table:
    """The tasks table of RAW_TASK rows and their metadata_json, from what the service shows
    (sources ``service`` or ``unknown``; :func:`resolve` adds the record's facts)."""
    tid, status = raw.field("task_id"), raw.field("status")
    tool, op, model, lic_raw, created_s, updated_s, cost_s, parent = (
        fact(raw, name) for name in _FACTS
    )
    bad = pc.invert(
        _arrow.fill_null(
            pc.and_(pc.greater_equal(lic_raw, pa.scalar(0)), pc.less_equal(lic_raw, pa.scalar(5))),
            pa.scalar(True),
        )
    )
    if pc.any(bad).as_py():
        i = pc.indices_nonzero(bad)[0].as_py()
        raise ValueError(f"task {tid[i]}: license must be 0-5, got {lic_raw[i]}")
    # 0 is "unset", which the service bills as royalty-free (1); a license not shown is unknown
    lic = pc.cast(_arrow.if_else(pc.equal(lic_raw, pa.scalar(0)), 1, lic_raw), pa.int8())
    created = _timestamps(created_s, "created_at", tid)
    updated = _timestamps(updated_s, "updated_at", tid)
    failed = _arrow.fill_null(pc.equal(status, pa.scalar("failed")), pa.scalar(False))
    terminal = pc.or_(
        failed, _arrow.fill_null(pc.equal(status, pa.scalar("completed")), pa.scalar(False))
    )
    duration = _arrow.if_else(
        terminal, pc.subtract(updated, created), pa.scalar(None, _schema.DURATION)
    )
    failure = _arrow.if_else(failed, _failure_column(raw), pa.scalar(None, pa.string()))
    billed = _money(cost_s, "cost_usd", tid)
    est = _estimates(op, model, lic, meta)
    cost, source = _cost(billed, est, status)
    meta = _arrow.if_else(_maybe_agent(op), meta, pa.scalar(None, pa.string()))
    n = len(raw)
    seen = _arrow.repeat(seen_at, n, _schema.TIMESTAMP)  # a LedgerStore sets it
    columns = [
        tid,
        tool,
        op,
        model,
        lic,
        pc.take(_TIER_NAMES, lic),
        status,
        created,
        updated,
        duration,
        billed,
        est,
        cost,
        source,
        failure,
        parent,
        meta,
        *(_arrow.nulls(n, pa.string()) for _ in _schema.LABEL_COLUMNS),
        *(_fact_source(c) for c in (created, tool, op, model, lic)),
        _schema.source_array(_arrow.repeat(2, n, pa.int8())),  # labels: record only
        seen,
    ]
    return pa.Table.from_arrays(columns, schema=_schema.TASKS)


# -- the record second: facts the service does not show, from the client's record ----------


def _col(table: pa.Table, name: str) -> Column:
    col = table[name]
    if pa.types.is_dictionary(col.type):  # chunks may each have their own dictionary
        d = _schema.COST_DICT if name == "cost_source" else _schema.FACT_DICT
        return _schema.source_array(_schema.source_codes(col, d), d)
    return col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col


def _fill(cur: Column, cur_src: Column, found: Column, code: int) -> tuple[Column, Column, Column]:
    """``cur`` with nulls filled from ``found``; its source set to ``code`` where filled."""
    filled = pc.and_(pc.is_null(cur), pc.is_valid(found))
    value = _arrow.coalesce(cur, found)
    src = _arrow.if_else(filled, code, _schema.source_codes(cur_src))
    return value, _schema.source_array(src), filled


def _sub_tasks_from_traces(cols: dict[str, Column]) -> bool:
    """Sub-tool tasks of Agent One runs named in a run's trace (``steps[].task_id``, shown
    by the service in ``output.metadata_json``) get the run as ``parent_task_id``, and the
    step's tool id and billed cost where the task's own snapshot does not show them."""
    is_run = pc.and_(
        _arrow.fill_null(pc.equal(cols["operation"], pa.scalar("agent")), pa.scalar(False)),
        pc.is_valid(cols["metadata_json"]),
    )
    # only tasks the service does not describe (no operation shown) can be such sub-tasks
    orphans = pc.and_(pc.is_null(cols["parent_task_id"]), pc.is_null(cols["operation"]))
    if not pc.any(is_run).as_py() or not pc.any(orphans).as_py():
        return False
    runs = pc.indices_nonzero(is_run)
    steps: dict[str, tuple[str, str | None, str | None]] = {}
    for run_id, meta in zip(
        pc.take(cols["task_id"], runs).to_pylist(),
        pc.take(cols["metadata_json"], runs).to_pylist(),
        strict=True,
    ):
        if not isinstance(run_id, str) or not isinstance(meta, str):
            continue  # never: the runs are those with a task id and metadata
        try:
            trace = json.loads(meta)
        except ValueError:
            continue
        for step in trace.get("steps") or [] if isinstance(trace, dict) else []:
            if isinstance(step, dict) and isinstance(step.get("task_id"), str):
                cost, tool = step.get("cost_usd"), step.get("tool_id")
                steps.setdefault(
                    step["task_id"],
                    (
                        run_id,
                        str(cost) if isinstance(cost, str | int) else None,
                        tool if isinstance(tool, str) else None,
                    ),
                )
    if not steps:
        return False
    at = pc.index_in(cols["task_id"], value_set=pa.array(list(steps), pa.string()))
    found = pc.and_(orphans, pc.is_valid(at))
    if not pc.any(found).as_py():
        return False
    parents, costs, tools = (pa.array(v, pa.string()) for v in zip(*steps.values(), strict=True))
    cols["parent_task_id"] = _arrow.if_else(found, pc.take(parents, at), cols["parent_task_id"])
    try:
        step_cost = pc.cast(pc.take(costs, at), _schema.MONEY)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        step_cost = _arrow.nulls(len(at), _schema.MONEY)
    cols["billed_usd"] = _arrow.if_else(
        found, _arrow.coalesce(cols["billed_usd"], step_cost), cols["billed_usd"]
    )
    v, src, _ = _fill(
        cols["tool_id"],
        cols["tool_id_source"],
        _arrow.if_else(found, pc.take(tools, at), pa.scalar(None, pa.string())),
        0,
    )
    cols["tool_id"], cols["tool_id_source"] = v, src
    # its time is the run's (the trace shows none of its own), with the run's source
    run_at = pc.index_in(cols["parent_task_id"], value_set=cols["task_id"])
    sub = pc.and_(found, pc.is_null(cols["created_at"]))
    cols["created_at"] = _arrow.if_else(
        sub, pc.take(cols["created_at"], run_at), cols["created_at"]
    )
    run_src = pc.take(_schema.source_codes(cols["created_at_source"]), run_at)
    cols["created_at_source"] = _schema.source_array(
        _arrow.if_else(
            pc.and_(sub, pc.is_valid(cols["created_at"])),
            run_src,
            _schema.source_codes(cols["created_at_source"]),
        )
    )
    return True


def resolve(
    table: pa.Table,
    record: pa.Table | None = None,
    tools: Mapping[str, tuple[str, str]] | None = None,
) -> pa.Table:
    """``table`` (schema TASKS) with what the service did not show taken from the client's
    record (``labels.RECORD`` columns, oldest row first) and the tool listing.

    Per fact: the value the row has (the service's, or an earlier join's) wins; else the
    record's (``record``); else, for ``operation``/``model``, the tool listing's entry of the
    row's tool id (``service``); else null (``unknown``). ``created_at`` from the record is
    the client's clock at acceptance (else at sending). Labels come from the task's own
    record row, else from its parent run's. Rows that gained a fact are priced again, and
    every row's ``cost_usd``/``cost_source`` follow: billed, else 0 if failed, else the
    estimate (the ledger's, else the record's), else null (unknown).
    """
    n = table.num_rows
    if n == 0 or ((record is None or record.num_rows == 0) and not tools):
        return table
    cols = _Columns(table)  # each column combined on first use; untouched ones pass through
    changed: Column = pa.repeat(
        pa.scalar(False), n
    )  # rows whose operation, model or license changed
    recost = False
    if record is not None and record.num_rows:
        changed, recost = _join_record(table, cols, record)
    # a task known only from a run's trace gets the run as parent, the step's tool id and
    # billed cost, and the run's time; then the listing names its operation and model
    if cols["operation"].null_count and _sub_tasks_from_traces(cols):
        recost = True
    if tools and (cols["operation"].null_count or cols["model"].null_count):
        changed = _join_listing(cols, tools, changed)
    # duration stays the service's (updated_at - created_at on its clock): a created_at from
    # the record is the client's clock, which need not agree with the service's
    if pc.any(changed).as_py():
        _reprice(cols, changed)
        recost = True
    if recost:
        cols["cost_usd"], cols["cost_source"] = _cost(
            cols["billed_usd"], cols["estimate_usd"], cols["status"]
        )
    return cols.table()


def _join_record(table: pa.Table, cols: _Columns, record: pa.Table) -> tuple[Column, bool]:
    """The record's facts, estimates and labels joined into ``cols``: the rows whose
    operation, model or license it filled, and whether it gave an estimate."""
    ids = _col(record, "task_id")
    own = pc.index_in(cols["task_id"], value_set=ids)  # the first (oldest) row of a task
    changed = _record_facts(table, cols, record, own)
    recost = False
    if table["estimate_usd"].null_count:
        rec_est = pc.cast(pc.take(_col(record, "estimate_usd"), own), _schema.MONEY)
        if rec_est.null_count < table.num_rows:
            cols["estimate_usd"] = _arrow.coalesce(cols["estimate_usd"], rec_est)
            recost = True
    _record_labels(table, cols, record, ids, own)
    return changed, recost


def _record_facts(table: pa.Table, cols: _Columns, record: pa.Table, own: Column) -> Column:
    """Each fact the service did not show, from the task's record row (``own``); the rows
    whose operation, model or license it filled."""
    changed = pa.repeat(pa.scalar(False), table.num_rows)

    def found(name: str) -> Column:
        return pc.take(_col(record, name), own)

    for fact in _schema.FACTS:
        if table[fact].null_count == 0:
            continue  # the service showed it on every row: nothing to fill (the default)
        if fact == "created_at":
            values = _arrow.coalesce(found("accepted_at"), found("sent_at"))
        elif fact == "license":  # the record says what was sent; none sent is royalty-free
            values = pc.cast(found("license"), pa.int8())
            values = _arrow.if_else(pc.is_valid(own), _arrow.coalesce(values, 1), values)
            values = pc.cast(_arrow.if_else(pc.equal(values, pa.scalar(0)), 1, values), pa.int8())
        else:
            values = found(fact)
        v, src, filled = _fill(cols[fact], cols[f"{fact}_source"], values, 1)
        cols[fact], cols[f"{fact}_source"] = v, src
        if fact in ("operation", "model", "license"):
            changed = pc.or_(changed, filled)
    return changed


def _record_labels(
    table: pa.Table, cols: _Columns, record: pa.Table, ids: Column, own: Column
) -> None:
    """Labels from the task's own record row, else (a sub-task) from its run's."""
    n = table.num_rows
    via = own
    if table["parent_task_id"].null_count < n:  # sub-tasks inherit their run's labels
        has_parent = pc.is_valid(cols["parent_task_id"])
        subs = pc.take(cols["parent_task_id"], pc.indices_nonzero(has_parent))
        run_row = pc.replace_with_mask(
            _arrow.nulls(n, own.type),
            has_parent,
            pc.cast(pc.index_in(subs, value_set=ids), own.type),
        )
        via = _arrow.coalesce(own, run_row)
    for name in _schema.LABEL_COLUMNS:
        cols[name] = _arrow.coalesce(cols[name], pc.take(_col(record, name), via))
    labelled = pc.or_(pc.is_valid(via), pc.equal(cols["labels_source"], pa.scalar(_schema.RECORD)))
    cols["labels_source"] = _schema.source_array(
        _arrow.if_else(_arrow.fill_null(labelled, pa.scalar(False)), 1, 2)
    )


def _join_listing(cols: _Columns, tools: Mapping[str, tuple[str, str]], changed: Column) -> Column:
    """``operation`` and ``model`` from the tool listing's entry of each row's tool id;
    ``changed`` with the rows they filled."""
    tool_ids = pa.array(list(tools), pa.string())
    at = pc.index_in(cols["tool_id"], value_set=tool_ids)
    listed = {
        "operation": pa.array([t[0] for t in tools.values()], pa.string()),
        "model": pa.array([t[1] for t in tools.values()], pa.string()),
    }
    for fact, values in listed.items():
        v, src, filled = _fill(cols[fact], cols[f"{fact}_source"], pc.take(values, at), 0)
        cols[fact], cols[f"{fact}_source"] = v, src
        changed = pc.or_(changed, filled)
    return changed


def _reprice(cols: _Columns, changed: Column) -> None:
    """The tier and list-price estimate of the ``changed`` rows again; a task now known not
    to be an Agent One run keeps no run metadata."""
    cols["tier"] = pc.take(_TIER_NAMES, cols["license"])
    rows = pc.indices_nonzero(changed)
    again = _estimates(
        *(pc.take(cols[c], rows) for c in ("operation", "model", "license", "metadata_json"))
    )
    cols["estimate_usd"] = pc.replace_with_mask(
        cols["estimate_usd"],
        changed,
        _arrow.coalesce(again, pc.take(cols["estimate_usd"], rows)),
    )
    known_other = _arrow.fill_null(
        pc.not_equal(cols["operation"], pa.scalar("agent")), pa.scalar(False)
    )
    cols["metadata_json"] = _arrow.if_else(
        known_other, pa.scalar(None, pa.string()), cols["metadata_json"]
    )


class _Columns(dict[str, Any]):
    """A table's columns by name: combined into one array on first access; ``table()``
    gives the table back with the untouched columns as they were (no copy)."""

    def __init__(self, table: pa.Table) -> None:
        super().__init__()
        self._table = table

    def __missing__(self, name: str) -> Column:
        value = _col(self._table, name)
        self[name] = value
        return value

    def table(self) -> pa.Table:
        arrays = [self[f.name] if f.name in self else self._table[f.name] for f in _schema.TASKS]
        return pa.Table.from_arrays(arrays, schema=_schema.TASKS)


def _chunks(source: object, size: int) -> Iterator[Sequence[Mapping[str, Any]]]:
    if isinstance(source, list | tuple):
        for start in range(0, len(source), size):
            chunk = source[start : start + size]
            yield chunk if isinstance(chunk[0], Mapping) else [as_dict(r) for r in chunk]
        return
    it = iter_tasks(source)
    while chunk := list(islice(it, size)):
        yield chunk


def tasks_table(
    source: object,
    *,
    chunk_size: int = CHUNK,
    record: object = AUTO,
    tools: Mapping[str, tuple[str, str]] | None | Auto = AUTO,
) -> pa.Table:
    """The tasks ledger as an Arrow table of schema ``_schema.TASKS``: the service first,
    the client's record second (:func:`resolve`).

    A client that offers ``generations.raw_pages()`` is read from the listing's page
    bytes (``_pages``: no Python dict per task), page by page. ``record``: the client's
    record to join (a ``RecordStore``, a record table, or None for none); by default the
    source's own (``client.record``). ``tools``: ``{tool_id: (operation, model)}``, or None;
    by default the source's tool listing (``GET /v1/tools``, cached a few minutes).
    """
    if chunk_size < 1:
        raise ValueError(f"chunk_size: must be at least 1, got {chunk_size}")
    rec = record_table(getattr(source, "record", None) if record is AUTO else record)
    listing = tool_lookup(source) if tools is AUTO else tools
    pages = raw_pages(source)
    if pages is not None:
        return tasks_table_from_pages(pages, record=rec, tools=listing)
    parts = [_build(chunk) for chunk in _chunks(source, chunk_size)]
    if not parts:
        return _schema.empty_table(_schema.TASKS)
    return resolve(pa.concat_tables(parts), rec, listing)


def _batch_table(batch: _pages.Batch) -> pa.Table:
    """One batch of pages as a tasks table: its Arrow rows, else its dicts one by one."""
    raw, meta, fallback = batch
    if fallback is not None:
        return _build(fallback)
    if raw is None or meta is None:
        raise AssertionError("a batch holds its rows or its dicts")  # _pages.Batch says so
    return assemble(raw, meta)


def tasks_table_from_pages(
    pages: Iterable[bytes],
    *,
    record: object = None,
    tools: Mapping[str, tuple[str, str]] | None = None,
) -> pa.Table:
    """The tasks table of listing pages, each the bytes of one ``GET /v1/generations``
    answer (``{"data": [task, ...], "next_cursor": ...}``), read a batch at a time, joined
    with ``record`` and ``tools`` as :func:`tasks_table` does."""
    parts = [_batch_table(b) for b in _pages.batches(pages, RAW_TASK, NAMES["operation"])]
    if not parts:
        return _schema.empty_table(_schema.TASKS)
    return resolve(pa.concat_tables(parts), record_table(record), tools)


def tasks_frame_from_pages(
    pages: Iterable[bytes],
    *,
    record: object = None,
    tools: Mapping[str, tuple[str, str]] | None = None,
) -> pd.DataFrame:
    """:func:`tasks_frame` of listing page bytes (see :func:`tasks_table_from_pages`)."""
    return _schema.to_frame(tasks_table_from_pages(pages, record=record, tools=tools))


def tasks_frame(
    source: object,
    *,
    chunk_size: int = CHUNK,
    record: object = AUTO,
    tools: Mapping[str, tuple[str, str]] | None | Auto = AUTO,
) -> pd.DataFrame:
    """One row per task (columns: ``docs/ledger/using.md``), every column ``pd.ArrowDtype``.

    ``source``: an iterable of task dicts (or objects with ``.raw``), or a
    client with ``generations.list()``; a client with ``generations.raw_pages()``
    (songlab's) is read from the page bytes, without a dict per task. What the
    service does not show is taken from ``record`` (default: the client's record) and
    the tool listing (``tools``), and each fact column's ``*_source`` says which.
    """
    return _schema.to_frame(tasks_table(source, chunk_size=chunk_size, record=record, tools=tools))
