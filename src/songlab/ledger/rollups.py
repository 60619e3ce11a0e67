"""Spend over time: per day, week (from Monday) or month, every period of the range present.

:func:`rollup_on` groups a ``Ledger``'s spend by period (and, optionally, one more key) with
the engine (the cube once it is made), then fills the periods nothing was spent in with 0
(per value of the key too), puts the tasks of unknown date last, and adds the running total.
:func:`rollup` is the same on a tasks frame.
"""

from __future__ import annotations

from datetime import date
from decimal import Decimal
from typing import Any

import pandas as pd
import pyarrow as pa

import songlab.ledger._schema as _schema
from songlab.ledger.dates import FREQS, Period, period_starts
from songlab.ledger.engine import Ledger, open_ledger
from songlab.ledger.relation import MEASURE_NAMES, MEASURES

__all__ = ["rollup", "rollup_on"]


def rollup_on(
    lg: Ledger, freq: str = "day", *, by: str | None = None, p: Period | None = None
) -> pd.DataFrame:
    """Spend per ``freq`` (day, week starting Monday, month) of ``p``, optionally per
    ``by``: every period of the range present (0 where nothing was spent, per ``by``
    value too), then one row of unknown date (``period`` null) if any task has none
    and ``p`` is all time. Columns: ``period`` (its first day), ``by``, the measures,
    ``cumulative_usd`` (running total of ``cost_usd``, per ``by`` value)."""
    if freq not in FREQS:
        raise ValueError(f"freq: one of {', '.join(FREQS)}, got {freq!r}")
    g = lg.spend([freq, *([by] if by else [])], p=p)
    if freq == "month":
        g[freq] = _schema.arrow_array(
            [None if m is None or pd.isna(m) else date.fromisoformat(f"{m}-01") for m in g[freq]],
            dtype=pd.ArrowDtype(pa.date32()),
        )
    g2 = g.assign(_by=g[by] if by else None).rename(columns={freq: "period"})
    merged = _every_period(g2, _range(g2, p), freq, by)
    undated = g2[g2["period"].isna()]
    if len(undated):
        merged = pd.concat([merged, undated[merged.columns]], ignore_index=True)
    merged = _typed(merged)
    merged = merged.rename(columns={"_by": by}) if by else merged.drop(columns="_by")
    return _running(merged, by)


def _range(g: pd.DataFrame, p: Period | None) -> tuple[date | None, date | None]:
    """The first and last day the periods cover: ``p``'s, else the data's."""
    if p is not None and p.start and p.end:
        return p.start, p.end
    dated = g[g["period"].notna()]
    if not len(dated):
        return None, None
    lo = (p.start if p is not None and p.start else None) or min(dated["period"].tolist())
    hi = (p.end if p is not None and p.end else None) or max(dated["period"].tolist())
    return lo, hi


def _every_period(
    g: pd.DataFrame, bounds: tuple[date | None, date | None], freq: str, by: str | None
) -> pd.DataFrame:
    """The dated rows, reindexed on every period of ``bounds`` (and every value of ``by``)."""
    lo, hi = bounds
    starts = period_starts(lo, hi, freq) if lo and hi else []
    groups: list[object] = [None]
    if by:
        groups = sorted(g[by].dropna().unique().tolist())
        if g[by].isna().any():
            groups.append(None)
    index = pd.MultiIndex.from_product([starts, groups], names=["period", "_by"])
    return (
        g[g["period"].notna()]
        .set_index(["period", "_by"])[list(MEASURE_NAMES)]
        .reindex(index)
        .reset_index()
    )


def _typed(merged: pd.DataFrame) -> pd.DataFrame:
    """Money as exact decimals (0 where nothing was spent), counts as integers."""
    for m in MEASURES:
        if m.money:
            merged[m.name] = _schema.arrow_array(
                [Decimal(0) if v is None or pd.isna(v) else v for v in merged[m.name].tolist()],
                dtype=_schema.MoneyDtype(_schema.MONEY_SUM),
            )
        else:
            merged[m.name] = merged[m.name].fillna(0).astype(pd.ArrowDtype(pa.int64()))
    merged["period"] = merged["period"].astype(pd.ArrowDtype(pa.date32()))
    return merged


def _running(merged: pd.DataFrame, by: str | None) -> pd.DataFrame:
    """``cumulative_usd``: the running total of ``cost_usd`` (per value of ``by``)."""
    running: dict[Any, Decimal] = {}
    cum = []
    keys = merged[by].tolist() if by else [None] * len(merged)
    for k, v in zip(keys, merged["cost_usd"].tolist(), strict=True):
        running[k] = running.get(k, Decimal(0)) + v
        cum.append(running[k])
    merged["cumulative_usd"] = _schema.arrow_array(cum, dtype=_schema.MoneyDtype(_schema.MONEY_SUM))
    return merged


def rollup(
    tasks: object, freq: str = "day", *, by: str | None = None, p: Period | None = None
) -> pd.DataFrame:
    """Spend per ``freq`` of a tasks frame (:func:`rollup_on`)."""
    with open_ledger(tasks) as lg:
        return rollup_on(lg, freq, by=by, p=p)
