"""The ledger engine: every money figure of songlab is one query over one relation.

**The relation** ``ledger`` (:data:`RELATION_SQL`) is the tasks table (a frame, an Arrow
table or a ``LedgerStore``'s Hive-partitioned Parquet dataset, read in place) with, per
task, the dimensions every figure groups by (``day``, ``tier`` with Agent One runs as their
own ``agent run`` row, ``top_level``, ...) and one column per **measure**
(:data:`MEASURES`): ``tasks`` is 1, ``billed_tasks`` is 1 when the service billed it,
``estimated_usd`` is the cost when it is a list-price estimate, and so on. The rule of
what counts is the tasks table's ``cost_source`` (``tasks._cost``, the one place): billed,
else 0 for a failed task (``unbilled``), else the list-price estimate of a completed task
(``estimate``), else not yet spent (``pending``: queued or processing, its estimate in
``pending_usd``), else ``unknown`` (null: never 0).

**Every figure is** ``sum(measure)`` grouped by some dimensions, over the relation or over
its pre-aggregate, the *cube* (:meth:`Ledger.precompute`: one scan, ``GROUPING SETS`` of the
kind and label dimensions per day, the same measures summed). A sum of sums is the sum, so
the accessor (the relation) and the report (the cube) give the same answer, Decimal for
Decimal; :meth:`Ledger.spend` picks the cube when the keys are in it.

**Backends.** The queries are written once, in DuckDB's dialect, and run through a
:class:`Backend`: DuckDB here (``_duckdb``), embedded and the default. Another engine is a
small adapter (register a table or a dataset, run a query to Arrow, materialise a table,
write a CSV) plus its ``dialect``: the SQL is transpiled to it by sqlglot
(``docs/ledger.md`` says why sqlglot, and how the Spark backend plugs in).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal
from functools import lru_cache
from pathlib import Path
from typing import Any, Final, Protocol

import pandas as pd
import pyarrow as pa

import songlab.ledger._estimate as _estimate
import songlab.ledger._schema as _schema
from songlab.ledger._periods import (
    FREQS,
    Forecast,
    Period,
    budget_rows,
    month_forecast,
    parse_budgets,
    period_starts,
)
from songlab.spec import LICENSE_NAMES

__all__ = [
    "AGENT_TIER",
    "Backend",
    "DIALECT",
    "Ledger",
    "MEASURES",
    "Measure",
    "RELATION_SQL",
    "TIER_COLUMNS",
    "TRACE_PARSE",
    "as_of_for",
    "budget_status",
    "day_filter",
    "forecast",
    "in_period",
    "open_ledger",
    "rollup",
    "spend",
    "tier_comparison",
    "tier_prices",
    "transpile",
]

DIALECT: Final[str] = "duckdb"  # the dialect every query here is written in
AGENT_TIER: Final[str] = "agent run"  # Agent One runs: usage-priced, no license tier
_AGENT_ORDER: Final[int] = 9  # after the five tiers
TIER_COLUMNS: Final[tuple[str, ...]] = tuple(f"{name}_usd" for name in LICENSE_NAMES.values())
_MONEY: Final[str] = "DECIMAL(38, 8)"
_COUNT: Final[str] = "BIGINT"


@dataclass(frozen=True, slots=True)
class Measure:
    """One figure of a task: ``row`` is its value on one task of the relation (SQL); every
    total of it is ``sum`` of that over any group, of the relation or of the cube."""

    name: str
    row: str
    money: bool
    doc: str

    @property
    def total(self) -> str:
        """SQL: the total over a group (0 when nothing adds to it), typed."""
        return f"CAST(coalesce(sum({self.name}), 0) AS {_MONEY if self.money else _COUNT})"


def _count_if(cond: str) -> str:
    return f"CASE WHEN {cond} THEN 1 ELSE 0 END"


# The measures, in the order of every spend table's columns (``_schema.SPEND_VALUES``).
MEASURES: Final[tuple[Measure, ...]] = (
    Measure("tasks", "1", False, "tasks in the group"),
    Measure("cost_usd", "cost_usd", True, "what they cost: billed, else the estimate (known)"),
    Measure("billed_tasks", _count_if("cost_source = 'billed'"), False, "billed by the service"),
    Measure("billed_usd", "billed_usd", True, "what the service billed"),
    Measure(
        "estimated_tasks",
        _count_if("cost_source = 'estimate'"),
        False,
        "completed, no cost shown: the list-price estimate counts",
    ),
    Measure(
        "estimated_usd",
        "CASE WHEN cost_source = 'estimate' THEN cost_usd END",
        True,
        "the part of cost_usd that is an estimate",
    ),
    Measure(
        "unknown_tasks",
        _count_if("cost_source = 'unknown'"),
        False,
        "of unknown cost: counted, never summed as 0",
    ),
    Measure(
        "pending_tasks",
        _count_if("cost_source = 'pending'"),
        False,
        "still queued or processing: nothing spent yet",
    ),
    Measure(
        "pending_usd",
        "CASE WHEN cost_source = 'pending' THEN estimate_usd END",
        True,
        "what the pending tasks will cost at list price (not in cost_usd)",
    ),
    Measure("failed_tasks", _count_if("status = 'failed'"), False, "failed: released, 0"),
)
_COST: Final[Measure] = next(m for m in MEASURES if m.name == "cost_usd")
_MEASURE_NAMES: Final[tuple[str, ...]] = tuple(m.name for m in MEASURES)

# The one relation. ``tasks`` is the source as the backend registered it.
RELATION_SQL: Final[str] = f"""
SELECT task_id, tool_id, operation, model, license,
       CASE WHEN operation = 'agent' THEN '{AGENT_TIER}' ELSE CAST(tier AS VARCHAR) END AS tier,
       CASE WHEN operation = 'agent' THEN {_AGENT_ORDER} ELSE license END AS tier_order,
       CAST(status AS VARCHAR) AS status, created_at, CAST(created_at AS DATE) AS day,
       estimate_usd, CAST(cost_source AS VARCHAR) AS cost_source,
       parent_task_id, parent_task_id IS NULL AS top_level,
       project, tags, key_id, metadata_json, seen_at,
       {", ".join(f"{m.row} AS {m.name}" for m in MEASURES if m.name not in ("cost_usd",))},
       cost_usd
FROM tasks
"""

# The cube's two facets: what a task is (kind) and whose it is (label), per day.
KIND_DIMS: Final[tuple[str, ...]] = (
    "day",
    "operation",
    "model",
    "license",
    "tier",
    "tier_order",
    "status",
    "cost_source",
    "top_level",
)
LABEL_DIMS: Final[tuple[str, ...]] = (
    "day",
    "project",
    "tags",
    "key_id",
    "cost_source",
    "top_level",
)
CUBE_SQL: Final[str] = f"""
SELECT CASE WHEN GROUPING(operation) = 0 THEN 'kind' ELSE 'label' END AS facet,
       {", ".join(dict.fromkeys((*KIND_DIMS, *LABEL_DIMS)))},
       {", ".join(f"{m.total} AS {m.name}" for m in MEASURES)},
       min(created_at) AS first_at, max(created_at) AS last_at
FROM ledger
GROUP BY GROUPING SETS (({", ".join(KIND_DIMS)}), ({", ".join(LABEL_DIMS)}))
"""

# An Agent One trace (``output.metadata_json``) parsed as a struct, and the rows whose text is
# JSON, in each dialect: the one thing sqlglot cannot carry over (a JSON schema is written in
# each engine's own type language). A backend of another dialect adds its entry here.
_TRACE_FIELDS: Final[tuple[tuple[str, str], ...]] = (
    ("index", "INTEGER"),
    ("kind", "VARCHAR"),
    ("tool", "VARCHAR"),
    ("tool_id", "VARCHAR"),
    ("status", "VARCHAR"),
    ("cost_usd", "VARCHAR"),
    ("task_id", "VARCHAR"),
    ("text", "VARCHAR"),
)
TRACE_PARSE: Final[dict[str, tuple[str, str]]] = {
    "duckdb": (
        'from_json(metadata_json, \'{"steps": [{'
        + ", ".join(f'"{n}": "{t}"' for n, t in _TRACE_FIELDS)
        + '}], "agent_fee_usd": "VARCHAR", "stopped_by": "VARCHAR"}\')',
        "json_valid(metadata_json)",
    ),
    "spark": (  # PERMISSIVE from_json: text that is not JSON gives null, which explodes to nothing
        "from_json(metadata_json, 'steps ARRAY<STRUCT<"
        + ", ".join(f"`{n}`: {'INT' if t == 'INTEGER' else 'STRING'}" for n, t in _TRACE_FIELDS)
        + ">>, agent_fee_usd STRING, stopped_by STRING')",
        "TRUE",
    ),
}

# Spend keys: how each is made from the relation's (or the cube's) columns.
_DERIVED: Final[dict[str, str]] = {
    "week": "CAST(date_trunc('week', day) AS DATE)",
    "month": "strftime(day, '%Y-%m')",
}
_LABEL_KEYS: Final[frozenset[str]] = frozenset({"project", "tags", "key_id", "tag"})
_KIND_KEYS: Final[frozenset[str]] = frozenset(KIND_DIMS)


# ------------------------------------------------------------------------------ backends


class Backend(Protocol):
    """What the engine needs of a SQL engine: a small adapter (``_duckdb.DuckDB``).

    ``dialect``: sqlglot's name for its SQL (the queries are transpiled to it);
    ``register``: an Arrow table as a view; ``register_dataset``: a ``LedgerStore``'s
    month-partitioned Parquet files (Hive ``month=YYYY-MM``) as a view, read in place;
    ``materialize``: a query's result kept as a table; ``arrow``: a query's rows;
    ``write_csv``: a query's rows as CSV with a header, in the source's order.
    """

    dialect: str

    def register(self, name: str, table: pa.Table) -> None: ...

    def register_dataset(self, name: str, root: Path, files: Sequence[Path]) -> None: ...

    def execute(self, sql: str) -> None: ...

    def materialize(self, name: str, sql: str) -> None: ...

    def arrow(self, sql: str) -> pa.Table: ...

    def write_csv(self, sql: str, path: Path) -> None: ...

    def close(self) -> None: ...


@lru_cache(maxsize=512)
def transpile(sql: str, dialect: str) -> str:
    """``sql`` (DuckDB's dialect) in ``dialect``'s, by sqlglot (unchanged for DuckDB)."""
    if dialect == DIALECT:
        return sql
    import sqlglot

    return ";\n".join(sqlglot.transpile(sql, read=DIALECT, write=dialect, pretty=False))


def _is_store(source: Any) -> bool:
    return hasattr(source, "files") and hasattr(source, "path") and hasattr(source, "record_table")


def _backend(name: str | Backend) -> Backend:
    if not isinstance(name, str):
        return name
    if name == "duckdb":
        import songlab.ledger._duckdb as _duckdb

        return _duckdb.DuckDB()
    if name == "spark":  # a local session; a given one or a cluster: spark.Spark(...)
        from songlab.ledger.spark import Spark

        return Spark()
    raise ValueError(f"engine: 'duckdb', 'spark' or a Backend object, got {name!r}")


# ------------------------------------------------------------------------------- ledger


def _date_sql(d: date) -> str:
    return f"DATE '{d.isoformat()}'"


def _ts_sql(t: datetime) -> str:
    return f"TIMESTAMPTZ '{t.astimezone(UTC).strftime('%Y-%m-%d %H:%M:%S.%f')}+00:00'"


def day_filter(p: Period | None) -> str:
    """The rows of ``p`` (by their UTC day); all time keeps the rows of unknown date."""
    if p is None or (p.start is None and p.end is None):
        return "TRUE"
    parts = ["day IS NOT NULL"]
    if p.start:
        parts.append(f"day >= {_date_sql(p.start)}")
    if p.end:
        parts.append(f"day <= {_date_sql(p.end)}")
    return " AND ".join(parts)


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


class Ledger:
    """One source's relation ``ledger`` on one backend; every figure is a method.

    Made by :func:`open_ledger` (a context manager that closes the backend).
    """

    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self._cube = False
        self._prices: frozenset[tuple[str | None, str | None]] = frozenset()

    # -- plumbing -------------------------------------------------------------------------

    def sql(self, text: str) -> str:
        return transpile(text, self.backend.dialect)

    def arrow(self, text: str) -> pa.Table:
        return self.backend.arrow(self.sql(text))

    def frame(self, text: str) -> pd.DataFrame:
        return _schema.to_frame(self.arrow(text))

    def one(self, text: str) -> tuple[Any, ...]:
        rows = self.arrow(text).to_pylist()
        return tuple(rows[0].values()) if rows else ()

    def _define(self) -> None:
        self.backend.execute(self.sql(f"CREATE OR REPLACE TEMP VIEW ledger AS {RELATION_SQL}"))

    def precompute(self) -> None:
        """Make the cube (one scan of the relation): grouped spend, periods and the tier
        comparison then read it instead of the tasks."""
        if not self._cube:
            self.backend.materialize("cube", self.sql(CUBE_SQL))
            self._cube = True

    # -- where a figure reads from --------------------------------------------------------

    def _source(self, keys: Sequence[str]) -> tuple[str, dict[str, str]]:
        """(FROM clause, key -> SQL expression) for grouping by ``keys``: the cube's facet
        that has them all, else the relation; ``tag`` is one row per tag of ``tags``."""
        needs = {"tags" if k == "tag" else "day" if k in _DERIVED else k for k in keys}
        needs |= {"day", "top_level"}
        exprs = {k: _DERIVED.get(k, k) for k in keys}
        if self._cube and needs <= set(LABEL_DIMS):
            src = "(SELECT * FROM cube WHERE facet = 'label')"
        elif self._cube and needs <= _KIND_KEYS:
            src = "(SELECT * FROM cube WHERE facet = 'kind')"
        else:
            src = "ledger"
        if "tag" in keys:
            src = (
                f"{src} AS s CROSS JOIN UNNEST(string_split(coalesce(s.tags, ''), ',')) AS x(tag_)"
            )
            exprs["tag"] = "NULLIF(tag_, '')"
        return src, exprs

    # -- figures ----------------------------------------------------------------------------

    def spend(
        self,
        by: str | Sequence[str] = ("operation",),
        *,
        p: Period | None = None,
        order: str | None = None,
    ) -> pd.DataFrame:
        """The measures (``_schema.SPEND_VALUES``) of the top-level tasks of ``p`` per group
        of ``by`` (any of ``_schema.GROUP_KEYS``; ``()``: one row of totals), sorted by the
        keys (tiers in tier order) unless ``order`` (SQL) says otherwise."""
        keys = _keys(by)
        src, exprs = self._source(keys)
        select = [f"{exprs[k]} AS {k}" for k in keys]
        totals = [m.total + f" AS {m.name}" for m in MEASURES]
        sql = f"SELECT {', '.join([*select, *totals])} FROM {src} WHERE top_level AND "
        sql += day_filter(p)
        if keys:
            sql += f" GROUP BY {', '.join(exprs[k] for k in keys)}"
            if order is None:
                order = ", ".join(
                    "min(tier_order) NULLS LAST, tier NULLS LAST"
                    if k == "tier"
                    else f"{exprs[k]} NULLS LAST"
                    for k in keys
                )
            sql += f" ORDER BY {order}"
        out = self.arrow(sql)
        fields = [pa.field(k, _schema.GROUP_KEYS[k]) for k in keys] + list(_schema.SPEND_VALUES)
        return _schema.to_frame(out.cast(pa.schema(fields)))

    def totals(self, *, p: Period | None = None, where: str = "TRUE") -> dict[str, Any]:
        """The measures of the top-level tasks of ``p`` (and ``where``), by name."""
        src = "(SELECT * FROM cube WHERE facet = 'kind')" if self._cube else "ledger"
        row = self.one(
            f"SELECT {', '.join(m.total for m in MEASURES)} FROM {src} "
            f"WHERE top_level AND {day_filter(p)} AND {where}"
        )
        return dict(zip(_MEASURE_NAMES, row, strict=True))

    def sub_tasks(self, *, p: Period | None = None) -> int:
        """The tasks of Agent One runs (and workflows) counted inside their run."""
        src = "(SELECT * FROM cube WHERE facet = 'kind')" if self._cube else "ledger"
        (n,) = self.one(
            f"SELECT CAST(coalesce(sum(tasks), 0) AS BIGINT) FROM {src} "
            f"WHERE NOT top_level AND {day_filter(p)}"
        )
        return int(n)

    def newest(self) -> datetime | None:
        """The newest task's ``created_at`` (None: no dated task)."""
        sql = (
            "SELECT max(last_at) FROM cube" if self._cube else "SELECT max(created_at) FROM ledger"
        )
        (value,) = self.one(sql)
        if value is None:
            return None
        at: datetime = value
        return at.astimezone(UTC) if at.tzinfo else at.replace(tzinfo=UTC)

    def as_of(self, now: datetime | None = None) -> datetime:
        """The report's "now": the later of the wall clock and the newest task (a sandbox
        whose clock was moved ahead has tasks in the future)."""
        now = (now or datetime.now(UTC)).astimezone(UTC)
        newest = self.newest()
        return max(now, newest) if newest is not None else now

    # -- the tier comparison -------------------------------------------------------------

    def _register_prices(self) -> None:
        """``prices``: the list price in every tier of each (operation, model) present that
        has one in every tier; ``tiers``: the five tiers."""
        src = "(SELECT * FROM cube WHERE facet = 'kind')" if self._cube else "ledger"
        pairs = frozenset(
            (r["operation"], r["model"])
            for r in self.arrow(f"SELECT DISTINCT operation, model FROM {src}").to_pylist()
        )
        if pairs == self._prices and pairs:
            return
        rows = []
        for op, model in sorted(pairs, key=str):
            prices = [_estimate.estimate(op, model, t) for t in LICENSE_NAMES]
            if all(x is not None for x in prices):
                rows.append(
                    {"operation": op, "model": model}
                    | {f"p{t}": x for t, x in zip(LICENSE_NAMES, prices, strict=True)}
                )
        schema = pa.schema(
            [("operation", pa.string()), ("model", pa.string())]
            + [(f"p{t}", _schema.MONEY) for t in LICENSE_NAMES]
        )
        self.backend.register("prices", pa.Table.from_pylist(rows, schema=schema))
        tiers = pa.table(
            {
                "t_license": pa.array(list(LICENSE_NAMES), pa.int8()),
                "t_tier": pa.array(list(LICENSE_NAMES.values()), pa.string()),
            }
        )
        self.backend.register("tiers", tiers)
        self._prices = pairs

    def _compared(self, keys: Sequence[str], p: Period | None) -> str:
        """SQL: the top-level tasks of ``p`` with their five list prices and ``compared``:
        they cost something known (billed, or a completed task's estimate), their tier is
        known and they have a list price in every tier (Agent One runs do not)."""
        self._register_prices()
        src, exprs = self._source([*keys, "operation", "model", "license", "cost_source"])
        keyed = "".join(f"{exprs[k]} AS {k}, " for k in keys)
        outer = "".join(f"c.{k} AS {k}, " for k in keys)
        prices = ", ".join(f"pr.p{t} AS p{t}" for t in LICENSE_NAMES)
        return (
            f"SELECT {outer}c.tasks AS tasks, c.cost_usd AS cost_usd, "
            f"c.estimated_tasks AS estimated_tasks, {prices}, "
            "(pr.operation IS NOT NULL AND c.cost_source IN ('billed', 'estimate') "
            "AND c.license IS NOT NULL) AS compared "
            f"FROM (SELECT {keyed}operation, model, license, cost_source, tasks, cost_usd, "
            f"estimated_tasks FROM {src} WHERE top_level AND {day_filter(p)}) AS c "
            "LEFT JOIN prices AS pr ON c.operation = pr.operation AND c.model = pr.model"
        )

    def tier_comparison(
        self, by: str | Sequence[str] = (), *, p: Period | None = None
    ) -> pd.DataFrame:
        """One row per tier (per group of ``by``): the compared tasks (see ``_compared``)
        priced in it (``priced_usd``), what they cost (``actual_usd``) and the difference.
        ``attrs``: ``excluded_tasks`` (top-level tasks not compared), ``estimated_tasks``
        (compared tasks whose actual cost is an estimate)."""
        keys = _keys(by)
        if "license" in keys or "tier" in keys:
            raise ValueError("by: license and tier are the comparison's own rows; group by others")
        compared = self._compared(keys, p)
        price = (
            "CASE t_license " + " ".join(f"WHEN {t} THEN c.p{t}" for t in LICENSE_NAMES) + " END"
        )
        keyed = ", ".join(f"c.{k} AS {k}" for k in keys)
        join = "LEFT JOIN" if not keys else "JOIN"
        sql = (
            f"SELECT {keyed + ', ' if keyed else ''}CAST(t_license AS TINYINT) AS license, "
            "t_tier AS tier, "
            "CAST(coalesce(sum(c.tasks), 0) AS BIGINT) AS tasks, "
            f"CAST(coalesce(sum(c.tasks * {price}), 0) AS {_MONEY}) AS priced_usd, "
            f"CAST(coalesce(sum(c.cost_usd), 0) AS {_MONEY}) AS actual_usd, "
            f"CAST(coalesce(sum(c.tasks * {price}), 0) - coalesce(sum(c.cost_usd), 0) "
            f"AS {_MONEY}) AS difference_usd "
            f"FROM tiers {join} (SELECT * FROM ({compared}) AS q WHERE compared) AS c ON 1 = 1 "
            f"GROUP BY {', '.join([*(f'c.{k}' for k in keys), 't_license', 't_tier'])} "
            f"ORDER BY {', '.join([*(f'c.{k} NULLS LAST' for k in keys), 't_license'])}"
        )
        out = self.frame(sql)
        (total, n, est) = self.one(
            "SELECT CAST(coalesce(sum(tasks), 0) AS BIGINT), "
            "CAST(coalesce(sum(CASE WHEN compared THEN tasks ELSE 0 END), 0) AS BIGINT), "
            "CAST(coalesce(sum(CASE WHEN compared THEN estimated_tasks ELSE 0 END), 0) AS BIGINT) "
            f"FROM ({compared}) AS q"
        )
        out.attrs["excluded_tasks"] = int(total) - int(n)
        out.attrs["estimated_tasks"] = int(est)
        return out

    def tier_prices(self, *, p: Period | None = None) -> pd.DataFrame:
        """Per compared task: id, operation, model, license, tier, cost_usd and its price in
        every tier (``TIER_COLUMNS``)."""
        self._register_prices()
        prices = ", ".join(
            f"CAST(pr.p{t} AS DECIMAL(18, 8)) AS {col}"
            for t, col in zip(LICENSE_NAMES, TIER_COLUMNS, strict=True)
        )
        where = (
            f"l.top_level AND {day_filter(p).replace('day', 'l.day')} "
            "AND l.cost_source IN ('billed', 'estimate') AND l.license IS NOT NULL"
        )
        sql = (
            "SELECT l.task_id AS task_id, l.operation AS operation, l.model AS model, "
            "l.license AS license, l.tier AS tier, l.cost_usd AS cost_usd, "
            f"{prices} FROM ledger AS l JOIN prices AS pr ON l.operation = pr.operation "
            f"AND l.model = pr.model WHERE {where}"
        )
        out = self.frame(sql)
        counts = self.tier_comparison(p=p)
        out.attrs.update(counts.attrs)
        return out

    # -- over time ----------------------------------------------------------------------

    def rollup(
        self, freq: str = "day", *, by: str | None = None, p: Period | None = None
    ) -> pd.DataFrame:
        """Spend per ``freq`` (day, week starting Monday, month) of ``p``, optionally per
        ``by``: every period of the range present (0 where nothing was spent, per ``by``
        value too), then one row of unknown date (``period`` null) if any task has none
        and ``p`` is all time. Columns: ``period`` (its first day), ``by``, the measures,
        ``cumulative_usd`` (running total of ``cost_usd``, per ``by`` value)."""
        if freq not in FREQS:
            raise ValueError(f"freq: one of {', '.join(FREQS)}, got {freq!r}")
        key = {"day": "day", "week": "week", "month": "month"}[freq]
        g = self.spend([key, *([by] if by else [])], p=p)
        if freq == "month":
            g[key] = pd.array(
                [
                    None if m is None or pd.isna(m) else date.fromisoformat(f"{m}-01")
                    for m in g[key]
                ],
                dtype=pd.ArrowDtype(pa.date32()),
            )
        dated = g[g[key].notna()]
        lo: date | None
        hi: date | None
        if p is not None and p.start and p.end:
            lo, hi = p.start, p.end
        elif len(dated):
            lo = (p.start if p is not None and p.start else None) or min(dated[key].tolist())
            hi = (p.end if p is not None and p.end else None) or max(dated[key].tolist())
        else:
            lo = hi = None
        starts = period_starts(lo, hi, freq) if lo and hi else []
        groups: list[Any] = [None]
        if by:
            groups = sorted(g[by].dropna().unique().tolist())
            if g[by].isna().any():
                groups.append(None)
        index = pd.MultiIndex.from_product([starts, groups], names=["period", "_by"])
        g2 = g.assign(_by=g[by] if by else None).rename(columns={key: "period"})
        values = list(_MEASURE_NAMES)
        merged = (
            g2[g2["period"].notna()]
            .set_index(["period", "_by"])[values]
            .reindex(index)
            .reset_index()
        )
        undated = g2[g2["period"].isna()]
        if len(undated):
            merged = pd.concat([merged, undated[merged.columns]], ignore_index=True)
        for m in MEASURES:
            if m.money:
                merged[m.name] = pd.array(
                    [Decimal(0) if v is None or pd.isna(v) else v for v in merged[m.name].tolist()],
                    dtype=_schema.MoneyDtype(_schema.MONEY_SUM),
                )
            else:
                merged[m.name] = merged[m.name].fillna(0).astype(pd.ArrowDtype(pa.int64()))
        merged["period"] = merged["period"].astype(pd.ArrowDtype(pa.date32()))
        merged = merged.rename(columns={"_by": by}) if by else merged.drop(columns="_by")
        running: dict[Any, Decimal] = {}
        cum = []
        for k, v in zip(
            merged[by].tolist() if by else [None] * len(merged),
            merged["cost_usd"].tolist(),
            strict=True,
        ):
            running[k] = running.get(k, Decimal(0)) + v
            cum.append(running[k])
        merged["cumulative_usd"] = pd.array(cum, dtype=_schema.MoneyDtype(_schema.MONEY_SUM))
        return merged

    # -- forecast and budgets ------------------------------------------------------------

    def window(self, as_of: datetime) -> dict[str | None, tuple[Decimal, Decimal]]:
        """Per project (None: no project): (month-to-date, the 7 days to ``as_of``) spend."""
        as_of = as_of.astimezone(UTC)
        month_start = datetime.combine(as_of.date().replace(day=1), time(), UTC)
        week_ago = as_of - timedelta(days=7)
        since = min(month_start, week_ago)
        rows = self.arrow(
            f"SELECT project, "
            f"CAST(coalesce(sum(CASE WHEN created_at >= {_ts_sql(month_start)} THEN cost_usd END),"
            f" 0) AS {_MONEY}) AS mtd, "
            f"CAST(coalesce(sum(CASE WHEN created_at >= {_ts_sql(week_ago)} THEN cost_usd END),"
            f" 0) AS {_MONEY}) AS last7 "
            f"FROM ledger WHERE top_level AND created_at >= {_ts_sql(since)} "
            f"AND created_at <= {_ts_sql(as_of)} GROUP BY project"
        ).to_pylist()
        return {r["project"]: (r["mtd"], r["last7"]) for r in rows}

    def daily_spend(self, as_of: datetime, *, project: str | None = None) -> dict[date, Decimal]:
        """Spend per UTC day up to ``as_of`` (top-level, dated tasks; the ``cost_usd``
        measure's rule), of one project when ``project`` is given: the history a forecast
        learns from, the guardrails' daily series of the same scope."""
        quoted = None if project is None else "'" + project.replace("'", "''") + "'"
        where = "" if quoted is None else f" AND project = {quoted}"
        rows = self.arrow(
            f"SELECT day, {_COST.total} AS cost_usd FROM ledger "
            f"WHERE top_level AND day IS NOT NULL AND created_at <= {_ts_sql(as_of)}{where} "
            "GROUP BY day"
        ).to_pylist()
        return {
            r["day"] if isinstance(r["day"], date) else pd.Timestamp(r["day"]).date(): r["cost_usd"]
            for r in rows
        }

    def forecast(self, as_of: datetime, *, project: str | None = None) -> Forecast:
        """The month holding ``as_of`` (of one project when ``project`` is given): spent so
        far, the run rates and the forecast with its interval (``_periods.month_forecast``)."""
        return self._forecast(as_of, project, None)

    def _forecast(
        self,
        as_of: datetime,
        project: str | None,
        win: dict[str | None, tuple[Decimal, Decimal]] | None,
    ) -> Forecast:
        if as_of.tzinfo is None:
            raise ValueError("as_of: must be timezone-aware (UTC)")
        win = self.window(as_of) if win is None else win
        if project is not None:
            mtd, last7 = win.get(project, (Decimal(0), Decimal(0)))
        else:
            mtd = sum((m for m, _ in win.values()), Decimal(0))
            last7 = sum((w for _, w in win.values()), Decimal(0))
        return month_forecast(mtd, last7, as_of, self.daily_spend(as_of, project=project))

    def budget_status(self, budgets: Any, *, as_of: datetime) -> tuple[Forecast, pd.DataFrame]:
        """The overall forecast and one row per budget (monthly): spent month-to-date,
        forecast and status (``over``, ``forecast over``, ``near``, ``ok``); each budgeted
        project forecast from its own days."""
        parsed = parse_budgets(budgets)
        win = self.window(as_of)  # one query for every scope's month-to-date
        overall = self._forecast(as_of, None, win)
        per_project = {k: self._forecast(as_of, k, win) for k in parsed if k is not None}
        return overall, budget_rows(parsed, overall, per_project)

    # -- rows -----------------------------------------------------------------------------

    def tasks(self, columns: Sequence[str], *, p: Period | None = None, limit: int) -> pd.DataFrame:
        """The newest ``limit`` tasks of ``p`` (every task: top-level and sub-tasks)."""
        return self.frame(
            f"SELECT {', '.join(columns)} FROM ledger WHERE {day_filter(p)} "
            f"ORDER BY created_at DESC NULLS LAST, task_id DESC LIMIT {int(limit)}"
        )

    def count(self, *, p: Period | None = None) -> int:
        (n,) = self.one(f"SELECT CAST(count(*) AS BIGINT) FROM ledger WHERE {day_filter(p)}")
        return int(n)

    def write_csv(self, select: str, path: Path, *, p: Period | None = None) -> None:
        """``SELECT select FROM ledger`` of ``p`` as CSV, in the source's order."""
        self.backend.write_csv(self.sql(f"SELECT {select} FROM ledger WHERE {day_filter(p)}"), path)


# ----------------------------------------------------------------------------- opening


@contextmanager
def open_ledger(source: Any, *, engine: str | Backend = "duckdb") -> Iterator[Ledger]:
    """The relation ``ledger`` over ``source`` on ``engine`` (DuckDB by default), closed
    on exit. ``source``: a tasks frame, an Arrow table with the tasks columns, a
    ``LedgerStore`` or the path of its directory (its Parquet files read in place, the
    labels recorded after a refresh joined), or anything ``tasks_table`` reads (a client,
    task dicts)."""
    backend = _backend(engine)
    try:
        _register(backend, source)
        ledger = Ledger(backend)
        ledger._define()
        yield ledger
    finally:
        backend.close()


def _register(backend: Backend, source: Any) -> None:
    store = None
    register_path = getattr(backend, "register_path", None)
    if isinstance(source, str) and "://" in source and callable(register_path):
        register_path("tasks", source)  # a dataset the engine reads itself (s3://, hdfs://)
        return
    if isinstance(source, str | os.PathLike):
        from songlab.ledger.store import LedgerStore

        store = LedgerStore(source)
    elif _is_store(source):
        store = source
    if store is None:
        if isinstance(source, pd.DataFrame | pa.Table):
            backend.register("tasks", _schema.as_table(source, keep_dictionary=True))
        else:
            from songlab.ledger.tasks import tasks_table

            backend.register("tasks", tasks_table(source))
        return
    files = store.files()
    if not files:
        backend.register("tasks", _schema.empty_table(_schema.TASKS))
        return
    backend.register_dataset("raw_tasks", Path(store.path), files)
    lab = store.record_table()
    if lab is None or lab.num_rows == 0:
        backend.execute(
            transpile(
                "CREATE OR REPLACE TEMP VIEW tasks AS SELECT * FROM raw_tasks", backend.dialect
            )
        )
        return
    # The labels recorded after a refresh: a task's own, else its run's (as ``tasks.resolve``
    # gives a sub-task its run's labels); the facts were joined when the refresh wrote them.
    backend.register("labels_raw", lab.select(["task_id", "project", "tags", "key_id"]))
    backend.materialize(
        "labels",
        transpile(
            "SELECT task_id, min(project) AS project, min(tags) AS tags, min(key_id) AS key_id "
            "FROM labels_raw GROUP BY task_id",
            backend.dialect,
        ),
    )
    others = [c for c in _schema.TASKS.names if c not in _schema.LABEL_COLUMNS]
    fill = ", ".join(f"coalesce(t.{c}, o.{c}, p.{c}) AS {c}" for c in _schema.LABEL_COLUMNS)
    backend.execute(
        transpile(
            f"CREATE OR REPLACE TEMP VIEW tasks AS SELECT {', '.join('t.' + c for c in others)}, "
            f"{fill} FROM raw_tasks t LEFT JOIN labels o ON o.task_id = t.task_id "
            "LEFT JOIN labels p ON p.task_id = t.parent_task_id",
            backend.dialect,
        )
    )


# ------------------------------------------------------- one call each (the notebook's API)


def spend(tasks: Any, by: str | Sequence[str] = ("operation",)) -> pd.DataFrame:
    """Totals of a tasks frame by ``by`` (any of ``_schema.GROUP_KEYS``; ``()`` for one
    grand total): ``tasks``, ``cost_usd``, ``billed_tasks``, ``billed_usd``,
    ``estimated_tasks``, ``estimated_usd``, ``unknown_tasks``, ``pending_tasks``,
    ``pending_usd``, ``failed_tasks`` (``docs/ledger.md``). Top-level tasks only: a
    sub-task of an Agent One run is inside its run's cost."""
    with open_ledger(tasks) as lg:
        return lg.spend(by)


def tier_comparison(tasks: Any, by: str | Sequence[str] = ()) -> pd.DataFrame:
    """The compared tasks priced in all five license tiers, beside what they cost
    (:meth:`Ledger.tier_comparison`)."""
    with open_ledger(tasks) as lg:
        return lg.tier_comparison(by)


def tier_prices(tasks: Any) -> pd.DataFrame:
    """Per compared task, its price in every tier (:meth:`Ledger.tier_prices`)."""
    with open_ledger(tasks) as lg:
        return lg.tier_prices()


def in_period(tasks: Any, p: Period) -> pd.DataFrame:
    """The tasks created within ``p`` (by UTC day, as every figure places them; a new
    frame, the input is not changed)."""
    import pyarrow.compute as pc

    t = _schema.as_table(tasks)
    lo, hi = p.bounds()
    mask = pa.repeat(pa.scalar(True), t.num_rows)
    if lo is not None:
        mask = pc.and_(mask, pc.greater_equal(t["created_at"], pa.scalar(lo, _schema.TIMESTAMP)))
    if hi is not None:
        mask = pc.and_(mask, pc.less(t["created_at"], pa.scalar(hi, _schema.TIMESTAMP)))
    return _schema.to_frame(t.filter(pc.fill_null(mask, False)))


def rollup(
    tasks: Any, freq: str = "day", *, by: str | None = None, p: Period | None = None
) -> pd.DataFrame:
    """Spend per ``freq`` (:meth:`Ledger.rollup`)."""
    with open_ledger(tasks) as lg:
        return lg.rollup(freq, by=by, p=p)


def forecast(tasks: Any, *, as_of: datetime, project: str | None = None) -> Forecast:
    """The month holding ``as_of``: spent so far, run rates and the forecast (:meth:`Ledger.forecast`)."""
    with open_ledger(tasks) as lg:
        return lg.forecast(as_of, project=project)


def budget_status(tasks: Any, budgets: Any, *, as_of: datetime) -> pd.DataFrame:
    """One row per budget: spent month-to-date, forecast, status (:meth:`Ledger.budget_status`)."""
    with open_ledger(tasks) as lg:
        return lg.budget_status(budgets, as_of=as_of)[1]


def as_of_for(tasks: Any, now: datetime | None = None) -> datetime:
    """The later of the wall clock and the newest task."""
    with open_ledger(tasks) as lg:
        return lg.as_of(now)
