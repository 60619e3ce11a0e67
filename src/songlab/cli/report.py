"""``songlab report``: its argparse, the checks of its options, the report run and ``--check``."""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from datetime import UTC, date, datetime, time
from pathlib import Path
from typing import Any

REPORT_HELP = """``songlab report``: a self-contained HTML cost report (tables + embedded PNG plots).

``songlab report --out PATH [--demo [--demo-days N]] [--ledger DIR] [--from DATE] [--to DATE]
[--period NAME] [--as-of DATE] [--budget [PROJECT=]USD ...] [--csv DIR [--csv-all-tasks]]
[--xlsx PATH] [--focus PATH.csv|PATH.parquet [--focus-account ID] [--focus-account-name N]]
[--engine duckdb|spark] [--spark-remote sc://HOST:PORT]``, or ``songlab report --check
[--budgets FILE] [--ledger DIR [--no-refresh]] [--webhook URL] [--state FILE] [--as-of DATE]``
connects with ``songlab.connect()`` (the real service when ``SONGLAB_API_KEY``
and ``SONGLAB_BASE_URL`` are set, else the local sandbox's demo account),
builds the ledger frames from the task listing (or refreshes the Parquet
ledger ``--ledger`` and reads it, with its labels) and writes one HTML file
with no external references, plus CSV files and an Excel workbook of the same
tables when asked. ``--demo`` first runs six weeks of work on the sandbox clock
(``--demo-days N``: N days instead, 1-366; a week is a quick look).

``--check`` (for cron or a scheduler) writes no report: it prints one line per active alert
(budgets, anomalies, expiring tokens; ``songlab.ledger.guardrails``), posts each new one to
``--webhook`` (or ``$SONGLAB_ALERT_WEBHOOK``) once, and exits 3 when any alert is active, 0
when none (and prints nothing then: cron mails only what is printed).

``--focus`` also writes the ledger as FOCUS 1.2 (the FinOps Foundation's cost and usage
format). ``--engine spark`` runs every query on Apache Spark (a local session, or the
cluster of ``--spark-remote``) instead of the embedded DuckDB.
"""

__all__ = ["EXIT_ALERTS", "REPORT_HELP", "check_main", "report_main"]

EXIT_ALERTS = 3  # songlab report --check: some alert is active


def _say(message: str, *, err: bool = False) -> None:
    """Print one line of the command's own to stdout (or stderr), control characters escaped
    (``songlab.ledger.safe_text.printable``: a path, a name or a label can hold any)."""
    from songlab.ledger.safe_text import printable

    print(printable(message), file=sys.stderr if err else sys.stdout)


# -- songlab report -------------------------------------------------------------


def _report_parser() -> argparse.ArgumentParser:
    from songlab.ledger.periods import NAMED_PERIODS
    from songlab.ledger.tables import TASK_ROWS

    p = argparse.ArgumentParser(prog="songlab report", description=REPORT_HELP.split("\n\n")[0])
    p.add_argument("--out", help="where to write the HTML report (required unless --check)")
    p.add_argument(
        "--check",
        action="store_true",
        help="print one line per active alert and exit 3 if any (0 if none); no report",
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
        "--ledger",
        help="a Parquet ledger directory to refresh and report from "
        "(joined with the client's record; each refresh snapshots the balance, "
        "for the reconciliation section)",
    )
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
    p.add_argument(
        "--budget",
        action="append",
        default=[],
        metavar="[PROJECT=]USD",
        help="a monthly soft budget, overall (500) or per project (jingles=120); repeat; "
        "judged with the budgets file's (--budgets), once",
    )
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
    p.add_argument(
        "--speed",
        type=float,
        default=None,
        help="speed of a local sandbox (ignored for the real service; default 20, 500 with --demo)",
    )
    return p


def _report_options(args: argparse.Namespace) -> tuple[Any, datetime | None, Any]:
    from songlab.ledger.periods import parse_budgets, period

    as_of = None
    if args.as_of:
        try:
            if len(args.as_of) == 10:  # a day: its last second
                as_of = datetime.combine(date.fromisoformat(args.as_of), time(23, 59, 59), UTC)
            else:
                t = datetime.fromisoformat(args.as_of)
                as_of = t.astimezone(UTC) if t.tzinfo else t.replace(tzinfo=UTC)
        except ValueError:
            raise ValueError(
                f"--as-of: a date YYYY-MM-DD or an ISO 8601 time, got {args.as_of!r}"
            ) from None
    if args.out is None and not args.check:
        raise SystemExit(_usage_error("--out: required (the HTML report's path), unless --check"))
    if args.demo_days is not None:
        if not args.demo:
            raise ValueError("--demo-days: goes with --demo (the demo's length in days)")
        if not 1 <= args.demo_days <= 366:
            raise ValueError(f"--demo-days: a whole number of days, 1-366; got {args.demo_days}")
    if args.no_refresh and not args.ledger:
        raise ValueError("--no-refresh: needs --ledger DIR (the ledger to read as it is)")
    if args.check and (args.demo or args.csv_dir or args.xlsx or args.focus):
        raise ValueError("--check: writes no report; drop --demo, --csv, --xlsx and --focus")
    if (args.webhook or args.state) and not args.check:
        raise ValueError("--webhook/--state: only with --check")
    if args.spark_remote is not None:
        if args.engine == "duckdb":
            raise ValueError("--spark-remote: runs on Spark; it cannot go with --engine duckdb")
        if not args.spark_remote.startswith("sc://"):
            raise ValueError(
                f"--spark-remote: a Spark Connect address sc://HOST:PORT, got {args.spark_remote!r}"
            )
    if (args.focus_account or args.focus_account_name) and not args.focus:
        raise ValueError("--focus-account: goes with --focus PATH (the FOCUS file to write)")
    if args.focus:
        from songlab.ledger.focus import check_path

        check_path(args.focus)
    if args.all_tasks and not args.csv_dir:
        raise ValueError("--csv-all-tasks: needs --csv DIR (the directory tasks.csv goes to)")
    if args.period and (args.start or args.end):
        raise ValueError("--period: give a named period or --from/--to, not both")
    if args.period:
        p = period(args.period, as_of=as_of)
    else:
        p = period(start=args.start, end=args.end)
    budgets = parse_budgets(args.budget) if args.budget else None
    return p, as_of, budgets


def _usage_error(message: str) -> int:
    _report_parser().print_usage(sys.stderr)
    _say(f"songlab report: error: {message}", err=True)
    return 2


def _spark_ready() -> None:
    """Refuse ``--engine spark`` early (nothing sent yet) when pyspark or Java is missing."""
    import importlib.util

    if importlib.util.find_spec("pyspark") is None:
        raise ValueError("--engine spark: pyspark is not installed (pip install 'songlab[spark]')")
    if shutil.which("java") is None:
        raise ValueError(
            "--engine spark: a local Spark session needs Java (make java-deps, or apt-get "
            "install openjdk-17-jre-headless); --spark-remote sc://... needs none"
        )


def _engines(args: argparse.Namespace, stack: ExitStack) -> Callable[[], Any]:
    """A maker of the engine each view opens: DuckDB; or Spark, one local session shared by
    the report and the FOCUS export (stopped at the end), or the cluster's."""
    if args.spark_remote is None and args.engine != "spark":
        return lambda: "duckdb"
    from songlab.ledger.spark import Spark, active_session, local_session

    if args.spark_remote is not None:
        remote = args.spark_remote
        return lambda: Spark(remote=remote)
    running = active_session()
    if running is not None:  # called from a process that runs Spark already: not ours to stop
        return lambda: Spark(running)
    scratch = Path(tempfile.mkdtemp(prefix="songlab-spark-"))
    stack.callback(shutil.rmtree, scratch, True)
    session = local_session(scratch=scratch)
    stack.callback(session.stop)
    return lambda: Spark(session)


def report_main(argv: Sequence[str] | None = None) -> int:
    """``songlab report ARGS``: connect, run the demo if asked, write the report; the exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    args = _report_parser().parse_args(argv)
    try:
        p, as_of, budgets = _report_options(args)
        settings = _guardrail_options(args)
        from songlab.ledger.budgets import from_amounts

        # --budget 500: a monthly soft budget, judged like the file's (checked before connecting)
        budget_rules = from_amounts(budgets) if budgets else ()
        if args.spark_remote is None and args.engine == "spark":
            _spark_ready()
        elif args.spark_remote is not None:
            import importlib.util

            if importlib.util.find_spec("pyspark") is None:
                raise ValueError(
                    "--spark-remote: pyspark is not installed (pip install 'songlab[spark]')"
                )
    except ValueError as exc:
        _say(f"songlab report: {exc}", err=True)
        return 2
    if args.check:
        if budget_rules:
            from songlab.ledger.budgets import Guardrails

            settings = (settings or Guardrails()).including(budget_rules)
        return check_main(args, as_of, settings)
    from songlab.ledger.demo import DEMO_BUDGETS

    if args.demo and budgets is None:
        budgets = DEMO_BUDGETS
    from songlab._connect import admin_http, connect

    speed = args.speed if args.speed is not None else (500.0 if args.demo else 20.0)
    try:
        client = connect(speed=speed)
    except Exception as exc:  # noqa: BLE001 - a clear line, not a traceback
        _say(f"songlab report: cannot connect: {exc}", err=True)
        return 1
    admin = admin_http(client)
    scratch = None
    exporter = None
    try:
        with ExitStack() as stack:
            from songlab.ledger.report import write_report

            engine = _engines(args, stack)
            ledger = args.ledger
            if args.demo:
                from songlab.ledger.demo import run_demo
                from songlab.ledger.store import LedgerStore

                if ledger is None:  # the demo's labels need a store; a throwaway one
                    scratch = tempfile.TemporaryDirectory(prefix="songlab-demo-")
                    ledger = scratch.name
                run_demo(
                    client,
                    admin=admin,
                    labels=LedgerStore(ledger),
                    **({"days": args.demo_days} if args.demo_days is not None else {}),
                )
            also = []
            if args.focus:
                from songlab.ledger.focus import Exporter, account_of_key

                exporter = Exporter(
                    args.focus,
                    account=args.focus_account or account_of_key(client.key_id),
                    account_name=args.focus_account_name,
                    period=p,
                )
                also.append(exporter)
            path = write_report(
                client,
                args.out,
                ledger=ledger,
                period=p,
                as_of=as_of,
                budgets=budgets,
                csv_dir=args.csv_dir,
                xlsx=args.xlsx,
                simulated_clock=getattr(client, "sandbox", None) is not None,
                all_tasks_csv=args.all_tasks,
                engine=engine(),
                also=also,
                guardrails=settings if settings is not None else True,
            )
    except Exception as exc:  # noqa: BLE001
        _say(f"songlab report: {type(exc).__name__}: {exc}", err=True)
        return 1
    finally:
        if scratch is not None:
            scratch.cleanup()
        if admin is not None:
            admin.close()
        close = getattr(client, "close", None)
        if callable(close):
            close()
    _say(f"songlab report: wrote {path}")
    if exporter is not None and exporter.result is not None:
        r = exporter.result
        _say(
            f"songlab report: wrote {r.path} (FOCUS 1.2: {r.usage_rows:,} usage rows, "
            f"EffectiveCost ${r.effective_usd:,.2f}; {r.purchase_rows:,} top-up rows, "
            f"BilledCost ${r.billed_usd:,.2f}) and {r.metadata_path}"
        )
        for note in r.notes():
            _say(f"songlab report: FOCUS: {note}")
    return 0


# -- songlab report --check ------------------------------------------------------


def _guardrail_options(args: argparse.Namespace) -> Any:
    """The budgets file and the webhook URL, checked before connecting."""
    import os

    settings = None
    if args.budgets:
        from songlab.ledger.budgets import load

        settings = load(args.budgets)  # a BudgetFileError is a ValueError naming the field
    url = args.webhook or os.environ.get("SONGLAB_ALERT_WEBHOOK") or None
    if url is not None:
        from songlab.ledger.webhook import check_url

        check_url(url)
    args.webhook_url = url
    return settings


def _state_path(args: argparse.Namespace) -> str:
    if args.state:
        return str(args.state)
    import platformdirs

    from songlab.localfiles import private_dir

    return str(private_dir(platformdirs.user_state_dir("songlab")) / "alerts.json")


def check_main(args: argparse.Namespace, as_of: datetime | None, settings: Any) -> int:
    """``songlab report --check``: the active alerts, one line each; 3 if any, 0 if none."""
    from songlab.ledger import alert_state, guardrails, webhook
    from songlab.ledger.store import LedgerStore

    client = admin = None
    source: Any
    balances: Any = None
    try:
        if args.ledger and args.no_refresh:
            source = LedgerStore(args.ledger)
        else:
            from songlab._connect import admin_http, connect

            speed = args.speed if args.speed is not None else 20.0
            try:
                client = connect(speed=speed)
            except Exception as exc:  # noqa: BLE001 - a clear line, not a traceback
                _say(f"songlab report: cannot connect: {exc}", err=True)
                return 1
            admin = admin_http(client)
            if args.ledger:
                source = LedgerStore(args.ledger)
                source.refresh(client)  # snapshots the balance too
            else:
                from songlab.ledger.tasks import tasks_table

                source = tasks_table(client)
                balances = [guardrails.balance_snapshot(client)]
            if as_of is None and admin is not None:  # a sandbox: its clock may be moved
                as_of = _sandbox_now(admin)
        with alert_state.AlertState(_state_path(args)) as state:
            report = guardrails.check(
                source, settings, as_of=as_of, balances=balances, state=state, forecast_scopes=0
            )
            for line in report.lines():
                _say(line)
            if args.webhook_url and report.alerts:
                done = webhook.deliver(report.alerts, args.webhook_url, state)
                for alert_id, reason in done.failed:
                    _say(
                        f"songlab report: webhook: {alert_id} not delivered ({reason}); "
                        "the next run tries again",
                        err=True,
                    )
    except ValueError as exc:
        _say(f"songlab report: {exc}", err=True)
        return 2
    except Exception as exc:  # noqa: BLE001
        _say(f"songlab report: {type(exc).__name__}: {exc}", err=True)
        return 1
    finally:
        if admin is not None:
            admin.close()
        close = getattr(client, "close", None)
        if callable(close):
            close()
    return EXIT_ALERTS if report.alerts else 0


def _sandbox_now(admin: Any) -> datetime | None:
    """The local sandbox's clock (moved ahead by a demo or a test), the check's now."""
    try:
        r = admin.post("/_sandbox/clock", json={"advance_seconds": 0})
        r.raise_for_status()
        now = datetime.fromisoformat(str(r.json()["now"]).replace("Z", "+00:00"))
    except Exception:  # noqa: BLE001 - the default as-of then
        return None
    return now.astimezone(UTC)
