"""Tier comparison: the same tasks priced in all five license tiers, beside what they cost.

The set compared is every top-level task whose cost the service billed, or
that completed and songlab estimated at the list price where the service
shows no cost (its tier known), and that has a list price in every tier (Agent One runs, whose
fee is usage based, their sub-tool calls, failed tasks, tasks of unknown cost
or tier are left out; ``attrs["excluded_tasks"]`` counts them,
``attrs["estimated_tasks"]`` counts the compared tasks whose actual cost is an estimate).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

import songlab.ledger._estimate as _estimate
import songlab.ledger._schema as _schema
from songlab.ledger.spend import _keys, as_table, with_keys
from songlab.spec import LICENSE_NAMES

__all__ = ["TIER_COLUMNS", "tier_comparison", "tier_prices"]

TIER_COLUMNS: tuple[str, ...] = tuple(f"{name}_usd" for name in LICENSE_NAMES.values())


def _priced(t: pa.Table) -> tuple[pa.Table, int]:
    """Rows compared, plus one price column per tier; and how many rows were left out."""
    key = pc.binary_join_element_wise(t["operation"], t["model"], "\x1f", null_handling="replace")
    enc = (
        pc.dictionary_encode(key).combine_chunks()
        if isinstance(key, pa.ChunkedArray)
        else pc.dictionary_encode(key)
    )
    pairs = [k.split("\x1f") for k in enc.dictionary.to_pylist()]
    per_tier = {
        col: pc.take(
            pa.array(
                [_estimate.estimate(o or None, m or None, tier) for o, m in pairs], _schema.MONEY
            ),
            enc.indices,
        )
        for tier, col in zip(LICENSE_NAMES, TIER_COLUMNS, strict=True)
    }
    # billed, or completed and estimated (the service shows no cost): not still running
    done = pc.fill_null(pc.equal(t["status"], "completed"), False)
    costed = pc.or_(
        pc.equal(t["cost_source"], _schema.BILLED),
        pc.and_(pc.equal(t["cost_source"], _schema.ESTIMATE), done),
    )
    keep = pc.and_(
        pc.and_(costed, pc.is_null(t["parent_task_id"])),
        pc.and_(pc.is_valid(per_tier[TIER_COLUMNS[0]]), pc.is_valid(t["license"])),
    )
    keep = pc.fill_null(keep, False)
    out = t
    for col, arr in per_tier.items():
        out = out.append_column(col, arr)
    kept = out.filter(keep)
    return kept, t.num_rows - kept.num_rows


def tier_prices(tasks: Any) -> pd.DataFrame:
    """Per compared task: id, operation, model, license, tier, cost_usd and one price per tier."""
    kept, excluded = _priced(as_table(tasks))
    cols = ["task_id", "operation", "model", "license", "tier", "cost_usd", *TIER_COLUMNS]
    frame = _schema.to_frame(kept.select(cols))
    frame.attrs["excluded_tasks"] = excluded
    frame.attrs["estimated_tasks"] = _estimated(kept)
    return frame


def tier_comparison(tasks: Any, by: str | Sequence[str] = ()) -> pd.DataFrame:
    """One row per tier (per group of ``by``, if given).

    Columns: the keys, ``license``, ``tier``, ``tasks``, ``priced_usd`` (the
    tasks at that tier's prices), ``actual_usd`` (what they cost) and
    ``difference_usd`` = priced - actual. All money decimal128(38, 8).
    """
    keys = _keys(by)
    if "license" in keys or "tier" in keys:
        raise ValueError("by: license and tier are the comparison's own rows; group by others")
    kept, excluded = _priced(with_keys(as_table(tasks), keys))
    aggs = [("cost_usd", "sum"), ("task_id", "count")] + [(c, "sum") for c in TIER_COLUMNS]
    if keys:
        g = (
            kept.group_by(keys, use_threads=False)
            .aggregate(aggs)
            .sort_by([(k, "ascending") for k in keys])
        )
    else:
        g = pa.table({f"{c}_{f}": [_agg(kept[c], f)] for c, f in aggs})
    zero = pa.scalar(0, _schema.MONEY_SUM)
    parts = []
    for (lic, name), col in zip(LICENSE_NAMES.items(), TIER_COLUMNS, strict=True):
        actual = pc.fill_null(pc.cast(g["cost_usd_sum"], _schema.MONEY_SUM), zero)
        priced = pc.fill_null(pc.cast(g[f"{col}_sum"], _schema.MONEY_SUM), zero)
        n = g.num_rows
        arrays = [g[k] for k in keys] + [
            pa.repeat(pa.scalar(lic, pa.int8()), n),
            pa.repeat(pa.scalar(name), n),
            pc.cast(g["task_id_count"], pa.int64()),
            priced,
            actual,
            _difference(priced, actual),
        ]
        names = [*keys, *_schema.TIERS.names]
        parts.append(pa.table(arrays, names=names))
    out = pa.concat_tables(parts).sort_by([(k, "ascending") for k in [*keys, "license"]])
    frame = _schema.to_frame(out)
    frame.attrs["excluded_tasks"] = excluded
    frame.attrs["estimated_tasks"] = _estimated(kept)
    return frame


def _estimated(kept: pa.Table) -> int:
    return int(
        pc.sum(pc.cast(pc.equal(kept["cost_source"], _schema.ESTIMATE), pa.int64())).as_py() or 0
    )


def _agg(col: pa.ChunkedArray, func: str) -> Any:
    return pc.count(col).as_py() if func == "count" else pc.sum(col).as_py()


def _difference(a: pa.Array, b: pa.Array) -> pa.Array:
    """a - b for decimal(38, 8) sums (narrowed first so Arrow's result fits 38 digits)."""
    narrow = pa.decimal128(36, 8)
    return pc.cast(pc.subtract(pc.cast(a, narrow), pc.cast(b, narrow)), _schema.MONEY_SUM)
