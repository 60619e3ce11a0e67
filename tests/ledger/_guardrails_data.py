"""Synthetic years for the guardrail tests: ``ledger.synthetic``'s tasks on a business calendar.

``synthetic_table`` spreads tasks evenly over its days; a business account does not. A
year here draws each day's number of tasks from a rate with a weekly pattern (weekends at
a third), a steady growth and a slowly wandering level (an AR(1) on the log scale, as a
team's workload drifts week to week), then gives each task a time inside its day. The tasks
themselves (catalog, tiers, prices, statuses, projects, tags, keys) are ``synthetic_table``'s.
A spike adds tasks of one project and key on one day: their ids are returned, so a test can
check that an anomaly names them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from songlab.ledger import _schema
from songlab.ledger.synthetic import synthetic_table

START = datetime(2025, 1, 6, tzinfo=UTC)  # a Monday


@dataclass
class Year:
    table: pa.Table  # the tasks (tasks schema), newest first
    start: date
    days: int
    spike_ids: list[str] = field(default_factory=list)
    per_day: dict[date, int] = field(default_factory=dict)


def daily_rates(
    days: int,
    *,
    per_day: float,
    seed: int,
    weekend: float = 0.35,
    growth: float = 0.4,
    drift: float = 0.08,
    start: datetime = START,
) -> np.ndarray[Any, np.dtype[np.float64]]:
    """The expected number of tasks of each day."""
    rng = np.random.default_rng([seed, 1])
    t = np.arange(days)
    weekday = np.array([(start + timedelta(days=int(i))).weekday() for i in t])
    season = np.where(weekday >= 5, weekend, 1.0)
    level = np.zeros(days)
    for i in range(1, days):  # AR(1) on the log scale: weeks of busier and quieter work
        level[i] = 0.9 * level[i - 1] + rng.normal(0, drift)
    return np.asarray(per_day * season * (1 + growth * t / 365) * np.exp(level), dtype=np.float64)


def _placed(table: pa.Table, day_of_row: np.ndarray[Any, Any], start: datetime, seed: int) -> Any:
    rng = np.random.default_rng([seed, 2])
    t0 = np.datetime64(start.replace(tzinfo=None), "us")
    secs = rng.integers(0, 86_400 * 10**6, size=len(day_of_row))
    created = t0 + (day_of_row.astype(np.int64) * 86_400 * 10**6 + secs).astype("timedelta64[us]")
    col = pa.array(created, pa.timestamp("us")).cast(_schema.TIMESTAMP)
    i = table.schema.get_field_index("created_at")
    table = table.set_column(i, table.schema.field(i), col)
    return table


def synthetic_year(
    *,
    seed: int = 0,
    days: int = 365,
    per_day: float = 300.0,
    start: datetime = START,
    spike: tuple[int, str, int] | None = None,  # (day index, project, extra tasks)
    spike_key: str = "key_fedcba987654",
    **rates: Any,
) -> Year:
    """A year (``days``) of a business account's tasks, with an optional planted spike."""
    lam = daily_rates(days, per_day=per_day, seed=seed, start=start, **rates)
    rng = np.random.default_rng([seed, 3])
    counts = rng.poisson(lam)
    n = int(counts.sum())
    late = start + timedelta(days=days + 1)
    t = synthetic_table(n, seed=seed, labels=True, start=start, days=days, settled_before=late)
    day_of_row = np.repeat(np.arange(days), counts)
    t = _placed(t, day_of_row, start, seed)
    spike_ids: list[str] = []
    if spike is not None:
        d, project, extra = spike
        s = synthetic_table(
            extra, seed=seed + 10_000, labels=True, start=start, days=1, settled_before=late
        )
        s = _placed(s, np.full(extra, d), start, seed + 1)
        ids = pc.binary_join_element_wise("spike_", s["task_id"], "")
        s = s.set_column(s.schema.get_field_index("task_id"), "task_id", ids)
        for name, value in (("project", project), ("key_id", spike_key)):
            i = s.schema.get_field_index(name)
            s = s.set_column(i, s.schema.field(i), pa.array([value] * extra, pa.string()))
        spike_ids = s["task_id"].to_pylist()
        t = pa.concat_tables([t, s])
    order = pc.sort_indices(t, sort_keys=[("created_at", "descending")])
    t = t.take(order)
    per = {(start + timedelta(days=i)).date(): int(c) for i, c in enumerate(counts)}
    return Year(t, start.date(), days, spike_ids, per)


def write_ledger(table: pa.Table, path: Any, balances: list[dict[str, Any]] = ()) -> Any:  # type: ignore[assignment]
    """A ``LedgerStore`` directory of ``table`` (month files), with balance snapshots."""
    from pathlib import Path

    import pyarrow.parquet as pq

    from songlab.ledger import _parquet
    from songlab.ledger.store import PART, LedgerStore
    from songlab.ledger.synthetic import _by_month

    root = Path(path)
    for month, part in _by_month(table):
        target = root / f"month={month}" / PART
        target.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(_parquet.to_parquet_table(part), target)
    store = LedgerStore(root)
    for snap in balances:
        store._append_balance({"tasks_added": 0, **snap})
    return store


def joint_cube(table: pa.Table) -> Any:
    """Spend per day, project, key, tool and tier of ``table`` (a frame anomalies.detect reads
    in memory), through the ledger engine."""
    from songlab.ledger import engine

    with engine.open_ledger(table) as lg:
        frame = lg.arrow(
            "SELECT day, project, key_id, tool_id, tier, CAST(sum(cost_usd) AS DECIMAL(38, 8)) "
            "AS cost_usd, CAST(count(*) AS BIGINT) AS tasks FROM ledger WHERE top_level "
            "GROUP BY day, project, key_id, tool_id, tier"
        ).to_pandas()
    frame["day"] = [d if isinstance(d, date) else d.date() for d in frame["day"]]
    return frame
