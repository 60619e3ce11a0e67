"""The report's summary table: the period's counts and totals, then the month's facts and forecast.

One row per figure (``item``, ``count``, ``amount_usd`` exact, ``note``). A rate is shown
with the stated figures it is made of (``songlab.ledger.derived``), so the table and the page
it is on divide the same way. Tasks of unknown cost are counted, never summed as 0; tasks
whose snapshot shows no creation time are counted under "date unknown".
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Any, Final

import pandas as pd
import pyarrow as pa

import songlab.ledger._schema as _schema
import songlab.ledger.derived as derived
from songlab.ledger.dates import Period
from songlab.ledger.month import Forecast, elapsed_text

__all__ = ["DATE_UNKNOWN", "summary"]

DATE_UNKNOWN: Final[str] = "date unknown"
Row = tuple[str, int | None, Decimal | None, str]


def _period_rows(p: Period, f: Mapping[str, Any]) -> list[Row]:
    rows: list[Row] = [
        ("period", None, None, p.label),
        (
            "tasks in the period",
            f["tasks"],
            None,
            "top-level; Agent One sub-tasks count in their run",
        ),
        ("spent in the period", None, f["spend"], "tasks of known cost, exact"),
        ("billed by the service", f["billed_tasks"], f["billed"], ""),
        (
            "of which estimated",
            f["estimated_tasks"],
            f["estimated"],
            "completed tasks the service shows no cost for, at list price",
        ),
        ("tasks of unknown cost", f["unknown_tasks"], None, "not summed: their cost is unknown"),
        (
            "tasks still running",
            f["pending_tasks"],
            f["pending"],
            "queued or processing: nothing spent yet (their list price, not in the spend)",
        ),
        ("failed tasks (released, not billed)", f["failed"], None, ""),
    ]
    if f["undated_tasks"]:
        rows.append(
            (
                f"{DATE_UNKNOWN} (in the period's totals)",
                f["undated_tasks"],
                f["undated"],
                "snapshots that show no created_at",
            )
        )
    if f["undated_outside_tasks"]:
        rows.append(
            (
                f"{DATE_UNKNOWN} (outside any dated period)",
                f["undated_outside_tasks"],
                f["undated_outside"],
                "not in this period's totals",
            )
        )
    return rows


def _month_rows(fc: Forecast) -> list[Row]:
    """The month's facts and forecast; each rate with the stated figures it is made of."""
    mtd, last7 = derived.stated_usd(fc.month_to_date_usd), derived.stated_usd(fc.trailing_7d_usd)
    days = elapsed_text(fc.days_elapsed)
    rate_note = (
        f"${mtd:,} month to date / {days} elapsed"
        if fc.run_rate_usd_per_day is not None
        else "no rate yet: under 0.01 day of the month elapsed"
    )
    return [
        (
            f"month to date ({fc.month})",
            None,
            fc.month_to_date_usd,
            f"as of {fc.as_of:%Y-%m-%d %H:%M:%S} UTC; {derived.stated_days(fc.days_elapsed)} of "
            f"{fc.days_in_month} days elapsed",
        ),
        ("run rate per day", None, fc.run_rate_usd_per_day, rate_note),
        ("spent in the 7 days to the as-of time", None, fc.trailing_7d_usd, ""),
        ("trailing 7 days, per day", None, fc.trailing_7d_usd_per_day, f"${last7:,} / 7 days"),
        (f"forecast for {fc.month}", None, fc.forecast_usd, f"{fc.method}; {fc.interval_text()}"),
    ]


def summary(p: Period, fc: Forecast, figures: Mapping[str, Any]) -> pd.DataFrame:
    """The summary table of the period ``p`` (its ``figures``) and the month ``fc``."""
    rows = _period_rows(p, figures) + _month_rows(fc)
    return pd.DataFrame(
        {
            "item": _schema.arrow_array([r[0] for r in rows], dtype=pd.ArrowDtype(pa.string())),
            "count": _schema.arrow_array([r[1] for r in rows], dtype=pd.ArrowDtype(pa.int64())),
            "amount_usd": _schema.arrow_array(
                [r[2] for r in rows], dtype=_schema.MoneyDtype(_schema.MONEY_SUM)
            ),
            "note": _schema.arrow_array([r[3] for r in rows], dtype=pd.ArrowDtype(pa.string())),
        }
    )
