"""Every frame a notebook shows reads money to the cent: the display rule songlab registers.

songlab keeps money as exact ``Decimal`` (8 places, as the price list has them), in the
ledger's Arrow decimal columns and in the frames a notebook builds from a task's
``cost_usd``. pandas shows those as ``0.25000000``. :func:`register` gives IPython one rule
for every ``DataFrame`` and ``Series`` a notebook displays (``songlab.connect()`` calls it
in a kernel): a money cell shows to the cent (``0.25``, :func:`songlab.pricing.cents`); an
amount that cents would show as ``0.00`` but is not zero (an Agent One per-token fee) shows
to the hundredth of a cent (``0.0016``), never more. Only the picture changes: the frame,
its exports and its sums keep the exact decimals.

A money cell is a ``Decimal`` in a column of Decimals, or a value of an Arrow decimal
column, whose column name does not say it is a ratio (``pct``, ``percent``, ``share``,
``rate``).
"""

from __future__ import annotations

from decimal import ROUND_HALF_EVEN, Decimal
from typing import Any, Final, cast

import pandas as pd
import pyarrow as pa

from songlab.pricing import cents

__all__ = ["frame_html", "frame_text", "money_formatters", "money_text", "register"]

CENT: Final = Decimal("0.01")
SUB_CENT: Final = Decimal("0.0001")
NOT_MONEY: Final = ("pct", "percent", "share", "rate")
SAMPLE: Final = 1000  # the values that decide whether an object column holds money


def money_text(value: Decimal, /) -> str:
    """An amount as a notebook shows it: to the cent; a non-zero amount under half a cent
    to four places (``0.0016``), and below that ``< 0.0001``."""
    if value == 0 or value.quantize(CENT, ROUND_HALF_EVEN) != 0:
        return cents(value)
    small = value.quantize(SUB_CENT, ROUND_HALF_EVEN)
    if small == 0:
        return "< 0.0001" if value > 0 else "> -0.0001"
    return f"{small.normalize():f}"


def _is_money(column: object, values: pd.Series) -> bool:
    if any(word in str(column).lower() for word in NOT_MONEY):
        return False
    dtype = values.dtype
    if isinstance(dtype, pd.ArrowDtype):
        return bool(pa.types.is_decimal(dtype.pyarrow_dtype))
    if not pd.api.types.is_object_dtype(dtype):
        return False
    # what decides: the first values, an empty cell (a frame's "" for nothing) left out
    present = [
        v for v in values.iloc[:SAMPLE].dropna().tolist() if not (isinstance(v, str) and not v)
    ]
    return bool(present) and all(isinstance(v, Decimal) for v in present)


def _cell(value: object) -> str:
    if isinstance(value, Decimal):
        return money_text(value)
    return "" if _missing(value) else str(value)


def _missing(value: Any) -> bool:  # a cell of any type: pd.isna's own parameter
    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):
        return False


def money_formatters(frame: pd.DataFrame, /) -> dict[Any, Any]:
    """``{column: formatter}`` of ``frame``'s money columns (pandas' ``formatters=``, applied
    only to the rows a display shows, so a frame of millions of rows costs what its 60 do)."""
    return {
        frame.columns[i]: _cell
        for i in range(frame.shape[1])
        if _is_money(frame.columns[i], frame.iloc[:, i])
    }


def frame_text(frame: pd.DataFrame, /) -> str:
    """``frame`` as its repr shows it (pandas' display options), money cells by
    :func:`money_text`."""
    fmts = money_formatters(frame)
    if not fmts or frame.columns.has_duplicates:
        return repr(frame)
    # pandas' own repr options: private, so pandas-stubs leave it out
    from pandas.io.formats.format import get_dataframe_repr_params  # type: ignore[attr-defined]

    text: str = frame.to_string(formatters=fmts, **get_dataframe_repr_params())
    return text


def frame_html(frame: pd.DataFrame, /) -> str | None:
    """``frame`` as its notebook HTML shows it (pandas' ``_repr_html_`` with the same
    options), money cells by :func:`money_text`."""
    fmts = money_formatters(frame)
    # _info_repr and _repr_html_ are pandas' own (private) methods; pandas-stubs read an
    # unknown attribute of a frame as a column
    if not fmts or frame.columns.has_duplicates or frame._info_repr():  # type: ignore[operator]
        html: str | None = frame._repr_html_()  # type: ignore[operator]
        return html
    from pandas.io.formats import format as fmt

    get = pd.get_option
    # pandas' formatter and renderer (what _repr_html_ uses): not in pandas-stubs
    formatter = fmt.DataFrameFormatter(  # type: ignore[attr-defined]
        frame,
        formatters=fmts,
        float_format=get("display.float_format"),
        na_rep="NaN",
        bold_rows=True,
        escape=True,
        max_rows=get("display.max_rows"),
        min_rows=get("display.min_rows"),
        max_cols=get("display.max_columns"),
        show_dimensions=get("display.show_dimensions"),
    )
    shown: str = fmt.DataFrameRenderer(formatter).to_html(notebook=True)  # type: ignore[attr-defined]
    return shown


def _series_text(series: pd.Series) -> str:
    if len(series) > SAMPLE or not _is_money(series.name, series):
        return repr(series)
    return repr(series.astype(object).map(_cell))


def _plain(obj: object, printer: Any, cycle: bool) -> None:  # IPython's pretty printer
    printer.text(
        frame_text(obj) if isinstance(obj, pd.DataFrame) else _series_text(cast(pd.Series, obj))
    )


def register(shell: Any, /) -> None:  # an IPython shell (IPython ships no types)
    """Show money to the cent in every frame ``shell`` (an IPython shell) displays. Calling
    it again changes nothing."""
    formatters = shell.display_formatter.formatters
    formatters["text/plain"].for_type(pd.DataFrame, _plain)
    formatters["text/plain"].for_type(pd.Series, _plain)
    formatters["text/html"].for_type(pd.DataFrame, frame_html)
