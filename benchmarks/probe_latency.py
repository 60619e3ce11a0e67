"""GET latency while 60 MiB song-translation sources are being validated, beside an idle sandbox.

One sandbox subprocess (``python -m songlab.sandbox --port 0``, ``fail_tasks``
set so the worker renders nothing and only validation costs CPU). A prober
thread polls ``GET /v1/generations/{id}`` back to back and records each
latency: first on the idle sandbox, then while a loader thread keeps uploading
a fresh ~60 MiB FLAC (decoded whole by the upload's probe) and creating a song
translation from it (validated: size, ownership, the cached probe); the loader
is a process of its own, so its multipart encoding does not slow the prober.
Rounds alternate idle/loaded so machine noise hits both. Prints the p50/p99 of each
and, last, ``get_p99_ratio_under_probing: X`` = loaded p99 / idle p99 (target:
at most 2).

    .venv/bin/python benchmarks/probe_latency.py [--rounds 2] [--seconds 4]
"""

from __future__ import annotations

import argparse
import io
import multiprocessing
import os
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

import httpx
import numpy as np
import soundfile as sf

ADMIN = "bench-admin"
DEMO = {"Authorization": "Bearer sk-sandbox-demo"}
SOURCE_BYTES = 60 * 1024 * 1024 - 256 * 1024  # just under the 60 MiB translation limit


def source(seed: int) -> bytes:
    """A FLAC of noise just under 60 MiB (noise hardly compresses: ~6 minutes of audio)."""
    rng = np.random.default_rng(seed)
    sr, seconds = 44100, 60.0
    block = (rng.standard_normal((int(sr * seconds), 2)) * 0.2).astype(np.float32)
    buf = io.BytesIO()
    with sf.SoundFile(buf, "w", sr, 2, format="FLAC", subtype="PCM_16") as f:
        while buf.tell() < SOURCE_BYTES - 12 * 1024 * 1024:
            f.write(block)
    data = buf.getvalue()
    assert len(data) <= SOURCE_BYTES, len(data)
    return data


def p(values: list[float], q: float) -> float:
    return (
        statistics.quantiles(values, n=100, method="inclusive")[q - 1]
        if len(values) > 2
        else max(values)
    )


def probe_gets(base: str, task_id: str, seconds: float) -> list[float]:
    out: list[float] = []
    with httpx.Client(base_url=base, headers=DEMO, timeout=30) as c:
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            t = time.perf_counter()
            r = c.get(f"/v1/generations/{task_id}")
            out.append(time.perf_counter() - t)
            assert r.status_code == 200, r.text
            time.sleep(0.002)
    return out


def load(base: str, path: str, stop: Any, done: Any) -> None:
    """The loader process: upload + create until ``stop`` is set (its own GIL, so the
    prober's timings are the server's, not this process's multipart encoding)."""
    with open(path, "rb") as f:
        data = f.read()
    with httpx.Client(base_url=base, headers=DEMO, timeout=120) as c:
        i = 0
        while not stop.is_set():
            t = time.perf_counter()
            # each upload is a new file: its own probe (verdicts are cached per file)
            up = c.post("/v1/files", files={"file": (f"song{i}.flac", data, "audio/flac")})
            assert up.status_code == 201, up.text
            r = c.post(
                "/v1/song-translations",
                json={
                    "song_file_id": up.json()["file_id"],
                    "target_language": "German",
                    "song_style": "warm female pop vocal",
                },
            )
            assert r.status_code == 201, r.text
            done.put(time.perf_counter() - t)
            i += 1


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--seconds", type=float, default=4.0)
    args = ap.parse_args()
    data = source(7)
    tmp = tempfile.NamedTemporaryFile(suffix=".flac", delete=False)
    tmp.write(data)
    tmp.close()
    ctx = multiprocessing.get_context("spawn")
    done = ctx.Queue()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "songlab.sandbox",
            "--port",
            "0",
            "--db",
            ":memory:",
            "--admin-token",
            ADMIN,
            "--speed",
            "100",
        ],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        base = proc.stdout.readline().strip().rsplit(" ", 1)[-1]
        with httpx.Client(base_url=base, timeout=30) as c:
            c.put(
                "/_sandbox/faults",
                json={"fail_tasks": 1.0},
                headers={"X-Sandbox-Admin-Token": ADMIN},
            ).raise_for_status()
            tid = c.post(
                "/v1/generations",
                headers=DEMO,
                json={
                    "tool_id": c.get("/v1/tools", headers=DEMO).json()["data"][0]["id"],
                    "payload_json": '{"prompt": "x"}',
                },
            ).json()["task_id"]
        idle: list[float] = []
        loaded: list[float] = []
        for _ in range(args.rounds):
            idle += probe_gets(base, tid, args.seconds)
            stop = ctx.Event()
            loader = ctx.Process(target=load, args=(base, tmp.name, stop, done))
            loader.start()
            time.sleep(1.5)  # the loader has started and its first upload is under way
            loaded += probe_gets(base, tid, args.seconds)
            stop.set()
            loader.join(timeout=120)
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        os.unlink(tmp.name)
    creates = []
    while not done.empty():
        creates.append(done.get())
    ms = 1000.0
    print(
        f"source: {len(data) / 2**20:.1f} MiB FLAC; {len(creates)} upload+create cycles, "
        f"median {statistics.median(creates):.2f} s each"
    )
    print(
        f"idle GET:   n={len(idle)}  p50 {p(idle, 50) * ms:.2f} ms  p99 {p(idle, 99) * ms:.2f} ms"
    )
    print(
        f"loaded GET: n={len(loaded)}  p50 {p(loaded, 50) * ms:.2f} ms  p99 {p(loaded, 99) * ms:.2f} ms"
    )
    print(f"get_p99_ratio_under_probing: {p(loaded, 99) / p(idle, 99):.2f}")


if __name__ == "__main__":
    main()
