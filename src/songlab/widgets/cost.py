"""The cost panel: balance, spend by tier and by operation, and the tier comparison plot.

Every figure here is a query of the ledger engine (``songlab.ledger.engine``), the same
the notebook's ``ledger.spend`` and the HTML report run, over the account's tasks frame
(``tasks_frame``); the panel only lays them out. Amounts stay ``Decimal`` until they are
printed, to the cent; the estimate and unknown counts are shown beside the total.
``refresh()`` (or the button) re-reads the account's tasks; the status line says how the
last refresh went (an error in a person's words, its detail one click away), and a failed
refresh leaves the figures of the last good one, named as such.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import ipywidgets as W
import pandas as pd

import songlab.ledger as ledger
from songlab.ledger import display, tiers
from songlab.ledger import plots as ledger_plots
from songlab.widgets._status import Status, from_error, render

__all__ = ["CostPanel"]

_SHOWN = ["tasks", "cost_usd", "billed_usd", "estimated_tasks", "estimated_usd", "unknown_tasks"]


def _money_table(frame: pd.DataFrame, keys: list[str]) -> str:
    if frame.empty:
        return "<i>no tasks yet</i>"
    shown = display.shown(frame[[*keys, *_SHOWN]])
    cells = {c: [display.text(v) for v in shown[c].tolist()] for c in shown.columns}
    table: str = pd.DataFrame(cells).to_html(index=False, border=0)
    return table


class CostPanel(W.VBox):
    """Balance and spend of the client's account, from the ledger; ``refresh()`` to update."""

    def __init__(self, client: Any, *, refresh: bool = True) -> None:
        self.client = client
        self.status = Status("")
        self.status_line = W.HTML()
        self.errors: list[str] = []  # every error status shown, in order
        self.balance = W.HTML()
        self.total = W.HTML()
        self.by_tier_html = W.HTML()
        self.by_operation_html = W.HTML()
        self.plot = W.Image(format="png", layout=W.Layout(max_width="36em"))
        self.refresh_button = W.Button(description="Refresh", icon="refresh")
        self.refresh_button.on_click(lambda _: self._refresh_pressed())
        self.frame: pd.DataFrame | None = None
        self.by_tier: pd.DataFrame | None = None
        self.by_operation: pd.DataFrame | None = None
        self.totals: dict[str, Any] = {}
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
                self.status_line,
            ]
        )
        if refresh:
            self._refresh_pressed()

    def _say(self, status: Status) -> None:
        self.status = status
        if status.tone == "error":
            self.errors.append(status.text)
        self.status_line.value = render(status)

    def _refresh_pressed(self) -> None:
        """*Refresh*: its outcome is the status; a failure keeps the last figures, said so."""
        try:
            self.refresh()
        except Exception as exc:  # noqa: BLE001 - a refresh's error is shown in the panel
            failed = from_error("refresh", exc)
            kept = " The figures below are from the last refresh." if self.frame is not None else ""
            self._say(Status("refresh", failed.text + kept, "error", failed.detail, True))

    def refresh(self) -> None:
        """Re-read the balance and the account's tasks; redraw tables and plot."""
        bal = self.client.account.balance()
        self.balance_usd = bal.total_usd
        self.balance.value = (
            f"<b>Balance: ${display.cents(self.balance_usd)}</b> "
            f"({bal.total_effective:,} tokens: {bal.base_effective:,} base + "
            f"{bal.extra_tokens:,} extra)"
        )
        self.show(ledger.tasks_frame(self.client))
        self._say(Status("refresh", "up to date", "ok"))

    def show(self, frame: pd.DataFrame) -> None:
        """Lay out the figures of a tasks frame (what :meth:`refresh` does with the account's)."""
        self.frame = frame
        with ledger.open_ledger(frame) as lg:  # one relation: every figure below reads it
            self.by_tier = lg.spend(["tier"])
            self.by_operation = lg.spend(["operation", "model"])
            totals = lg.totals()
            comparison = tiers.compare(lg)
        self.totals = totals
        self.total_usd = totals["cost_usd"]
        est, unknown = totals["estimated_tasks"], totals["unknown_tasks"]
        notes = []
        if est:
            notes.append(
                f"{est:,} at list-price estimates (${display.cents(totals['estimated_usd'])})"
            )
        if unknown:
            notes.append(f"{unknown:,} of unknown cost, not included")
        if totals["pending_tasks"]:
            notes.append(f"{totals['pending_tasks']:,} still running")
        self.total.value = (
            f"Spent: <b>${display.cents(self.total_usd)}</b> on {totals['tasks']:,} "
            f"task{'' if totals['tasks'] == 1 else 's'}"
            + (f" ({'; '.join(notes)})" if notes else "")
        )
        self.by_tier_html.value = _money_table(self.by_tier, ["tier"])
        self.by_operation_html.value = _money_table(self.by_operation, ["operation", "model"])
        self.plot.value = ledger_plots.png_bytes(
            ledger_plots.tier_comparison_plot(comparison), dpi=80
        )
