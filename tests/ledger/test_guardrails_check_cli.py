"""``songlab report --check`` in its own process, as cron runs it: one line per alert, exit 3 with
alerts and 0 without, and a webhook on 127.0.0.1 that gets each alert once across runs (the
first attempt refused with a 503 and retried)."""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, time, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.ledger._guardrails_data import synthetic_year, write_ledger

pytestmark = pytest.mark.slow

BUDGETS = """
[[budget]]
project = "research"
usd = "20"
period = "month"
hard = true

[[budget]]
tag = "draft"
usd = "1"
period = "quarter"

[[budget]]
usd = "100000"
period = "month"
"""
LINE = re.compile(
    r"^(OVER|FORECAST OVER|NEAR|ANOMALY|EXPIRING|RUNS OUT) .+; since "
    r"\d{4}-\d\d-\d\d \d\d:\d\d UTC$"
)


class Hook:
    """A webhook receiver: records every POST; answers the first one 503, the rest 200."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        hook = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # http.server's name for the POST handler
                body = self.rfile.read(int(self.headers["Content-Length"]))
                first = not hook.requests
                hook.requests.append(
                    {"path": self.path, "headers": dict(self.headers), "json": json.loads(body)}
                )
                self.send_response(503 if first else 200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.01,), daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hooks/T0KEN-SECRET"

    def delivered(self) -> list[str]:
        """Ids of the alerts answered 200."""
        return [r["json"]["id"] for r in self.requests[1:]]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def hook() -> Iterator[Hook]:
    h = Hook()
    try:
        yield h
    finally:
        h.close()


def _check(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src")}
    env.pop("SONGLAB_ALERT_WEBHOOK", None)
    return subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from songlab.cli import main; sys.exit(main())",
            "report",
            "--check",
            *args,
        ],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=300,
    )


@pytest.fixture(scope="module")
def spiked_ledger(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, datetime]:
    """120 days of work, 150 extra research tasks on day 118; a balance whose 900,000 base
    tokens expire 20 days after the check."""
    y = synthetic_year(seed=1, days=120, drift=0.0, spike=(118, "research", 150))
    as_of = datetime.combine(y.start + timedelta(days=119), time(6), UTC)
    snap = {
        "taken_at": as_of - timedelta(hours=1),
        "total_effective": 1_000_000,
        "base_effective": 900_000,
        "extra_tokens": 100_000,
        "base_expires_at": as_of + timedelta(days=20),
    }
    root = tmp_path_factory.mktemp("check") / "ledger"
    write_ledger(y.table, root, [snap])
    return root, as_of


def test_check_prints_alerts_exits_3_and_posts_each_once(
    spiked_ledger: tuple[Path, datetime], hook: Hook, tmp_path: Path
) -> None:
    ledger, as_of = spiked_ledger
    budgets = tmp_path / "budgets.toml"
    budgets.write_text(BUDGETS, encoding="utf-8")
    state = tmp_path / "state" / "alerts.json"
    args = [
        "--ledger",
        str(ledger),
        "--no-refresh",
        "--budgets",
        str(budgets),
        "--as-of",
        as_of.isoformat(),
        "--webhook",
        hook.url,
        "--state",
        str(state),
    ]
    first = _check(*args, cwd=tmp_path)
    assert first.returncode == 3, first.stderr
    lines = first.stdout.splitlines()
    assert lines and all(LINE.match(line) for line in lines), lines
    text = first.stdout
    assert "OVER budget project research ($20.00 a month, hard): spent $" in text
    assert "OVER budget tag draft ($1.00 a quarter, soft): spent $" in text
    assert "budget the account" not in text  # $100,000 a month: fine
    assert "ANOMALY project research: spent $" in text and "made by key key_fedcba987654" in text
    assert re.search(r"EXPIRING base tokens: [\d,]+ base tokens \(\$[\d,.]+\) expected to", text)
    spike_day = (as_of - timedelta(days=1)).date()
    assert f"on {spike_day}" in text and f"since {spike_day} 00:00 UTC" in text
    # the webhook: one POST per alert, the 503'd one retried, the same alerts as printed
    ids = [r["json"]["id"] for r in hook.requests]
    assert len(hook.requests) == len(lines) + 1
    assert ids[0] == ids[1]  # refused, then retried
    assert sorted(hook.delivered()) == sorted(set(ids))
    assert [r["json"]["text"] for r in hook.requests[1:]] == lines
    for r in hook.requests:
        assert r["path"] == "/hooks/T0KEN-SECRET"
        assert r["headers"]["Content-Type"] == "application/json"
        assert len(r["headers"]["Idempotency-Key"]) == 32
        assert r["json"]["source"] == "songlab" and r["json"]["kind"] in (
            "budget",
            "anomaly",
            "expiry",
            "runout",
        )
    over = next(
        r["json"]
        for r in hook.requests
        if "project research" in r["json"]["subject"] and r["json"]["kind"] == "budget"
    )
    assert over["state"] == "over" and over["details"]["hard"] is True
    assert re.fullmatch(r"\d+\.\d{8}", over["amount_usd"])  # exact, a string
    assert stat.S_IMODE(state.stat().st_mode) == 0o600
    assert "T0KEN-SECRET" not in first.stdout + first.stderr
    # the second run: the same alerts, nothing sent again
    second = _check(*args, cwd=tmp_path)
    assert second.returncode == 3, second.stderr
    assert second.stdout == first.stdout
    assert len(hook.requests) == len(lines) + 1
    # a new state (another budget) is sent, and only it
    budgets.write_text(BUDGETS + '\n[[budget]]\nproject = "podcast"\nusd = "2"\nperiod = "day"\n')
    third = _check(*args, cwd=tmp_path)
    assert third.returncode == 3, third.stderr
    new = [r["json"] for r in hook.requests[len(lines) + 1 :]]
    assert [(j["kind"], j["subject"]) for j in new] == [
        ("budget", "budget project podcast ($2.00 a day, soft)")
    ]


def test_check_is_silent_and_exits_0_without_alerts(
    spiked_ledger: tuple[Path, datetime], hook: Hook, tmp_path: Path
) -> None:
    ledger, as_of = spiked_ledger
    budgets = tmp_path / "quiet.toml"
    budgets.write_text("[anomalies]\nmonitors = ['total']\n[expiry]\nwarn_days = 5\n")
    early = as_of - timedelta(days=30)  # before the spike; the expiry 50 days away
    run = _check(
        "--ledger",
        str(ledger),
        "--no-refresh",
        "--budgets",
        str(budgets),
        "--as-of",
        early.isoformat(),
        "--webhook",
        hook.url,
        "--state",
        str(tmp_path / "s.json"),
        cwd=tmp_path,
    )
    assert (run.returncode, run.stdout) == (0, ""), run.stderr
    assert hook.requests == []


def test_check_refuses_a_bad_budgets_file_before_anything(
    spiked_ledger: tuple[Path, datetime], hook: Hook, tmp_path: Path
) -> None:
    ledger, as_of = spiked_ledger
    budgets = tmp_path / "bad.toml"
    budgets.write_text('[[budget]]\nproject = "research"\nusd = 20.5\n')
    run = _check(
        "--ledger",
        str(ledger),
        "--no-refresh",
        "--budgets",
        str(budgets),
        "--webhook",
        hook.url,
        "--state",
        str(tmp_path / "s.json"),
        cwd=tmp_path,
    )
    assert run.returncode == 2
    assert "budget 1 (project 'research'): usd: " in run.stderr
    assert "a TOML float is not exact" in run.stderr
    assert hook.requests == [] and not (tmp_path / "s.json").exists()
    bad_url = _check(
        "--ledger", str(ledger), "--no-refresh", "--webhook", "ftp://x/T0KEN", cwd=tmp_path
    )
    assert bad_url.returncode == 2
    assert "webhook: an http:// or https:// URL" in bad_url.stderr
    assert "T0KEN" not in bad_url.stderr
