"""``df.songlab``: the ledger operations on a tasks frame, as a pandas accessor.

The accessor checks in ``__init__`` that the frame has the tasks columns
(``AttributeError`` naming the missing ones), never mutates the frame, and
returns new frames or exact ``Decimal`` totals: each a query of the ledger engine, the
same the report and the cost panel run.
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal

import pandas as pd

import songlab.ledger._schema as _schema
import songlab.ledger.tiers as tiers
from songlab.ledger.engine import open_ledger
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
        """The exact total of a money measure over top-level tasks (a column of ``spend``):
        ``cost_usd`` (what they cost), ``billed_usd``, ``estimated_usd`` or ``pending_usd``."""
        money = [f.name for f in _schema.SPEND_VALUES if f.name.endswith("_usd")]
        if column not in money:
            raise ValueError(f"column: one of {', '.join(money)}, got {column!r}")
        with open_ledger(self._frame) as lg:
            value: Decimal = lg.totals()[column]
        return value

    def spend(self, by: str | Sequence[str] = ("operation",)) -> pd.DataFrame:
        with open_ledger(self._frame) as lg:
            return lg.spend(by)

    def tier_comparison(self, by: str | Sequence[str] = ()) -> pd.DataFrame:
        with open_ledger(self._frame) as lg:
            return tiers.compare(lg, by)

    def agent_trace(self) -> pd.DataFrame:
        return trace_frame(self._frame)
