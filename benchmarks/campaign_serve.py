"""A served campaign at 1,000 concurrent raters: answers per second and p99 latency, against
the same app's bare route in the same run.

``songlab campaign serve`` (SQLite in WAL, ``synchronous=NORMAL``; two worker processes) serves a
small ABX campaign of 1,000 slots. 1,000 simulated raters (async httpx) arrive and read their
pages (not timed); then

1. the bare route: every rater calls ``GET /health`` (no database) ``--rounds`` times, all at
   once: requests per second and the 99th percentile of latency;
2. the answers: every rater posts its first answer (signed, with an id it made, checked and
   committed before the reply), all at once: answers per second and p99.

The ratio is answers per second over the bare route's requests per second (1.0: storing a
checked answer costs no more than saying "ok"). Last line: ``campaign_serve_ratio: X``.
Usage: ``.venv/bin/python benchmarks/campaign_serve.py [--raters 1000] [--rounds 1]``
"""

from __future__ import annotations

import argparse
import asyncio
import ssl
import sys
import tempfile
import time
from pathlib import Path

import httpx
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.listening._crowd import PageState  # noqa: E402
from tests.reliability._crowd_load import CampaignProcess, saved_campaign  # noqa: E402

DROPPED = [0]  # connections that failed and were tried again (as a page does)


async def _again(call):
    """``call()``, again on a dropped connection (a kept-alive one the server had just
    closed, as browsers also retry); the retries are counted and printed."""
    for _ in range(5):
        try:
            return await call()
        except httpx.TransportError:
            DROPPED[0] += 1
    return await call()


async def _timed(calls) -> tuple[float, list[float]]:
    """Run the coroutine factories at once; (wall seconds, each one's latency)."""

    async def one(call) -> float:
        start = time.perf_counter()
        r = await _again(call)
        assert r.status_code == 200, (r.status_code, r.text[:200])
        return time.perf_counter() - start

    start = time.perf_counter()
    latencies = await asyncio.gather(*(one(c) for c in calls))
    return time.perf_counter() - start, list(latencies)


async def _run(url: str, raters: int, rounds: int) -> tuple[float, float, float, float, int]:
    # a client per rater, as each browser has its own (one pool shared by a thousand raters
    # spends the client's time in httpcore's queue of waiting requests)
    tls = ssl.create_default_context()  # one context for all: each client made its own (~30 ms)
    clients = [httpx.AsyncClient(base_url=url, timeout=120, verify=tls) for _ in range(raters)]
    try:
        gate = asyncio.Semaphore(50)  # arrivals are not timed: fifty at a time

        async def arrive(i: int) -> PageState:
            params = {"PROLIFIC_PID": f"b{i:05d}", "STUDY_ID": "bench", "SESSION_ID": f"s{i}"}
            client = clients[i]
            async with gate:
                r = await _again(lambda: client.get("/join", params=params))
                page = await _again(lambda: client.get("/" + r.headers["location"]))
            return PageState.read(page.text)

        started = time.perf_counter()
        pages = await asyncio.gather(*(arrive(i) for i in range(raters)))
        print(
            f"{raters} raters arrived and read their pages in {time.perf_counter() - started:.1f} s",
            file=sys.stderr,
        )
        await asyncio.sleep(1.0)  # the clips' minimum (50 ms each) has passed for everyone
        bare_wall, bare = await _timed(
            [lambda c=c: c.get("/health") for c in clients for _ in range(rounds)]
        )
        # each rater's first answer, all at once (a rater's later answers wait on listening)
        items = [p.answers(np.random.default_rng(i))[0] for i, p in enumerate(pages)]
        ans_wall, lat = await _timed(
            [
                lambda c=c, item=item: c.post("/api/answers", json=item)
                for c, item in zip(clients, items, strict=True)
            ]
        )
    finally:
        await asyncio.gather(*(c.aclose() for c in clients))
    return (
        raters * rounds / bare_wall,
        float(np.percentile(bare, 99)),
        len(items) / ans_wall,
        float(np.percentile(lat, 99)),
        len(items),
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--raters", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        saved_campaign(folder, raters=args.raters, min_heard=0.05)
        server = CampaignProcess(folder, f"sqlite:///{folder}/c.sqlite", workers=args.workers)
        server.start()
        try:
            bare_rps, bare_p99, ans_rps, ans_p99, n = asyncio.run(
                _run(server.url, args.raters, args.rounds)
            )
        finally:
            server.kill()
    print(
        f"raters: {args.raters} concurrent, {args.workers} workers, SQLite (WAL, synchronous=NORMAL)"
    )
    print(f"bare route (GET /health): {bare_rps:.0f} requests/s, p99 {1000 * bare_p99:.0f} ms")
    print(f"answers (POST /api/answers, {n}): {ans_rps:.0f} answers/s, p99 {1000 * ans_p99:.0f} ms")
    print(
        f"p99 ratio (answers / bare): {ans_p99 / bare_p99:.2f}; requests tried again: {DROPPED[0]}"
    )
    print(f"campaign_serve_ratio: {ans_rps / bare_rps:.3f}")


if __name__ == "__main__":
    main()
