"""Config that cannot break ``songlab report``: every mistake in a budgets file or an option,
however large, deep or strange, is exit 2 and one line on stderr naming the file (or the
option), the field and the rule, with no traceback, before anything is read or sent.

"Nothing sent": the service (``SONGLAB_BASE_URL``) and the webhook are one recording HTTP
server that must see no request. "Nothing read": the ledger's files are never listed and no
state file is written. Most cases run in-process (``report_main``); the last test runs the
command as cron does, in its own process.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from songlab.cli.report import report_main
from songlab.ledger.store import LedgerStore


class Recorder:
    """An HTTP server standing for the service and the webhook: records every request."""

    def __init__(self) -> None:
        self.requests: list[str] = []
        seen = self.requests

        class Handler(BaseHTTPRequestHandler):
            def _any(self) -> None:
                seen.append(f"{self.command} {self.path}")
                self.send_response(500)
                self.send_header("Content-Length", "0")
                self.end_headers()

            do_GET = do_POST = do_PUT = do_DELETE = _any

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.01,), daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    """A recording service and webhook, a ledger directory that must not be read, a state
    file that must not be written."""
    rec = Recorder()
    monkeypatch.setenv("SONGLAB_API_KEY", "sk-hostile-test-key")
    monkeypatch.setenv("SONGLAB_BASE_URL", rec.url)
    monkeypatch.delenv("SONGLAB_ALERT_WEBHOOK", raising=False)

    def no_reading(self: Any, *args: Any, **kw: Any) -> Any:
        raise AssertionError(f"the ledger was read: {self}")

    monkeypatch.setattr(LedgerStore, "files", no_reading)
    monkeypatch.setattr(LedgerStore, "refresh", no_reading)
    ledger = tmp_path / "ledger"
    ledger.mkdir()
    try:
        yield {
            "tmp": tmp_path,
            "recorder": rec,
            "ledger": ledger,
            "state": tmp_path / "state" / "alerts.json",
            "hook": rec.url + "/hooks/T0KEN-SECRET",
        }
    finally:
        rec.close()


def _refused(
    argv: list[str], world: dict[str, Any], capsys: pytest.CaptureFixture[str], *needles: str
) -> str:
    """Run ``argv``; assert exit 2, one line on stderr holding each of ``needles``, nothing
    on stdout, nothing sent, no state written. The line."""
    before = sorted(p.name for p in world["tmp"].iterdir())
    code = report_main(argv)
    out, err = capsys.readouterr()
    assert code == 2, err
    assert out == ""
    lines = err.splitlines()
    assert len(lines) == 1, err
    line = lines[0]
    assert line.startswith("songlab report: ") and "Traceback" not in err
    assert len(line) <= 1_000
    for needle in needles:
        assert needle in line, (needle, line)
    assert world["recorder"].requests == []
    assert not world["state"].exists()
    assert sorted(p.name for p in world["tmp"].iterdir()) == before
    assert "T0KEN-SECRET" not in err and "sk-hostile-test-key" not in err
    return line


def _check_argv(world: dict[str, Any], *more: str) -> list[str]:
    return [
        "--check",
        "--ledger",
        str(world["ledger"]),
        "--webhook",
        world["hook"],
        "--state",
        str(world["state"]),
        *more,
    ]


DEEP = "x = " + "[" * 100_000 + "]" * 100_000 + "\n"
HOSTILE_FILES: list[tuple[str, str | bytes, tuple[str, ...]]] = [
    ("huge-int", "[[budget]]\nusd = 1000000000000000000000\n", ("budget 1: usd: at most $1,000,000,000,000",)),
    ("huge-text", '[[budget]]\nusd = "1e30"\n', ("budget 1: usd: at most $1,000,000,000,000",)),
    ("huge-min-usd", '[anomalies]\nmin_usd = "1e40"\n', ("anomalies: min_usd: at most $1,000,000,000,000",)),
    ("huge-exponent", '[[budget]]\nusd = "1e999999999"\n', ("budget 1: usd: at most",)),
    ("5000-digits", "[[budget]]\nusd = " + "9" * 5000 + "\n", ("not valid here", "digits")),
    ("float-inf", "[[budget]]\nusd = inf\n", ("budget 1: usd:", "a TOML float is not exact")),
    ("negative", '[[budget]]\nusd = "-5"\n', ("budget 1: usd: a non-negative amount",)),
    ("negative-int", "[[budget]]\nusd = -5\n", ("budget 1: usd: a non-negative amount",)),
    ("zero", '[[budget]]\nusd = "0"\n', ("budget 1: usd: an amount above 0",)),
    ("nan-text", '[[budget]]\nusd = "NaN"\n', ("budget 1: usd: a finite amount",)),
    ("nan-near", '[[budget]]\nusd = "5"\nnear = nan\n', ("budget 1: near: a percentage from 1 to 100",)),
    ("nan-z", "[anomalies]\nz = nan\n", ("anomalies: z: a number of spreads",)),
    ("inf-level", "[forecast]\nlevel = inf\n", ("forecast: level: the interval in %",)),
    ("huge-near", '[[budget]]\nusd = "5"\nnear = ' + "9" * 400 + "\n", ("budget 1: near: a percentage",)),
    ("huge-tokens", "[expiry]\nmin_tokens = " + "9" * 30 + "\n", ("expiry: min_tokens: a whole number",)),
    ("deep-nesting", DEEP, ("not valid here: arrays or tables nested too deeply",)),
    ("deep-monitors", "[anomalies]\nmonitors = " + "[" * 50 + '"total"' + "]" * 50 + "\n", ("anomalies: monitors: a list of",)),
    ("escape-in-name", '[[budget]]\nusd = "5"\nname = "a\\u001b[2Jb"\n', ("name: printable text: no control characters", "\\x1b")),
    ("newline-in-name", '[[budget]]\nusd = "5"\nname = "OK\\nOVER budget the account"\n', ("name: printable text", "\\n")),
    ("bidi-in-name", '[[budget]]\nusd = "5"\nname = "a\\u202eb"\n', ("name: printable text", "\\u202e")),
    ("newline-in-project", '[[budget]]\nusd = "5"\nproject = "a\\nb"\n', ("project: 1-64 characters",)),
    ("long-name", '[[budget]]\nusd = "5"\nname = "' + "n" * 500_000 + '"\n', ("name: 1-100 characters",)),
    ("nul-byte", b'[[budget]]\nusd = "5"\x00\n', ("not valid TOML",)),
    ("not-utf8", b'[[budget]]\nname = "\xff\xfe"\nusd = "5"\n', ("not UTF-8 text",)),
    ("unknown-field", '[[budget]]\nusd = "5"\nteam = "x"\n', ("budget 1: team: not a budget field",)),
    ("unknown-scope", '[[budget]]\nusd = "5"\nscope = "team"\n', ("budget 1: scope: not a budget field",)),
    ("unknown-table", "[[budgets]]\nusd = '5'\n", ("unknown table or key 'budgets'",)),
    ("budget-as-table", "[budget]\nusd = '5'\n", ("budget: an array of tables",)),
    ("escape-in-key", '[[budget]]\nusd = "5"\n"\\u001b[2J" = 1\n', ("not a budget field", "\\x1b")),
    ("two-scopes", '[[budget]]\nusd = "5"\nproject = "a"\ntag = "b"\n', ("tag: a budget is for one of project, key or tag",)),
    ("period-unknown", '[[budget]]\nusd = "5"\nperiod = "fortnight"\n', ("period: one of day, week, month, quarter",)),
    ("too-many", '[[budget]]\nusd = "5"\n' * 1_001, ("budget: at most 1,000 budgets, got 1,001",)),
    ("too-big", "# " + "x" * (1 << 21) + "\n", ("bytes; a budgets file is at most 1,048,576",)),
    ("duplicate-key", '[[budget]]\nusd = "5"\nusd = "6"\n', ("not valid TOML",)),
]  # fmt: skip


@pytest.mark.parametrize(
    ("case", "content", "needles"), HOSTILE_FILES, ids=[c[0] for c in HOSTILE_FILES]
)
def test_a_hostile_budgets_file_is_one_line_and_exit_2(
    case: str,
    content: str | bytes,
    needles: tuple[str, ...],
    world: dict[str, Any],
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = world["tmp"] / "budgets.toml"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    argv = _check_argv(world, "--budgets", str(path))
    line = _refused(argv, world, capsys, str(path), *needles)
    assert "n" * 200 not in line and "9" * 200 not in line  # a long value is never repeated whole


def test_a_budgets_path_that_is_not_a_file(
    world: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    fifo = world["tmp"] / "budgets.fifo"
    os.mkfifo(fifo)  # reading it would wait forever
    for path, rule in (
        (fifo, "not a regular file"),
        (world["tmp"], "not a regular file"),
        (Path("/dev/zero"), "not a regular file"),
        (world["tmp"] / "missing.toml", "no such budgets file"),
    ):
        _refused(_check_argv(world, "--budgets", str(path)), world, capsys, str(path), rule)


def test_a_key_pasted_into_the_budgets_file_is_never_repeated(
    world: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    path = world["tmp"] / "budgets.toml"
    path.write_text('[[budget]]\nusd = "5"\nkey = "sk-live-SECRET-9999"\n')
    line = _refused(_check_argv(world, "--budgets", str(path)), world, capsys, "key: a key id")
    assert "SECRET" not in line


HOSTILE_OPTIONS: list[tuple[str, list[str], tuple[str, ...]]] = [
    ("port-out-of-range", ["--webhook", "http://127.0.0.1:99999/x"], ("webhook: a port is a number from 1 to 65535",)),
    ("port-zero", ["--webhook", "http://127.0.0.1:0/x"], ("webhook: a port",)),
    ("url-escape", ["--webhook", "https://h.example/\x1b[2J"], ("webhook: a URL without spaces or control characters",)),
    ("url-no-host", ["--webhook", "https:///path"], ("webhook: an http:// or https:// URL with a host",)),
    ("url-ftp", ["--webhook", "ftp://h.example/T0KEN-SECRET"], ("webhook: an http:// or https://",)),
    ("url-ipv6-open", ["--webhook", "http://[::1/T0KEN-SECRET"], ("webhook: a URL with a host",)),
    ("url-bad-idna", ["--webhook", "https://xn--zz.example/T0KEN-SECRET"], ("webhook: a URL whose host",)),
    ("url-huge", ["--webhook", "https://h.example/" + "a" * 10_000], ("webhook: a URL of at most 2,048",)),
    ("speed-nan", ["--speed", "nan"], ("--speed: a number above 0",)),
    ("speed-negative", ["--speed", "-1"], ("--speed: a number above 0",)),
    ("speed-huge", ["--speed", "1e300"], ("--speed: a number above 0 and at most 100,000",)),
    ("as-of-huge", ["--as-of", "x" * 10_000_000], ("--as-of: a date YYYY-MM-DD",)),
    ("as-of-escape", ["--as-of", "\x1b[2J"], ("--as-of: a date", "\\x1b")),
    ("period-bad", ["--period", "9999-99"], ("--period: one of",)),
    ("from-bad", ["--from", "2026-02-30"], ("--from: a date",)),
    ("to-before-from", ["--from", "2026-02-03", "--to", "2026-02-01"], ("--to: must not be before from",)),
    ("budget-huge", ["--budget", "1e30"], ("--budget '1e30': at most $1,000,000,000,000",)),
    ("budget-nan", ["--budget", "nan"], ("--budget 'nan': a finite amount",)),
    ("budget-negative", ["--budget", "-5"], ("--budget '-5': a non-negative amount",)),
    ("budget-zero", ["--budget", "0"], ("budget: an amount above 0",)),
    ("budget-bad-project", ["--budget", "a\nb=5"], ("--budget 'a\\nb=5': a project name",)),
    ("budget-empty-amount", ["--budget", "x="], ("--budget 'x=': an amount in USD",)),
    ("state-directory", ["--state", "."], ("--state:", "is not a regular file")),
    ("engine-unknown", ["--engine", "sparky"], ("--engine: invalid choice",)),
    ("remote-port", ["--spark-remote", "sc://h:99999"], ("--spark-remote: a Spark Connect address",)),
    ("remote-no-host", ["--spark-remote", "sc://"], ("--spark-remote: a Spark Connect address",)),
    ("unknown-option", ["--bogus"], ("unrecognized arguments: --bogus",)),
    ("check-with-out", ["--out", "r.html"], ("--check: writes no report",)),
    ("demo-days-huge", ["--demo-days", "9" * 30], ("--demo-days",)),
]  # fmt: skip


@pytest.mark.parametrize(
    ("case", "more", "needles"), HOSTILE_OPTIONS, ids=[c[0] for c in HOSTILE_OPTIONS]
)
def test_a_hostile_option_is_one_line_and_exit_2(
    case: str,
    more: list[str],
    needles: tuple[str, ...],
    world: dict[str, Any],
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = _check_argv(world)
    if more[0] in ("--webhook", "--state"):  # replace the good one
        i = argv.index(more[0])
        argv[i : i + 2] = more
    else:
        argv += more
    if case == "state-directory":
        argv[argv.index("--state") + 1] = str(world["tmp"])
    _refused(argv, world, capsys, *needles)


def test_bad_report_paths_are_refused_before_anything(
    world: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    tmp = world["tmp"]
    a_file = tmp / "a-file.txt"
    a_file.write_text("x")
    damaged = tmp / "damaged.json"
    damaged.write_text('{"version": 1, "alerts": [1, 2]}')
    cases = [
        (["--out", str(tmp)], "--out:", "is a directory"),
        (["--out", str(a_file / "r.html")], "--out:", "is not a directory"),
        (["--out", str(tmp / "r.html"), "--xlsx", str(tmp / "r.csv")], "--xlsx: an Excel", "xlsx"),
        (["--out", str(tmp / "r.html"), "--csv", str(a_file)], "--csv:", "is not a directory"),
        (["--out", str(tmp / "r.html"), "--ledger", str(a_file)], "--ledger:", "not a directory"),
        (
            ["--out", str(tmp / "r.html"), "--ledger", str(tmp / "none"), "--no-refresh"],
            "--ledger: no such directory",
            "none",
        ),
        (["--out", str(tmp / "r.html"), "--no-refresh"], "--no-refresh: needs --ledger", ""),
        (
            [
                "--out",
                str(tmp / "r.html"),
                "--focus",
                str(tmp / "f.csv"),
                "--focus-account",
                "a\x1b",
            ],
            "--focus-account: 1-200 characters of printable text",
            "",
        ),
        (
            ["--check", "--ledger", str(world["ledger"]), "--state", str(damaged)],
            "--state: alert state",
            "not a songlab alert state file",
        ),
    ]
    for argv, *needles in cases:
        if str(damaged) in argv:  # this one is meant to exist
            before = damaged.read_text()
            _refused_keep(argv, world, capsys, damaged, *needles)
            assert damaged.read_text() == before
            continue
        _refused(argv, world, capsys, *needles)


def _refused_keep(
    argv: list[str], world: dict[str, Any], capsys: pytest.CaptureFixture[str], *rest: Any
) -> None:
    _, *needles = rest
    code = report_main(argv)
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and len(err.splitlines()) == 1, err
    assert all(n in err for n in needles), err
    assert world["recorder"].requests == []


@pytest.mark.slow
def test_the_command_in_its_own_process_refuses_a_deep_file_and_a_bad_port(
    world: dict[str, Any],
) -> None:
    """As cron runs it: a real process, its own recursion limit and stderr."""
    path = world["tmp"] / "deep.toml"
    path.write_text(DEEP)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src")}
    for argv, needle in (
        (_check_argv(world, "--budgets", str(path)), "nested too deeply"),
        (
            ["--check", "--ledger", str(world["ledger"]), "--webhook", "http://127.0.0.1:99999/x"],
            "webhook: a port is a number from 1 to 65535",
        ),
    ):
        run = subprocess.run(
            [sys.executable, "-m", "songlab.cli", "report", *argv],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
        assert run.returncode == 2, run.stderr
        assert run.stdout == "" and len(run.stderr.splitlines()) == 1, run.stderr
        assert needle in run.stderr and "Traceback" not in run.stderr
    assert world["recorder"].requests == [] and not world["state"].exists()
