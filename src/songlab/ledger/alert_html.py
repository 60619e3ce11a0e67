"""The alerts as an HTML block: what notebook 03 and the HTML report open with."""

from __future__ import annotations

import html
from collections.abc import Sequence
from datetime import datetime
from typing import Final

from songlab.ledger.alerts import Alert

__all__ = ["alerts_html"]

# The background of an alert's line, by state.
COLOURS: Final[dict[str, str]] = {
    "over": "#fdd",
    "runs out": "#fdd",
    "forecast over": "#fdd",
    "anomaly": "#ffe0cc",
    "expiring": "#ffe9b3",
    "near": "#ffe9b3",
}


def _item(a: Alert) -> str:
    return (
        f'<li style="background:{COLOURS.get(a.state, "#eee")};padding:0.25em 0.6em;'
        f'margin:0.15em 0;list-style:none"><b>{html.escape(a.state.upper())}</b> '
        f"{html.escape(a.subject)}: {html.escape(a.text)}; since "
        f"{a.since:%Y-%m-%d %H:%M} UTC</li>"
    )


def alerts_html(alerts: Sequence[Alert], *, as_of: datetime, notes: Sequence[str] = ()) -> str:
    """The alerts as an HTML block (inline styles: it stands alone in a notebook or a report)."""
    head = (
        f'<div class="songlab-alerts" style="margin:0.5em 0 1em">'
        f'<p style="margin:0 0 0.3em;font-weight:bold">Alerts as of '
        f"{as_of:%Y-%m-%d %H:%M:%S} UTC</p>"
    )
    if not alerts:
        body = '<p style="margin:0;padding:0.3em 0.6em;background:#e3f5e3">No active alerts.</p>'
    else:
        body = f'<ul style="margin:0;padding:0">{"".join(_item(a) for a in alerts)}</ul>'
    extra = "".join(
        f'<p style="margin:0.2em 0;color:#666;font-size:0.85em">{html.escape(n)}</p>' for n in notes
    )
    return head + body + extra + "</div>"
