"""``songlab report``: a self-contained HTML cost report (tables + embedded PNG plots).

``songlab report --out PATH [--demo] [--ledger DIR] [--speed X]`` connects
with ``songlab.connect()`` (the real service when ``SONGLAB_API_KEY`` and
``SONGLAB_BASE_URL`` are set, else the local sandbox's demo account), builds
the ledger frames from the task listing and writes one HTML file with no
external references. ``--demo`` first runs a mixed workload; ``--ledger`` keeps
the tasks in a Parquet ledger and refreshes it incrementally.
"""

from __future__ import annotations

import argparse
import base64
import html
import os
import sys
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pandas as pd

from songlab.ledger import plots
from songlab.ledger.spend import spend
from songlab.ledger.tasks import tasks_frame
from songlab.ledger.tiers import tier_comparison
from songlab.ledger.trace import trace_frame

__all__ = ["main", "render_html", "write_report"]

_CSS = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; font-size: 0.85em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
th { background: #f3f3f3; }
img { max-width: 100%; }
.note { color: #666; font-size: 0.85em; }
"""


def _cell(value: Any) -> str:
    if value is None or (not isinstance(value, list | tuple) and pd.isna(value)):
        return ""
    if isinstance(value, Decimal):
        return _money(value)
    return str(value)


def _money(value: Decimal) -> str:
    """Exact text of an amount: thousands separated, 2 to 8 decimals (``1,234.50``, ``0.00158225``)."""
    whole, frac = f"{value:,.8f}".split(".")
    return f"{whole}.{frac.rstrip('0').ljust(2, '0')}"


def _table(frame: pd.DataFrame, *, max_rows: int = 200) -> str:
    """An HTML table of ``frame`` with money as exact decimal text (never a float)."""
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in frame.columns)
    rows = []
    for record in frame.head(max_rows).itertuples(index=False):
        cells = []
        for v in record:
            num = isinstance(v, Decimal | int) and not isinstance(v, bool)
            cls = ' class="num"' if num else ""
            cells.append(f"<td{cls}>{html.escape(_cell(v))}</td>")
        rows.append("<tr>" + "".join(cells) + "</tr>")
    more = ""
    if len(frame) > max_rows:
        more = f'<p class="note">{len(frame) - max_rows} more rows not shown.</p>'
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>{more}"


def _img(fig: Any, alt: str) -> str:
    data = base64.b64encode(plots.png_bytes(fig)).decode("ascii")
    return f'<img alt="{html.escape(alt)}" src="data:image/png;base64,{data}">'


def render_html(
    tasks: pd.DataFrame, trace: pd.DataFrame, *, title: str = "songlab cost report"
) -> str:
    """The report as one HTML document (plots embedded as base64 PNG)."""
    total = tasks.songlab.total()
    billed = tasks.songlab.total("billed_usd")
    counts = tasks["cost_source"].value_counts().to_dict()
    comp = tier_comparison(tasks)
    subs = int(tasks["parent_task_id"].notna().sum())
    summary = (
        f"<p>{len(tasks) - subs} tasks (plus {subs} sub-tool tasks of Agent One runs, counted "
        f"inside their run); total cost <b>${_cell(total)}</b> "
        f"(billed by the service: ${_cell(billed)}). Rows by cost source: "
        + ", ".join(f"{k}: {v}" for k, v in sorted(counts.items()))
        + ".</p>"
    )
    recent = tasks[
        ["created_at", "task_id", "operation", "model", "tier", "status", "cost_usd", "cost_source"]
    ]
    sections = [
        f"<h1>{html.escape(title)}</h1>",
        f'<p class="note">Generated {datetime.now(UTC):%Y-%m-%d %H:%M} UTC. Money in USD, exact '
        "decimals (the price list has up to 8).</p>",
        summary,
        "<h2>Spend by operation</h2>",
        _table(spend(tasks, "operation")),
        "<h2>Spend by model and tier</h2>",
        _table(spend(tasks, ["model", "tier"])),
        "<h2>Spend over time</h2>",
        _img(plots.spend_over_time(tasks), "spend over time by operation"),
        _table(spend(tasks, "day")),
        "<h2>Spend by license tier</h2>",
        _img(plots.spend_by_tier(tasks), "spend by license tier"),
        "<h2>Tier comparison</h2>",
        f'<p class="note">The {int(comp["tasks"].iloc[0]) if len(comp) else 0} billed tasks that '
        f"have a list price in every tier, priced in each ({comp.attrs.get('excluded_tasks', 0)} "
        "other tasks left out: Agent One runs, their sub-tool calls, unbilled ones).</p>",
        _img(plots.tier_comparison_plot(tasks), "tier comparison"),
        _table(comp),
        "<h2>Agent One: cost per step</h2>",
        _img(plots.agent_cost_per_step(trace), "Agent One cost per step"),
        _table(trace.drop(columns=["file_ids"])),
        "<h2>Tasks</h2>",
        _table(recent),
    ]
    body = "\n".join(sections)
    return (
        f'<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{html.escape(title)}</title><style>{_CSS}</style></head>"
        f"<body>\n{body}\n</body></html>\n"
    )


def write_report(source: Any, out: str | os.PathLike[str], *, ledger: str | None = None) -> Path:
    """Build the frames from ``source`` (a client or task dicts) and write the report atomically."""
    if ledger is not None:
        from songlab.ledger.store import LedgerStore

        store = LedgerStore(ledger)
        store.refresh(source)
        tasks = store.read()
    else:
        tasks = tasks_frame(source)
    document = render_html(tasks, trace_frame(tasks))
    path = Path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    try:
        tmp.write_text(document, encoding="utf-8")
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="songlab report", description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True, help="where to write the HTML report")
    p.add_argument("--demo", action="store_true", help="first run a mixed demo workload")
    p.add_argument("--ledger", help="a Parquet ledger directory to refresh and report from")
    p.add_argument("--speed", type=float, default=20.0,
                   help="speed of a local sandbox (ignored for the real service; default 20)")  # fmt: skip
    return p


def _admin(client: Any) -> Any:
    """An admin httpx client on the sandbox that connect() started, else None."""
    srv = getattr(client, "sandbox", None)
    if srv is None or not getattr(srv, "admin_token", None):
        return None
    import httpx

    return httpx.Client(
        base_url=srv.base_url, headers={"X-Sandbox-Admin-Token": srv.admin_token}, timeout=30.0
    )


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    import songlab

    try:
        client = songlab.connect(speed=args.speed)
    except Exception as exc:  # noqa: BLE001 - a clear line, not a traceback
        print(f"songlab report: cannot connect: {exc}", file=sys.stderr)
        return 1
    admin = _admin(client)
    try:
        if args.demo:
            from songlab.ledger.demo import run_demo

            run_demo(client, admin=admin)
        path = write_report(client, args.out, ledger=args.ledger)
    except Exception as exc:  # noqa: BLE001
        print(f"songlab report: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    finally:
        if admin is not None:
            admin.close()
        close = getattr(client, "close", None)
        if callable(close):
            close()
    print(f"songlab report: wrote {path}")
    return 0
