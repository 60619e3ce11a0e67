"""The cost report: ledger tables rendered as one self-contained HTML file (embedded PNG plots).

:func:`write_report` builds the ledger frames of a client's task listing (or
refreshes a Parquet ledger and reads it, with its labels) and writes one HTML file
with no external references, plus CSV files and an Excel workbook of the same
tables when asked; :func:`render_report` / :func:`render_html` only render. The
``songlab report`` command (argparse, connecting, the demo) is ``songlab.cli``'s.
"""

from __future__ import annotations

import base64
import html
import os
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any, Final

import pandas as pd
import pyarrow as pa

import songlab.ledger._drawing as _drawing
import songlab.ledger.derived as derived
import songlab.ledger.display as display
import songlab.ledger.export as export
import songlab.ledger.plots as plots
import songlab.ledger.tables as tables
import songlab.localfiles as localfiles
from songlab.ledger.budgets import Guardrails, from_amounts, load, parse_budgets, worst_budget
from songlab.ledger.dates import Period
from songlab.ledger.engine import Ledger, open_ledger
from songlab.ledger.month import elapsed_text
from songlab.ledger.relation import AGENT_TIER
from songlab.ledger.tables import DATE_UNKNOWN
from songlab.ledger.tasks import tasks_table

__all__ = ["SANDBOX_NOTE", "SECTIONS", "Section", "render_html", "render_report", "write_report"]

# Rows of a table shown in the HTML (the exports hold the table whole); pages of a paged table.
MAX_ROWS: Final[int] = 60
PAGE_ROWS: Final[int] = 50
TEXT_CHARS: Final[int] = 160
MAX_PAGES: Final[int] = 20
SANDBOX_NOTE: Final[str] = (
    "Made from the local sandbox: its clock is simulated (the demo moves it ahead through "
    "weeks of work), so every date and the as-of time are the sandbox's, not today's."
)

_CSS = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; font-size: 0.85em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.exact { font-variant-numeric: tabular-nums; text-align: right; color: #555; }
th { background: #f3f3f3; }
img { max-width: 100%; }
.note { color: #666; font-size: 0.85em; }
.sandbox { background: #fff4d6; border: 1px solid #e6c65c; padding: 0.4em 0.8em; }
td.status.over, td.status.forecast-over { background: #fdd; font-weight: bold; }
td.status.near { background: #ffe9b3; }
td.status.ok { background: #e3f5e3; }
details { margin: 0.5em 0 1.5em; }
dl.figures { display: flex; flex-wrap: wrap; gap: 0.8em; margin: 1em 0 1.5em; }
dl.figures > div { border: 1px solid #ccc; border-radius: 4px; padding: 0.5em 0.9em;
  min-width: 11em; }
dl.figures dt { font-size: 0.8em; color: #555; }
dl.figures dd { margin: 0.2em 0 0; font-size: 1.3em; font-variant-numeric: tabular-nums; }
dl.figures dd.detail { font-size: 0.8em; color: #555; }
.pager > input { position: absolute; opacity: 0; width: 0; height: 0; margin: 0;
  pointer-events: none; }
.pager > input:checked + label { background: #e0e0e0; font-weight: bold; }
.pager > input:focus-visible + label { outline: 2px solid #4a90d9; }
.pager > label { display: inline-block; padding: 0 0.4em; border: 1px solid #ccc;
  margin: 0 0.15em 0.3em 0; cursor: pointer; font-size: 0.8em; }
.pager .page { display: none; }
"""


# ----------------------------------------------------------------------------- formatting


_cents, _exact, _text = display.cents, display.exact, display.text
_is_money, _is_number, _shown, _header = (
    display.is_money,
    display.is_number,
    display.shown,
    display.header,
)


def _cells(frame: pd.DataFrame, c: Any, exact: Sequence[str]) -> list[str]:
    """The ``<td>`` cells of column ``c``, made a column at a time (one test of its type,
    not one per cell): money to the cent (and its exact amount beside it when asked and
    cents hide part of it), other decimals as they are, prose cut short, a null date named."""
    column = frame[c]
    # an Arrow-backed column's values by Arrow (pandas yields them one by one)
    values = (
        pa.array(column).to_pylist() if isinstance(column.dtype, pd.ArrowDtype) else column.tolist()
    )
    if _is_money(frame, c):
        out = [f'<td class="num money">{html.escape(_text(v))}</td>' for v in values]
        if c in exact:  # the exact amount where cents hide part of it
            out = [
                f'{cell}<td class="exact">'
                f"{html.escape(_exact(v) if display.hidden_by_cents(v) else '')}</td>"
                for cell, v in zip(out, values, strict=True)
            ]
        return out
    cls = ' class="num"' if _is_number(frame, c) else ""
    texts = [f"{v:f}" if isinstance(v, Decimal) else _text(v) for v in values]
    if c == "text":  # prose of a step: the exports have it all
        texts = [t[: TEXT_CHARS - 1] + "\u2026" if len(t) > TEXT_CHARS else t for t in texts]
    cells = [html.escape(t) for t in texts]
    if c in ("period", "created_at", "run_created_at"):
        cells = [
            DATE_UNKNOWN if v is None or pd.isna(v) else t
            for v, t in zip(values, cells, strict=True)
        ]
    return [f"<td{cls}>{t}</td>" for t in cells]


def _for_cells(frame: pd.DataFrame) -> pd.DataFrame:
    """The columns a reader needs (``display.shown``) in a frame of its own without
    ``attrs``: pandas deep-copies a frame's attrs into every column and slice taken from it,
    which made most of the time of writing the page's cells."""
    out = _shown(frame)
    out = frame.copy(deep=False) if out is frame else out
    out.attrs = {}
    return out


def _rows_html(frame: pd.DataFrame, *, exact: Sequence[str] = ()) -> str:
    columns = [_cells(frame, c, exact) for c in frame.columns]
    return "".join("<tr>" + "".join(row) + "</tr>" for row in zip(*columns, strict=True))


def _head_html(frame: pd.DataFrame, *, exact: Sequence[str] = ()) -> str:
    cells = []
    for c in frame.columns:
        cls = ' class="num"' if _is_money(frame, c) or _is_number(frame, c) else ""
        cells.append(f"<th{cls}>{html.escape(_header(frame, c))}</th>")
        if c in exact:
            cells.append(f'<th class="exact">{html.escape(display.EXACT_LABEL)}</th>')
    return "<thead><tr>" + "".join(cells) + "</tr></thead>"


def _table(
    frame: pd.DataFrame, *, max_rows: int = MAX_ROWS, exact: Sequence[str] = (), what: str = "rows"
) -> str:
    """An HTML table of ``frame``: money to the cent, right aligned; at most ``max_rows``."""
    frame = _for_cells(frame)
    body = _rows_html(frame.head(max_rows), exact=exact)
    more = ""
    if len(frame) > max_rows:
        more = (
            f'<p class="note">{len(frame) - max_rows:,} more {what} in the exports '
            "(CSV, Excel).</p>"
        )
    return f"<table>{_head_html(frame, exact=exact)}<tbody>{body}</tbody></table>{more}"


def _paged(
    frame: pd.DataFrame,
    name: str,
    *,
    exact: Sequence[str] = (),
    total: int | None = None,
    what: str = "rows",
) -> str:
    """A table in pages of ``PAGE_ROWS`` (radio buttons and CSS, no script), bounded."""
    frame = _for_cells(frame)
    shown = frame.head(PAGE_ROWS * MAX_PAGES)
    pages = max(1, -(-len(shown) // PAGE_ROWS))
    head = _head_html(frame, exact=exact)
    radios, tables, rules = [], [], []
    for i in range(pages):
        pid = f"{name}-p{i + 1}"
        checked = " checked" if i == 0 else ""
        radios.append(
            f'<input type="radio" name="{name}" id="{pid}"{checked}>'
            f'<label for="{pid}">{i + 1}</label>'
        )
        part = shown.iloc[i * PAGE_ROWS : (i + 1) * PAGE_ROWS]
        tables.append(
            f'<table class="page {pid}">{head}<tbody>'
            f"{_rows_html(part, exact=exact)}</tbody></table>"
        )
        rules.append(f"#{pid}:checked ~ .pages .{pid} {{ display: table; }}")
    total = len(frame) if total is None else total
    if len(shown) == total and pages == 1:
        note = f'<p class="note">All {total:,} {what}.</p>'
    elif len(shown) == total:
        note = f'<p class="note">All {total:,} {what}, in pages of {PAGE_ROWS}.</p>'
    else:
        note = (
            f'<p class="note">The first {len(shown):,} of {total:,} {what}, in pages of '
            f"{PAGE_ROWS}; the exports hold them all.</p>"
        )
    return (
        f'<style>{" ".join(rules)}</style><div class="pager">{"".join(radios)}'
        f'<div class="pages">{"".join(tables)}</div></div>{note}'
    )


def _img_tag(png: bytes, alt: str) -> str:
    data = base64.b64encode(png).decode("ascii")
    return f'<img alt="{html.escape(alt)}" src="data:image/png;base64,{data}">'


# The charts of the page being rendered (:func:`render_report`): placeholder -> its picture.
_CHARTS: ContextVar[dict[str, tuple[Callable[[], bytes], str]] | None] = ContextVar(
    "songlab_report_charts", default=None
)


def _chart(alt: str, function: _drawing.Chart, *args: object, **kwargs: object) -> str:
    """The ``<img>`` of the chart ``function(*args, **kwargs)`` (a ``plots`` function): in
    :func:`render_report`, handed to a worker now (``_drawing``) and a placeholder returned,
    which the page's picture replaces once the rest of the page is written; else drawn here."""
    pending = _CHARTS.get()
    picture = _drawing.draw(function, *args, **kwargs)
    if pending is None:
        return _img_tag(picture(), alt)
    token = f"<!--songlab-chart-{len(pending)}-{id(pending):x}-->"  # escaped text holds no '<'
    pending[token] = (picture, alt)
    return token


def _with_charts(render: Callable[[], str]) -> str:
    """``render()`` with its charts drawn meanwhile by the workers and put in place."""
    pending: dict[str, tuple[Callable[[], bytes], str]] = {}
    reset = _CHARTS.set(pending)
    try:
        page = render()
    finally:
        _CHARTS.reset(reset)
    for token, (picture, alt) in pending.items():
        page = page.replace(token, _img_tag(picture(), alt), 1)
    _drawing.warm()  # for the next page: the workers start now, if they are not running
    return page


def _details(summary: str, body: str) -> str:
    return f"<details><summary>{html.escape(summary)}</summary>{body}</details>"


def _budget_table(frame: pd.DataFrame) -> str:
    if frame.empty:
        return (
            '<p class="note">No budget given (<code>--budget 500</code> overall, '
            "<code>--budget jingles=120</code> per project, or a budgets file: "
            "<code>--budgets FILE</code>).</p>"
        )
    out = _table(frame)
    for status in ("over", "forecast over", "near", "ok"):
        cls = status.replace(" ", "-")
        out = out.replace(f"<td>{status}</td>", f'<td class="status {cls}">{status}</td>')
    return out


# -------------------------------------------------------------------------------- sections


@dataclass(frozen=True)
class Section:
    """One section of the report: its anchor id, its heading and how to render its body."""

    id: str
    title: str
    body: Callable[[tables.ReportData], str]

    def html(self, d: tables.ReportData) -> str:
        return (
            f'<section id="{html.escape(self.id)}"><h2>{html.escape(self.title)}</h2>\n'
            f"{self.body(d)}\n</section>"
        )


def _budget_state(d: tables.ReportData) -> tuple[str, str]:
    """The budget card: the worst state among the budgets (over, forecast over, near, ok),
    the others that are not ok named beside it."""
    b = d.tables["budgets"]
    top = worst_budget(b)
    if top is None:
        return "no budget set", "--budget 500 sets one"
    state = f"{top['status']}: ${_cents(top['spent_usd'])} of ${_cents(top['budget_usd'])}"
    if top.get("used_pct") is not None:
        state += f" ({top['used_pct']}%)"
    others = [r for r in b.to_dict("records") if r["scope"] != top["scope"] and r["status"] != "ok"]
    named = ", ".join(f"{r['scope']} {r['status']}" for r in others[:3])
    more = f" and {len(others) - 3} more" if len(others) > 3 else ""
    detail = top["scope"] + (f"; also {named}{more}" if others else "")
    return state, html.escape(detail)


def _headline(d: tables.ReportData) -> str:
    """The five numbers a reader wants first."""
    f, fc = d.figures, d.forecast
    state, state_detail = _budget_state(d)
    unknown = f["unknown_tasks"]
    est_text = f"${_cents(f['estimated'])} estimated"
    est_detail = f"{f['estimated_tasks']:,} tasks estimated; {unknown:,} of unknown cost"
    if f["undated_outside_tasks"]:
        est_detail += f"; {f['undated_outside_tasks']:,} of {DATE_UNKNOWN} outside the period"
    spend_detail = f"{f['tasks']:,} tasks, {html.escape(d.period.label)}"
    if unknown:
        spend_detail += f" ({unknown:,} of unknown cost not included)"
    items = [
        ("period-spend", "Spent in the period", f"${_cents(f['spend'])}", spend_detail),
        (
            "month-to-date",
            f"Month to date ({fc.as_of:%B %Y})",
            f"${_cents(fc.month_to_date_usd)}",
            f"as of {fc.as_of:%Y-%m-%d %H:%M:%S} UTC",
        ),
        (
            "forecast",
            f"Forecast for {fc.as_of:%B %Y}",
            f"${_cents(fc.forecast_usd)}",
            html.escape(f"{fc.interval_text()}; {fc.method}"),
        ),
        ("budget", "Budget", state, state_detail),
        ("estimated-unknown", "Estimated or unknown", est_text, est_detail),
    ]
    cells = "".join(
        f'<div data-figure="{key}"><dt>{html.escape(label)}</dt><dd class="value">'
        f'{html.escape(value)}</dd><dd class="detail">{detail}</dd></div>'
        for key, label, value, detail in items
    )
    return f'<dl class="figures" id="headline">{cells}</dl>'


def _days(fc: Any) -> str:
    """``13.59 of 31 days elapsed``: the days a run rate is over, as stated."""
    return f"{derived.stated_days(fc.days_elapsed)} of {fc.days_in_month} days elapsed"


def _run_rate(fc: Any) -> str:
    """``run rate $0.68 a day ($9.28 over 13.59 days)``: the rate and the figures it is."""
    if fc.run_rate_usd_per_day is None:
        return "no run rate yet (under 0.01 day of the month elapsed)"
    return (
        f"run rate ${_cents(fc.run_rate_usd_per_day)} a day (${_cents(fc.month_to_date_usd)} "
        f"over {elapsed_text(fc.days_elapsed)})"
    )


def _summary_body(d: tables.ReportData) -> str:
    f, fc = d.figures, d.forecast
    counts = d.tables["by_cost_source"]
    by_source = ", ".join(
        f"{html.escape(str(k))}: {n:,}"
        for k, n in zip(counts["cost_source"].tolist(), counts["tasks"].tolist(), strict=True)
    )
    return (
        f"<p>{f['tasks']:,} tasks in {html.escape(d.period.label)} (plus {f['sub_tasks']:,} "
        "sub-tool tasks of Agent One runs, counted inside their run); spent "
        f"<b>${_cents(f['spend'])}</b> (billed by the service: ${_cents(f['billed'])}). Tasks "
        f"by cost source: {by_source}.</p>"
        f"<p>Month to date ({fc.as_of:%B %Y}, {_days(fc)}): "
        f"<b>${_cents(fc.month_to_date_usd)}</b>; {_run_rate(fc)}; trailing 7 days: "
        f"${_cents(fc.trailing_7d_usd)}, ${_cents(fc.trailing_7d_usd_per_day)} a day "
        f"(${_cents(fc.trailing_7d_usd)} over 7 days); forecast for the month "
        f"<b>${_cents(fc.forecast_usd)}</b>, {html.escape(fc.interval_text())}.</p>"
        f'<p class="note">Forecast method: {html.escape(fc.method)}, the guardrails\' forecast '
        "of the daily spend (the same number in the budget table and the alerts). "
        + (f"{html.escape(fc.note)}. " if fc.note else "")
        + "Tasks "
        "of unknown cost are counted, never summed as 0; tasks whose snapshot shows no "
        f"creation time are counted under &quot;{DATE_UNKNOWN}&quot;.</p>"
        + _table(d.tables["summary"])
    )


def _budgets_body(d: tables.ReportData) -> str:
    daily = d.charts["month_days"]
    return _budget_table(d.tables["budgets"]) + _chart(
        "month to date and forecast",
        plots.month_forecast,
        daily,
        d.forecast,
        budget=d.budgets.get(None),
    )


def _over_time_body(d: tables.ReportData) -> str:
    t = d.tables
    days = d.charts["project_days"]
    freq = days.attrs.get("freq", "day")
    return (
        _chart(
            f"spend per {freq} by project", plots.spend_over_time, days, by="project", period=freq
        )
        + "<h3>Per week (weeks start on Monday)</h3>"
        + _table(t["by_week"])
        + "<h3>Per month</h3>"
        + _table(t["by_month"])
        + _details("Per day", _table(t["by_day"], max_rows=400))
    )


def _attribution_body(d: tables.ReportData) -> str:
    t = d.tables
    return (
        '<p class="note">Projects and tags are recorded on the client side when each task is '
        "created (never sent to the service); API keys by a non-secret id (a hash). Tasks "
        "created without songlab's tracking show none. A task with two tags counts under "
        "both, so the tag table does not add up to the total. Long lists show the costliest "
        "and the rest as one &quot;other&quot; line.</p>"
        + _chart("spend by project", plots.spend_by_project, t["by_project"])
        + _table(tables.top_n(t["by_project"], "project", 20, missing=tables.NO_PROJECT))
        + "<h3>Per month and project</h3>"
        + _table(t["by_project_month"])
        + "<h3>By tag</h3>"
        + _table(tables.top_n(t["by_tag"], "tag", 20, missing=tables.NO_TAG))
        + "<h3>By API key</h3>"
        + _table(tables.top_n(t["by_key"], "key_id", 20, missing=tables.NO_KEY))
    )


def _operations_body(d: tables.ReportData) -> str:
    t = d.tables
    return (
        _table(t["by_operation"])
        + "<h2>Spend by model and tier</h2>"
        + _table(t["by_model_tier"])
        + "<h2>Spend by tool and tier</h2>"
        + _table(t["by_tool_tier"])
        + _chart("spend by license tier", plots.spend_by_tier, d.charts["by_tier"])
        + "<h2>Spend by status</h2>"
        + '<p class="note">Failed tasks are released (0); queued and processing ones have spent '
        "nothing yet (their list price is the pending amount).</p>" + _table(d.tables["by_status"])
    )


def _tiers_body(d: tables.ReportData) -> str:
    comp = d.tables["tier_comparison"]
    n = int(comp["tasks"].iloc[0]) if len(comp) else 0
    est = comp.attrs.get("estimated_tasks", 0)
    estimated = f" ({est:,} of them at their list-price estimate)" if est else ""
    return (
        f'<p class="note">The {n:,} tasks that cost something known{estimated} and have a '
        "list price in every tier, priced in each "
        f"({comp.attrs.get('excluded_tasks', 0):,} other tasks left out: Agent One runs, "
        "which are priced by usage and have no tier, failed, running and unknown-cost ones). "
        "In the spend by tier, Agent One runs are their own row, "
        f"&quot;{html.escape(AGENT_TIER)}&quot;.</p>"
        + _chart("tier comparison", plots.tier_comparison_plot, comp)
        + _table(comp)
    )


def _agent_body(d: tables.ReportData) -> str:
    t = d.tables
    steps = t["agent_steps"]
    return (
        '<p class="note">What Agent One runs cost, by tier: the run\'s own fee (priced per '
        "token, often a fraction of a cent) and the calls it made, by tool. Every step of the "
        "newest runs is in the table below, in pages.</p>"
        + _chart("Agent One cost per step", plots.agent_cost_per_step, t["agent_by_step"])
        + _table(t["agent_by_step"], exact=("cost_usd",))
        + "<h3>Every step of the newest runs</h3>"
        + _paged(
            steps, "steps", exact=("cost_usd",), total=steps.attrs.get("total_steps"), what="steps"
        )
    )


def _tasks_body(d: tables.ReportData) -> str:
    t = d.tables["tasks"]
    total = t.attrs.get("total_tasks", len(t))
    note = ""
    if total > len(t):
        note = (
            f'<p class="note">The exports hold the newest {len(t):,} of the period\'s '
            f"{total:,} tasks; <code>songlab report --csv DIR --csv-all-tasks</code> writes "
            "every one to tasks.csv, and the ledger's Parquet files hold them all.</p>"
        )
    return note + _paged(t, "tasks", total=total, what="tasks (newest first)")


def _reconciliation_body(d: tables.ReportData) -> str:
    import songlab.ledger.reconcile as reconcile

    recon = d.tables.get("reconciliation")  # the report's relation, with the other tables
    shown = (
        _table(recon)
        if recon is not None and len(recon)
        else f'<p class="note">{html.escape(reconcile.NO_LEDGER)}</p>'
    )
    return f'<p class="note">{html.escape(reconcile.NOTE)}</p>' + shown


# The report's sections, in order. To add one: SECTIONS.append(Section(id, title, body)), or
# pass sections=[*SECTIONS, Section(...)] to render_report / write_report.
SECTIONS: list[Section] = [
    Section("summary", "Summary", _summary_body),
    Section("budgets", "Budgets", _budgets_body),
    Section("over-time", "Spend over time", _over_time_body),
    Section("attribution", "By project, tag and API key", _attribution_body),
    Section("operations", "Spend by operation", _operations_body),
    Section("tiers", "Tier comparison", _tiers_body),
    Section("agent", "Agent One: cost per step", _agent_body),
    Section("tasks", "Tasks", _tasks_body),
    Section("reconciliation", "Reconciliation with the balance", _reconciliation_body),
]


def render_report(
    d: tables.ReportData,
    *,
    title: str = "songlab cost report",
    sections: Sequence[Section] | None = None,
) -> str:
    """The report of ``d`` as one HTML document (plots embedded as base64 PNG, no script);
    its charts drawn by workers while the rest of the page is written (``_drawing``)."""
    return _with_charts(lambda: _render(d, title, sections))


def _render(d: tables.ReportData, title: str, sections: Sequence[Section] | None) -> str:
    clock = f'<p class="note sandbox">{html.escape(d.source_note)}</p>' if d.source_note else ""
    parts = [
        f"<h1>{html.escape(title)}</h1>",
        d.guardrails._repr_html_() if d.guardrails is not None else "",  # the alerts first
        f'<p class="note">Period: {html.escape(d.period.label)}. As of '
        f"{d.as_of:%Y-%m-%d %H:%M:%S} UTC{' (sandbox clock)' if d.source_note else ''}; "
        f"generated {datetime.now(UTC):%Y-%m-%d %H:%M:%S} UTC. Money in USD to the cent "
        "(rounded half-even); the exports keep every amount exact (the price list has up to 8 "
        "decimals). Forecast and budgets cover the month of the as-of date.</p>",
        clock,
        _headline(d),
        *(s.html(d) for s in (SECTIONS if sections is None else sections)),
    ]
    body = "\n".join(p for p in parts if p)
    return (
        f'<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{html.escape(title)}</title><style>{_CSS}</style></head>"
        f"<body>\n{body}\n</body></html>\n"
    )


def render_html(
    tasks: Any,
    *,
    title: str = "songlab cost report",
    period: Period | None = None,
    as_of: datetime | None = None,
    budgets: Any = None,
) -> str:
    """The report of a tasks frame, Arrow table or ledger (the Agent One steps are read from
    the period's runs)."""
    return render_report(tables.build(tasks, p=period, as_of=as_of, budgets=budgets), title=title)


def _write_text(path: Path, document: str) -> Path:
    return localfiles.write_atomic(path, document)  # 0600, new folders 0700


def write_report(
    source: Any,
    out: str | os.PathLike[str],
    *,
    ledger: str | None = None,
    period: Period | None = None,
    as_of: datetime | None = None,
    budgets: Any = None,
    csv_dir: str | None = None,
    xlsx: str | None = None,
    title: str = "songlab cost report",
    sections: Sequence[Section] | None = None,
    simulated_clock: bool | None = None,
    all_tasks_csv: bool = False,
    guardrails: Any = True,
    engine: Any = "duckdb",
    also: Sequence[Callable[[Any, Any], Any]] = (),
    last: bool = False,
) -> Path:
    """Write the HTML report of ``source`` atomically and, if asked, the CSV files and the
    Excel workbook of its tables.

    ``engine``: where the queries run (``"duckdb"``, ``"spark"`` or a backend object,
    ``engine.open_ledger``). ``also``: more views of the same open ledger, each called
    with it and the source it reads (a ``LedgerStore`` or a tasks table), e.g. the FOCUS
    export (``focus.exporter``).

    ``source``: a tasks frame, an Arrow table, a ``LedgerStore`` or its directory
    (read in place by DuckDB), a client or task dicts. With ``ledger`` (a
    directory), a client or dicts first refresh that ledger, which is then read
    in place. ``simulated_clock`` (default: whether ``source`` is a client on
    the local sandbox) adds the note that the sandbox's clock is simulated.
    The tasks table (HTML, Excel, CSV) holds the period's newest
    ``tables.TASK_ROWS`` tasks; ``all_tasks_csv`` writes every task of the
    period to ``tasks.csv`` instead (streamed: about 1.3 GB for 10M tasks).
    ``guardrails``: the report opens with the active alerts (``songlab.ledger.guardrails``):
    True for the default thresholds, a budgets file's path or its ``Guardrails``; False
    for none. ``budgets`` join the guardrails' (monthly, soft) and the budget table is their
    judgement: every budget, the file's included, judged once, each series fitted once.
    ``last``: the caller's last report (a command that makes one): the chart workers
    (``_drawing``) are not started for a next one.
    """
    from songlab.ledger.store import LedgerStore

    if simulated_clock is None:
        simulated_clock = getattr(source, "sandbox", None) is not None
    data = _source(source, ledger)
    store = data if isinstance(data, LedgerStore) else None
    parsed = parse_budgets(budgets)
    with (
        _drawing.one_off() if last else nullcontext(),
        open_ledger(data, engine=engine) as lg,  # opened once: tables, figures, CSV, FOCUS
    ):
        lg.precompute()
        found = _guardrails(lg, guardrails, parsed, as_of, store)
        d = tables.build_from(
            lg,
            p=period,
            as_of=as_of,
            budgets=parsed,
            source_note=SANDBOX_NOTE if simulated_clock else None,
            store=store,
            found=found,
            lazy=True,
        )
        path = _write_text(Path(out), render_report(d, title=title, sections=sections))
        tables.complete(d)  # the tables no section read, for the exports
        if csv_dir is not None:
            export.export_csv(d.tables, csv_dir, skip=("tasks",) if all_tasks_csv else ())
            if all_tasks_csv:  # every task of the period in tasks.csv, streamed
                tables.copy_tasks_csv(lg, Path(csv_dir) / "tasks.csv", p=d.period)
        for view in also:
            view(lg, data)
    if xlsx is not None:
        export.export_excel(d.tables, xlsx)
    return path


def _source(source: Any, ledger: str | None) -> Any:
    """What the report reads: the frame, table or store as it is; a directory as its store; a
    client or task dicts refreshed into ``ledger`` (then read in place), else listed."""
    from songlab.ledger.store import LedgerStore

    if isinstance(source, pd.DataFrame | pa.Table | LedgerStore):
        return source
    if isinstance(source, str | os.PathLike):
        return LedgerStore(source)
    if ledger is not None:
        store = LedgerStore(ledger)
        if source is not None:
            store.refresh(source)
        return store
    return tasks_table(source)


def _guardrails(
    lg: Ledger, guardrails: Any, budgets: Any, as_of: datetime | None, store: Any
) -> Any:
    """The guardrails' report the page opens with (None: asked for none): the budgets file's
    (or the defaults') with the report's ``--budget`` amounts joined, so the table, the card
    and the alerts give one answer."""
    if guardrails is False or guardrails is None:
        return None
    from songlab.ledger.guardrails import check_ledger

    settings = guardrails if isinstance(guardrails, Guardrails) else None
    if isinstance(guardrails, str | os.PathLike):
        settings = load(guardrails)
    settings = (settings or Guardrails()).including(from_amounts(budgets))
    return check_ledger(
        lg,
        settings,
        as_of=as_of,
        balances=store.balances() if store is not None else None,
        forecast_scopes=0,
    )
