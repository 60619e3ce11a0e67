"""A 1,000-create batch against the sandbox's rate limit, and what the record costs a create.

1. Throughput against the limit. A sandbox process (``python -m songlab.sandbox``, speed
   1000, ``:memory:``) limits one tool to 100 creates an hour and 500 a day (its defaults,
   ``sandbox/tasks/ratelimit.py``). A thread moves the sandbox clock one hour every ``--tick``
   real seconds, so an hour of the limit passes quickly. ``client.batch`` sends 1,000
   ``write_lyrics`` creates (one tool) and paces itself on RateLimited. A client that
   knew the limit and wasted nothing would finish in the fewest ticks the windows allow
   (100 in each of five hours, then wait out the day, then five more hours: 10 hours of
   sending in a 29-hour span); the ratio is those ideal ticks over the ticks the batch
   took (1.0: as fast as the limit allows).
2. The record's overhead per create: sequential creates with the record (reuse on:
   look-up, then write) against the same creates with ``record=False`` (deterministic
   keys, no record), one of each in turn on fresh accounts so the limit never answers;
   the ratio is time with the record over time without.

Last line: ``batch: <throughput ratio>``. Usage:
``.venv/bin/python benchmarks/batch.py [--n 1000] [--tick 0.8] [--creates 300]``
"""

from __future__ import annotations

import argparse
import bisect
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

from songlab.client import Client, RecordStore

ADMIN = "bench-admin"
HOUR = 3600


def start_sandbox() -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "songlab.sandbox",
            "--port",
            "0",
            "--db",
            ":memory:",
            "--speed",
            "1000",
            "--admin-token",
            ADMIN,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    line = proc.stdout.readline() if proc.stdout else ""
    if not line.startswith("songlab sandbox listening on "):
        proc.kill()
        raise SystemExit(f"sandbox did not start: {line!r}")
    return proc, line.rsplit(" ", 1)[1].strip()


def new_key(admin: httpx.Client) -> str:
    r = admin.post("/_sandbox/accounts", json={})
    r.raise_for_status()
    return str(r.json()["api_key"])


def ideal_ticks(n: int, per_hour: int = 100, per_day: int = 500) -> int:
    """The fewest clock ticks (one sandbox hour each) in which n creates of one tool fit
    the rolling windows, every create sent at its tick."""
    sent: list[int] = []
    tick = 0
    while len(sent) < n:
        in_day = sum(1 for t in sent if t > tick - 24)
        room = min(per_hour, per_day - in_day, n - len(sent))
        sent += [tick] * max(0, room)
        tick += 1
    return tick


def throughput(base_url: str, admin: httpx.Client, n: int, tick_s: float, tmp: Path) -> float:
    record = RecordStore(tmp / "record.sqlite")
    ticks: list[float] = []
    stop = threading.Event()

    def clock() -> None:
        with httpx.Client(base_url=base_url, headers={"X-Sandbox-Admin-Token": ADMIN}) as a:
            while not stop.wait(tick_s):
                a.post("/_sandbox/clock", json={"advance_seconds": HOUR}).raise_for_status()
                ticks.append(time.time())

    reqs = [
        {"operation": "write_lyrics", "model": "v5", "payload": {"prompt": f"verse {i}"}}
        for i in range(n)
    ]
    with Client(new_key(admin), base_url=base_url, record=record, quiet=True) as c:
        runner = threading.Thread(target=clock, daemon=True)
        t0 = time.time()
        runner.start()
        try:
            result = c.batch(
                reqs,
                concurrency=16,
                wait=False,
                pace_base_s=0.02,
                pace_max_s=tick_s / 4,
            )
        finally:
            stop.set()
            runner.join()
        elapsed = time.time() - t0
    accepted = [r.accepted_at.timestamp() for r in record.rows() if r.accepted_at]
    made = sum(r.task_id is not None for r in result)
    used = bisect.bisect_right(ticks, max(accepted)) + 1  # the tick the last create fell in
    ideal = ideal_ticks(n)
    print(
        f"throughput: {made}/{n} created in {elapsed:.1f} s, {used} sandbox hours "
        f"(ideal {ideal} at 100/h, 500/day); {sum(r.error is not None for r in result)} errors"
    )
    return ideal / used


def record_overhead(base_url: str, admin: httpx.Client, creates: int, tmp: Path) -> float:
    """Seconds per create with the record over seconds per create without it: two clients
    side by side, one create each in turn (so the machine's drift hits both alike), on
    fresh accounts every 90 creates (the limit never answers)."""
    spent = {True: 0.0, False: 0.0}
    done = 0
    round_no = 0
    while done < creates:
        clients = {
            True: Client(
                new_key(admin),
                base_url=base_url,
                quiet=True,
                record=RecordStore(tmp / f"r{round_no}.sqlite"),
            ),
            False: Client(new_key(admin), base_url=base_url, quiet=True, record=False),
        }
        for c in clients.values():
            c.tools.list()
            c.generations.create(
                operation="write_lyrics", model="v5", payload={"prompt": "warm up"}
            )
        for i in range(min(90, creates - done)):
            for recorded in (True, False) if i % 2 else (False, True):
                t0 = time.perf_counter()
                clients[recorded].generations.create(
                    operation="write_lyrics", model="v5", payload={"prompt": f"r{round_no} {i}"}
                )
                spent[recorded] += time.perf_counter() - t0
            done += 1
        for c in clients.values():
            c.close()
        round_no += 1
    print(
        f"record: {spent[True] / done * 1000:.2f} ms per create with it, "
        f"{spent[False] / done * 1000:.2f} ms without ({done} creates each)"
    )
    return spent[True] / spent[False]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--tick", type=float, default=0.8)
    ap.add_argument("--creates", type=int, default=300)
    args = ap.parse_args()
    proc, base_url = start_sandbox()
    try:
        with (
            tempfile.TemporaryDirectory(prefix="songlab-batch-") as tmp,
            httpx.Client(
                base_url=base_url, headers={"X-Sandbox-Admin-Token": ADMIN}, timeout=30
            ) as admin,
        ):
            overhead = record_overhead(base_url, admin, args.creates, Path(tmp))
            ratio = throughput(base_url, admin, args.n, args.tick, Path(tmp))
    finally:
        proc.terminate()
        proc.wait(timeout=15)
    print(f"record_overhead_ratio: {overhead:.3f}")
    print(f"batch: {ratio:.3f}")


if __name__ == "__main__":
    main()
