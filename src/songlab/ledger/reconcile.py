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
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from songlab.ledger.store import LedgerStore

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

import songlab.ledger._schema as _schema
from songlab.ledger._arrow import Field
from songlab.ledger.engine import Ledger, open_ledger
from songlab.ledger.relation import MEASURES

__all__ = [
    "EXPLAINED",
    "RECONCILE",
    "UNEXPLAINED",
    "reconcile",
    "reconcile_on",
    "reconcile_store",
]

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


def _f(name: str, type_: pa.DataType, doc: str) -> Field:
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


def _snapshots(balances: object) -> pa.Table:
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


# Per period between consecutive snapshots (``k``: 0 is the first snapshot, the baseline),
# the measures of the top-level tasks a refresh added, by their ``seen_at``: one query over
# the relation ``ledger`` (``relation.RELATION_SQL``; its measures are ``relation.MEASURES``).
# Tasks are first summed per ``seen_at`` (one value per refresh), so the range join with the
# snapshots is small whatever the number of tasks. A task never seen (``seen_at`` null) is
# in the baseline; one seen after the last snapshot waits for the next one.
_PERIODS_SQL: Final[str] = """
WITH snaps AS (
  SELECT taken_at, total_effective, row_number() OVER (ORDER BY taken_at) - 1 AS k
  FROM snapshots
), spans AS (
  SELECT k, taken_at AS period_end, lag(taken_at) OVER (ORDER BY k) AS period_start,
         total_effective, lag(total_effective) OVER (ORDER BY k) AS before_total
  FROM snaps
), added AS (
  SELECT seen_at, {totals} FROM ledger WHERE top_level GROUP BY seen_at
), per AS (
  SELECT s.k AS k, s.period_start AS period_start, s.period_end AS period_end,
         CASE WHEN s.k = 0 THEN NULL ELSE CAST(CAST(s.before_total - s.total_effective
              AS DECIMAL(18, 0)) * CAST({token} AS DECIMAL(3, 2)) AS {money}) END AS spent,
         CAST(coalesce(sum(a.billed_usd), 0) AS {money}) AS billed,
         CAST(coalesce(sum(a.estimated_usd), 0) + coalesce(sum(a.pending_usd), 0)
              AS {money}) AS estimated,
         CAST(coalesce(sum(a.tasks), 0) AS BIGINT) AS tasks,
         CAST(coalesce(sum(a.estimated_tasks), 0) + coalesce(sum(a.pending_tasks), 0)
              AS BIGINT) AS estimated_tasks,
         CAST(coalesce(sum(a.unknown_tasks), 0) AS BIGINT) AS unknown_tasks
  FROM spans AS s LEFT JOIN added AS a
    ON (a.seen_at IS NULL AND s.k = 0)
    OR (a.seen_at <= s.period_end AND (s.k = 0 OR a.seen_at > s.period_start))
  GROUP BY s.k, s.period_start, s.period_end, s.before_total, s.total_effective
), grouped AS (
  SELECT min(k) AS k, min(period_start) AS period_start, max(period_end) AS period_end,
         sum(spent) AS spent, CAST(sum(billed) AS {money}) AS billed,
         CAST(sum(estimated) AS {money}) AS estimated, CAST(sum(tasks) AS BIGINT) AS tasks,
         CAST(sum(estimated_tasks) AS BIGINT) AS estimated_tasks,
         CAST(sum(unknown_tasks) AS BIGINT) AS unknown_tasks
  FROM per GROUP BY {group}
), rows AS (
  SELECT k, period_start, period_end, CAST(spent AS {money}) AS spent,
         CAST(billed + estimated AS {money}) AS explained, billed, estimated, tasks,
         estimated_tasks, unknown_tasks
  FROM grouped
)
SELECT CASE WHEN k = 0
            THEN 'up to ' || strftime(period_end, '%Y-%m-%d %H:%M:%S') || ' (first snapshot)'
            ELSE {label} END AS period,
       period_start, period_end, spent AS balance_spent_usd, explained AS explained_usd,
       CAST(spent - explained AS {money}) AS unexplained_usd, billed AS billed_usd,
       estimated AS estimated_usd, tasks, estimated_tasks, unknown_tasks,
       CASE WHEN spent IS NULL THEN '{baseline}'
            WHEN abs(spent - explained) < CAST({token} AS DECIMAL(3, 2)) THEN '{explained}'
            ELSE '{unexplained}' END AS status
FROM rows ORDER BY k
"""
_GROUPS: Final[dict[str | None, tuple[str, str]]] = {
    # freq: (the GROUP BY key of a period, its label); the baseline is always its own row
    None: (
        "k",
        "strftime(period_start, '%Y-%m-%d %H:%M:%S') || ' .. ' "
        "|| strftime(period_end, '%Y-%m-%d %H:%M:%S')",
    ),
    "day": (
        "CASE WHEN k = 0 THEN '' ELSE strftime(period_end, '%Y-%m-%d') END",
        "strftime(period_end, '%Y-%m-%d')",
    ),
    "month": (
        "CASE WHEN k = 0 THEN '' ELSE strftime(period_end, '%Y-%m') END",
        "strftime(period_end, '%Y-%m')",
    ),
}
_NEEDED: Final[tuple[str, ...]] = (
    "tasks",
    "billed_usd",
    "estimated_tasks",
    "estimated_usd",
    "unknown_tasks",
    "pending_tasks",
    "pending_usd",
)


def reconcile_on(lg: Ledger, balances: object, *, freq: str | None = None) -> pd.DataFrame:
    """:func:`reconcile` of the relation ``lg`` already has open (the report's: the source
    is not read again), as one query of it (columns: :data:`RECONCILE`)."""
    if freq not in FREQS:
        raise ValueError(f"freq: one of None, 'day', 'month', got {freq!r}")
    snaps = _snapshots(balances)
    if snaps.num_rows == 0:
        return _schema.to_frame(RECONCILE.empty_table())
    snapshots = pa.Table.from_pydict(
        {
            "taken_at": pc.cast(snaps["taken_at"], _schema.TIMESTAMP),
            "total_effective": pc.cast(snaps["total_effective"], pa.int64()),
        }
    )
    lg.register("snapshots", snapshots)
    group, label = _GROUPS[freq]
    by_name = {m.name: m for m in MEASURES}
    sql = _PERIODS_SQL.format(
        totals=", ".join(f"{by_name[n].total} AS {n}" for n in _NEEDED),
        money="DECIMAL(38, 8)",
        token=TOKEN_USD,
        group=group,
        label=label,
        baseline=BASELINE,
        explained=EXPLAINED,
        unexplained=UNEXPLAINED,
    )
    return _schema.to_frame(lg.arrow(sql).cast(RECONCILE))


def reconcile(tasks: object, balances: object, *, freq: str | None = None) -> pd.DataFrame:
    """Balance spent per period beside the ledger's billed + estimated cost (columns:
    :data:`RECONCILE`).

    ``tasks``: a tasks frame or table whose ``seen_at`` a ``LedgerStore`` set (or anything
    ``engine.open_ledger`` reads); ``balances``: its snapshots (``LedgerStore.balances()``).
    ``freq``: None (one row per period between consecutive snapshots), ``"day"`` or
    ``"month"`` (periods summed by the UTC day or month of their later snapshot; the
    baseline stays its own row).
    """
    if freq not in FREQS:
        raise ValueError(f"freq: one of None, 'day', 'month', got {freq!r}")
    snaps = _snapshots(balances)
    if snaps.num_rows == 0:
        return _schema.to_frame(RECONCILE.empty_table())
    with open_ledger(tasks) as lg:
        return reconcile_on(lg, snaps, freq=freq)


def reconcile_store(store: LedgerStore, *, freq: str | None = None) -> pd.DataFrame:
    """:func:`reconcile` of a ``LedgerStore``: its month files read in place by the engine
    (as the report reads them) beside its balance snapshots; nothing is read when there is
    no snapshot."""
    if freq not in FREQS:
        raise ValueError(f"freq: one of None, 'day', 'month', got {freq!r}")
    snaps = _snapshots(store.balance_table())
    if snaps.num_rows == 0:
        return _schema.to_frame(RECONCILE.empty_table())
    with open_ledger(store) as lg:
        return reconcile_on(lg, snaps, freq=freq)
