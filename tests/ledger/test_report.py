"""The HTML cost report: self-contained (tables + base64 PNG), from the CLI against a service."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from decimal import ROUND_HALF_EVEN, Decimal
from pathlib import Path
from typing import Any

import httpx
import openpyxl
import pytest

from songlab import cli
from songlab.ledger import tables, tasks_frame
from songlab.ledger.report import render_html, write_report


def _self_contained(document: str) -> None:
    assert document.startswith("<!doctype html>")
    assert not re.search(r'(src|href)="(https?:)?//', document)
    assert "<script" not in document and "<link" not in document
    assert document.count('src="data:image/png;base64,') == 6


def test_render_html(records: list[dict[str, Any]]) -> None:
    tasks = tasks_frame(records[:300])
    document = render_html(tasks, title="Q4 <costs>")
    _self_contained(document)
    assert "<h1>Q4 &lt;costs&gt;</h1>" in document
    total = tasks.songlab.total()
    cents = total.quantize(Decimal("0.01"), ROUND_HALF_EVEN)
    assert f'<dd class="value">${cents:,.2f}</dd>' in document  # the header, to the cent
    for heading in ("Spend by operation", "Tier comparison", "Agent One: cost per step"):
        assert heading in document


def test_cli_report_against_the_service(
    sandbox: Any,
    new_account: Callable[..., Any],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    acct = new_account()
    with httpx.Client(
        base_url=sandbox.base_url, headers={"Authorization": f"Bearer {acct.api_key}"}
    ) as http:
        tools = {
            (t["operation"], t["model"]): t["id"] for t in http.get("/v1/tools").json()["data"]
        }
        body = {
            "tool_id": tools[("write_lyrics", "v5")],
            "payload_json": json.dumps({"prompt": "x"}),
        }
        task_id = http.post("/v1/generations", json=body).json()["task_id"]
        deadline = time.monotonic() + 30
        while http.get(f"/v1/generations/{task_id}").json()["status"] != "completed":
            assert time.monotonic() < deadline
            time.sleep(0.02)
    monkeypatch.setenv("SONGLAB_API_KEY", acct.api_key)
    monkeypatch.setenv("SONGLAB_BASE_URL", sandbox.base_url)
    out = tmp_path / "report" / "costs.html"
    assert cli.main(["report", "--out", str(out), "--ledger", str(tmp_path / "ledger")]) == 0
    document = out.read_text(encoding="utf-8")
    _self_contained(document)
    assert task_id in document and "write_lyrics" in document
    assert "$0.02" in document
    printed = capsys.readouterr().out
    assert f"wrote {out}" in printed
    assert acct.api_key not in printed + document
    assert list(tmp_path.glob("report/.*")) == []  # no temporary file left


def test_cli_report_needs_out(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["report"]) == 2
    err = capsys.readouterr().err
    assert err == "songlab report: --out: required (the HTML report's path), unless --check\n"


def test_cli_periods_budgets_and_exports(
    sandbox: Any,
    new_account: Callable[..., Any],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """--from/--to select the breakdowns, --budget adds budget lines, --csv/--xlsx export."""

    from songlab.client import Client
    from songlab.ledger import LedgerStore, attribution

    acct = new_account()
    ledger = tmp_path / "ledger"
    with Client(acct.api_key, base_url=sandbox.base_url) as c:
        LedgerStore(ledger).track(c)
        with attribution(project="radio-ads", tags=["spring"]):
            h = c.generations.create(operation="write_lyrics", model="v5", payload={"prompt": "x"})
        task = c.generations.wait(h.task_id, timeout=30)
    day = task.created_at.date()  # UTC
    monkeypatch.setenv("SONGLAB_API_KEY", acct.api_key)
    monkeypatch.setenv("SONGLAB_BASE_URL", sandbox.base_url)
    out, xlsx, csv_dir = tmp_path / "r.html", tmp_path / "r.xlsx", tmp_path / "csv"
    argv = [
        "report",
        "--out",
        str(out),
        "--ledger",
        str(ledger),
        "--from",
        str(day),
        "--to",
        str(day),
        "--budget",
        "0.01",
        "--budget",
        "radio-ads=5",
        "--xlsx",
        str(xlsx),
        "--csv",
        str(csv_dir),
        "--csv-all-tasks",
    ]
    assert cli.main(argv) == 0, capsys.readouterr().err
    document = out.read_text(encoding="utf-8")
    _self_contained(document)
    for section in ('id="summary"', 'id="budgets"', 'id="over-time"', 'id="attribution"'):
        assert section in document
    assert f"{day} to {day}" in document and "radio-ads" in document and "spring" in document
    assert '<td class="status over">over</td>' in document  # 0.02 spent against 0.01
    wb = openpyxl.load_workbook(xlsx)
    assert {"summary", "budgets", "by_day", "by_project", "by_tag", "by_key", "tasks"} <= set(
        wb.sheetnames
    )
    proj = wb["by_project"]
    assert [c.value for c in proj[2]][:2] == ["radio-ads", 1]
    header, *rows = (csv_dir / "tasks.csv").read_text().splitlines()  # every task, by DuckDB
    assert header.startswith("created_at (UTC),task_id,project") and len(rows) == 1
    assert task.task_id in rows[0] and ",radio-ads,spring," in rows[0]
    first = (csv_dir / "by_project.csv").read_text().splitlines()[1]
    # tasks, cost, billed (tasks, usd), estimated (tasks, usd), unknown, pending (tasks, usd),
    # failed: the columns of every spend table (relation.MEASURES)
    assert first == "radio-ads,1,0.02000000,1,0.02000000,0,0.00000000,0,0,0.00000000,0"
    # a period with nothing in it: the report still renders, with zero spend
    assert (
        cli.main(["report", "--out", str(out), "--ledger", str(ledger), "--period", "2020-01"]) == 0
    )
    assert "January 2020" in out.read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--from", "2026-13-01"], "--from: a date"),
        (["--period", "soon"], "--period: one of"),
        (["--budget", "x=lots"], "--budget 'x=lots': an amount in USD"),
        (["--period", "this-month", "--from", "2026-11-01"], "not both"),
        (["--as-of", "yesterday"], "--as-of: a date"),
        (["--csv-all-tasks"], "--csv-all-tasks: needs --csv DIR"),
        (["--demo-days", "7"], "--demo-days: goes with --demo"),
        (["--demo", "--demo-days", "0"], "--demo-days: a whole number of days, 1-366; got 0"),
        (["--demo", "--demo-days", "400"], "--demo-days: a whole number of days, 1-366"),
    ],
    ids=[
        "bad-date",
        "bad-period",
        "bad-budget",
        "both",
        "bad-as-of",
        "all-tasks-no-csv",
        "demo-days-alone",
        "demo-days-zero",
        "demo-days-too-many",
    ],  # fmt: skip
)
def test_cli_refuses_bad_options_before_connecting(
    args: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["report", "--out", str(tmp_path / "r.html"), *args]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "r.html").exists()


def test_notebook_tables_read_to_the_cent() -> None:
    """display.finance: money to the cent and right aligned, the exact amount only where cents
    hide part of it, tiers by name, times to the second, no empty estimate column."""
    from songlab.ledger import display, spend
    from tests.ledger._util import snap

    tasks = tasks_frame(
        [
            snap("a", cost_usd="8.18", created_at="2027-01-14T14:09:29.213Z"),
            snap("b", cost_usd="1.56590392", license=3),
            snap("c", cost_usd="0.474876", license=3),
        ]
    )
    by_tier = spend(tasks, ["license", "tier"])
    assert {"license", "estimated_usd"} <= set(by_tier.columns)
    document = display.finance(by_tier).to_html()
    assert ">license<" not in document and ">estimated_usd<" not in document  # shown only if any
    assert ">royalty_free<" in document and ">8.18<" in document and ">2.04<" in document
    assert "text-align: right" in document
    assert document == display.finance(by_tier).to_html()  # no random ids: nbval can compare
    rows = display.finance(
        tasks[["created_at", "task_id", "cost_usd"]], exact_columns=["cost_usd"]
    ).to_html()
    assert ">created_at (UTC)<" in rows and ">2027-01-14 14:09:29<" in rows and ".213" not in rows
    assert ">1.57<" in rows and ">1.56590392<" in rows and ">0.474876<" in rows
    assert f"cost_usd ({display.EXACT_LABEL})" in rows
    assert tasks["cost_usd"].tolist()[1] == Decimal("1.56590392")  # the frame stays exact
    from songlab.ledger.periods import budget_status

    budgets = display.finance(budget_status(tasks, ["5"], as_of=tasks["created_at"].max()))
    assert ">used_pct<" in budgets.to_html() and ">5.00<" in budgets.to_html()
    assert ">163.6<" in budgets.to_html()  # a percentage stays as it is (8.18 of 5.00)


def test_the_spend_by_status_figure_is_in_the_html_excel_and_csv(tmp_path: Path) -> None:
    """The figure added in two files (docs/architecture.md): one query, every view."""
    from tests.ledger._util import snap

    frame = tasks_frame(
        [
            snap("a"),
            snap("b", status="failed", cost_usd=None),
            snap("c", status="queued", cost_usd=None),
        ]
    )
    xlsx, csv_dir = tmp_path / "r.xlsx", tmp_path / "csv"
    write_report(frame, tmp_path / "r.html", xlsx=str(xlsx), csv_dir=str(csv_dir))
    by_status = tables.build(frame).tables["by_status"].set_index("status")
    assert by_status.loc["completed", "cost_usd"] == Decimal("0.12")
    assert by_status.loc["queued", "pending_usd"] == Decimal("0.12")
    assert by_status.loc["failed", "failed_tasks"] == 1
    assert "Spend by status" in (tmp_path / "r.html").read_text(encoding="utf-8")
    assert "by_status" in openpyxl.load_workbook(xlsx).sheetnames
    assert (csv_dir / "by_status.csv").read_text().startswith("status,tasks,cost_usd")
