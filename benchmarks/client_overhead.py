"""What the client adds on top of httpx, measured against one real sandbox.

Starts ``python -m songlab.sandbox --port 0 --db :memory: --speed 200`` as a
subprocess (reads its first line for the URL), then:

1. the median time of ``client.generations.get(id)`` and of a raw
   ``httpx.Client.get`` on the same URL with the same headers, interleaved,
   and their ratio (target: at most 1.15);
2. the wall time for one AsyncClient to follow 200 concurrent task streams to
   their terminal event, against the sum of the tasks' server-side durations.

Last line: ``get_overhead_ratio: X``.
"""

from __future__ import annotations

import asyncio
import statistics
import subprocess
import sys
import time

import httpx

from songlab.client import AsyncClient, Client

DEMO_KEY = "sk-sandbox-demo"
N_GETS = 200
WARMUP = 20
N_STREAMS = 200


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
            "200",
            "--admin-token",
            "bench-admin",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline().strip()
    if "listening on" not in line:
        proc.kill()
        raise SystemExit(f"sandbox did not start: {line!r}")
    return proc, line.rsplit(" ", 1)[1]


def bench_get(base_url: str) -> float:
    client = Client(DEMO_KEY, base_url=base_url)
    task = client.generations.create(
        operation="write_lyrics", model="v5", payload={"prompt": "benchmarks"}
    ).wait(timeout=60)
    url = f"{base_url}/v1/generations/{task.task_id}"
    raw = httpx.Client(
        headers={"Authorization": f"Bearer {DEMO_KEY}", "Content-Type": "application/json"}
    )
    ours: list[int] = []
    theirs: list[int] = []
    for i in range(WARMUP + N_GETS):
        t0 = time.perf_counter_ns()
        client.generations.get(task.task_id)
        t1 = time.perf_counter_ns()
        r = raw.get(url)
        r.json()
        t2 = time.perf_counter_ns()
        if i >= WARMUP:
            ours.append(t1 - t0)
            theirs.append(t2 - t1)
    a, b = statistics.median(ours) / 1e3, statistics.median(theirs) / 1e3
    print(f"client.generations.get   median {a:8.1f} us  (n={N_GETS}, parse to a Task included)")
    print(f"httpx.Client.get + json  median {b:8.1f} us  (same URL, same headers)")
    client.close()
    raw.close()
    return a / b


def fresh_key(base_url: str) -> str:
    """A new account (admin route), so the streams' creates have their own rate windows."""
    r = httpx.post(
        f"{base_url}/_sandbox/accounts",
        json={"name": "bench"},
        headers={"X-Sandbox-Admin-Token": "bench-admin"},
    )
    r.raise_for_status()
    return r.json()["api_key"]


async def bench_streams(base_url: str) -> None:
    key = fresh_key(base_url)
    async with AsyncClient(key, base_url=base_url, max_connections=N_STREAMS + 10) as c:
        # write_lyrics renders no audio, so the sandbox's time is the service's, not the
        # engine's. The sandbox allows 100 creates per tool per hour: advance its clock
        # by an hour between the two halves.
        half = N_STREAMS // 2
        t0 = time.perf_counter()
        handles = await asyncio.gather(
            *[
                c.generations.create(
                    operation="write_lyrics", model="v5", payload={"prompt": f"song {i}"}
                )
                for i in range(half)
            ]
        )
        httpx.post(
            f"{base_url}/_sandbox/clock",
            json={"advance_seconds": 3601},
            headers={"X-Sandbox-Admin-Token": "bench-admin"},
        ).raise_for_status()
        handles += await asyncio.gather(
            *[
                c.generations.create(
                    operation="write_lyrics", model="v5", payload={"prompt": f"song {i}"}
                )
                for i in range(half, N_STREAMS)
            ]
        )
        t1 = time.perf_counter()

        async def follow(h):
            return [e async for e in c.generations.stream(h.task_id)]

        streams = await asyncio.gather(*[follow(h) for h in handles])
        t2 = time.perf_counter()
        tasks = await asyncio.gather(*[c.generations.get(h.task_id) for h in handles])
    assert all(s and s[-1].is_terminal for s in streams)
    server = sum((t.updated_at - t.created_at).total_seconds() for t in tasks)
    longest = max((t.updated_at - t.created_at).total_seconds() for t in tasks)
    print(
        f"async: {N_STREAMS} creates in {t1 - t0:.2f} s; {N_STREAMS} concurrent streams "
        f"followed to terminal in {t2 - t1:.2f} s ({sum(map(len, streams))} events)"
    )
    print(
        f"async: sum of server-side durations {server:.2f} s (longest {longest:.2f} s); "
        f"followed/sum = {(t2 - t1) / server:.3f}"
    )


def main() -> None:
    proc, base_url = start_sandbox()
    try:
        print(f"sandbox: {base_url} (speed 200, :memory:)")
        ratio = bench_get(base_url)
        asyncio.run(bench_streams(base_url))
    finally:
        proc.terminate()
        proc.wait(timeout=15)
    print(f"get_overhead_ratio: {ratio:.3f}")


if __name__ == "__main__":
    main()
