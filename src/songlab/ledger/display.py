"""How a ledger table reads to a person: the formatting the HTML report and notebooks share.

- money (a decimal ``*_usd`` column) to the cent, half-even, thousands separated,
  right aligned in tabular figures, so a column's decimal points line up;
- where cents hide part of an amount that matters (Agent One's per-token fees),
  the exact amount beside it, labelled, in the columns asked for;
- timestamps to the second, UTC (the header says so); counts with separators;
- no tier number beside the tier's name; an estimate or unknown-cost column
  only when it holds something.

:func:`finance` gives a notebook a pandas ``Styler`` of a frame; the frame
itself (and every export) keeps the exact decimals.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any, Final

import pandas as pd
import pyarrow as pa

from songlab.pricing import cents  # the one formatter of printed money

__all__ = ["EXACT_LABEL", "cents", "exact", "finance", "is_money", "shown", "text"]

CENT: Final[Decimal] = Decimal("0.01")
EXACT_LABEL: Final[str] = "exact, sub-cent (per-token fees)"
# Columns shown only when one of their values is not zero (or null).
OPTIONAL: Final[tuple[str, ...]] = (
    "estimated_usd",
    "estimated_tasks",
    "unknown_cost_steps",
    "unknown_tasks",
    "pending_tasks",
    "pending_usd",
    "failed_tasks",
)


def exact(value: Decimal) -> str:
    """The exact amount: 2 to 8 decimals (``0.00158225``)."""
    whole, frac = f"{value:,.8f}".split(".")
    return f"{whole}.{frac.rstrip('0').ljust(2, '0')}"


def hidden_by_cents(value: object) -> bool:
    """Whether rounding ``value`` to the cent hides part of it."""
    return isinstance(value, Decimal) and value != value.quantize(CENT)


def text(value: Any) -> str:  # a cell of any type (pd.isna's parameter)
    """A cell's text: money to the cent, times to the second (UTC), counts separated, null
    empty."""
    if value is None or (not isinstance(value, list | tuple) and pd.isna(value)):
        return ""
    if isinstance(value, Decimal):
        return cents(value)
    if isinstance(value, datetime):
        return f"{value.astimezone(UTC):%Y-%m-%d %H:%M:%S}"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return str(value)


def _plain(value: Any) -> str:  # likewise
    """A decimal that is not money (a percentage): as it is."""
    return "" if value is None or pd.isna(value) else f"{value:f}"


def _arrow(frame: pd.DataFrame, column: object) -> pa.DataType | None:
    t = frame[column].dtype
    return t.pyarrow_dtype if isinstance(t, pd.ArrowDtype) else None


def is_decimal(frame: pd.DataFrame, column: object) -> bool:
    t = _arrow(frame, column)
    return t is not None and pa.types.is_decimal(t)


def is_money(frame: pd.DataFrame, column: object) -> bool:
    """A USD amount: a decimal column named ``*_usd`` (``used_pct`` is a decimal too)."""
    return is_decimal(frame, column) and str(column).endswith("_usd")


def is_number(frame: pd.DataFrame, column: object) -> bool:
    t = _arrow(frame, column)
    if t is not None:
        return bool(pa.types.is_integer(t) or pa.types.is_decimal(t))
    return bool(pd.api.types.is_integer_dtype(frame[column].dtype))


def is_time(frame: pd.DataFrame, column: object) -> bool:
    t = _arrow(frame, column)
    return t is not None and pa.types.is_timestamp(t)


def shown(frame: pd.DataFrame) -> pd.DataFrame:
    """The columns a reader needs: no tier number beside its name, and the estimate and
    unknown-cost columns only when they hold something."""
    drop = [c for c in ("license",) if c in frame.columns and "tier" in frame.columns]
    for c in OPTIONAL:
        if c in frame.columns:
            values = [v for v in frame[c].tolist() if v is not None and not pd.isna(v)]
            if not any(values):
                drop.append(c)
    return frame.drop(columns=drop)


def header(frame: pd.DataFrame, column: object) -> str:
    return f"{column} (UTC)" if is_time(frame, column) else str(column)


def finance(
    frame: pd.DataFrame, *, exact_columns: Sequence[str] = (), max_rows: int | None = 200
) -> object:
    """A notebook's view of a ledger table (a ``pandas.io.formats.style.Styler``): money to the
    cent and right aligned, the exact amount beside ``exact_columns`` where cents hide part
    of it, timestamps to the second (UTC), no duplicate tier number, the estimate and
    unknown-cost columns only when they hold something. ``frame`` is not changed."""
    view = shown(frame)
    if max_rows is not None:
        view = view.head(max_rows)
    for c in exact_columns:
        if c in view.columns:
            view = view.assign(
                **{
                    f"{c} ({EXACT_LABEL})": [
                        exact(v) if hidden_by_cents(v) else "" for v in view[c].tolist()
                    ]
                }
            )
    view = view.rename(columns={c: header(view, c) for c in view.columns if is_time(view, c)})
    formats: dict[Hashable, str | Callable[[object], str] | None] = {
        c: text if is_money(view, c) or not is_decimal(view, c) else _plain for c in view.columns
    }
    right: list[Hashable] = [
        c for c in view.columns if is_number(view, c) or str(c).endswith(f"({EXACT_LABEL})")
    ]
    styler = view.reset_index(drop=True).style
    styler.set_uuid("songlab")  # the same HTML on every run (no random element ids)
    return (
        styler.format(formats)
        .hide(axis="index")
        .set_properties(
            subset=right, **{"text-align": "right", "font-variant-numeric": "tabular-nums"}
        )
    )
