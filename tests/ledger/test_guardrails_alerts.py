"""Alerts (``songlab.ledger.alerts``, ``alert_state``, ``webhook``, ``alert_html``): one line and
one JSON object each, delivered to a webhook once per state, retried on failure, remembered in a
private file."""

from __future__ import annotations

import json
import stat
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import pytest

from songlab.ledger import alert_html, alert_state, alerts, webhook

NOW = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)


def _alert(n: int = 1, state: str = "over") -> alerts.Alert:
    return alerts.Alert(
        id=f"budget:project:p{n}:month:120:2026-11:{state}",
        kind="budget",
        state=state,
        subject=f"budget project p{n} ($120.00 a month, hard)",
        text="spent $130.12 of $120.00 (108.4%) in 2026-11",
        amount_usd=Decimal("130.12345678"),
        since=NOW - timedelta(hours=5),
        as_of=NOW,
        details={"spent_usd": Decimal("130.12345678"), "day": date(2026, 11, 20)},
    )


def test_one_line_says_what_how_much_and_since_when() -> None:
    assert _alert().line() == (
        "OVER budget project p1 ($120.00 a month, hard): spent $130.12 of $120.00 (108.4%) in "
        "2026-11; since 2026-11-20 07:00 UTC"
    )


def test_json_keeps_money_exact_and_carries_the_line() -> None:
    j = _alert().to_json()
    assert j["amount_usd"] == "130.12345678"
    assert j["details"] == {"spent_usd": "130.12345678", "day": "2026-11-20"}
    assert j["since"] == "2026-11-20T07:00:00Z" and j["text"] == _alert().line()
    json.dumps(j)  # JSON all the way down


def _transport(answers: list[Any], seen: list[httpx.Request]) -> httpx.MockTransport:
    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        answer = answers.pop(0) if answers else 200
        if isinstance(answer, Exception):
            raise answer
        if isinstance(answer, tuple):
            return httpx.Response(answer[0], headers=answer[1])
        return httpx.Response(answer)

    return httpx.MockTransport(handle)


URL = "https://hooks.example.com/services/T000/B000/SECRETTOKEN"


def test_deliver_retries_then_never_sends_again(tmp_path: Path) -> None:
    seen: list[httpx.Request] = []
    waits: list[float] = []
    answers: list[Any] = [503, httpx.ConnectError("refused"), (429, {"Retry-After": "2"}), 200]
    path = tmp_path / "state.json"
    with alert_state.AlertState(path) as state:
        done = webhook.deliver(
            [_alert(1), _alert(2)],
            URL,
            state,
            transport=_transport(answers, seen),
            sleep=waits.append,
        )
    assert done.sent == [_alert(1).id, _alert(2).id] and done.failed == []
    assert len(seen) == 5  # 503, connection refused, 429, 200; then the second: 200
    assert waits == [0.5, 1.0, 2.0]  # growing waits; Retry-After honoured
    body = json.loads(seen[0].content)
    assert body["id"] == _alert(1).id and body["text"] == _alert(1).line()
    assert seen[0].headers["Idempotency-Key"] == seen[3].headers["Idempotency-Key"]
    assert seen[0].headers["Idempotency-Key"] != seen[4].headers["Idempotency-Key"]
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    seen.clear()
    with alert_state.AlertState(path) as state:  # the next run
        again = webhook.deliver(
            [_alert(1), _alert(2), _alert(3)],
            URL,
            state,
            transport=_transport([], seen),
            sleep=waits.append,
        )
    assert again.skipped == [_alert(1).id, _alert(2).id] and again.sent == [_alert(3).id]
    assert [json.loads(r.content)["id"] for r in seen] == [_alert(3).id]


def test_a_new_state_of_the_same_budget_is_sent(tmp_path: Path) -> None:
    seen: list[httpx.Request] = []
    with alert_state.AlertState(tmp_path / "s.json") as state:
        webhook.deliver([_alert(1, "near")], URL, state, transport=_transport([], seen))
        webhook.deliver([_alert(1, "over")], URL, state, transport=_transport([], seen))
        webhook.deliver([_alert(1, "over")], URL, state, transport=_transport([], seen))
    assert [json.loads(r.content)["state"] for r in seen] == ["near", "over"]


def test_a_failure_is_left_for_the_next_run_and_never_names_the_url(tmp_path: Path) -> None:
    seen: list[httpx.Request] = []
    path = tmp_path / "s.json"
    with alert_state.AlertState(path) as state:
        done = webhook.deliver(
            [_alert()],
            URL,
            state,
            attempts=3,
            transport=_transport([500, 502, 504], seen),
            sleep=lambda _: None,
        )
        assert state.entry(_alert().id)["attempts"] == 1
    assert done.sent == [] and done.failed == [
        (_alert().id, "HTTP 504 from https://hooks.example.com/...")
    ]
    assert len(seen) == 3
    refused: list[httpx.Request] = []
    with alert_state.AlertState(path) as state:  # a 4xx is not retried within the run
        done = webhook.deliver([_alert()], URL, state, transport=_transport([404], refused))
    assert len(refused) == 1 and "SECRETTOKEN" not in done.failed[0][1]
    with alert_state.AlertState(path) as state:  # and a later run delivers it
        done = webhook.deliver([_alert()], URL, state, transport=_transport([], []))
    assert done.sent == [_alert().id]
    assert "SECRETTOKEN" not in path.read_text()


def test_first_seen_is_kept_between_runs(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    with alert_state.AlertState(path) as state:
        assert state.first_seen("forecast:x", NOW) == NOW
    with alert_state.AlertState(path) as state:
        assert state.first_seen("forecast:x", NOW + timedelta(days=1)) == NOW


def test_a_damaged_state_file_stops_the_run_instead_of_resending(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text("{not json")
    path.chmod(0o600)
    with pytest.raises(ValueError, match="alert state .*: not a songlab alert state file"):
        with alert_state.AlertState(path):
            pass
    assert path.read_text() == "{not json"  # left as it was


def test_redact_and_check_url() -> None:
    assert webhook.redact_url(URL) == "https://hooks.example.com/..."
    assert webhook.redact_url("http://127.0.0.1:8080/x?token=1") == "http://127.0.0.1:8080/..."
    with pytest.raises(ValueError, match="webhook: an http:// or https:// URL with a host") as info:
        webhook.check_url("ftp://hooks.example.com/SECRETTOKEN")
    assert "SECRETTOKEN" not in str(info.value)


def test_html_escapes_and_says_when_there_is_nothing() -> None:
    bad = alerts.Alert("a", "anomaly", "anomaly", "project <script>", "x & y", None, NOW, NOW)
    page = alert_html.alerts_html([bad], as_of=NOW)
    assert "<script>" not in page and "project &lt;script&gt;" in page and "x &amp; y" in page
    assert "No active alerts." in alert_html.alerts_html([], as_of=NOW)
