"""``songlab report``: a self-contained HTML cost report (tables + embedded PNG plots).

``songlab report --out PATH [--demo] [--ledger DIR] [--from DATE] [--to DATE]
[--period NAME] [--as-of DATE] [--budget [PROJECT=]USD ...] [--csv DIR] [--xlsx PATH]``
connects with ``songlab.connect()`` (the real service when ``SONGLAB_API_KEY``
and ``SONGLAB_BASE_URL`` are set, else the local sandbox's demo account),
builds the ledger frames from the task listing (or refreshes the Parquet
ledger ``--ledger`` and reads it, with its labels) and writes one HTML file
with no external references, plus CSV files and an Excel workbook of the same
tables when asked. ``--demo`` first runs six weeks of work on the sandbox clock.
"""

from __future__ import annotations

import argparse
import base64
import html
import os
import sys
import tempfile
import uuid
from collections.abc import Sequence
from datetime import UTC, date, datetime, time
from decimal import Decimal
from pathlib import Path
from typing import Any

import pandas as pd

from songlab.ledger import export, plots, reconcile, tables
from songlab.ledger.periods import NAMED_PERIODS, Period, parse_budgets, period
from songlab.ledger.tasks import tasks_frame

__all__ = ["DEMO_BUDGETS", "main", "render_html", "render_report", "write_report"]

# Budgets the demo reports against when none is given (jingles has a launch week: over).
DEMO_BUDGETS = {None: Decimal("25"), "jingles": Decimal("2"), "podcast": Decimal("4")}

_CSS = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; font-size: 0.85em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
th { background: #f3f3f3; }
img { max-width: 100%; }
.note { color: #666; font-size: 0.85em; }
td.status.over, td.status.forecast-over { background: #fdd; font-weight: bold; }
td.status.near { background: #ffe9b3; }
td.status.ok { background: #e3f5e3; }
details { margin: 0.5em 0 1.5em; }
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


def _details(summary: str, body: str) -> str:
    return f"<details><summary>{html.escape(summary)}</summary>{body}</details>"


def _budget_table(frame: pd.DataFrame) -> str:
    if frame.empty:
        return ('<p class="note">No budget given (<code>--budget 500</code> overall, '
                "<code>--budget jingles=120</code> per project).</p>")
    out = _table(frame)
    for status in ("over", "forecast over", "near", "ok"):
        cls = status.replace(" ", "-")
        out = out.replace(f"<td>{status}</td>", f'<td class="status {cls}">{status}</td>')
    return out


def render_report(d: tables.ReportData, *, title: str = "songlab cost report",
                  reconciliation: pd.DataFrame | None = None) -> str:
    """The report of ``d`` as one HTML document (plots embedded as base64 PNG);
    ``reconciliation``: ``songlab.ledger.reconcile.reconcile_store`` of its ledger."""
    fc, t = d.forecast, d.tables
    counts = d.tasks["cost_source"].value_counts().to_dict()
    subs = int(d.tasks["parent_task_id"].notna().sum())
    overall = d.budgets.get(None)
    summary = (
        f"<p>{len(d.tasks) - subs} tasks in {html.escape(d.period.label)} (plus {subs} sub-tool "
        f"tasks of Agent One runs, counted inside their run); total cost <b>${_cell(d.total)}</b> "
        f"(billed by the service: ${_cell(d.tasks.songlab.total('billed_usd'))}). Rows by cost "
        "source: " + ", ".join(f"{k}: {v}" for k, v in sorted(counts.items())) + ".</p>"
        f"<p>Month to date ({fc.as_of:%B %Y}, {fc.days_elapsed} of {fc.days_in_month} days): "
        f"<b>${_cell(fc.month_to_date_usd)}</b>; run rate ${_cell(fc.run_rate_usd_per_day)} a day "
        f"(trailing 7 days: ${_cell(fc.trailing_7d_usd_per_day)} a day); forecast for the month "
        f"<b>${_cell(fc.forecast_usd)}</b>.</p>"
        f'<p class="note">Forecast method: {html.escape(fc.method)}, rounded half-even to 8 '
        "decimals. It assumes the rest of the month goes like the part already gone.</p>"
    )
    sections = [
        f"<h1>{html.escape(title)}</h1>",
        f'<p class="note">Period: {html.escape(d.period.label)}. As of {d.as_of:%Y-%m-%d %H:%M} '
        f"UTC; generated {datetime.now(UTC):%Y-%m-%d %H:%M} UTC. Money in USD, exact decimals "
        "(the price list has up to 8). Forecast and budgets cover the month of the as-of date."
        "</p>",
        '<section id="summary"><h2>Summary</h2>', summary, _table(t["summary"]), "</section>",
        '<section id="budgets"><h2>Budgets</h2>', _budget_table(t["budgets"]),
        _img(plots.month_forecast(d.all_tasks, fc, budget=overall), "month to date and forecast"),
        "</section>",
        '<section id="over-time"><h2>Spend over time</h2>',
        _img(plots.spend_over_time(d.tasks, by="project", period="day"), "spend per day by project"),
        "<h3>Per week (weeks start on Monday)</h3>", _table(t["by_week"]),
        "<h3>Per month</h3>", _table(t["by_month"]),
        _details("Per day", _table(t["by_day"], max_rows=400)), "</section>",
        '<section id="attribution"><h2>By project, tag and API key</h2>',
        '<p class="note">Projects and tags are recorded on the client side when each task is '
        "created (never sent to the service); API keys by a non-secret id (a hash). Tasks "
        "created without songlab's tracking show none. A task with two tags counts under "
        "both, so the tag table does not add up to the total.</p>",
        _img(plots.spend_by_project(d.tasks), "spend by project"),
        _table(t["by_project"]), "<h3>Per month and project</h3>", _table(t["by_project_month"]),
        "<h3>By tag</h3>", _table(t["by_tag"]), "<h3>By API key</h3>", _table(t["by_key"]),
        "</section>",
        '<section id="operations"><h2>Spend by operation</h2>', _table(t["by_operation"]),
        "<h2>Spend by model and tier</h2>", _table(t["by_model_tier"]),
        _img(plots.spend_by_tier(d.tasks), "spend by license tier"), "</section>",
        '<section id="tiers"><h2>Tier comparison</h2>',
        f'<p class="note">The {_compared(t["tier_comparison"])} billed tasks that have a list '
        "price in every tier, priced in each "
        f"({t['tier_comparison'].attrs.get('excluded_tasks', 0)} other tasks left out: Agent "
        "One runs, their sub-tool calls, unbilled ones).</p>",
        _img(plots.tier_comparison_plot(d.tasks), "tier comparison"), _table(t["tier_comparison"]),
        "</section>",
        '<section id="agent"><h2>Agent One: cost per step</h2>',
        _img(plots.agent_cost_per_step(d.trace), "Agent One cost per step"),
        _details("Every step", _table(t["agent_steps"])), "</section>",
        '<section id="tasks"><h2>Tasks</h2>', _table(t["tasks"]), "</section>",
        '<section id="reconciliation"><h2>Reconciliation with the balance</h2>',
        f'<p class="note">{html.escape(reconcile.NOTE)}</p>',
        _table(reconciliation) if reconciliation is not None and len(reconciliation) else
        f'<p class="note">{html.escape(reconcile.NO_LEDGER)}</p>', "</section>",
    ]
    body = "\n".join(sections)
    return (
        f'<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{html.escape(title)}</title><style>{_CSS}</style></head>"
        f"<body>\n{body}\n</body></html>\n"
    )


def _compared(comp: pd.DataFrame) -> int:
    return int(comp["tasks"].iloc[0]) if len(comp) else 0


def render_html(tasks: pd.DataFrame, trace: pd.DataFrame | None = None, *,
                title: str = "songlab cost report", period: Period | None = None,
                as_of: datetime | None = None, budgets: Any = None) -> str:
    """The report of a tasks frame (``trace`` is rebuilt from the period's tasks)."""
    del trace
    return render_report(tables.build(tasks, p=period, as_of=as_of, budgets=budgets),
                         title=title)


def _write_text(path: Path, document: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    try:
        tmp.write_text(document, encoding="utf-8")
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path


def write_report(source: Any, out: str | os.PathLike[str], *, ledger: str | None = None,
                 period: Period | None = None, as_of: datetime | None = None,
                 budgets: Any = None, csv_dir: str | None = None,
                 xlsx: str | None = None) -> Path:
    """Build the frames from ``source`` (a client, task dicts or a tasks frame), write the HTML report
    atomically and, if asked, the CSV files and the Excel workbook of its tables."""
    store = None
    if isinstance(source, pd.DataFrame):  # a tasks frame already built
        tasks = source
    elif ledger is not None:
        from songlab.ledger.store import LedgerStore

        store = LedgerStore(ledger)
        store.refresh(source)
        tasks = store.read()
    else:
        tasks = tasks_frame(source)
    d = tables.build(tasks, p=period, as_of=as_of, budgets=budgets)
    recon = reconcile.reconcile_store(store) if store is not None else None
    path = _write_text(Path(out), render_report(d, reconciliation=recon))
    if csv_dir is not None:
        export.export_csv(d.tables, csv_dir)
    if xlsx is not None:
        export.export_excel(d.tables, xlsx)
    return path


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="songlab report", description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True, help="where to write the HTML report")
    p.add_argument("--demo", action="store_true",
                   help="first run the demo: six weeks of work on the sandbox clock")
    p.add_argument("--ledger", help="a Parquet ledger directory to refresh and report from "
                   "(joined with the client's record; each refresh snapshots the balance, "
                   "for the reconciliation section)")
    p.add_argument("--from", dest="start", metavar="DATE", help="first day (YYYY-MM-DD, UTC)")
    p.add_argument("--to", dest="end", metavar="DATE", help="last day, inclusive (YYYY-MM-DD)")
    p.add_argument("--period", metavar="NAME",
                   help=f"a named period instead of --from/--to: {', '.join(NAMED_PERIODS)}, "
                   "or a month YYYY-MM")
    p.add_argument("--as-of", dest="as_of", metavar="DATE",
                   help="the report's now (default: the later of now and the newest task)")
    p.add_argument("--budget", action="append", default=[], metavar="[PROJECT=]USD",
                   help="a monthly budget, overall (500) or per project (jingles=120); repeat")
    p.add_argument("--csv", dest="csv_dir", metavar="DIR", help="also write every table as CSV")
    p.add_argument("--xlsx", metavar="PATH", help="also write an Excel workbook, a sheet per table")
    p.add_argument("--speed", type=float, default=None,
                   help="speed of a local sandbox (ignored for the real service; default 20, "
                   "500 with --demo)")
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


def _options(args: argparse.Namespace) -> tuple[Period, datetime | None, Any]:
    as_of = None
    if args.as_of:
        try:
            if len(args.as_of) == 10:  # a day: its last second
                as_of = datetime.combine(date.fromisoformat(args.as_of), time(23, 59, 59), UTC)
            else:
                t = datetime.fromisoformat(args.as_of)
                as_of = t.astimezone(UTC) if t.tzinfo else t.replace(tzinfo=UTC)
        except ValueError:
            raise ValueError(f"--as-of: a date YYYY-MM-DD or an ISO 8601 time, "
                             f"got {args.as_of!r}") from None
    if args.period and (args.start or args.end):
        raise ValueError("--period: give a named period or --from/--to, not both")
    if args.period:
        p = period(args.period, as_of=as_of)
    else:
        p = period(start=args.start, end=args.end)
    budgets = parse_budgets(args.budget) if args.budget else None
    return p, as_of, budgets


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = _parser().parse_args(argv)
    try:
        p, as_of, budgets = _options(args)
    except ValueError as exc:
        print(f"songlab report: {exc}", file=sys.stderr)
        return 2
    if args.demo and budgets is None:
        budgets = DEMO_BUDGETS
    import songlab

    speed = args.speed if args.speed is not None else (500.0 if args.demo else 20.0)
    try:
        client = songlab.connect(speed=speed)
    except Exception as exc:  # noqa: BLE001 - a clear line, not a traceback
        print(f"songlab report: cannot connect: {exc}", file=sys.stderr)
        return 1
    admin = _admin(client)
    scratch = None
    try:
        ledger = args.ledger
        if args.demo:
            from songlab.ledger.demo import run_demo
            from songlab.ledger.store import LedgerStore

            if ledger is None:  # the demo's labels need a store; a throwaway one
                scratch = tempfile.TemporaryDirectory(prefix="songlab-demo-")
                ledger = scratch.name
            run_demo(client, admin=admin, labels=LedgerStore(ledger).labels)
        path = write_report(client, args.out, ledger=ledger, period=p, as_of=as_of,
                            budgets=budgets, csv_dir=args.csv_dir, xlsx=args.xlsx)
    except Exception as exc:  # noqa: BLE001
        print(f"songlab report: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    finally:
        if scratch is not None:
            scratch.cleanup()
        if admin is not None:
            admin.close()
        close = getattr(client, "close", None)
        if callable(close):
            close()
    print(f"songlab report: wrote {path}")
    return 0
