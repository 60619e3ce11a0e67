"""Adherence analysis of a study: 200 clips measured cold (every core) and again from the cache.

The clips are four sandbox songs (v5 and v7, two prompts asking a key and a tempo)
rendered once as the service delivers them (MP3), each used 50 times with its own ID3v1
tag (the clip's number), so every clip has its own bytes and cache key while the decoder
and every measure see real sandbox music. The clips are handed to
``songlab.audio.study.analyse`` as a generator, so only the clips in flight are held.

Prints, for the cold pass (nothing cached; the workers' server process starts and
imports librosa inside it) and the cached pass (blob hashes only: nothing downloaded or
decoded): audio seconds per wall second, and the CPU seconds the cold pass cost (this
process, the measuring workers and their server process) per audio second, which the
machine's load inflates far less than the wall time; then the peak memory (RSS) of this
process and of the largest worker, and the load average, since on a shared machine the
wall figure says as much about the neighbours as about songlab.

``--clips`` (default 200) and ``--seconds`` (clip length, default 8) size the study;
``--workers`` (default: every core).

Last line: ``scorecard_analysis_rtf: <audio seconds per wall second, cold>``.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

PROMPTS = ("slow sad piano ballad in A minor, 70 bpm", "rock in E major, 132 bpm")


def _id3v1(n: int) -> bytes:
    """An ID3v1 tag (128 bytes at the end of an MP3, skipped by every decoder)."""
    title = f"clip {n}".encode().ljust(30, b"\0")
    return b"TAG" + title + bytes(30 + 30 + 4 + 30) + b"\xff"


def _children_cpu_s() -> float:
    """CPU seconds of this process's live children (the workers' server process)."""
    total = 0.0
    tick = os.sysconf("SC_CLK_TCK")
    for task in Path("/proc/self/task").iterdir():
        for pid in (task / "children").read_text().split():
            try:
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            total += (int(fields[11]) + int(fields[12])) / tick  # utime, stime
    return total


def _songs(seconds: float) -> list[tuple[dict[str, Any], Any]]:
    """The four sandbox songs (v5 and v7, each prompt), rendered once: (request, rendering)."""
    import songlab.sandbox.engine as engine

    songs = []
    for model in ("v5", "v7"):
        for prompt in PROMPTS:
            payload = {"prompt": prompt, "duration_seconds": seconds}
            res = engine.render("generate_song", model, payload, seed=1)
            songs.append(({"operation": "generate_song", "model": model, "payload": payload}, res))
    return songs


@dataclass
class Passes:
    """What the cold and the cached pass measured."""

    cold: Any  # the cold pass's adherence frame
    t_cold: float
    t_warm: float
    main_cpu: float
    server_cpu: float
    same: bool
    card: Any  # the scorecard, indexed by model


def _passes(songs: list[tuple[dict[str, Any], Any]], n: int, workers: int) -> Passes:
    """Analyse ``n`` clips cold (their bytes), then again from the cache (blob hashes only)."""
    import hashlib

    from songlab.audio.study import AnalysisCache, Clip, analyse
    from songlab.listening.scorecard import scorecard

    hashes: list[str] = []

    def clips() -> Iterator[Clip]:  # cold: the bytes (the blob hash is their sha256)
        for i in range(n):
            request, res = songs[i % len(songs)]
            data = res.assets[0].data + _id3v1(i)
            hashes.append(hashlib.sha256(data).hexdigest())
            yield Clip(request=request, data=data, blob_hash=hashes[-1], label=f"clip{i}")

    def known() -> Iterator[Clip]:  # cached: the assets' blob hashes, no bytes at all
        for i in range(n):
            request = songs[i % len(songs)][0]
            yield Clip(request=request, blob_hash=hashes[i], label=f"clip{i}")

    with tempfile.TemporaryDirectory() as tmp:
        cache = AnalysisCache(Path(tmp) / "analysis.sqlite")
        cpu0, server0 = time.process_time(), _children_cpu_s()
        t0 = time.perf_counter()
        cold = analyse(clips(), cache=cache, workers=workers, progress=False, total=n)
        t_cold = time.perf_counter() - t0
        main_cpu = time.process_time() - cpu0
        server_cpu = _children_cpu_s() - server0
        t0 = time.perf_counter()
        warm = analyse(known(), cache=cache, workers=workers, progress=False)
        t_warm = time.perf_counter() - t0
        assert len(cold) == len(warm) == n
        same = cold.drop(columns=["blob_key"]).equals(warm.drop(columns=["blob_key"]))
        card = scorecard(adherence=cold).frame.set_index("model")
    return Passes(cold, t_cold, t_warm, main_cpu, server_cpu, same, card)


def _report(args: argparse.Namespace, m: Passes, load: float) -> None:
    """Print the figures (see the module's doc), the headline last."""
    audio_s = args.clips * args.seconds
    measure_cpu = m.cold.attrs["cpu_s"]
    cpu = m.main_cpu + measure_cpu + m.server_cpu
    me = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    kids = m.cold.attrs["worker_peak_rss_mib"]
    print(
        f"clips: {args.clips} x {args.seconds:g} s MP3 ({audio_s:.0f} s of audio), "
        f"{args.workers} workers, load average {load:.1f} -> {os.getloadavg()[0]:.1f}"
    )
    print(f"cold:   {m.t_cold:6.1f} s wall, {audio_s / m.t_cold:7.1f} audio s per wall s")
    print(
        f"cold CPU: {cpu:.1f} s = {1000 * cpu / audio_s:.2f} ms per audio s "
        f"({audio_s / cpu:.0f} audio s per CPU s): measuring {measure_cpu:.1f} s, "
        f"this process {m.main_cpu:.1f} s, the workers' server (imports) {m.server_cpu:.1f} s"
    )
    print(
        f"cold CPU without the one-off imports: {1000 * (cpu - m.server_cpu) / audio_s:.2f} ms "
        f"per audio s, {args.workers} idle cores would analyse "
        f"{args.workers * audio_s / (cpu - m.server_cpu):.0f} audio s per wall s"
    )
    print(
        f"cached: {m.t_warm:6.1f} s wall, {audio_s / m.t_warm:7.1f} audio s per wall s "
        f"(same rows: {m.same})"
    )
    print(f"peak memory: this process {me:.0f} MiB, largest worker {kids:.0f} MiB")
    for model, row in m.card.iterrows():
        print(
            f"{model}: key {row['key_score']:.2f}  tempo {row['tempo_score']:.2f}  "
            f"duration {row['duration_score']:.2f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clips", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args()
    start = time.perf_counter()
    songs = _songs(args.seconds)
    load = os.getloadavg()[0]
    measured = _passes(songs, args.clips, args.workers)
    _report(args, measured, load)
    print(f"the whole script: {time.perf_counter() - start:.1f} s (songs rendered, both passes)")
    print(f"scorecard_analysis_rtf: {args.clips * args.seconds / measured.t_cold:.1f}")


if __name__ == "__main__":
    main()
