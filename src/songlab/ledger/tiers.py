"""The tier comparison: the same tasks priced in all five license tiers, beside what they cost.

The compared tasks are the top-level tasks that cost something known (billed, or a completed
task's list-price estimate), whose tier is known and that have a list price in every tier
(Agent One runs are priced by usage and have none). :func:`compare` gives one row per tier
(per group of ``by``): the tasks priced in it, what they cost, and the difference;
:func:`prices_of` one row per compared task with its price in every tier. Both are queries
of a ``Ledger`` (the cube's kind facet once it is made); the list prices are the price list's
(``_estimate``), registered once per ledger as the table ``prices``.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
import pyarrow as pa

import songlab.ledger._estimate as _estimate
import songlab.ledger._schema as _schema
from songlab.ledger.dates import Period
from songlab.ledger.engine import Ledger, open_ledger
from songlab.ledger.relation import MONEY_SQL, TIER_COLUMNS, day_filter, group_keys
from songlab.spec import LICENSE_NAMES

__all__ = ["compare", "prices_of", "tier_comparison", "tier_prices"]

_PRICES = "tiers.prices"  # the (operation, model) pairs priced for a ledger (Ledger.state)


def _register_prices(lg: Ledger) -> None:
    """``prices``: the list price in every tier of each (operation, model) present that has
    one in every tier; ``tiers``: the five tiers."""
    pairs = frozenset(
        (r["operation"], r["model"])
        for r in lg.arrow(f"SELECT DISTINCT operation, model FROM {lg.kind_source()}").to_pylist()
    )
    if pairs and lg.state.get(_PRICES) == pairs:
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
    lg.register("prices", pa.Table.from_pylist(rows, schema=schema))
    tiers = pa.table(
        {
            "t_license": pa.array(list(LICENSE_NAMES), pa.int8()),
            "t_tier": pa.array(list(LICENSE_NAMES.values()), pa.string()),
        }
    )
    lg.register("tiers", tiers)
    lg.state[_PRICES] = pairs


def _compared(lg: Ledger, keys: Sequence[str], p: Period | None) -> str:
    """SQL: the top-level tasks of ``p`` with their five list prices and ``compared`` (see
    the module's doc)."""
    _register_prices(lg)
    src, exprs = lg.source([*keys, "operation", "model", "license", "cost_source"])
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


def compare(lg: Ledger, by: str | Sequence[str] = (), *, p: Period | None = None) -> pd.DataFrame:
    """One row per tier (per group of ``by``): the compared tasks priced in it
    (``priced_usd``), what they cost (``actual_usd``) and the difference. ``attrs``:
    ``excluded_tasks`` (top-level tasks not compared), ``estimated_tasks`` (compared tasks
    whose actual cost is an estimate)."""
    keys = group_keys(by)
    if "license" in keys or "tier" in keys:
        raise ValueError("by: license and tier are the comparison's own rows; group by others")
    compared = _compared(lg, keys, p)
    price = "CASE t_license " + " ".join(f"WHEN {t} THEN c.p{t}" for t in LICENSE_NAMES) + " END"
    keyed = ", ".join(f"c.{k} AS {k}" for k in keys)
    join = "LEFT JOIN" if not keys else "JOIN"
    out = lg.frame(
        f"SELECT {keyed + ', ' if keyed else ''}CAST(t_license AS TINYINT) AS license, "
        "t_tier AS tier, "
        "CAST(coalesce(sum(c.tasks), 0) AS BIGINT) AS tasks, "
        f"CAST(coalesce(sum(c.tasks * {price}), 0) AS {MONEY_SQL}) AS priced_usd, "
        f"CAST(coalesce(sum(c.cost_usd), 0) AS {MONEY_SQL}) AS actual_usd, "
        f"CAST(coalesce(sum(c.tasks * {price}), 0) - coalesce(sum(c.cost_usd), 0) "
        f"AS {MONEY_SQL}) AS difference_usd "
        f"FROM tiers {join} (SELECT * FROM ({compared}) AS q WHERE compared) AS c ON 1 = 1 "
        f"GROUP BY {', '.join([*(f'c.{k}' for k in keys), 't_license', 't_tier'])} "
        f"ORDER BY {', '.join([*(f'c.{k} NULLS LAST' for k in keys), 't_license'])}"
    )
    (total, n, est) = lg.one(
        "SELECT CAST(coalesce(sum(tasks), 0) AS BIGINT), "
        "CAST(coalesce(sum(CASE WHEN compared THEN tasks ELSE 0 END), 0) AS BIGINT), "
        "CAST(coalesce(sum(CASE WHEN compared THEN estimated_tasks ELSE 0 END), 0) AS BIGINT) "
        f"FROM ({compared}) AS q"
    )
    out.attrs["excluded_tasks"] = int(total) - int(n)
    out.attrs["estimated_tasks"] = int(est)
    return out


def prices_of(lg: Ledger, *, p: Period | None = None) -> pd.DataFrame:
    """Per compared task: id, operation, model, license, tier, cost_usd and its price in
    every tier (``relation.TIER_COLUMNS``)."""
    _register_prices(lg)
    prices = ", ".join(
        f"CAST(pr.p{t} AS DECIMAL(18, 8)) AS {col}"
        for t, col in zip(LICENSE_NAMES, TIER_COLUMNS, strict=True)
    )
    where = (
        f"l.top_level AND {day_filter(p).replace('day', 'l.day')} "
        "AND l.cost_source IN ('billed', 'estimate') AND l.license IS NOT NULL"
    )
    out = lg.frame(
        "SELECT l.task_id AS task_id, l.operation AS operation, l.model AS model, "
        "l.license AS license, l.tier AS tier, l.cost_usd AS cost_usd, "
        f"{prices} FROM ledger AS l JOIN prices AS pr ON l.operation = pr.operation "
        f"AND l.model = pr.model WHERE {where}"
    )
    out.attrs.update(compare(lg, p=p).attrs)
    return out


def tier_comparison(tasks: object, by: str | Sequence[str] = ()) -> pd.DataFrame:
    """The compared tasks of ``tasks`` priced in all five license tiers, beside what they
    cost (:func:`compare`)."""
    with open_ledger(tasks) as lg:
        return compare(lg, by)


def tier_prices(tasks: object) -> pd.DataFrame:
    """Per compared task of ``tasks``, its price in every tier (:func:`prices_of`)."""
    with open_ledger(tasks) as lg:
        return prices_of(lg)
