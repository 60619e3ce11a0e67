"""``songlab report``: the report run and ``--check``, once :mod:`report_options` passed.

The options are checked whole first (``songlab.cli.report_options``: one line and exit 2 for
any mistake, before anything is read or sent); then the command connects (unless
``--no-refresh``), runs the demo if asked, and writes the report and its exports, or, with
``--check``, prints the active alerts and posts the new ones to the webhook. Every line it
prints goes through :func:`_say` (control characters escaped).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from songlab.cli.report_options import HELP, OptionError, Plan, parse

__all__ = ["EXIT_ALERTS", "EXIT_USAGE", "REPORT_HELP", "check_main", "report_main"]

REPORT_HELP = HELP
EXIT_USAGE = 2  # an option or the budgets file breaks a rule: nothing was read or sent
EXIT_ALERTS = 3  # songlab report --check: some alert is active
MAX_LINE = 1_000  # an error line longer than this is cut (an option can be megabytes)


def _say(message: str, *, err: bool = False) -> None:
    """Print one line of the command's own to stdout (or stderr), control characters escaped
    (``songlab.ledger.safe_text.printable``: a path, a name or a label can hold any)."""
    from songlab.ledger.safe_text import printable

    print(printable(message), file=sys.stderr if err else sys.stdout)


def _refuse(message: str) -> int:
    """The one line of a refused command line, on stderr; the exit code."""
    text = f"songlab report: {message}"
    if len(text) > MAX_LINE:
        text = text[: MAX_LINE - 1] + "\u2026"
    _say(text, err=True)
    return EXIT_USAGE


def report_main(argv: Sequence[str] | None = None) -> int:
    """``songlab report ARGS``: check every option, then write the report (or ``--check``);
    the exit code."""
    try:
        args, plan = parse(list(sys.argv[1:] if argv is None else argv))
    except SystemExit as done:  # --help
        return int(done.code) if isinstance(done.code, int) else 0
    except OptionError as exc:
        return _refuse(str(exc))
    if args.check:
        return check_main(args, plan)
    return _report(args, plan)


# -------------------------------------------------------------------------- the report


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


@contextmanager
def _connected(speed: float, *, needed: bool = True) -> Iterator[tuple[Any, Any]]:
    """``(client, admin)`` of ``songlab.connect()`` (``(None, None)`` when not ``needed``),
    closed on the way out; a ``ConnectionError`` with one line when it cannot connect."""
    if not needed:
        yield None, None
        return
    from songlab._connect import admin_http, connect

    try:
        client = connect(speed=speed)
    except Exception as exc:  # noqa: BLE001 - whatever connecting raised: one line, exit 1
        raise ConnectionError(f"cannot connect: {exc}") from None
    admin = admin_http(client)
    try:
        yield client, admin
    finally:
        if admin is not None:
            admin.close()
        close = getattr(client, "close", None)
        if callable(close):
            close()


def _report(args: argparse.Namespace, plan: Plan) -> int:
    try:
        with _connected(plan.speed, needed=not args.no_refresh) as (client, admin):
            path, exporter = _write(args, plan, client, admin)
    except ConnectionError as exc:
        _say(f"songlab report: {exc}", err=True)
        return 1
    except Exception as exc:  # noqa: BLE001 - the run failed after the checks: one line, exit 1
        _say(f"songlab report: {type(exc).__name__}: {exc}", err=True)
        return 1
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


def _write(args: argparse.Namespace, plan: Plan, client: Any, admin: Any) -> tuple[Path, Any]:
    """The report (and its exports) written; its path and the FOCUS exporter, if any."""
    from songlab.ledger.demo import DEMO_BUDGETS
    from songlab.ledger.report import write_report

    budgets = plan.budgets
    if args.demo and budgets is None:
        budgets = DEMO_BUDGETS
    with ExitStack() as stack:
        engine = _engines(args, stack)
        ledger = _demo(args, client, admin, stack) if args.demo else args.ledger
        exporter = _exporter(args, plan, client)
        source = client
        if args.no_refresh:  # the ledger as it is: nothing sent
            from songlab.ledger.store import LedgerStore

            source, ledger = LedgerStore(args.ledger), None
        path = write_report(
            source,
            args.out,
            ledger=ledger,
            period=plan.period,
            as_of=plan.as_of,
            budgets=budgets,
            csv_dir=args.csv_dir,
            xlsx=args.xlsx,
            simulated_clock=getattr(client, "sandbox", None) is not None,
            all_tasks_csv=args.all_tasks,
            engine=engine(),
            also=[exporter] if exporter is not None else [],
            guardrails=plan.settings if plan.settings is not None else True,
            last=True,  # one report per command: no chart worker started for a next one
        )
    return path, exporter


def _demo(args: argparse.Namespace, client: Any, admin: Any, stack: ExitStack) -> str:
    """Run the demo's weeks of work; the ledger directory it labelled (a throwaway one unless
    ``--ledger``)."""
    from songlab.ledger.demo import run_demo
    from songlab.ledger.store import LedgerStore

    ledger = args.ledger
    if ledger is None:  # the demo's labels need a store; a throwaway one
        scratch = stack.enter_context(tempfile.TemporaryDirectory(prefix="songlab-demo-"))
        ledger = scratch
    days = {"days": args.demo_days} if args.demo_days is not None else {}
    run_demo(client, admin=admin, labels=LedgerStore(ledger), **days)
    return str(ledger)


def _exporter(args: argparse.Namespace, plan: Plan, client: Any) -> Any:
    if not args.focus:
        return None
    from songlab.ledger.focus import Exporter, account_of_key

    account = args.focus_account or account_of_key(client.key_id)  # a client unless --no-refresh
    return Exporter(
        args.focus, account=account, account_name=args.focus_account_name, period=plan.period
    )


# -------------------------------------------------------------------- songlab report --check


def check_main(args: argparse.Namespace, plan: Plan) -> int:
    """``songlab report --check``: the active alerts, one line each; 3 if any, 0 if none."""
    from songlab.ledger import alert_state, guardrails
    from songlab.localfiles import private_dir

    try:
        with _connected(plan.speed, needed=not args.no_refresh) as (client, admin):
            source, balances, as_of = _check_source(args, plan, client, admin)
            assert plan.state is not None  # parse() sets it with --check
            private_dir(Path(plan.state).parent)
            with alert_state.AlertState(plan.state) as state:
                report = guardrails.check(
                    source,
                    plan.settings,
                    as_of=as_of,
                    balances=balances,
                    state=state,
                    forecast_scopes=0,
                )
                for line in report.lines():
                    _say(line)
                if plan.webhook and report.alerts:
                    _post(report.alerts, plan.webhook, state)
    except ConnectionError as exc:
        _say(f"songlab report: {exc}", err=True)
        return 1
    except ValueError as exc:
        _say(f"songlab report: {exc}", err=True)
        return EXIT_USAGE
    except Exception as exc:  # noqa: BLE001 - the run failed after the checks: one line, exit 1
        _say(f"songlab report: {type(exc).__name__}: {exc}", err=True)
        return 1
    return EXIT_ALERTS if report.alerts else 0


def _check_source(
    args: argparse.Namespace, plan: Plan, client: Any, admin: Any
) -> tuple[Any, Any, datetime | None]:
    """What ``--check`` reads: the ledger (refreshed unless ``--no-refresh``) or the client's
    listing with its balance now; and its as-of (a sandbox's clock, if not given)."""
    from songlab.ledger import guardrails
    from songlab.ledger.store import LedgerStore

    as_of, balances = plan.as_of, None
    source: Any
    if args.ledger:
        source = LedgerStore(args.ledger)
        if client is not None:
            source.refresh(client)  # snapshots the balance too
    else:
        from songlab.ledger.tasks import tasks_table

        source = tasks_table(client)
        balances = [guardrails.balance_snapshot(client)]
    if as_of is None and admin is not None:  # a sandbox: its clock may be moved
        as_of = _sandbox_now(admin)
    return source, balances, as_of


def _post(alerts: Sequence[Any], url: str, state: Any) -> None:
    from songlab.ledger import webhook

    done = webhook.deliver(alerts, url, state)
    for alert_id, reason in done.failed:
        _say(
            f"songlab report: webhook: {alert_id} not delivered ({reason}); "
            "the next run tries again",
            err=True,
        )


def _sandbox_now(admin: Any) -> datetime | None:
    """The local sandbox's clock (moved ahead by a demo or a test), the check's now."""
    import httpx

    try:
        r = admin.post("/_sandbox/clock", json={"advance_seconds": 0})
        r.raise_for_status()
        now = datetime.fromisoformat(str(r.json()["now"]).replace("Z", "+00:00"))
    except (httpx.HTTPError, ValueError, KeyError, TypeError):  # the default as-of then
        return None
    return now.astimezone(UTC)
