"""The ledger engine: one source's relation on one backend, and every grouped figure of it.

:func:`open_ledger` registers a source on a backend (``backends``) and defines the relation
``ledger`` (``relation.RELATION_SQL``); the :class:`Ledger` it yields runs the queries: spend
grouped by any keys (:meth:`Ledger.spend`), the totals of a period, the newest tasks, a
CSV of every task. :meth:`Ledger.precompute` makes the cube (``relation.CUBE_SQL``: one scan
of every task) that the grouped figures then read instead of the tasks, whenever their keys
are in one of its facets; the same sums either way. The tier comparison is
``songlab.ledger.tiers``', the roll-ups over time ``rollups``', the month's forecast and
budgets ``month``'s, each a query of a :class:`Ledger`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, date, datetime, time
from functools import lru_cache
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa

import songlab.ledger._arrow as _arrow
import songlab.ledger._arrow_codes as _arrow_codes
import songlab.ledger._schema as _schema
from songlab.ledger.backends import Backend, make_backend, register_source
from songlab.ledger.dates import Period
from songlab.ledger.dialects import DIALECT, transpile, ts_sql
from songlab.ledger.relation import (
    CUBE_ALL_SQL,
    CUBE_COLUMNS,
    CUBE_SQL,
    CUBE_VIEW_SQL,
    DERIVED,
    KIND_DIMS,
    LABEL_DIMS,
    MEASURE_NAMES,
    MEASURES,
    cube_sql,
    day_filter,
    group_keys,
    relation_sql,
)

__all__ = ["Ledger", "as_of_for", "in_period", "open_ledger", "spend"]

_KIND: str = "(SELECT * FROM cube WHERE facet = 'kind')"
_LABEL: str = "(SELECT * FROM cube WHERE facet = 'label')"
_KIND_ALL: str = "(SELECT * FROM cube_all WHERE facet = 'kind')"
_LABEL_ALL: str = "(SELECT * FROM cube_all WHERE facet = 'label')"
_KIND_KEYS = frozenset({*KIND_DIMS, "tier", "tier_order"})


class Ledger:
    """One source's relation ``ledger`` on one backend. Made by :func:`open_ledger` (a
    context manager that closes the backend)."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self.cubed = False
        self.state: dict[str, Any] = {}  # what other modules keep per ledger (tiers' prices)
        # a cluster engine's small results (the cube, price lists) are queried here, on an
        # embedded DuckDB: a query of them takes milliseconds, where a cluster plans and runs
        # jobs for each (:meth:`precompute`)
        self.local: Backend | None = None
        self._small: dict[str, pa.Table] = {}
        self._here: set[str] = set()  # the tables the embedded copy holds

    # -- plumbing -------------------------------------------------------------------------

    def sql(self, text: str) -> str:
        return transpile(text, self.backend.dialect)

    def arrow(self, text: str) -> pa.Table:
        """The rows of ``text`` (DuckDB's dialect): on the embedded copy when every table it
        reads is there (a cluster engine's cube and small tables, :meth:`precompute`), else on
        the backend."""
        if self.local is not None and _tables_of(text) <= self._here:
            return self.local.arrow(text)
        return self.backend.arrow(self.sql(text))

    def dialect_of(self, *tables: str) -> str:
        """The dialect of the engine a query that reads only ``tables`` runs on (the embedded
        DuckDB's, when it holds them all: :meth:`arrow`)."""
        return (
            DIALECT
            if self.local is not None and set(tables) <= self._here
            else self.backend.dialect
        )

    def register(self, name: str, table: pa.Table) -> None:
        """A small table (a price list, balance snapshots) for this ledger's queries, on the
        backend and on the embedded copy, wherever a query of it runs."""
        self.backend.register(name, table)
        self._small[name] = table
        if self.local is not None:
            self.local.register(name, table)
            self._here.add(name)

    def keep(self, name: str, text: str) -> None:
        """The rows of ``text`` (DuckDB's dialect; a period's Agent One runs: thousands, tens
        of thousands in a busy year) as the table ``name``, computed once for the queries that
        read it. On a cluster engine they are brought here (one job), where those queries then
        run on the embedded DuckDB: each would be a job of its own there, planned and compiled
        for a few thousand rows."""
        if getattr(self.backend, "cluster", False):
            rows = self.backend.arrow(self.sql(text))
            self._embedded().register(name, rows)
            self._here.add(name)
        else:
            self.backend.materialize(name, self.sql(text))

    def frame(self, text: str) -> pd.DataFrame:
        return _schema.to_frame(self.arrow(text))

    def one(self, text: str) -> tuple[Any, ...]:
        rows = self.arrow(text).to_pylist()
        return tuple(rows[0].values()) if rows else ()

    def define(self) -> None:
        """The relation ``ledger`` over the registered ``tasks``."""
        self.backend.execute(
            self.sql(f"CREATE OR REPLACE TEMP VIEW ledger AS {relation_sql(self.backend.dialect)}")
        )

    def rows(
        self,
        created_from: datetime | None = None,
        created_to: datetime | None = None,
        *,
        operation: str | None = None,
    ) -> str:
        """A FROM holding the relation's tasks created from ``created_from`` to
        ``created_to`` of ``operation`` (at least: the caller's WHERE still says which): the
        relation over just those rows where the backend takes them without reading every
        task (an Arrow table in memory), else ``ledger`` itself."""
        key = (created_from, created_to, operation)
        if key == (None, None, None):
            return "ledger"
        made: dict[Any, str] = self.state.setdefault("engine.rows", {})
        if key not in made:
            name = f"tasks_rows_{len(made)}"
            take = getattr(self.backend, "register_rows", None)
            kept = callable(take) and take(
                name, "tasks", created_from=created_from, created_to=created_to, operation=operation
            )
            made[key] = f"ledger_rows_{len(made)}" if kept else "ledger"
            if kept:
                self.backend.execute(
                    self.sql(
                        f"CREATE OR REPLACE TEMP VIEW {made[key]} AS "
                        + relation_sql(self.backend.dialect, name)
                    )
                )
        return made[key]

    def precompute(self) -> None:
        """Make the cube (one scan of the relation): grouped spend, periods, the tier
        comparison and the guardrails' daily series then read it instead of the tasks.

        On a cluster engine (a backend whose ``cluster`` is true: Spark) the cube is one job
        over the tasks, kept on the cluster (cached as that job computes it), and its rows
        (thousands) come here, to an embedded DuckDB that answers every query of them without
        a job on the cluster. The few queries of the tasks that remain (the newest tasks,
        Agent One's steps, the month's window, the CSV of every task) read only what they
        need of the dataset (its columns; its files and row groups of their days): caching
        every task in the cluster's memory for them costs more than the cube's scan itself
        (a million tasks: 7 to 16 s against 3 to 5 s on two cores)."""
        if self.cubed:
            return
        if getattr(self.backend, "cluster", False):
            # kept on the cluster too, as its scan computes it: the daily series of an as-of
            # day that has later tasks reads the cube and those tasks in one query
            self.backend.materialize("cube_sums", self.sql(CUBE_SQL))
            self.backend.execute(self.sql(f"CREATE OR REPLACE TEMP VIEW cube AS {CUBE_VIEW_SQL}"))
            self._cube_here(self.backend.arrow("SELECT * FROM cube_sums"))
        else:
            if not self._cube_coded():
                self.backend.materialize("cube_sums", self.sql(CUBE_SQL))
            self.backend.materialize("cube", self.sql(CUBE_VIEW_SQL))  # the measures, once
            self.backend.materialize("cube_all", self.sql(CUBE_ALL_SQL))
        self.cubed = True

    def _cube_coded(self) -> bool:
        """The cube's sums grouped by the integer codes of the tasks' dictionary strings, on a
        backend that holds them in memory (``register_coded``: an Arrow table on DuckDB),
        then decoded: the same rows as :data:`CUBE_SQL`'s, at a fraction of its time. False:
        the backend cannot (a Parquet dataset, another engine), nothing made."""
        register = getattr(self.backend, "register_coded", None)
        unregister = getattr(self.backend, "unregister", None)
        if not (callable(register) and callable(unregister)):
            return False
        coded = register("tasks_coded", "tasks", CUBE_COLUMNS)
        if coded is None:
            return False
        try:
            sums = self.arrow(cube_sql(self.backend.dialect, "tasks_coded", list(coded.values)))
        finally:
            unregister("tasks_coded")
        self.backend.register("cube_sums", _arrow_codes.decode(sums, coded.values))
        return True

    def _embedded(self) -> Backend:
        """The embedded DuckDB that answers a cluster engine's small results, made with this
        ledger's small tables on first use."""
        if self.local is None:
            import songlab.ledger._duckdb as _duckdb

            self.local = _duckdb.DuckDB(memory_limit="256MB")
            for name, table in self._small.items():
                self.local.register(name, table)
            self._here.update(self._small)
        return self.local

    def _cube_here(self, sums: pa.Table) -> None:
        """The cube's sums ``sums`` (a cluster's) queried on the embedded DuckDB."""
        local = self._embedded()
        local.register("cube_sums", sums)
        local.materialize("cube", CUBE_VIEW_SQL)
        local.materialize("cube_all", CUBE_ALL_SQL)
        self._here.update(("cube_sums", "cube", "cube_all"))

    def close(self) -> None:
        """Close the embedded copy, if any (the backend is :func:`open_ledger`'s to close)."""
        if self.local is not None:
            self.local.close()
            self.local = None
            self._here.clear()

    def kind_source(self) -> str:
        """The FROM of a figure grouped by what the tasks are: the cube's kind facet, or the
        relation before :meth:`precompute`."""
        return _KIND if self.cubed else "ledger"

    def source(self, keys: Sequence[str], *, all_days: bool = False) -> tuple[str, dict[str, str]]:
        """(FROM clause, key -> SQL expression) for grouping by ``keys``: the cube's facet
        that has them all (summed over its days when ``all_days``, the figure's period being
        all time, and no key is a day), else the relation; ``tag`` is one row per tag of
        ``tags``."""
        needs = {"tags" if k == "tag" else "day" if k in DERIVED else k for k in keys}
        undated = all_days and "day" not in needs
        needs |= {"day", "top_level"}
        exprs = {k: DERIVED.get(k, k) for k in keys}
        if self.cubed and needs <= set(LABEL_DIMS):
            src = _LABEL_ALL if undated else _LABEL
        elif self.cubed and needs <= _KIND_KEYS:
            src = _KIND_ALL if undated else _KIND
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
        keys = group_keys(by)
        src, exprs = self.source(keys, all_days=day_filter(p) == "TRUE")
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
        row = self.one(
            f"SELECT {', '.join(m.total for m in MEASURES)} FROM {self.kind_source()} "
            f"WHERE top_level AND {day_filter(p)} AND {where}"
        )
        return dict(zip(MEASURE_NAMES, row, strict=True))

    def sub_tasks(self, *, p: Period | None = None) -> int:
        """The tasks of Agent One runs (and workflows) counted inside their run."""
        (n,) = self.one(
            f"SELECT CAST(coalesce(sum(tasks), 0) AS BIGINT) FROM {self.kind_source()} "
            f"WHERE NOT top_level AND {day_filter(p)}"
        )
        return int(n)

    def newest(self) -> datetime | None:
        """The newest task's ``created_at`` (None: no dated task)."""
        if "newest" not in self.state:
            # the cube keeps each group's newest task: no task read
            (at,) = self.one(f"SELECT max({'newest_at' if self.cubed else 'created_at'}) FROM "
                             f"{'cube' if self.cubed else 'ledger'}")  # fmt: skip
            self.state["newest"] = (
                None if at is None else at.astimezone(UTC) if at.tzinfo else at.replace(tzinfo=UTC)
            )
        newest: datetime | None = self.state["newest"]
        return newest

    def as_of(self, now: datetime | None = None) -> datetime:
        """The report's "now": the later of the wall clock and the newest task (a sandbox
        whose clock was moved ahead has tasks in the future)."""
        now = (now or datetime.now(UTC)).astimezone(UTC)
        newest = self.newest()
        return max(now, newest) if newest is not None else now

    # -- rows -----------------------------------------------------------------------------

    def tasks(self, columns: Sequence[str], *, p: Period | None = None, limit: int) -> pd.DataFrame:
        """The newest ``limit`` tasks of ``p`` (every task: top-level and sub-tasks). With the
        cube, only the days that hold them are read (the cube counts each day's tasks)."""
        where, n = day_filter(p), int(limit)
        first = self._first_day_of_newest(where, n) if self.cubed else None
        # the raw time, not its day: a filter the scan applies as it reads (a day per row
        # would be a time-zone conversion of every task)
        midnight = datetime.combine(first, time(), UTC) if first is not None else None
        since = f"created_at >= {ts_sql(midnight)} AND " if midnight is not None else ""
        return self.frame(
            f"SELECT {', '.join(columns)} FROM {self.rows(midnight)} WHERE {since}{where} "
            f"ORDER BY created_at DESC NULLS LAST, task_id DESC LIMIT {n}"
        )

    def _first_day_of_newest(self, where: str, n: int) -> date | None:
        """The first day of the ``n`` newest dated tasks of ``where`` (None: fewer than ``n``
        are dated, so every row is read, the undated last)."""
        days = self.arrow(
            f"SELECT day, CAST(sum(tasks) AS BIGINT) AS tasks FROM {_KIND} "
            f"WHERE day IS NOT NULL AND {where} GROUP BY day ORDER BY day DESC"
        ).to_pylist()
        seen = 0
        for row in days:
            seen += int(row["tasks"])
            if seen >= n:
                found: date = row["day"]
                return found
        return None

    def count(self, *, p: Period | None = None) -> int:
        (n,) = self.one(f"SELECT CAST(count(*) AS BIGINT) FROM ledger WHERE {day_filter(p)}")
        return int(n)

    def write_csv(self, select: str, path: Path, *, p: Period | None = None) -> None:
        """``SELECT select FROM ledger`` of ``p`` as CSV, in the source's order."""
        self.backend.write_csv(self.sql(f"SELECT {select} FROM ledger WHERE {day_filter(p)}"), path)


@lru_cache(maxsize=1024)
def _tables_of(sql: str) -> frozenset[str]:
    """The tables and views ``sql`` (DuckDB's dialect) reads, its own CTEs left out."""
    import sqlglot
    from sqlglot import exp

    tree = sqlglot.parse_one(sql, read="duckdb")
    ctes = {c.alias_or_name for c in tree.find_all(exp.CTE)}
    return frozenset(t.name for t in tree.find_all(exp.Table) if t.name and t.name not in ctes)


# ----------------------------------------------------------------------------- opening


@contextmanager
def open_ledger(source: Any, *, engine: str | Backend = "duckdb") -> Iterator[Ledger]:
    """The relation ``ledger`` over ``source`` on ``engine`` (DuckDB by default), closed
    on exit. ``source``: a tasks frame, an Arrow table with the tasks columns, a
    ``LedgerStore`` or the path of its directory (its Parquet files read in place, the
    labels recorded after a refresh joined), or anything ``tasks_table`` reads (a client,
    task dicts)."""
    backend = make_backend(engine)
    ledger = Ledger(backend)
    try:
        register_source(backend, source)
        ledger.define()
        yield ledger
    finally:
        try:
            ledger.close()
        finally:
            backend.close()


# ------------------------------------------------------- one call each (the notebook's API)


def spend(tasks: Any, by: str | Sequence[str] = ("operation",)) -> pd.DataFrame:
    """Totals of a tasks frame by ``by`` (any of ``_schema.GROUP_KEYS``; ``()`` for one
    grand total): ``tasks``, ``cost_usd``, ``billed_tasks``, ``billed_usd``,
    ``estimated_tasks``, ``estimated_usd``, ``unknown_tasks``, ``pending_tasks``,
    ``pending_usd``, ``failed_tasks`` (``docs/ledger/using.md``). Top-level tasks only: a
    sub-task of an Agent One run is inside its run's cost."""
    with open_ledger(tasks) as lg:
        return lg.spend(by)


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
    return _schema.to_frame(t.filter(_arrow.fill_null(mask, False)))


def as_of_for(tasks: Any, now: datetime | None = None) -> datetime:
    """The later of the wall clock and the newest task."""
    with open_ledger(tasks) as lg:
        return lg.as_of(now)
