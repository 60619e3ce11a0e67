"""Sandbox throughput: GET /v1/generations/{id} and create, beside a minimal ASGI endpoint.

One sandbox process (uvicorn, h11, the same server for both) also serves a
minimal ASGI JSON endpoint at ``/_bench/minimal``; this process loads it with a
raw keep-alive asyncio HTTP client over many connections (so the client is not
the bottleneck), in alternating rounds, and prints requests per second side by
side, the median create latency at --speed 1 and 1000, and, last,
``get_ratio: X`` = task-GET rate / minimal-endpoint rate.

    .venv/bin/python benchmarks/sandbox_throughput.py [--seconds 2] [--connections 32]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time

ADMIN = "bench-admin"
DEMO = "sk-sandbox-demo"
CLIENT_CPU: list[float] = []  # the load client's CPU use per round, as a share of one core
MINIMAL_BODY = json.dumps({"task_id": "x", "status": "completed"}).encode()


# --- server side (a subprocess) ----------------------------------------------------


def _minimal_wrap(app):
    async def wrapped(scope, receive, send):
        if scope["type"] == "http" and scope["path"] == "/_bench/minimal":
            await send(
                {
                    "type": "http.response.start",
                    "status": 200,
                    "headers": [
                        (b"content-type", b"application/json"),
                        (b"content-length", str(len(MINIMAL_BODY)).encode()),
                    ],
                }
            )
            await send({"type": "http.response.body", "body": MINIMAL_BODY})
            return
        await app(scope, receive, send)

    return wrapped


def serve(speed: float) -> None:
    import signal
    import threading

    from songlab.sandbox.config import SandboxConfig
    from songlab.sandbox.http.server import SandboxServer

    srv = SandboxServer(
        SandboxConfig(db=":memory:", speed=speed, admin_token=ADMIN), wrap=_minimal_wrap
    ).start()
    print(srv.base_url, flush=True)
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    done.wait()
    srv.stop()


# --- client side ----------------------------------------------------------------------


def _request(
    method: str, path: str, host: str, headers: dict[str, str], body: bytes = b""
) -> bytes:
    lines = [f"{method} {path} HTTP/1.1", f"Host: {host}"]
    lines += [f"{k}: {v}" for k, v in headers.items()]
    if body or method == "POST":
        lines += ["Content-Type: application/json", f"Content-Length: {len(body)}"]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


async def _one(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, req: bytes) -> int:
    writer.write(req)
    head = await reader.readuntil(b"\r\n\r\n")
    status = int(head[9:12])
    length = 0
    for line in head.split(b"\r\n"):
        if line[:15].lower() == b"content-length:":
            length = int(line[15:])
    if length:
        await reader.readexactly(length)
    return status


async def _load(
    host: str, port: int, requests: list[bytes], seconds: float, connections: int
) -> tuple[float, dict[int, int]]:
    statuses: dict[int, int] = {}
    stop = time.perf_counter() + seconds
    count = 0

    async def worker(i: int) -> None:
        nonlocal count
        reader, writer = await asyncio.open_connection(host, port)
        k = i
        while time.perf_counter() < stop:
            code = await _one(reader, writer, requests[k % len(requests)])
            statuses[code] = statuses.get(code, 0) + 1
            count += 1
            k += connections
        writer.close()

    t0, c0 = time.perf_counter(), time.process_time()
    await asyncio.gather(*(worker(i) for i in range(connections)))
    wall = time.perf_counter() - t0
    CLIENT_CPU.append((time.process_time() - c0) / wall)
    return count / wall, statuses


async def _latencies(host: str, port: int, requests: list[bytes]) -> list[float]:
    reader, writer = await asyncio.open_connection(host, port)
    out = []
    for req in requests:
        t0 = time.perf_counter()
        code = await _one(reader, writer, req)
        out.append((time.perf_counter() - t0) * 1000)
        assert code == 201, code
        await asyncio.sleep(0.005)
    writer.close()
    return out


def _start(speed: float) -> tuple[subprocess.Popen, str]:
    p = subprocess.Popen(
        [sys.executable, __file__, "--serve", str(speed)], stdout=subprocess.PIPE, text=True
    )
    return p, p.stdout.readline().strip()


def _setup(base: str, n_accounts: int) -> tuple[str, list[str]]:
    import httpx

    from songlab.sandbox.catalog import tool_id

    with httpx.Client(base_url=base, verify=False, timeout=60) as c:
        r = c.post(
            "/v1/generations",
            headers={"Authorization": f"Bearer {DEMO}"},
            json={
                "tool_id": tool_id("generate_song", "v7"),
                "payload_json": json.dumps({"prompt": "bench", "duration_seconds": 5}),
            },
        )
        task_id = r.json()["task_id"]
        while (
            c.get(f"/v1/generations/{task_id}", headers={"Authorization": f"Bearer {DEMO}"}).json()[
                "status"
            ]
            != "completed"
        ):
            time.sleep(0.05)
        keys = [
            c.post("/_sandbox/accounts", headers={"X-Sandbox-Admin-Token": ADMIN}, json={}).json()[
                "api_key"
            ]
            for _ in range(n_accounts)
        ]
    return task_id, keys


def _creates(host: str, keys: list[str], operation: str, payload: dict) -> list[bytes]:
    from songlab.sandbox.catalog import tool_id

    body = json.dumps(
        {"tool_id": tool_id(operation, "v5"), "payload_json": json.dumps(payload)}
    ).encode()
    return [
        _request("POST", "/v1/generations", host, {"Authorization": f"Bearer {k}"}, body)
        for k in keys
    ]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--connections", type=int, default=32)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--serve", type=float, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.serve is not None:
        serve(args.serve)
        return 0

    fast, base = _start(1000.0)
    try:
        host_port = base.removeprefix("http://")
        host, port = host_port.split(":")[0], int(host_port.split(":")[1])
        task_id, keys = _setup(base, 200)
        auth = {"Authorization": f"Bearer {DEMO}"}
        get_req = [_request("GET", f"/v1/generations/{task_id}", host_port, auth)]
        min_req = [_request("GET", "/_bench/minimal", host_port, auth)]
        create_req = _creates(host_port, keys, "write_lyrics", {"prompt": "bench"})
        minimal, get, create = [], [], []
        for _ in range(args.rounds):
            for name, reqs, sink in (("minimal", min_req, minimal), ("get", get_req, get)):
                rps, statuses = asyncio.run(_load(host, port, reqs, args.seconds, args.connections))
                assert set(statuses) == {200}, (name, statuses)
                sink.append(rps)
        rps, statuses = asyncio.run(_load(host, port, create_req, args.seconds, args.connections))
        assert set(statuses) == {201}, statuses
        create.append(rps)
        song = _creates(
            host_port, keys[:1], "generate_song", {"prompt": "bench", "duration_seconds": 5}
        )
        lat_fast = asyncio.run(_latencies(host, port, song * 60))
    finally:
        fast.terminate()
        fast.wait(30)
    slow, base = _start(1.0)
    try:
        host_port = base.removeprefix("http://")
        host, port = host_port.split(":")[0], int(host_port.split(":")[1])
        song = _creates(
            host_port, [DEMO], "generate_song", {"prompt": "bench", "duration_seconds": 5}
        )
        lat_slow = asyncio.run(_latencies(host, port, song * 60))
    finally:
        slow.terminate()
        slow.wait(30)

    m, g = statistics.median(minimal), statistics.median(get)
    print(
        f"cpus: {os.cpu_count()}, connections: {args.connections}, "
        f"rounds: {args.rounds} x {args.seconds:.1f} s, server: uvicorn (h11), one process"
    )
    rounds = lambda xs: ", ".join(f"{x:.0f}" for x in xs)  # noqa: E731
    print(f"minimal ASGI JSON endpoint   : {m:8.0f} req/s  (rounds: {rounds(minimal)})")
    print(f"GET /v1/generations/{{id}}    : {g:8.0f} req/s  (rounds: {rounds(get)})")
    print(f"POST /v1/generations (create): {statistics.median(create):8.0f} req/s (write_lyrics)")
    print(
        f"create latency, song, speed 1000: median {statistics.median(lat_fast):.1f} ms, "
        f"p90 {statistics.quantiles(lat_fast, n=10)[-1]:.1f} ms"
    )
    print(
        f"create latency, song, speed 1   : median {statistics.median(lat_slow):.1f} ms, "
        f"p90 {statistics.quantiles(lat_slow, n=10)[-1]:.1f} ms"
    )
    print(
        f"load client CPU: {max(CLIENT_CPU):.0%} of one core at most (not the bottleneck "
        f"below ~90%)"
    )
    print(f"get_ratio: {g / m:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
