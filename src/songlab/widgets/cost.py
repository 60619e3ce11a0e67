"""The cost panel: balance, spend by tier and by operation, and the tier comparison plot.

Everything here comes from :mod:`songlab.ledger` (``tasks_frame``, ``spend``,
``plots.tier_comparison_plot``) and the account balance; the panel only lays
them out. Amounts stay ``Decimal`` until they are printed. ``refresh()`` (or
the button) re-reads the account's tasks.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import ipywidgets as W
import pandas as pd

import songlab.ledger as ledger
from songlab.ledger import plots as ledger_plots
from songlab.widgets._gate import format_price
from songlab.widgets._ui import ErrorSink

__all__ = ["CostPanel"]

_SHOWN = ["tasks", "billed_tasks", "cost_usd", "billed_usd", "estimated_usd"]


def _money_table(frame: pd.DataFrame, keys: list[str]) -> str:
    if frame.empty:
        return "<i>no tasks yet</i>"
    shown = frame[[*keys, *_SHOWN]].copy()
    for col in ("cost_usd", "billed_usd", "estimated_usd"):
        shown[col] = [
            format_price(Decimal(str(v))) if v is not None and not pd.isna(v) else "-"
            for v in shown[col].tolist()
        ]
    table: str = shown.to_html(index=False, border=0)
    return table


class CostPanel(W.VBox):
    """Balance and spend of the client's account, from the ledger; ``refresh()`` to update."""

    def __init__(self, client: Any, *, refresh: bool = True) -> None:
        self.client = client
        self.sink = ErrorSink()
        self.balance = W.HTML()
        self.total = W.HTML()
        self.by_tier_html = W.HTML()
        self.by_operation_html = W.HTML()
        self.plot = W.Image(format="png", layout=W.Layout(max_width="36em"))
        self.refresh_button = W.Button(description="Refresh", icon="refresh")
        self.refresh_button.on_click(self.sink.guard(lambda _: self.refresh(), context="refresh"))
        self.frame: pd.DataFrame | None = None
        self.by_tier: pd.DataFrame | None = None
        self.by_operation: pd.DataFrame | None = None
        self.total_usd: Decimal | None = None
        self.balance_usd: Decimal | None = None
        super().__init__(
            children=[
                W.HBox([self.balance, self.refresh_button]),
                self.total,
                W.HBox(
                    [
                        W.VBox([W.HTML("<b>Spend by tier</b>"), self.by_tier_html]),
                        W.VBox([W.HTML("<b>Spend by operation</b>"), self.by_operation_html]),
                    ]
                ),
                self.plot,
                self.sink.line,
                self.sink.log,
            ]
        )
        if refresh:
            self.sink.guard(self.refresh, context="refresh")()

    def refresh(self) -> None:
        """Re-read the balance and the account's tasks; redraw tables and plot."""
        bal = self.client.account.balance()
        self.balance_usd = bal.total_usd
        self.balance.value = (
            f"<b>Balance: {format_price(self.balance_usd)}</b> "
            f"({bal.total_effective:,} tokens: {bal.base_effective:,} base + "
            f"{bal.extra_tokens:,} extra)"
        )
        frame = ledger.tasks_frame(self.client)
        self.frame = frame
        self.by_tier = ledger.spend(frame, ["license", "tier"])
        self.by_operation = ledger.spend(frame, ["operation", "model"])
        grand = ledger.spend(frame, ())
        self.total_usd = Decimal(str(grand["cost_usd"].iloc[0])) if len(grand) else Decimal(0)
        count = int(grand["tasks"].iloc[0]) if len(grand) else 0
        self.total.value = f"Spent: <b>{format_price(self.total_usd)}</b> on {count} tasks"
        self.by_tier_html.value = _money_table(self.by_tier, ["tier"])
        self.by_operation_html.value = _money_table(self.by_operation, ["operation", "model"])
        self.plot.value = ledger_plots.png_bytes(ledger_plots.tier_comparison_plot(frame), dpi=80)
        self.sink.info("up to date", "ok")
