"""songlab.ledger: pandas/pyarrow frames a finance person can trust.

- :func:`tasks_frame`: one row per task (billed cost, list-price estimate, which one counts):
  the service first, the client's record second, each fact with its ``*_source``;
- :func:`trace_frame`: one row per Agent One step, plus each run's own fee;
- :func:`spend`: totals by operation, model, tier, day, ... with counts;
- :func:`tier_comparison`: the same tasks priced in all five license tiers;
- ``songlab.ledger.engine``: the one relation every figure above (and the report, the
  exports and the cost panel) is a query of, on DuckDB (:func:`open_ledger`);
- :class:`LedgerStore`: a month-partitioned Parquet dataset, refreshed incrementally,
  joined with the client's record (``songlab.client.RecordStore``: project, tags, key and
  the facts the service does not show), with a balance snapshot per refresh;
- ``songlab.ledger.reconcile``: balance spent beside billed + estimated, per period;
- :func:`attribution` / :func:`set_default_attribution`: label creates (never sent);
- ``songlab.ledger.periods``: periods, roll-ups, forecast, budgets; ``export``: CSV, Excel;
- :func:`batch_frame`: a ``client.batch`` result as a frame, one row per request;
- ``df.songlab``: the accessor on a tasks frame; ``songlab report``: the HTML cost report.

Money is ``decimal128(18, 8)`` (sums ``decimal128(38, 8)``): exact, never a float, and
printed as an amount (``0.00000000``, never ``0E-8``: :class:`MoneyDtype`).
Columns are documented in ``docs/ledger/using.md`` and defined once in ``_schema``.
"""

from __future__ import annotations

import songlab.ledger.accessor as _accessor  # noqa: F401  (registers df.songlab)
from songlab.ledger._parquet import write_parquet
from songlab.ledger._schema import MONEY, MONEY_SUM, TASKS, TRACE, MoneyDtype
from songlab.ledger._source import http_listing
from songlab.ledger.batches import batch_frame
from songlab.ledger.engine import open_ledger, spend
from songlab.ledger.labels import attribution, set_default_attribution
from songlab.ledger.store import LedgerStore, RefreshResult
from songlab.ledger.tasks import tasks_frame, tasks_frame_from_pages, tasks_table
from songlab.ledger.tiers import tier_comparison, tier_prices
from songlab.ledger.trace import trace_frame, trace_rows

__all__ = [
    "LedgerStore",
    "MONEY",
    "MONEY_SUM",
    "MoneyDtype",
    "RefreshResult",
    "TASKS",
    "TRACE",
    "attribution",
    "batch_frame",
    "http_listing",
    "open_ledger",
    "set_default_attribution",
    "spend",
    "tasks_frame",
    "tasks_frame_from_pages",
    "tasks_table",
    "tier_comparison",
    "tier_prices",
    "trace_frame",
    "trace_rows",
    "write_parquet",
]
