"""Fault storm at full size: 1,000 generations through the AsyncClient under injected faults
and two SIGKILL restarts of the sandbox.

The sandbox runs as a child process (``python -m songlab.sandbox --db FILE
--port PORT --speed ...``) with 30% RateLimited and 10% DependencyUnavailable on
creates, every stream cut after 3 events and 50 ms latency on every vendor
route. While the storm runs, the process is SIGKILLed and started again on the
same port and file twice (``--restarts``), its port dark for ``--down`` seconds
each time; the faults are put back after each restart. Each generation is
create -> stream (the client retries with the same Idempotency-Key through
refusals and outages and resumes streams with ``after=``). Afterwards the
benchmark checks every create and stream returned normally, every task
completed, was billed exactly once (ledger + balance) and that every stream
delivered the stored events once, in order (read from the sandbox's SQLite
file). The database lives on tmpfs when there is one, so fsync does not
dominate. Last line: ``fault_storm_completed: N/1000``.

A fault-free run of the same driver (``--baseline``, 100 generations) goes first,
so the cost of the faults shows side by side.

Usage: ``.venv/bin/python benchmarks/fault_storm.py [--n 1000] [--concurrency 64] [--baseline 100]
[--restarts 2] [--down 1.0]``
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the storm driver lives with the reliability tests

from tests.reliability._restarts import RestartingSandbox, restarts  # noqa: E402
from tests.reliability._storm import DEFAULT_FAULTS, events_from_db, run_storm  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=1000, help="generations (default 1000)")
    p.add_argument("--concurrency", type=int, default=64, help="generations in flight")
    p.add_argument("--speed", type=float, default=2000.0, help="sandbox --speed")
    p.add_argument(
        "--baseline",
        type=int,
        default=100,
        help="fault-free generations run first, side by side (0: none)",
    )
    p.add_argument("--restarts", type=int, default=2, help="SIGKILL restarts during the storm")
    p.add_argument("--down", type=float, default=1.0, help="seconds the port stays dark each")
    args = p.parse_args(argv)
    shm = Path("/dev/shm")
    tmp_root = str(shm) if shm.is_dir() else None
    with tempfile.TemporaryDirectory(prefix="songlab-storm-", dir=tmp_root) as tmp:
        db = str(Path(tmp) / "storm.sqlite3")
        t0 = time.perf_counter()
        with RestartingSandbox(db, speed=args.speed) as sp:
            started = time.perf_counter() - t0
            base = None
            if args.baseline:  # the same driver with every fault off, for comparison
                base = asyncio.run(
                    run_storm(
                        sp.base_url,
                        sp.admin_token,
                        args.baseline,
                        stored_events=events_from_db(db),
                        concurrency=args.concurrency,
                        faults={},
                    )
                )
            disrupt = (
                restarts(
                    sp,
                    first_after_s=3.0,
                    between_s=4.0,
                    count=args.restarts,
                    down_s=args.down,
                    faults=DEFAULT_FAULTS,
                )
                if args.restarts
                else None
            )
            res = asyncio.run(
                run_storm(
                    sp.base_url,
                    sp.admin_token,
                    args.n,
                    stored_events=events_from_db(db),
                    concurrency=args.concurrency,
                    disrupt=disrupt,
                )
            )
        total = time.perf_counter() - t0
    print(
        f"faults: {DEFAULT_FAULTS}; {len(sp.restarts)} SIGKILL restarts, port dark "
        f"{', '.join(f'{d:.1f}s' for d in sp.restarts) or '-'}"
    )
    if base is not None:
        rate, base_rate = res.requested / res.seconds, base.requested / base.seconds
        print(
            f"side by side: no faults {base_rate:.0f} generations/s "
            f"({base.completed}/{base.requested} ok), faults {rate:.0f} generations/s "
            f"-> {base_rate / rate:.1f}x slower under faults"
        )
    print(
        f"sandbox start {started:.1f} s, storm {res.seconds:.1f} s, total {total:.1f} s "
        f"({res.requested / max(res.seconds, 1e-9):.0f} generations/s)"
    )
    print(res.summary())
    for problem in res.problems[:10]:
        print("PROBLEM:", problem)
    ok = min(res.completed, res.billed_once, res.streams_exact)
    print(f"fault_storm_completed: {ok}/{res.requested}")
    return 0 if ok == res.requested and not res.problems else 1


if __name__ == "__main__":
    raise SystemExit(main())
