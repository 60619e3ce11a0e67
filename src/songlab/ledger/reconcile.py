"""Reconciliation: the balance the account spent beside what the ledger can explain.

The account balance is the one money figure the spec promises (``GET
/v1/account/balance``, in tokens of $0.01). Each ``LedgerStore.refresh`` of a
client snapshots it (``_balance.arrow``) and stamps the tasks it added with the
same instant (``seen_at``). Between two consecutive snapshots:

- **balance spent** = (earlier ``total_effective`` - later) x $0.01, exact;
- **explained** = the ledger's billed + estimated cost of the top-level tasks that
  refresh added (a failed task is 0; a task still pending at its estimate, which the
  service has reserved; a task of unknown cost adds nothing and is counted in
  ``unknown_tasks``);
- **unexplained** = balance spent - explained: work the ledger cannot see or price
  (made outside songlab where the service shows no cost, a top-up as a negative
  figure, a task created between the listing walk and the balance call, which the
  next period gives back).

The balance is whole tokens (the sandbox rounds down), so a snapshot resolves the
true balance to one token ($0.01) and a period's balance spent can differ from the
true spend by less than a token either way (an Agent One run's fee has sub-cent
digits). A period is ``explained`` when the difference is under one token,
``unexplained`` otherwise; ``unexplained_usd`` is always the exact difference.

The first snapshot has no earlier one: the tasks it added (the account's history)
make a ``baseline`` row without a balance figure. :func:`reconcile` returns one row
per period between snapshots, or per UTC ``day``/``month`` of the later snapshot.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any, Final

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

import songlab.ledger._schema as _schema

__all__ = ["EXPLAINED", "RECONCILE", "UNEXPLAINED", "reconcile", "reconcile_store"]

TOKEN_USD: Final[Decimal] = Decimal("0.01")
EXPLAINED: Final[str] = "explained"
UNEXPLAINED: Final[str] = "unexplained"
BASELINE: Final[str] = "baseline"  # before the first snapshot: no balance to compare
FREQS: Final[tuple[str | None, ...]] = (None, "day", "month")
NOTE: Final[str] = (
    "The balance is the one money figure the service promises. Between two refreshes of the "
    "ledger, balance spent = the drop in total_effective tokens x $0.01; explained = the "
    "ledger's billed + estimated cost of the tasks that refresh added; unexplained = the "
    "rest (work the ledger cannot see or price, a top-up as a negative figure); under one "
    "token ($0.01, the balance's resolution) a period counts as explained. The first "
    "snapshot has nothing to compare with (baseline). Check that the ledger is complete here "
    "before trusting its totals."
)
NO_LEDGER: Final[str] = (
    "No balance snapshots: reconciliation needs a Parquet ledger refreshed at least twice "
    "(songlab report --ledger DIR; every refresh snapshots GET /v1/account/balance)."
)


def _top_level(table: pa.Table) -> pa.Table:
    return table.filter(pc.is_null(table["parent_task_id"]))


def _f(name: str, type_: pa.DataType, doc: str) -> pa.Field:
    return pa.field(name, type_, metadata={"doc": doc})


RECONCILE: Final[pa.Schema] = pa.schema(
    [
        _f("period", pa.string(), "the period: 'from .. to' snapshot times, a day or a month"),
        _f("period_start", _schema.TIMESTAMP, "the earlier snapshot (null on the baseline)"),
        _f("period_end", _schema.TIMESTAMP, "the later snapshot"),
        _f("balance_spent_usd", _schema.MONEY_SUM, "balance drop x $0.01 (null: no earlier one)"),
        _f("explained_usd", _schema.MONEY_SUM, "billed_usd + estimated_usd of the tasks added"),
        _f("unexplained_usd", _schema.MONEY_SUM, "balance_spent_usd - explained_usd"),
        _f("billed_usd", _schema.MONEY_SUM, "cost the service billed, of the tasks added"),
        _f("estimated_usd", _schema.MONEY_SUM, "list-price estimates, of the tasks added"),
        _f("tasks", pa.int64(), "top-level tasks the period's refresh added"),
        _f("estimated_tasks", pa.int64(), "of which costed by an estimate"),
        _f("unknown_tasks", pa.int64(), "of which of unknown cost (not in explained_usd)"),
        _f(
            "status",
            pa.string(),
            "explained (difference under one token, $0.01), unexplained, or baseline",
        ),
    ]
)


def _snapshots(balances: Any) -> pa.Table:
    if isinstance(balances, pd.DataFrame):
        balances = pa.Table.from_pandas(balances, preserve_index=False)
    if not isinstance(balances, pa.Table):
        raise TypeError(
            f"balances: expected a balance frame or table, got {type(balances).__name__}"
        )
    missing = [c for c in ("taken_at", "total_effective") if c not in balances.column_names]
    if missing:
        raise ValueError(f"balances: missing column(s) {', '.join(missing)}")
    return balances.sort_by("taken_at")


def _money(values: list[Decimal | None]) -> pa.Array:
    return pa.array(values, _schema.MONEY_SUM)


def reconcile(tasks: Any, balances: Any, *, freq: str | None = None) -> pd.DataFrame:
    """Balance spent per period beside the ledger's billed + estimated cost (columns:
    :data:`RECONCILE`).

    ``tasks``: a tasks frame or table whose ``seen_at`` a ``LedgerStore`` set;
    ``balances``: its snapshots (``LedgerStore.balances()``). ``freq``: None (one row per
    period between consecutive snapshots), ``"day"`` or ``"month"`` (periods summed by the
    UTC day or month of their later snapshot; the baseline stays its own row).
    """
    if freq not in FREQS:
        raise ValueError(f"freq: one of None, 'day', 'month', got {freq!r}")
    snaps = _snapshots(balances)
    if snaps.num_rows == 0:
        return _schema.to_frame(RECONCILE.empty_table())
    taken = _taken(snaps)
    return _rows(_per_period(_top_level(_schema.as_table(tasks)), taken), snaps, freq)


def _taken(snaps: pa.Table) -> np.ndarray:
    taken: np.ndarray = (
        snaps["taken_at"].cast(_schema.TIMESTAMP).to_numpy().astype("datetime64[us]")
    )
    return taken


def _per_period(t: pa.Table, taken: np.ndarray) -> dict[int, dict[str, Any]]:
    """Per period (between snapshots): tasks seen, estimated, unknown; billed and estimated
    sums (exact ``Decimal``)."""
    seen = t["seen_at"].to_numpy().astype("datetime64[us]")
    # period k holds tasks seen in (taken[k-1], taken[k]]; k = 0 (and never seen) is the baseline
    period = np.searchsorted(taken, seen, side="left")
    period = np.where(np.isnat(seen), 0, period)
    src = t["cost_source"]
    # a pending task's price is already reserved from the balance: its estimate explains it
    pending = pc.fill_null(pc.equal(src, _schema.PENDING), False)
    est_mask = pc.or_(pc.fill_null(pc.equal(src, _schema.ESTIMATE), False), pending)
    work = pa.table(
        {
            "period": pa.array(period, pa.int64()),
            "one": pa.repeat(pa.scalar(1, pa.int64()), t.num_rows),
            "estimated": pc.cast(est_mask, pa.int64()),
            "unknown": pc.cast(pc.fill_null(pc.equal(src, _schema.UNKNOWN), False), pa.int64()),
            "billed": pc.if_else(
                pc.fill_null(pc.equal(src, _schema.BILLED), False),
                t["billed_usd"],
                pa.scalar(None, _schema.MONEY),
            ),
            "estimate": pc.if_else(
                est_mask,
                pc.if_else(pending, t["estimate_usd"], t["cost_usd"]),
                pa.scalar(None, _schema.MONEY),
            ),
        }
    )
    g = work.group_by("period", use_threads=False).aggregate(
        [(c, "sum") for c in ("one", "estimated", "unknown", "billed", "estimate")]
    )
    return {row["period"]: row for row in g.to_pylist()}


def _merge(into: dict[int, dict[str, Any]], more: dict[int, dict[str, Any]]) -> None:
    for k, row in more.items():
        acc = into.setdefault(k, {})
        for name, value in row.items():
            if name != "period" and value is not None:
                acc[name] = acc.get(name, 0) + value


def _rows(per: dict[int, dict[str, Any]], snaps: pa.Table, freq: str | None) -> pd.DataFrame:
    taken = _taken(snaps)
    totals = [int(v) for v in snaps["total_effective"].to_pylist()]
    rows: list[dict[str, Any]] = []
    for k in range(len(totals)):  # tasks seen after the last snapshot wait for the next one
        got = per.get(k, {})
        billed = Decimal(got.get("billed_sum") or 0)
        estimated = Decimal(got.get("estimate_sum") or 0)
        explained = billed + estimated
        spent = None if k == 0 else (totals[k - 1] - totals[k]) * TOKEN_USD
        start = None if k == 0 else pd.Timestamp(taken[k - 1], tz="UTC").to_pydatetime()
        end = pd.Timestamp(taken[k], tz="UTC").to_pydatetime()
        rows.append(
            {
                "start": start,
                "end": end,
                "spent": spent,
                "explained": explained,
                "billed": billed,
                "estimated": estimated,
                "tasks": int(got.get("one_sum") or 0),
                "estimated_tasks": int(got.get("estimated_sum") or 0),
                "unknown_tasks": int(got.get("unknown_sum") or 0),
            }
        )
    return _schema.to_frame(_table(rows, freq))


def _label(row: dict[str, Any], freq: str | None) -> str:
    if row["start"] is None:
        return f"up to {row['end']:%Y-%m-%d %H:%M:%S} (first snapshot)"
    if freq == "day":
        return f"{row['end']:%Y-%m-%d}"
    if freq == "month":
        return f"{row['end']:%Y-%m}"
    return f"{row['start']:%Y-%m-%d %H:%M:%S} .. {row['end']:%Y-%m-%d %H:%M:%S}"


def _table(rows: list[dict[str, Any]], freq: str | None) -> pa.Table:
    grouped: dict[Any, dict[str, Any]] = {}
    for i, row in enumerate(rows):
        # one row per period between snapshots (two may share a second); else per day/month
        key = (
            (i, _label(row, freq))
            if freq is None or row["start"] is None
            else (-1, _label(row, freq))
        )
        if key not in grouped:
            grouped[key] = dict(row)
            continue
        acc = grouped[key]
        acc["end"] = row["end"]
        for name in ("spent", "explained", "billed", "estimated"):
            acc[name] = (acc[name] or Decimal(0)) + (row[name] or Decimal(0))
        for name in ("tasks", "estimated_tasks", "unknown_tasks"):
            acc[name] += row[name]
    out = list(grouped.values())
    unexplained = [None if r["spent"] is None else r["spent"] - r["explained"] for r in out]
    status = [
        BASELINE if u is None else EXPLAINED if abs(u) < TOKEN_USD else UNEXPLAINED
        for u in unexplained
    ]
    cols = [
        pa.array([label for _, label in grouped], pa.string()),
        pa.array([r["start"] for r in out], _schema.TIMESTAMP),
        pa.array([r["end"] for r in out], _schema.TIMESTAMP),
        _money([r["spent"] for r in out]),
        _money([r["explained"] for r in out]),
        _money(unexplained),
        _money([r["billed"] for r in out]),
        _money([r["estimated"] for r in out]),
        pa.array([r["tasks"] for r in out], pa.int64()),
        pa.array([r["estimated_tasks"] for r in out], pa.int64()),
        pa.array([r["unknown_tasks"] for r in out], pa.int64()),
        pa.array(status, pa.string()),
    ]
    return pa.Table.from_arrays(cols, schema=RECONCILE)


def reconcile_store(store: Any, *, freq: str | None = None) -> pd.DataFrame:
    """:func:`reconcile` of a ``LedgerStore``'s tasks and balance snapshots, read a month
    at a time (``store.iter_tables()``): memory grows with the largest month, not with
    the ledger; nothing is read when there is no snapshot."""
    if freq not in FREQS:
        raise ValueError(f"freq: one of None, 'day', 'month', got {freq!r}")
    snaps = _snapshots(store.balance_table())
    if snaps.num_rows == 0:
        return _schema.to_frame(RECONCILE.empty_table())
    if not hasattr(store, "iter_tables"):
        return reconcile(store.read_table(), snaps, freq=freq)
    taken = _taken(snaps)
    per: dict[int, dict[str, Any]] = {}
    for month in store.iter_tables():
        _merge(per, _per_period(_top_level(month), taken))
    return _rows(per, snaps, freq)
