"""Amounts of money as people type them (a budget, a threshold): one rule, one message.

:func:`usd_amount` reads ``"120.50"``, ``500`` or ``Decimal("1e3")`` as an exact ``Decimal``
and refuses, with a ``ValueError`` that states the rule, anything else: a float (not exact),
a bool, text that is not a number, NaN or infinity, more than 8 decimals (the price list's),
a negative amount, and an amount over :data:`MAX_USD`, so every figure made from it fits
the ledger's ``DECIMAL(38, 8)`` columns and Decimal's 28 digits. The budgets file
(``songlab.ledger.budgets``) and the short form (``--budget 500``, ``periods.parse_budgets``)
both read through it. :func:`shown` echoes a bad value in an error: short, one line.
"""

from __future__ import annotations

import reprlib
from decimal import Decimal, InvalidOperation
from typing import Final

__all__ = ["MAX_USD", "PLACES", "shown", "usd_amount"]

MAX_USD: Final[Decimal] = Decimal("1000000000000")  # a trillion dollars: 13 digits and 8 places
PLACES: Final[Decimal] = Decimal("0.00000001")  # 8 decimals, the price list's

_REPR = reprlib.Repr()
_REPR.maxstring = 40
_REPR.maxother = 40
_REPR.maxlong = 40
_REPR.maxlevel = 2
_REPR.maxlist = _REPR.maxdict = _REPR.maxtuple = 4


def shown(value: object) -> str:
    """``value`` as an error message repeats it: its ``repr``, at most about 40 characters
    (a 10 MB string, a 5,000-digit number or a list nested 1,000 deep stays one short line;
    control characters are escaped by ``repr``)."""
    try:
        return _REPR.repr(value)
    except (RecursionError, ValueError):  # a list too deep to repr, an int too long to print
        return f"<{type(value).__name__}>"


def usd_amount(value: object) -> Decimal:
    """``value`` as an exact amount in USD (the rule above), or a ``ValueError`` saying it."""
    if isinstance(value, float):
        raise ValueError(
            f'an amount in USD as text or a whole number, like "120.50" or 500, got '
            f"{shown(value)} (a float is not exact)"
        )
    if isinstance(value, bool) or not isinstance(value, str | int | Decimal):
        raise ValueError(f'an amount in USD like "120.50" or 500, got {shown(value)}')
    if isinstance(value, int) and abs(value) > MAX_USD:  # before it is made text (5,000 digits)
        raise ValueError(f"at most ${MAX_USD:,} (a trillion), got {shown(value)}")
    try:
        amount = value if isinstance(value, Decimal) else Decimal(_digits(value))
    except (InvalidOperation, ValueError):
        raise ValueError(f'an amount in USD like "120.50", got {shown(value)}') from None
    if not amount.is_finite():
        raise ValueError(f'a finite amount in USD like "120.50", got {shown(value)}')
    if amount < 0:
        raise ValueError(f"a non-negative amount, got {shown(value)}")
    if amount > MAX_USD:
        raise ValueError(f"at most ${MAX_USD:,} (a trillion), got {shown(value)}")
    if amount != amount.quantize(PLACES):  # safe now: at most 13 digits before the point
        raise ValueError(f"at most 8 decimals (the price list's), got {shown(value)}")
    return Decimal(f"{amount.copy_abs() if amount == 0 else amount:f}")  # 1E+3 as 1000


def _digits(value: str | int) -> str:
    if isinstance(value, int):
        return str(value)
    text = value.strip().replace("_", "")
    if len(text) > 64:  # no amount this file accepts is longer; Decimal would parse it slowly
        raise ValueError("too long")
    return text
