"""``df.songlab``: the ledger operations on a tasks frame, as a pandas accessor.

The accessor checks in ``__init__`` that the frame has the tasks columns
(``AttributeError`` naming the missing ones), never mutates the frame, and
returns new frames or exact ``Decimal`` totals.
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal

import pandas as pd
import pyarrow.compute as pc

import songlab.ledger._schema as _schema
from songlab.ledger.spend import as_table, spend, top_level
from songlab.ledger.tiers import tier_comparison
from songlab.ledger.trace import trace_frame

__all__ = ["SonglabAccessor"]


@pd.api.extensions.register_dataframe_accessor("songlab")
class SonglabAccessor:
    """Ledger operations on a tasks frame (the output of ``songlab.ledger.tasks_frame``)."""

    REQUIRED = tuple(_schema.TASKS.names)

    def __init__(self, frame: pd.DataFrame) -> None:
        missing = [c for c in self.REQUIRED if c not in frame.columns]
        if missing:
            raise AttributeError(
                f"df.songlab needs a tasks frame; missing column(s): {', '.join(missing)}"
            )
        self._frame = frame

    def total(self, column: str = "cost_usd") -> Decimal:
        """The exact sum of a money column over top-level tasks (see ``spend``)."""
        if column not in ("cost_usd", "billed_usd", "estimate_usd"):
            raise ValueError(
                f"column: must be cost_usd, billed_usd or estimate_usd, got {column!r}"
            )
        value = pc.sum(top_level(as_table(self._frame))[column]).as_py()
        return Decimal(0) if value is None else Decimal(value)

    def spend(self, by: str | Sequence[str] = ("operation",)) -> pd.DataFrame:
        return spend(self._frame, by)

    def tier_comparison(self, by: str | Sequence[str] = ()) -> pd.DataFrame:
        return tier_comparison(self._frame, by)

    def agent_trace(self) -> pd.DataFrame:
        return trace_frame(self._frame)
