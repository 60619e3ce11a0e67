"""``songlab report``'s options: the parser, and every check made before anything is read or sent.

:func:`parse` turns the command line into a :class:`Plan` or raises :class:`OptionError` (a
``ValueError``) naming the option and its rule, in one line, for any mistake, however large,
deep or strange: a bad value (argparse's own errors included), options that do not go
together, a path that cannot be what it is for, a budgets file (``budgets.load``), a
webhook URL (``webhook.check_url``), a damaged alert state file, a missing Spark. The
command prints that line and exits 2, having read no ledger and sent nothing.
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, time
from pathlib import Path
from typing import Any, Final, NoReturn

__all__ = ["HELP", "MAX_SPEED", "OptionError", "Plan", "parse", "parser"]

HELP: Final[
    str
] = """``songlab report``: a self-contained HTML cost report (tables + embedded PNG plots).

``songlab report --out PATH [--demo [--demo-days N]] [--ledger DIR [--no-refresh]] [--from DATE]
[--to DATE] [--period NAME] [--as-of DATE] [--budget [PROJECT=]USD ...] [--budgets FILE]
[--csv DIR [--csv-all-tasks]] [--xlsx PATH] [--focus PATH.csv|PATH.parquet [--focus-account ID]
[--focus-account-name N]] [--engine duckdb|spark] [--spark-remote sc://HOST:PORT]``, or
``songlab report --check [--budgets FILE] [--ledger DIR [--no-refresh]] [--webhook URL]
[--state FILE] [--as-of DATE]`` connects with ``songlab.connect()`` (the real service when
``SONGLAB_API_KEY`` and ``SONGLAB_BASE_URL`` are set, else the local sandbox's demo account),
builds the ledger frames from the task listing (or refreshes the Parquet ledger ``--ledger``
and reads it, with its labels; ``--no-refresh`` reads it as it is, without connecting) and
writes one HTML file with no external references, plus CSV files and an Excel workbook of the
same tables when asked. ``--demo`` first runs six weeks of work on the sandbox clock
(``--demo-days N``: N days instead, 1-366; a week is a quick look).

``--check`` (for cron or a scheduler) writes no report: it prints one line per active alert
(budgets, anomalies, expiring tokens; ``songlab.ledger.guardrails``), posts each new one to
``--webhook`` (or ``$SONGLAB_ALERT_WEBHOOK``) once, and exits 3 when any alert is active, 0
when none (and prints nothing then: cron mails only what is printed).

Every option is checked before anything is read or sent: a mistake is one line on stderr
naming the option (or the budgets file's field) and its rule, and exit 2.

``--focus`` also writes the ledger as FOCUS 1.2 (the FinOps Foundation's cost and usage
format). ``--engine spark`` runs every query on Apache Spark (a local session, or the
cluster of ``--spark-remote``) instead of the embedded DuckDB.
"""

MAX_SPEED: Final[float] = 100_000.0  # the sandbox's --speed: simulated work, scaled
MAX_TEXT: Final[int] = 200  # a FOCUS account id or name


class OptionError(ValueError):
    """An option breaks a rule: the message names the option and the rule, in one line."""


class _Parser(argparse.ArgumentParser):
    """argparse whose mistakes are an :class:`OptionError` (one line), never usage and exit."""

    def error(self, message: str) -> NoReturn:
        raise OptionError(message.removeprefix("argument ") + " (songlab report --help)")


@dataclass(frozen=True)
class Plan:
    """The checked options: what the run does, all of it known before it starts."""

    period: Any  # songlab.ledger.periods.Period
    as_of: datetime | None
    budgets: Any  # the --budget amounts, parsed (periods.Budgets), or None
    settings: Any  # the budgets file with the --budget amounts (budgets.Guardrails), or None
    webhook: str | None  # with --check: the URL (a secret: never printed)
    state: str | None  # with --check: the alert state file
    speed: float


# ------------------------------------------------------------------------------ the parser


def _outputs(p: argparse.ArgumentParser) -> None:
    from songlab.ledger.tables import TASK_ROWS

    p.add_argument("--out", help="where to write the HTML report (required unless --check)")
    p.add_argument("--csv", dest="csv_dir", metavar="DIR", help="also write every table as CSV")
    p.add_argument(
        "--csv-all-tasks",
        dest="all_tasks",
        action="store_true",
        help="with --csv: tasks.csv holds every task of the period (else the newest "
        f"{TASK_ROWS:,}, like the report and the workbook)",
    )
    p.add_argument("--xlsx", metavar="PATH", help="also write an Excel workbook, a sheet per table")
    p.add_argument(
        "--focus",
        metavar="PATH",
        help="also write the ledger as FOCUS 1.2 (.csv or .parquet; PATH.metadata.json beside it)",
    )
    p.add_argument(
        "--focus-account",
        metavar="ID",
        help="FOCUS BillingAccountId (the service shows none; default: account-of-<key id>)",
    )
    p.add_argument("--focus-account-name", metavar="NAME", help="FOCUS BillingAccountName")


def _sources(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--ledger",
        help="a Parquet ledger directory to refresh and report from "
        "(joined with the client's record; each refresh snapshots the balance, "
        "for the reconciliation section)",
    )
    p.add_argument(
        "--no-refresh",
        dest="no_refresh",
        action="store_true",
        help="with --ledger: read the ledger as it is, without connecting",
    )
    p.add_argument(
        "--demo",
        action="store_true",
        help="first run the demo: six weeks of work on the sandbox clock",
    )
    p.add_argument(
        "--demo-days",
        dest="demo_days",
        type=int,
        metavar="N",
        help="with --demo: run N days of work instead of 45 (1-366; 7 is a quick look)",
    )
    p.add_argument(
        "--speed",
        type=float,
        default=None,
        help="speed of a local sandbox (ignored for the real service; default 20, 500 with --demo)",
    )


def _periods(p: argparse.ArgumentParser) -> None:
    from songlab.ledger.periods import NAMED_PERIODS

    p.add_argument("--from", dest="start", metavar="DATE", help="first day (YYYY-MM-DD, UTC)")
    p.add_argument("--to", dest="end", metavar="DATE", help="last day, inclusive (YYYY-MM-DD)")
    p.add_argument(
        "--period",
        metavar="NAME",
        help=f"a named period instead of --from/--to: {', '.join(NAMED_PERIODS)}, "
        "or a month YYYY-MM",
    )
    p.add_argument(
        "--as-of",
        dest="as_of",
        metavar="DATE",
        help="the report's now (default: the later of now and the newest task)",
    )


def _guardrails(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--check",
        action="store_true",
        help="print one line per active alert and exit 3 if any (0 if none); no report",
    )
    p.add_argument(
        "--budget",
        action="append",
        default=[],
        metavar="[PROJECT=]USD",
        help="a monthly soft budget, overall (500) or per project (jingles=120); repeat; "
        "judged with the budgets file's (--budgets), once",
    )
    p.add_argument(
        "--budgets",
        metavar="FILE",
        help="the budgets file (TOML): budgets per account, project, key or tag and period, "
        "anomaly thresholds, expiry warnings",
    )
    p.add_argument(
        "--webhook",
        metavar="URL",
        help="with --check: POST each new alert there as JSON, once "
        "(default: $SONGLAB_ALERT_WEBHOOK; the URL is a secret, never printed)",
    )
    p.add_argument(
        "--state",
        metavar="FILE",
        help="with --check: where alerts are remembered between runs (first seen, sent); "
        "default: the user's state folder, songlab/alerts.json",
    )


def _engines(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--engine",
        choices=("duckdb", "spark"),
        default=None,
        help="where the queries run: duckdb (embedded, the default) or spark (Apache Spark: a "
        "local session, or the cluster of --spark-remote; needs pip install 'songlab[spark]' "
        "and Java)",
    )
    p.add_argument(
        "--spark-remote",
        metavar="sc://HOST:PORT",
        help="run on a Spark cluster through Spark Connect (implies --engine spark)",
    )


def parser() -> argparse.ArgumentParser:
    """``songlab report``'s argparse: its mistakes raise :class:`OptionError`."""
    p = _Parser(prog="songlab report", description=HELP.split("\n\n")[0])
    for group in (_outputs, _sources, _periods, _guardrails, _engines):
        group(p)
    return p


# ------------------------------------------------------------------------------ the checks


def parse(argv: Sequence[str]) -> tuple[argparse.Namespace, Plan]:
    """The options of ``argv``, checked whole (see the module's doc); ``SystemExit(0)`` for
    ``--help``."""
    args = parser().parse_args(list(argv))
    try:
        _combinations(args)
        _values(args)
        _paths(args)
        _spark(args)
        return args, _plan(args)
    except OptionError:
        raise
    except ValueError as exc:  # a checker's own message: it names its field and rule
        raise OptionError(str(exc)) from None


def _combinations(args: argparse.Namespace) -> None:
    """Options that need, or exclude, one another."""
    rules = (
        (args.out is None and not args.check, "--out: required (the HTML report's path), unless --check"),
        (args.demo_days is not None and not args.demo, "--demo-days: goes with --demo (the demo's length in days)"),
        (args.no_refresh and not args.ledger, "--no-refresh: needs --ledger DIR (the ledger to read as it is)"),
        (args.no_refresh and args.demo, "--no-refresh: the demo sends work; drop one of them"),
        (args.check and bool(args.demo or args.csv_dir or args.xlsx or args.focus or args.out),
         "--check: writes no report; drop --out, --demo, --csv, --xlsx and --focus"),
        ((args.webhook is not None or args.state is not None) and not args.check, "--webhook/--state: only with --check"),
        (args.spark_remote is not None and args.engine == "duckdb", "--spark-remote: runs on Spark; it cannot go with --engine duckdb"),
        (bool(args.focus_account or args.focus_account_name) and not args.focus, "--focus-account: goes with --focus PATH (the FOCUS file to write)"),
        (bool(args.focus) and args.no_refresh and not args.focus_account, "--focus-account: needed with --no-refresh (no key to name the account by)"),
        (args.all_tasks and not args.csv_dir, "--csv-all-tasks: needs --csv DIR (the directory tasks.csv goes to)"),
        (bool(args.period) and bool(args.start or args.end), "--period: give a named period or --from/--to, not both"),
    )  # fmt: skip
    for broken, message in rules:
        if broken:
            raise OptionError(message)


def _values(args: argparse.Namespace) -> None:
    """Values with a range or a form of their own."""
    if args.demo_days is not None and not 1 <= args.demo_days <= 366:
        raise OptionError(f"--demo-days: a whole number of days, 1-366; got {args.demo_days}")
    if args.speed is not None and not (math.isfinite(args.speed) and 0 < args.speed <= MAX_SPEED):
        raise OptionError(
            f"--speed: a number above 0 and at most {MAX_SPEED:,.0f}; got {args.speed}"
        )
    for option, value in (
        ("--focus-account", args.focus_account),
        ("--focus-account-name", args.focus_account_name),
    ):
        if value is not None and not (
            value.strip() and len(value) <= MAX_TEXT and value.isprintable()
        ):
            raise OptionError(
                f"{option}: 1-{MAX_TEXT} characters of printable text (no control characters)"
            )


def _paths(args: argparse.Namespace) -> None:
    """Each path can be what it is for: a file to write, a directory, a file to read."""
    for option, value in (("--out", args.out), ("--xlsx", args.xlsx), ("--focus", args.focus)):
        if value is not None:
            _file_to_write(option, Path(value))
    if args.xlsx is not None and Path(args.xlsx).suffix.lower() != ".xlsx":
        raise OptionError("--xlsx: an Excel workbook's path, ending in .xlsx")
    if args.csv_dir is not None:
        _directory("--csv", Path(args.csv_dir), must_exist=False)
    if args.ledger is not None:
        _directory("--ledger", Path(args.ledger), must_exist=args.no_refresh)
    if args.focus:
        from songlab.ledger.focus import check_path

        check_path(args.focus)


def _file_to_write(option: str, path: Path) -> None:
    if not str(path).strip():
        raise OptionError(f"{option}: a file path")
    if path.is_dir():
        raise OptionError(f"{option}: {path} is a directory; give the file's path")
    parent = next((q for q in path.absolute().parents if q.exists()), None)
    if parent is not None and not parent.is_dir():
        raise OptionError(f"{option}: {parent} is not a directory")


def _directory(option: str, path: Path, *, must_exist: bool) -> None:
    if path.exists() and not path.is_dir():
        raise OptionError(f"{option}: {path} is not a directory")
    if must_exist and not path.exists():
        raise OptionError(f"{option}: no such directory: {path}")
    if not path.exists():
        _file_to_write(option, path)  # its folder can be made


def _spark(args: argparse.Namespace) -> None:
    """``--engine spark`` / ``--spark-remote``: pyspark there, Java for a local session, and
    an address of the form sc://HOST:PORT."""
    import importlib.util

    if args.spark_remote is None and args.engine != "spark":
        return
    if args.spark_remote is not None:
        _spark_address(args.spark_remote)
    option = "--engine spark" if args.spark_remote is None else "--spark-remote"
    if importlib.util.find_spec("pyspark") is None:
        raise OptionError(f"{option}: pyspark is not installed (pip install 'songlab[spark]')")
    if args.spark_remote is None and shutil.which("java") is None:
        raise OptionError(
            "--engine spark: a local Spark session needs Java (make java-deps, or apt-get "
            "install openjdk-17-jre-headless); --spark-remote sc://... needs none"
        )


def _spark_address(address: str) -> None:
    from urllib.parse import urlsplit

    bad = OptionError("--spark-remote: a Spark Connect address sc://HOST:PORT (port 1-65535)")
    if not address.isprintable() or any(ch.isspace() for ch in address):
        raise bad
    try:
        parts = urlsplit(address)
        port = parts.port
    except ValueError:
        raise bad from None
    if parts.scheme != "sc" or not parts.hostname or (port is not None and not 0 < port < 65536):
        raise bad


def _as_of(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        if len(text) == 10:  # a day: its last second
            return datetime.combine(date.fromisoformat(text), time(23, 59, 59), UTC)
        t = datetime.fromisoformat(text)
    except ValueError:
        from songlab.ledger.amounts import shown

        raise OptionError(
            f"--as-of: a date YYYY-MM-DD or an ISO 8601 time, got {shown(text)}"
        ) from None
    return t.astimezone(UTC) if t.tzinfo else t.replace(tzinfo=UTC)


def _plan(args: argparse.Namespace) -> Plan:
    from songlab.ledger.budgets import Guardrails, from_amounts, load
    from songlab.ledger.periods import period

    as_of = _as_of(args.as_of)
    try:
        p = (
            period(args.period, as_of=as_of)
            if args.period
            else period(start=args.start, end=args.end)
        )
    except ValueError as exc:  # "from: a date ...": the option's own name
        raise OptionError(f"--{exc}") from None
    budgets = _budgets(args.budget)
    rules = from_amounts(budgets) if budgets else ()  # --budget 500: judged like the file's
    settings = load(args.budgets) if args.budgets else None
    if rules:
        settings = (settings or Guardrails()).including(rules)
    webhook = state = None
    if args.check:
        webhook = args.webhook or os.environ.get("SONGLAB_ALERT_WEBHOOK") or None
        if webhook is not None:
            from songlab.ledger.webhook import check_url

            check_url(webhook)
        state = args.state or _default_state()
        _state_file(state)
    speed = args.speed if args.speed is not None else (500.0 if args.demo else 20.0)
    return Plan(p, as_of, budgets, settings, webhook, state, speed)


def _budgets(items: Sequence[str]) -> Any:
    """The ``--budget`` amounts, parsed once (``periods.parse_budgets``); a mistake names the
    ``--budget`` it is in."""
    from songlab.ledger.amounts import shown
    from songlab.ledger.periods import parse_budgets

    if not items:
        return None
    for item in items:
        try:
            parse_budgets([item])
        except ValueError as exc:
            rule = str(exc).split(": ", 1)[-1]
            raise OptionError(f"--budget {shown(item)}: {rule}") from None
    return parse_budgets(items)


def _default_state() -> str:
    """The user's state folder's ``songlab/alerts.json`` (made when ``--check`` runs)."""
    import platformdirs

    return str(Path(platformdirs.user_state_dir("songlab")) / "alerts.json")


def _state_file(path: str) -> None:
    """``--state``: a file ``--check`` can read and write (a songlab alert state file, if it
    is there)."""
    p = Path(path)
    if not p.exists():
        _file_to_write("--state", p)
        return
    mode = p.stat().st_mode
    if not stat.S_ISREG(mode):
        raise OptionError(f"--state: {p} is not a regular file")
    from songlab.ledger.alert_state import read_entries

    try:
        read_entries(p)
    except ValueError as exc:
        raise OptionError(f"--state: {exc}") from None
