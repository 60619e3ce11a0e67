"""Figures derived from other figures on the same page, computed from them as the page states them.

A rate, a share, a percentage or a number of days elapsed is shown beside its inputs
("run rate $0.68 a day: $9.28 over 13.59 days"). Computed from the exact inputs instead, it
can disagree with the figures a reader sees: $9.28 month to date over "13 days" is not $0.68
a day. So every derived figure here is made from its inputs **as stated**: money to the cent
(half-even, as ``pricing.cents`` prints it), days to the hundredth; the result is kept to 8
places (the exports show it so) and printed to the cent or the tenth of a percent. A reader
with a calculator gets the number on the page from the numbers beside it, and the exports
carry that same number.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from decimal import ROUND_HALF_EVEN, Decimal
from typing import Final

__all__ = [
    "CENT",
    "DAY",
    "PERCENT",
    "days_between",
    "per_day",
    "percent_of",
    "stated_days",
    "stated_usd",
]

CENT: Final[Decimal] = Decimal("0.01")  # money as stated
DAY: Final[Decimal] = Decimal("0.01")  # days as stated
PERCENT: Final[Decimal] = Decimal("0.1")  # a percentage as stated
_PLACES: Final[Decimal] = Decimal("0.00000001")  # what a derived amount is kept to
_US_PER_DAY: Final[Decimal] = Decimal(86_400_000_000)


def stated_usd(amount: Decimal) -> Decimal:
    """``amount`` as the page states it: to the cent, half-even."""
    return amount.quantize(CENT, ROUND_HALF_EVEN)


def stated_days(days: Decimal) -> Decimal:
    """A number of days as the page states it: to the hundredth (``13.59``)."""
    return days.quantize(DAY, ROUND_HALF_EVEN)


def days_between(start: datetime, end: datetime) -> Decimal:
    """The days from ``start`` to ``end`` as stated (to the hundredth; from the microseconds)."""
    return stated_days(Decimal((end - start) // timedelta(microseconds=1)) / _US_PER_DAY)


def per_day(amount: Decimal, days: Decimal) -> Decimal | None:
    """``amount`` over ``days``, both as stated: the stated amount divided by the stated days,
    kept to 8 places; None when the stated days are 0 (no rate yet)."""
    d = stated_days(days)
    if d <= 0:
        return None
    return (stated_usd(amount) / d).quantize(_PLACES, ROUND_HALF_EVEN)


def percent_of(part: Decimal, whole: Decimal) -> Decimal | None:
    """``part`` as a percentage of ``whole``, both as stated (to the cent), to the tenth of a
    percent; None when the stated whole is 0."""
    w = stated_usd(whole)
    if w == 0:
        return None
    return (stated_usd(part) / w * 100).quantize(PERCENT, ROUND_HALF_EVEN)
