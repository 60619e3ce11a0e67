"""Control characters in names and labels never reach a terminal, a log or a webhook as they are.

``songlab.ledger.safe_text.printable`` is the one escaping function; this file checks it
alone (a property over any text) and then on every path text leaves songlab by that is not
HTML: an alert's line and the guardrail report's ``str``/``repr`` (what a notebook prints),
``songlab report --check``'s stdout and stderr, the webhook's JSON body, and ``songlab
report``'s own lines. The names come from everywhere a name can: a project and a tool id in
the ledger's data (a hand-written Parquet file or the service), a budget's name and scope.
"""

from __future__ import annotations

import json
import unicodedata
from datetime import UTC, datetime, time, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given
from hypothesis import strategies as st

from songlab.ledger import alert_state, guardrails, webhook
from songlab.ledger.budgets import BudgetRule, Guardrails
from songlab.ledger.safe_text import ESCAPED, printable, printable_json
from tests.ledger._guardrails_data import synthetic_year, write_ledger

# A name that forges a second alert line, clears the screen, turns text red and reverses it.
FORGED = "evil\n\x1b[2JOVER budget the account: spent $999,999.00 (forged line)\x1b[31m\u202erev"
TOOL = "tool_\u202egnos_etareneg\r\x07\x9b"
BUDGET_NAME = "Team\u2028budget\x00\x7f"


def unsafe(text: str) -> list[str]:
    """The characters of ``text`` a terminal, a log or a chat would act on."""
    return [c for c in text if unicodedata.category(c) in ESCAPED]


@given(st.text())
def test_printable_escapes_every_control_and_keeps_the_rest(text: str) -> None:
    shown = printable(text)
    assert unsafe(shown) == []
    assert printable(shown) == shown  # escaping twice changes nothing
    kept = "".join(c for c in text if unicodedata.category(c) not in ESCAPED)
    assert all(c in shown for c in kept)  # nothing else is dropped or changed
    if not unsafe(text):
        assert shown == text  # text without controls is never touched


def test_printable_spells_each_escape() -> None:
    assert printable("a\nb\tc\rd") == "a\\nb\\tc\\rd"
    assert printable("\x1b[2J\x00\x7f\x9b") == "\\x1b[2J\\x00\\x7f\\x9b"
    assert printable("\u202e\u2028\ufeff\U000e0001") == "\\u202e\\u2028\\ufeff\\U000e0001"
    assert printable("café 音楽 🎵 a\u00a0b") == "café 音楽 🎵 a\u00a0b"
    assert printable_json({"k\n": ["v\x1b", 1, None, {"x": "\u202e"}]}) == {
        "k\\n": ["v\\x1b", 1, None, {"x": "\\u202e"}]
    }


@pytest.fixture(scope="module")
def hostile_ledger(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, datetime]:
    """Ninety days of work with a spike on day 88 of a project named ``FORGED``; the songs
    of v7 (every day's, the spike's too) ran on a tool named ``TOOL``."""
    y = synthetic_year(seed=3, days=90, per_day=60, drift=0.0, spike=(88, "research", 300))
    t = y.table
    spike = pc.starts_with(t["task_id"], "spike_")
    songs = pc.equal(t["tool_id"].cast(pa.string()), "tool_generate_song_v7")
    for name, rows, value in (("project", spike, FORGED), ("tool_id", songs, TOOL)):
        i = t.schema.get_field_index(name)
        col = pc.if_else(rows, pa.scalar(value, pa.string()), t[name].cast(pa.string()))
        t = t.set_column(i, t.schema.field(i), col.cast(t.schema.field(i).type))
    root = tmp_path_factory.mktemp("hostile") / "ledger"
    write_ledger(t, root)
    return root, datetime.combine(y.start + timedelta(days=89), time(6), UTC)


def _settings() -> Guardrails:
    return Guardrails(
        budgets=(
            BudgetRule(Decimal("1"), "month", "project", FORGED, name=BUDGET_NAME),
            BudgetRule(Decimal("1"), "month", "account", None, name=FORGED),
        )
    )


def test_alert_lines_and_the_reports_text_escape_every_name(
    hostile_ledger: tuple[Path, datetime],
) -> None:
    root, as_of = hostile_ledger
    found = guardrails.check(root, _settings(), as_of=as_of, forecast_scopes=0)
    kinds = {a.kind for a in found.alerts}
    assert {"budget", "anomaly"} <= kinds, found.alerts
    assert any(FORGED in a.subject for a in found.alerts)  # the data keeps the name as it is
    assert any(TOOL in a.text for a in found.alerts)  # the tool, a driver of the anomaly
    for text in [*found.lines(), *str(found).split("\n"), repr(found)]:
        assert unsafe(text) == [], text
    assert len(str(found).split("\n")) == len(found.alerts)  # one line per alert, no more
    assert any(printable(FORGED) in line for line in found.lines())


def test_the_webhook_body_carries_no_control_character(
    hostile_ledger: tuple[Path, datetime], tmp_path: Path
) -> None:
    root, as_of = hostile_ledger
    found = guardrails.check(root, _settings(), as_of=as_of, forecast_scopes=0)
    bodies: list[Any] = []

    def handle(request: httpx.Request) -> httpx.Response:
        bodies.append(json.loads(request.content))
        return httpx.Response(200)

    with alert_state.AlertState(tmp_path / "s.json") as state:
        webhook.deliver(
            found.alerts,
            "https://hooks.example.com/T",
            state,
            transport=httpx.MockTransport(handle),
        )
    assert len(bodies) == len(found.alerts)

    def strings(value: Any) -> list[str]:
        if isinstance(value, str):
            return [value]
        if isinstance(value, dict):
            return [s for k, v in value.items() for s in (k, *strings(v))]
        if isinstance(value, list):
            return [s for v in value for s in strings(v)]
        return []

    texts = [s for b in bodies for s in strings(b)]
    assert texts and all(unsafe(s) == [] for s in texts), [s for s in texts if unsafe(s)]
    assert any(printable(FORGED) in s for s in texts)
    assert [b["text"] for b in bodies] == found.lines()


def test_check_prints_escaped_lines_on_stdout_and_stderr(
    hostile_ledger: tuple[Path, datetime], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from songlab.cli.report import report_main

    root, as_of = hostile_ledger
    budgets = tmp_path / "budgets.toml"
    budgets.write_text('[[budget]]\nusd = "1"\n[anomalies]\nmonitors = ["total", "tool"]\n')

    def refuse(request: httpx.Request) -> httpx.Response:
        return httpx.Response(404)

    real = webhook.deliver

    def deliver(*args: Any, **kw: Any) -> webhook.Delivery:
        return real(*args, **kw, transport=httpx.MockTransport(refuse))

    mp = pytest.MonkeyPatch()
    mp.setattr(webhook, "deliver", deliver)
    try:
        code = report_main(
            [
                "--check",
                "--ledger",
                str(root),
                "--no-refresh",
                "--budgets",
                str(budgets),
                "--as-of",
                as_of.isoformat(),
                "--webhook",
                "https://hooks.example.com/T0KEN",
                "--state",
                str(tmp_path / "state\n\x1b[2J.json"),
            ]
        )
    finally:
        mp.undo()
    out, err = capsys.readouterr()
    assert code == 3
    assert unsafe(out.replace("\n", "")) == [] and unsafe(err.replace("\n", "")) == []
    assert printable(FORGED) in out  # the anomaly of the forged project, escaped
    assert "not delivered" in err and printable(TOOL) in err  # an anomaly's id names its tool
    assert all(
        line.startswith(("OVER", "NEAR", "FORECAST", "ANOMALY")) for line in out.splitlines()
    )


def test_a_path_with_control_characters_is_printed_escaped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from songlab.cli.report import report_main

    missing = tmp_path / "no\x1b[2Jsuch.toml"
    code = report_main(["--check", "--budgets", str(missing), "--ledger", str(tmp_path)])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert unsafe(err.replace("\n", "")) == [] and "no\\x1b[2Jsuch.toml" in err
    assert len(err.splitlines()) == 1


def test_the_report_commands_own_lines_are_escaped(
    sandbox: Any,
    new_account: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from songlab.cli.report import report_main

    acct = new_account()
    monkeypatch.setenv("SONGLAB_API_KEY", acct.api_key)
    monkeypatch.setenv("SONGLAB_BASE_URL", sandbox.base_url)
    out_path = tmp_path / "cost\n\x1b[2Jreport\u202e.html"
    assert report_main(["--out", str(out_path)]) == 0
    out, err = capsys.readouterr()
    assert out_path.exists()
    assert unsafe(out.replace("\n", "")) == []
    wrote = [line for line in out.splitlines() if line.startswith("songlab report: wrote")]
    assert len(wrote) == 1 and wrote[0].endswith("cost\\n\\x1b[2Jreport\\u202e.html")
