"""Synthetic task snapshots and Agent One traces, in design.md's shapes.

For tests, benchmarks and docs: deterministic from a seed, priced from
songlab.pricing, so a synthetic ledger adds up exactly like a real one.

- :func:`synthetic_tasks`: task snapshots (dicts), as a listing gives them;
- :func:`synthetic_table`: the same workload straight as a tasks table
  (``_schema.TASKS``), built column by column with numpy and Arrow (no Python
  object per row): a million tasks in about a second;
- :func:`write_synthetic_dataset`: a ``LedgerStore`` directory of ``n`` tasks,
  written a chunk at a time (memory bounded by the chunk, not by ``n``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

import songlab.ledger._arrow as _arrow
import songlab.ledger._estimate as _estimate
import songlab.ledger._schema as _schema
import songlab.pricing as pricing
from songlab.ledger._arrow import Column, Field
from songlab.spec import LICENSE_NAMES

__all__ = [
    "CATALOG",
    "agent_trace",
    "synthetic_table",
    "synthetic_tasks",
    "write_synthetic_dataset",
]

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
                "index": len(steps),
                "kind": "tool_call",
                "tool": "generate_song",
                "tool_id": "tool_generate_song_v7",
                "operation": "generate_song",
                "model": "v7",
                "status": "completed",
                "cost_usd": str(pricing.price("generate_song", "v7")),
                "task_id": f"{run_id}-sub{k}",
                "file_ids": [f"{run_id}-file{k}"],
                "text": "generated a song",
            }
        )
    if failed_call:
        steps.append(
            {
                "index": len(steps),
                "kind": "tool_call",
                "tool": "web_search",
                "tool_id": "tool_web_search",
                "status": "failed",
                "cost_usd": "0",
                "task_id": f"{run_id}-search",
                "file_ids": [],
                "text": "search failed",
            }
        )
    steps.append({"index": len(steps), "kind": "verification", "text": "Checked both songs."})
    calls = sum(s["kind"] == "tool_call" for s in steps)
    usage = {"input_tokens": 500 + seed * 7919 % 4500, "output_tokens": 100 + seed * 104729 % 800}
    fee = pricing.estimate_agent(
        tier,
        sub_tool_calls=calls,
        input_tokens=usage["input_tokens"],
        output_tokens=usage["output_tokens"],
    )
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
            created_s = np.datetime_as_string(
                created[i : i + block], unit="us", timezone="UTC"
            ).tolist()
            updated_s = np.datetime_as_string(
                updated[i : i + block], unit="us", timezone="UTC"
            ).tolist()
        op, model, _ = CATALOG[k]
        status = status_names[st]
        task_id = f"task_{seed}_{i:08d}"
        rec: dict[str, Any] = {
            "task_id": task_id,
            "tool_id": tool_ids[k],
            "model": model,
            "operation": op,
            "license": lic,
            "status": status,
            "created_at": created_s[i % block],
            "updated_at": updated_s[i % block],
            "cost_usd": None,
            "output": {},
        }
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


# Labels of a busy account's tasks (synthetic_table(labels=True)): projects, tags, keys.
PROJECTS: tuple[tuple[str | None, float], ...] = (
    ("jingles", 0.3),
    ("podcast", 0.2),
    ("game-audio", 0.15),
    ("research", 0.1),
    ("ads-emea", 0.08),
    ("ads-us", 0.07),
    (None, 0.1),
)
TAGS: tuple[tuple[str | None, float], ...] = (
    ("q4", 0.3),
    ("launch,q4", 0.1),
    ("draft", 0.2),
    (None, 0.4),
)
KEYS: tuple[tuple[str | None, float], ...] = (
    ("key_0a1b2c3d4e5f", 0.5),
    ("key_1234567890ab", 0.3),
    ("key_fedcba987654", 0.15),
    (None, 0.05),
)
COMPACT_CHUNK = 1_000_000  # rows made at once by synthetic_table(compact=True)
_VARIANTS = 16  # Agent One traces per tier (usage differs); the run's id is spliced in
_RUN = "\x00RUN\x00"


def _pick(
    rng: np.random.Generator,
    items: tuple[tuple[str | None, float], ...],
    n: int,
    compact: bool = False,
) -> Column:
    w = np.array([x for _, x in items])
    idx = rng.choice(len(items), size=n, p=w / w.sum())
    values = [v for v, _ in items]
    if not compact:
        return pc.take(pa.array(values, pa.string()), pa.array(idx, pa.int64()))
    none = [i for i, v in enumerate(values) if v is None]
    mask = np.isin(idx, none) if none else None
    return pa.DictionaryArray.from_arrays(
        pa.array(idx.astype(np.int8), pa.int8(), mask=mask), pa.array(values, pa.string())
    )


def _taken(idx: Column, values: list[str]) -> Column:
    return pc.take(pa.array(values, pa.string()), idx)


def _dictionary(idx: Column, values: list[str]) -> Column:
    """``values[idx]`` as a dictionary column (int8 indices when they fit)."""
    index = pc.cast(idx, pa.int8()) if len(values) < 128 else pc.cast(idx, pa.int32())
    return pa.DictionaryArray.from_arrays(index, pa.array(values, pa.string()))


def _agent_templates() -> dict[str, list[tuple[list[str], Decimal, Decimal | None]]]:
    """Per tier: (JSON split where the run id goes, total cost, list-price estimate)."""

    out: dict[str, list[tuple[list[str], Decimal, Decimal | None]]] = {}
    for tier in sorted({m for op, m, _ in CATALOG if op == "agent"}):
        rows = []
        for v in range(_VARIANTS):
            trace = agent_trace(_RUN, tier=tier, seed=v)
            text = json.dumps(trace)
            rows.append(
                (
                    text.split(json.dumps(_RUN)[1:-1]),
                    Decimal(trace["total_cost_usd"]),
                    _estimate.estimate_agent_run(tier, text),
                )
            )
        out[tier] = rows
    return out


def synthetic_table(
    n: int,
    *,
    seed: int = 0,
    start: datetime = _EPOCH,
    days: int = 100,
    labels: bool = False,
    offset: int = 0,
    span_us: int | None = None,
    settled_before: datetime | None = None,
    compact: bool = False,
) -> pa.Table:
    """``n`` tasks as a tasks table (``_schema.TASKS``), newest first, over ``days`` days.

    The same workload as :func:`synthetic_tasks` (catalog, statuses, tiers, list
    prices; completed tasks billed, failed ones unbilled, queued and processing
    ones estimated, or of unknown cost for Agent One runs without a trace),
    made with numpy and Arrow column by column. ``labels`` fills project, tags
    and key_id as a busy account's would be. ``offset`` numbers the task ids
    (``write_synthetic_dataset`` makes a large ledger a chunk at a time).
    ``settled_before``: tasks created before it are all finished (queued and processing
    ones completed), as in a real account where only the last minutes are in flight.
    ``compact``: the strings that repeat (tool_id, operation, model, tier, status,
    failure_error, project, tags, key_id) as dictionary columns (``dictionary<int8,
    string>``: the same values, a byte a row instead of the text), made so directly;
    ``_schema.to_frame`` keeps them (``pd.ArrowDtype``, zero-copy) and the report reads
    them in place. The other columns are as ``_schema.TASKS`` says. Over
    ``COMPACT_CHUNK`` rows a compact table is made a slice of time at a time (on two
    threads: numpy and Arrow release the GIL), as ``write_synthetic_dataset`` does (the same
    workload; other random draws than one table of ``n`` rows), so what it holds while it is
    made stays small.
    """
    span = span_us if span_us is not None else days * 86400 * 10**6
    if compact and n > COMPACT_CHUNK:  # a slice of time at a time: small temporaries
        return _compact_chunks(n, seed, start, span, labels, offset, settled_before)
    rng = np.random.default_rng([seed, offset])
    draw = _draw(rng, n, start, span, settled_before)
    made = _columns(draw, n, seed, offset, compact)
    made.update(_money_columns(draw, made, n, compact))
    if labels:
        pick = [_pick(rng, values, n, compact) for values in (PROJECTS, TAGS, KEYS)]
    else:
        pick = [_arrow.nulls(n, pa.string()) for _ in range(3)]
    made.update(zip(("project", "tags", "key_id"), pick, strict=True))
    cols = [_column(made, f, n) for f in _schema.TASKS]
    if not compact:
        return pa.Table.from_arrays(cols, schema=_schema.TASKS)
    fields = [f.with_type(c.type) for f, c in zip(_schema.TASKS, cols, strict=True)]
    return pa.Table.from_arrays(cols, schema=pa.schema(fields))


def _compact_chunks(
    n: int,
    seed: int,
    start: datetime,
    span: int,
    labels: bool,
    offset: int,
    settled_before: datetime | None,
) -> pa.Table:
    """A compact table of ``n`` rows made a slice of time at a time, newest slice first."""
    from concurrent.futures import ThreadPoolExecutor

    chunks = -(-n // COMPACT_CHUNK)

    def chunk(c: int) -> pa.Table:  # chunk 0 is the newest slice
        size = min(COMPACT_CHUNK, n - c * COMPACT_CHUNK)
        lo, hi = span - (c + 1) * span // chunks, span - c * span // chunks
        return synthetic_table(
            size,
            seed=seed,
            start=start + timedelta(microseconds=lo),
            labels=labels,
            offset=offset + n - c * COMPACT_CHUNK - size,
            span_us=hi - lo,
            settled_before=settled_before,
            compact=True,
        )

    with ThreadPoolExecutor(max_workers=2) as pool:
        return pa.concat_tables(list(pool.map(chunk, range(chunks))))


def _draw(
    rng: np.random.Generator, n: int, start: datetime, span: int, settled: datetime | None
) -> dict[str, Any]:
    """The random draws of ``n`` tasks: kind, status, license, times."""
    weights = np.array([w for *_, w in CATALOG])
    kinds = rng.choice(len(CATALOG), size=n, p=weights / weights.sum())
    st_w = np.array([w for _, w in STATUSES])
    statuses = rng.choice(len(STATUSES), size=n, p=st_w / st_w.sum())
    lic = rng.choice(6, size=n, p=[0.05, 0.55, 0.2, 0.1, 0.06, 0.04]).astype(np.int8)
    lic = np.where(lic == 0, 1, lic).astype(np.int8)  # 0 (unset) is tier 1
    t0 = np.datetime64(start.replace(tzinfo=None), "us")
    offsets = np.sort(rng.integers(0, max(1, span), size=n))[::-1]  # newest first
    created = t0 + offsets.astype("timedelta64[us]")
    if settled is not None:
        cutoff = np.datetime64(settled.astimezone(UTC).replace(tzinfo=None), "us")
        statuses = np.where((created < cutoff) & (statuses >= 2), 0, statuses)
    runtimes = rng.integers(2_000_000, 90_000_000, size=n).astype("timedelta64[us]")
    return {
        "kinds": kinds,
        "statuses": statuses,
        "lic": lic,
        "created": created,
        "runtimes": runtimes,
    }


def _columns(draw: dict[str, Any], n: int, seed: int, offset: int, compact: bool) -> dict[str, Any]:
    """The tasks' ids, kinds, statuses, tiers and times as columns."""

    kinds, statuses, created = draw["kinds"], draw["statuses"], draw["created"]
    terminal = statuses < 2  # completed, failed
    ids = pc.utf8_lpad(pc.cast(pa.array(np.arange(offset, offset + n)), pa.string()), 8, "0")
    kinds_a = pa.array(kinds)
    pick = _dictionary if compact else _taken
    ts = _schema.TIMESTAMP
    runtimes = draw["runtimes"]
    ended = np.where(terminal, created + runtimes, created)
    return {
        "task_id": _arrow.join_strings(f"task_{seed}_", ids, ""),
        "tool_id": pick(kinds_a, [f"tool_{op}_{m}" for op, m, _ in CATALOG]),
        "operation": pick(kinds_a, [op for op, _, _ in CATALOG]),
        "model": pick(kinds_a, [m for _, m, _ in CATALOG]),
        "license": pa.array(draw["lic"], pa.int8()),
        "tier": pick(pa.array(draw["lic"]), ["royalty_free", *LICENSE_NAMES.values()]),
        "status": pick(pa.array(statuses), [s for s, _ in STATUSES]),
        "created_at": pa.array(created, pa.timestamp("us")).cast(ts),
        "updated_at": pa.array(ended, pa.timestamp("us")).cast(ts),
        "duration": pa.array(
            np.where(terminal, runtimes, np.timedelta64("NaT", "us")), _schema.DURATION
        ),
        "parent_task_id": _arrow.nulls(n, pa.string()),
    }


def _money_columns(
    draw: dict[str, Any], made: dict[str, Any], n: int, compact: bool
) -> dict[str, Any]:
    """Billed, estimated and counted cost (list prices; Agent One runs' from their traces),
    the cost's source, the failure, and the traces."""

    kinds, statuses = draw["kinds"], draw["statuses"]
    # list prices per (catalog entry, tier): one lookup per row
    price = [[_estimate.estimate(op, m, t) for t in range(6)] for op, m, _ in CATALOG]
    flat = pa.array([p for row in price for p in row], _schema.MONEY)
    est = pc.take(flat, pa.array(kinds.astype(np.int64) * 6 + draw["lic"]))
    completed, failed = statuses == 0, statuses == 1
    meta = _arrow.nulls(n, pa.string())
    billed = _arrow.if_else(pa.array(completed), est, pa.scalar(None, _schema.MONEY))
    is_agent = np.array([op == "agent" for op, _, _ in CATALOG])[kinds]
    agent_rows = np.flatnonzero(is_agent & completed)
    if len(agent_rows):
        meta, billed, est = _agent_runs(agent_rows, kinds, made["task_id"], meta, billed, est, n)
    cost, source = _schema.cost_of(billed, est, made["status"])  # the one rule of what counts
    failure = _arrow.if_else(pa.array(failed), "GenerationFailed", pa.scalar(None, pa.string()))
    if compact:
        failure = pa.DictionaryArray.from_arrays(
            pa.array(np.zeros(n, np.int8), pa.int8(), mask=~failed), pa.array(["GenerationFailed"])
        )
    return {
        "billed_usd": billed,
        "estimate_usd": est,
        "cost_usd": cost,
        "cost_source": source,
        "failure_error": failure,
        "metadata_json": meta,
    }


def _agent_runs(
    rows: Any, kinds: Any, task_id: Any, meta: Any, billed: Any, est: Any, n: int
) -> tuple[Any, Any, Any]:
    """The completed Agent One runs' traces (a template per tier and variant, the run's id
    spliced in), their billed totals and list-price estimates, put in place."""

    templates = _agent_templates()
    variant = (rows % _VARIANTS).astype(np.int64)
    names = sorted(templates)
    tier_idx = np.searchsorted(
        np.array(names), np.array([m for _, m, _ in CATALOG], dtype=object)[kinds[rows]]
    )
    pick = pa.array(tier_idx * _VARIANTS + variant)
    flat_t = [t for name in names for t in templates[name]]
    pieces = len(flat_t[0][0])
    run_ids = pc.take(task_id, pa.array(rows))
    parts = []
    for j in range(pieces):
        parts.append(pc.take(pa.array([t[0][j] for t in flat_t]), pick))
        if j < pieces - 1:
            parts.append(run_ids)
    texts = _arrow.join_strings(*parts, "")
    totals = pc.take(pa.array([t[1] for t in flat_t], _schema.MONEY), pick)
    ests = pc.take(pa.array([t[2] for t in flat_t], _schema.MONEY), pick)
    where = pa.array(rows)
    return (
        _scatter(meta, where, texts, n),
        _scatter(billed, where, totals, n),
        _scatter(est, where, ests, n),
    )


def _column(made: dict[str, Any], field: Field, n: int) -> Any:
    """The schema's column ``field`` from the columns made (a ``*_source`` column says where
    each fact came from: the service, as in a listing; labels: unknown if none)."""
    if field.name in made:
        col = made[field.name]
        if pa.types.is_dictionary(col.type) and pa.types.is_string(field.type):
            return col  # compact: kept as a dictionary of the same strings
        return col.cast(field.type)
    fact = field.name.removesuffix("_source")
    if field.name.endswith("_source"):
        values = made.get(fact) if fact != "labels" else made["project"]
        mark = "record" if fact == "labels" else "service"
        where = pc.is_valid(values) if values is not None else pa.repeat(pa.scalar(False), n)
        return _arrow.if_else(where, mark, "unknown").cast(field.type)
    return _arrow.nulls(n, field.type)


def _scatter(base: object, where: Column, values: Column, n: int) -> Column:
    """``base`` with ``values`` put at the rows ``where`` (vectorised)."""
    pos = np.full(n, -1, dtype=np.int64)
    pos[where.to_numpy()] = np.arange(len(where))
    taken = pc.take(values, pa.array(pos, pa.int64(), mask=pos < 0))  # null where nothing is put
    return _arrow.if_else(pa.array(pos >= 0), taken, base)


def write_synthetic_dataset(
    path: str | os.PathLike[str],
    n: int,
    *,
    seed: int = 0,
    days: int = 365,
    start: datetime = _EPOCH,
    labels: bool = True,
    chunk: int = 1_000_000,
    settled_before: datetime | None = None,
) -> Path:
    """A ``LedgerStore`` directory of ``n`` synthetic tasks over ``days`` days, newest first.

    Written a chunk at a time (each chunk a time slice, so a month's file gets
    row groups in order); memory stays within a few chunks whatever ``n`` is.
    """
    import pyarrow.parquet as pq

    from songlab.ledger import _parquet
    from songlab.ledger.store import PART

    root = Path(path)
    span = days * 86400 * 10**6
    chunks = max(1, -(-n // chunk))
    writers: dict[str, pq.ParquetWriter] = {}
    try:
        for c in range(chunks):  # chunk 0 is the newest slice of time
            size = min(chunk, n - c * chunk)
            lo = span - (c + 1) * span // chunks
            hi = span - c * span // chunks
            t = synthetic_table(
                size,
                seed=seed,
                labels=labels,
                offset=n - c * chunk - size,
                start=start + timedelta(microseconds=lo),
                span_us=hi - lo,
                settled_before=settled_before,
            )
            for month, part in _by_month(t):  # newest first: slices, no copy
                part = _parquet.to_parquet_table(part)
                if month not in writers:
                    target = root / f"month={month}" / PART
                    target.parent.mkdir(parents=True, exist_ok=True)
                    writers[month] = pq.ParquetWriter(target, part.schema, compression="snappy")
                writers[month].write_table(part, row_group_size=_parquet.ROW_GROUP_ROWS)
    finally:
        for w in writers.values():
            w.close()
    return root


def _by_month(t: pa.Table) -> Iterator[tuple[str, pa.Table]]:
    """(``YYYY-MM``, rows) of a table sorted newest first, as zero-copy slices."""
    us = t["created_at"].combine_chunks().cast(pa.int64()).to_numpy()
    if not len(us):
        return
    first = np.datetime64(int(us[-1]), "us").astype("datetime64[M]")
    last = np.datetime64(int(us[0]), "us").astype("datetime64[M]")
    months = np.arange(first, last + np.timedelta64(1, "M"))  # oldest first
    starts = months.astype("datetime64[us]").astype(np.int64)
    asc = us[::-1]  # ascending
    cuts = np.searchsorted(asc, starts, side="left").tolist() + [len(us)]
    for i in range(len(months) - 1, -1, -1):
        lo, hi = cuts[i], cuts[i + 1]
        if hi > lo:  # rows [lo, hi) of the ascending order: the table's tail end
            yield str(months[i]), t.slice(len(us) - hi, hi - lo)
