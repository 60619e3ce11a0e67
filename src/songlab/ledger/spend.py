"""Spend: totals of a tasks frame grouped by any of operation, model, tier, day, ...

Sums are Arrow decimal sums (exact); counts are int64. A task of unknown cost
(``cost_source`` unknown: songlab did not make it and the service does not
describe it) adds nothing to the sums and is counted in ``unknown_tasks``. ``day`` and ``month``
are the UTC date and ``YYYY-MM`` of ``created_at``.

Only top-level tasks count: a task with a ``parent_task_id`` (an Agent One
sub-tool call) is already inside its run's ``cost_usd``, which the service
reports inclusive of the run's sub-tool calls, so counting it again would
bill it twice.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

import songlab.ledger._schema as _schema

__all__ = ["as_table", "spend", "spend_table", "top_level", "with_keys"]


def as_table(tasks: Any, *, keep_dictionary: bool = False) -> pa.Table:
    """A tasks frame or table as an Arrow table with the tasks schema (``keep_dictionary``:
    see ``_schema.to_table``; for readers that take dictionary columns, like DuckDB)."""
    if isinstance(tasks, pa.Table):
        return tasks
    if isinstance(tasks, pd.DataFrame):
        return _schema.to_table(tasks, _schema.TASKS, keep_dictionary=keep_dictionary)
    raise TypeError(f"tasks: expected a tasks DataFrame or Arrow table, got {type(tasks).__name__}")


def top_level(table: pa.Table) -> pa.Table:
    """The rows that count in totals: tasks without a ``parent_task_id``."""
    return table.filter(pc.is_null(table["parent_task_id"]))


def _keys(by: str | Sequence[str]) -> list[str]:
    keys = [by] if isinstance(by, str) else list(by)
    unknown = [k for k in keys if k not in _schema.GROUP_KEYS]
    if unknown:
        raise ValueError(
            f"by: unknown key(s) {', '.join(map(repr, unknown))}; "
            f"choose from {', '.join(_schema.GROUP_KEYS)}"
        )
    if len(set(keys)) != len(keys):
        raise ValueError(f"by: repeated key in {keys}")
    return keys


def with_keys(table: pa.Table, keys: Sequence[str]) -> pa.Table:
    """``table`` plus the derived key columns (``day``, ``month``) that ``keys`` asks for."""
    if "day" in keys and "day" not in table.column_names:
        table = table.append_column("day", pc.cast(table["created_at"], pa.date32()))
    if "week" in keys and "week" not in table.column_names:
        monday = pc.floor_temporal(table["created_at"], unit="week", week_starts_monday=True)
        table = table.append_column("week", pc.cast(monday, pa.date32()))
    if "month" in keys and "month" not in table.column_names:
        table = table.append_column("month", pc.strftime(table["created_at"], format="%Y-%m"))
    if "tag" in keys and "tag" not in table.column_names:
        table = explode_tags(table)
    return table


def explode_tags(table: pa.Table) -> pa.Table:
    """One row per (task, tag); an untagged task keeps one row with a null ``tag``.

    A task with two tags counts under both, so spend by tag does not add up to
    the total (the report says so).
    """
    lists = pc.split_pattern(pc.fill_null(table["tags"], ""), ",")
    flat = pc.list_flatten(lists)
    rows = pc.list_parent_indices(lists)
    out = table.take(rows)
    tag = pc.if_else(pc.equal(flat, ""), pa.scalar(None, pa.string()), flat)
    return out.append_column("tag", tag)


def spend_table(tasks: Any, by: str | Sequence[str] = ("operation",)) -> pa.Table:
    keys = _keys(by)
    t = with_keys(top_level(as_table(tasks)), keys)
    source = t["cost_source"]
    estimated = pc.equal(source, _schema.ESTIMATE)
    work = pa.table(
        {k: t[k] for k in keys}
        | {
            "_one": pa.repeat(pa.scalar(1, pa.int64()), t.num_rows),
            "_billed": pc.cast(pc.equal(source, _schema.BILLED), pa.int64()),
            "_estimated": pc.cast(estimated, pa.int64()),
            "_unknown": pc.cast(pc.equal(source, _schema.UNKNOWN), pa.int64()),
            "cost_usd": t["cost_usd"],
            "billed_usd": t["billed_usd"],
            "estimated_usd": pc.if_else(estimated, t["cost_usd"], pa.scalar(None, _schema.MONEY)),
        }
    )
    counts = ("_one", "_billed", "_estimated", "_unknown")
    money = ("cost_usd", "billed_usd", "estimated_usd")
    aggs = [(c, "sum") for c in (*counts, *money)]
    g = work.group_by(keys, use_threads=False).aggregate(aggs) if keys else _total(work, aggs)
    zero = pa.scalar(0, _schema.MONEY_SUM)

    def count(c: str) -> pa.Array:
        return pc.fill_null(pc.cast(g[f"{c}_sum"], pa.int64()), 0)

    # in SPEND_VALUES' order: tasks, billed_tasks, the sums, estimated_tasks, unknown_tasks
    cols = [g[k] for k in keys] + [count("_one"), count("_billed")]
    cols += [pc.fill_null(pc.cast(g[f"{c}_sum"], _schema.MONEY_SUM), zero) for c in money]
    cols += [count("_estimated"), count("_unknown")]
    fields = [pa.field(k, _schema.GROUP_KEYS[k]) for k in keys] + list(_schema.SPEND_VALUES)
    out = pa.Table.from_arrays(
        [pc.cast(c, f.type) for c, f in zip(cols, fields, strict=True)], schema=pa.schema(fields)
    )
    return out.sort_by([(k, "ascending") for k in keys]) if keys else out


def _total(work: pa.Table, aggs: list[tuple[str, str]]) -> pa.Table:
    return pa.table({f"{c}_{f}": [pc.sum(work[c]).as_py()] for c, f in aggs})


def spend(tasks: Any, by: str | Sequence[str] = ("operation",)) -> pd.DataFrame:
    """Totals by ``by`` (any of ``_schema.GROUP_KEYS``; ``()`` for one grand total).

    Columns: the keys, then ``tasks``, ``billed_tasks``, ``cost_usd``, ``billed_usd``,
    ``estimated_usd`` (decimal128(38, 8)), ``estimated_tasks``, ``unknown_tasks`` (int64:
    every table can say how many rows are estimates and how many of unknown cost, which
    ``cost_usd`` leaves out). Rows sorted by the keys.
    """
    return _schema.to_frame(spend_table(tasks, by))
