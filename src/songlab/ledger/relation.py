"""The one relation every money figure of songlab is a query of, its measures and its cube.

**The relation** ``ledger`` (:data:`RELATION_SQL`) is the tasks table (a frame, an Arrow
table or a ``LedgerStore``'s Parquet dataset, read in place) with, per task, the dimensions
every figure groups by (``day``, ``tier`` with Agent One runs as their own ``agent run`` row,
``top_level``, ...) and one column per **measure** (:data:`MEASURES`): ``tasks`` is 1,
``billed_tasks`` is 1 when the service billed it, ``estimated_usd`` is the cost when it is a
list-price estimate, and so on. The rule of what counts is the tasks table's ``cost_source``
(``_schema.cost_of``, the one place): billed, else 0 for a failed task (``unbilled``), else
the list-price estimate of a completed task (``estimate``), else not yet spent (``pending``),
else ``unknown`` (null: never 0).

**The cube** (:data:`CUBE_SQL`) is one scan of the relation: per day, what a task is (the
``kind`` facet: operation, model, license, tier, tool, status, cost source) and whose it is
(the ``label`` facet: project, tags, key), each group's task count, cost and list-price
estimate (``GROUPING SETS``). Every measure is a function of a group's keys and those three
sums (a measure's ``cube`` form: ``billed_tasks`` is the count of the groups whose cost
source is ``billed``), so the view :data:`CUBE_VIEW_SQL` gives the cube the relation's
measure columns, and a sum of sums is the sum: the accessor (the relation) and the report
(the cube) give the same answer, Decimal for Decimal.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

import songlab.ledger._schema as _schema
from songlab.ledger.dates import Period
from songlab.ledger.dialects import DAY_SQL, DIALECT, date_sql
from songlab.spec import LICENSE_NAMES, LICENSE_NAMES_WITH_UNSET

__all__ = [
    "AGENT_TIER",
    "CUBE_ALL_SQL",
    "CUBE_COLUMNS",
    "CUBE_SQL",
    "CUBE_VIEW_SQL",
    "DERIVED",
    "KIND_DIMS",
    "LABEL_DIMS",
    "MEASURES",
    "MEASURE_NAMES",
    "MONEY_SQL",
    "Measure",
    "RELATION_SQL",
    "TIER_COLUMNS",
    "cube_sql",
    "day_filter",
    "group_keys",
    "relation_sql",
]

AGENT_TIER: Final[str] = "agent run"  # Agent One runs: usage-priced, no license tier
AGENT_ORDER: Final[int] = 9  # after the five tiers
TIER_COLUMNS: Final[tuple[str, ...]] = tuple(f"{name}_usd" for name in LICENSE_NAMES.values())
MONEY_SQL: Final[str] = "DECIMAL(38, 8)"
COUNT_SQL: Final[str] = "BIGINT"


@dataclass(frozen=True, slots=True)
class Measure:
    """One figure of a task: ``row`` is its value on one task of the relation (SQL), ``cube``
    its value on one group of the cube (from the group's keys and its ``n``, ``cost`` and
    ``est`` sums); every total of it is ``sum`` of that over any group."""

    name: str
    row: str
    cube: str
    money: bool
    doc: str

    @property
    def total(self) -> str:
        """SQL: the total over a group (0 when nothing adds to it), typed."""
        return f"CAST(coalesce(sum({self.name}), 0) AS {MONEY_SQL if self.money else COUNT_SQL})"


def _count_if(cond: str) -> str:
    return f"CASE WHEN {cond} THEN 1 ELSE 0 END"


def _source_is(source: str, value: str) -> str:
    return f"CASE WHEN cost_source = '{source}' THEN {value} END"


# The measures, in the order of every spend table's columns (``_schema.SPEND_VALUES``).
MEASURES: Final[tuple[Measure, ...]] = (
    Measure("tasks", "1", "n", False, "tasks in the group"),
    Measure(
        "cost_usd", "cost_usd", "cost", True, "what they cost: billed, else the estimate (known)"
    ),
    Measure(
        "billed_tasks",
        _count_if("cost_source = 'billed'"),
        _source_is("billed", "n"),
        False,
        "billed by the service",
    ),
    Measure(
        "billed_usd",
        "billed_usd",
        _source_is("billed", "cost"),  # cost_of: billed whenever the service shows a cost
        True,
        "what the service billed",
    ),
    Measure(
        "estimated_tasks",
        _count_if("cost_source = 'estimate'"),
        _source_is("estimate", "n"),
        False,
        "completed, no cost shown: the list-price estimate counts",
    ),
    Measure(
        "estimated_usd",
        _source_is("estimate", "cost_usd"),
        _source_is("estimate", "cost"),
        True,
        "the part of cost_usd that is an estimate",
    ),
    Measure(
        "unknown_tasks",
        _count_if("cost_source = 'unknown'"),
        _source_is("unknown", "n"),
        False,
        "of unknown cost: counted, never summed as 0",
    ),
    Measure(
        "pending_tasks",
        _count_if("cost_source = 'pending'"),
        _source_is("pending", "n"),
        False,
        "still queued or processing: nothing spent yet",
    ),
    Measure(
        "pending_usd",
        _source_is("pending", "estimate_usd"),
        _source_is("pending", "est"),
        True,
        "what the pending tasks will cost at list price (not in cost_usd)",
    ),
    Measure(
        "failed_tasks",
        _count_if("status = 'failed'"),
        "CASE WHEN status = 'failed' THEN n END",
        False,
        "failed: released, 0",
    ),
)
MEASURE_NAMES: Final[tuple[str, ...]] = tuple(m.name for m in MEASURES)
COST: Final[Measure] = MEASURES[1]

# A task's tier: its license's name (as ``tasks`` names it: 0 counts as royalty-free), Agent One
# runs their own. Made from ``license`` alone, so the cube groups by the license, not a text.
TIER_SQL: Final[str] = (
    f"CASE WHEN operation = 'agent' THEN '{AGENT_TIER}' "
    + " ".join(f"WHEN license = {n} THEN '{name}'" for n, name in LICENSE_NAMES_WITH_UNSET.items())
    + " END"
)

# The one relation (``{day}``: the UTC day of ``created_at`` in the engine's dialect,
# ``dialects.DAY_SQL``). ``{source}`` is the source as the backend registered it (``tasks``).
# The relation's columns that are not the tasks' own, as made from them (``{day}`` as below); the
# cube's dimensions are made the same way (:func:`cube_sql`).
_MADE: Final[dict[str, str]] = {
    "status": "CAST(status AS VARCHAR)",
    "day": "{day}",
    "cost_source": "CAST(cost_source AS VARCHAR)",
    "top_level": "parent_task_id IS NULL",
}
_RELATION: Final[str] = f"""
SELECT task_id, tool_id, operation, model, license, {TIER_SQL} AS tier,
       CASE WHEN operation = 'agent' THEN {AGENT_ORDER} ELSE license END AS tier_order,
       {_MADE["status"]} AS status, created_at, {_MADE["day"]} AS day,
       estimate_usd, {_MADE["cost_source"]} AS cost_source,
       parent_task_id, {_MADE["top_level"]} AS top_level,
       project, tags, key_id, metadata_json, seen_at,
       {", ".join(f"{m.row} AS {m.name}" for m in MEASURES if m.name != "cost_usd")},
       cost_usd
FROM {{source}}
"""


def relation_sql(dialect: str = DIALECT, source: str = "tasks") -> str:
    """The relation ``ledger`` for an engine of ``dialect`` (written in DuckDB's dialect), over
    the registered table ``source`` (``tasks``; or some of its rows, ``Ledger.between``)."""
    return _RELATION.format(day=DAY_SQL.get(dialect, "CAST(created_at AS DATE)"), source=source)


RELATION_SQL: Final[str] = relation_sql()  # DuckDB's

# The cube's two facets: what a task is (kind) and whose it is (label), per day. The kind
# facet's tier order is its tier's (Agent One runs after the five).
KIND_DIMS: Final[tuple[str, ...]] = (
    "day",
    "operation",
    "model",
    "license",
    "tool_id",
    "status",
    "cost_source",
    "top_level",
)
LABEL_DIMS: Final[tuple[str, ...]] = (
    "day",
    "project",
    "tags",
    "key_id",
    "status",
    "cost_source",
    "top_level",
)
_DIMS: Final[tuple[str, ...]] = tuple(dict.fromkeys((*KIND_DIMS, *LABEL_DIMS)))
# the kind facet's tier and tier order, made from its operation and license
_DERIVED_DIMS: Final[str] = (
    f"{TIER_SQL} AS tier, CASE WHEN operation = 'agent' THEN {AGENT_ORDER} ELSE license END "
    "AS tier_order"
)
_CUBE: Final[str] = f"""
SELECT CASE WHEN GROUPING(operation) = 0 THEN 'kind' ELSE 'label' END AS facet,
       {", ".join(_DIMS)},
       CAST(count(*) AS {COUNT_SQL}) AS n, CAST(sum(cost_usd) AS {MONEY_SQL}) AS cost,
       CAST(sum(estimate_usd) AS {MONEY_SQL}) AS est,
       max(created_at) AS newest_at, min(cost_usd) AS lowest_cost
FROM {{source}}
GROUP BY GROUPING SETS (({", ".join(KIND_DIMS)}), ({", ".join(LABEL_DIMS)}))
"""
# one scan: per group, its count, cost and list-price estimate; its newest task's time (the
# ledger's newest task, no task read: ``Ledger.newest``) and its lowest cost (none below zero:
# a running sum of cost only grows, so a day's sums say on which day it first reached an amount:
# ``daily.crossed``)
CUBE_SQL: Final[str] = _CUBE.format(source="ledger")
# the tasks' columns of the cube's dimensions (the others are made from them: ``_MADE``)
CUBE_COLUMNS: Final[tuple[str, ...]] = tuple(
    d for d in _DIMS if d not in _MADE or d in ("status", "cost_source")
)


def cube_sql(dialect: str = DIALECT, source: str = "tasks", coded: Sequence[str] = ()) -> str:
    """:data:`CUBE_SQL` straight from the registered tasks ``source``, not the relation over
    it: the same groups and sums, each dimension made as the relation makes it, except the
    columns ``coded``, grouped as they are (integer codes of strings, ``_arrow_codes``: the
    caller decodes the result)."""
    made = {**_MADE, "day": DAY_SQL.get(dialect, "CAST(created_at AS DATE)")}
    dims = [f"{d if d in coded else made.get(d, d)} AS {d}" for d in _DIMS]
    inputs = f"(SELECT {', '.join(dims)}, created_at, cost_usd, estimate_usd FROM {source})"
    return _CUBE.format(source=inputs)


# the cube with the relation's measure columns (and tier order), as a view over ``cube_sums``
CUBE_VIEW_SQL: Final[str] = f"""
SELECT facet, {", ".join(_DIMS)}, {_DERIVED_DIMS},
       {", ".join(f"{m.cube} AS {m.name}" for m in MEASURES)}, newest_at, lowest_cost
FROM cube_sums
"""

# The cube summed over its days (its measures, per facet and the other dimensions): a figure of
# all time (no day in its keys or its period) reads a few hundred rows, not one per day.
_UNDATED: Final[tuple[str, ...]] = tuple(d for d in _DIMS if d != "day")
CUBE_ALL_SQL: Final[str] = f"""
SELECT facet, {", ".join(_UNDATED)}, tier, tier_order,
       {", ".join(f"CAST(sum({m.name}) AS {MONEY_SQL if m.money else COUNT_SQL}) AS {m.name}" for m in MEASURES)}
FROM cube
GROUP BY facet, {", ".join(_UNDATED)}, tier, tier_order
"""

# Spend keys made from the relation's (or the cube's) columns.
DERIVED: Final[dict[str, str]] = {
    "week": "CAST(date_trunc('week', day) AS DATE)",
    "month": "strftime(day, '%Y-%m')",
}


def day_filter(p: Period | None) -> str:
    """The rows of ``p`` (by their UTC day); all time keeps the rows of unknown date."""
    if p is None or (p.start is None and p.end is None):
        return "TRUE"
    parts = ["day IS NOT NULL"]
    if p.start:
        parts.append(f"day >= {date_sql(p.start)}")
    if p.end:
        parts.append(f"day <= {date_sql(p.end)}")
    return " AND ".join(parts)


def group_keys(by: str | Sequence[str]) -> list[str]:
    """``by`` as a list of the spend tables' keys (``_schema.GROUP_KEYS``), or a
    ``ValueError`` naming what is not one."""
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
