"""Adherence analysis of a study: 200 clips measured cold (every core) and again from the cache.

The clips are four sandbox songs (v5 and v7, two prompts asking a key and a tempo)
rendered once, each copied 50 times at a slightly different gain, so every clip has
its own bytes (its own cache key) and the analysis sees real sandbox music. The clips
are handed to ``songlab.audio.study.analyse`` as a generator, so only the clips in
flight are held. Prints audio seconds analysed per wall second, cold and cached, and
the peak memory (RSS) of this process and of its worker processes.

Last line: ``scorecard_analysis_rtf: <audio seconds per wall second, cold>``.
"""

from __future__ import annotations

import hashlib
import os
import resource
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

CLIPS = 200
SECONDS = 12.0
PROMPTS = ("slow sad piano ballad in A minor, 70 bpm", "rock in E major, 132 bpm")


def main() -> None:
    import numpy as np

    import songlab.codec as codec
    import songlab.sandbox.engine as E
    from songlab.audio.study import AnalysisCache, Clip, analyse
    from songlab.listening.scorecard import scorecard

    songs = []
    for model in ("v5", "v7"):
        for prompt in PROMPTS:
            payload = {"prompt": prompt, "duration_seconds": SECONDS, "format": "wav"}
            res = E.render("generate_song", model, payload, seed=1)
            samples, sr = E.decode(res.assets[0].data)
            songs.append(
                ({"operation": "generate_song", "model": model, "payload": payload}, samples, sr)
            )

    hashes: list[str] = []

    def clips() -> Iterator[Clip]:  # cold: the bytes (sha256 is the blob hash)
        for i in range(CLIPS):
            request, samples, sr = songs[i % len(songs)]
            gain = np.float32(1.0 - 1e-4 * (i // len(songs) + 1))
            data = codec.encode(samples * gain, "wav", sr=sr)
            hashes.append(hashlib.sha256(data).hexdigest())
            yield Clip(
                request=request, data=data, blob_hash=hashes[-1], label=f"clip{i}", task_id=f"t{i}"
            )

    def known() -> Iterator[Clip]:  # cached: the assets' blob hashes, no bytes at all
        for i in range(CLIPS):
            request = songs[i % len(songs)][0]
            yield Clip(request=request, blob_hash=hashes[i], label=f"clip{i}", task_id=f"t{i}")

    audio_s = CLIPS * SECONDS
    with tempfile.TemporaryDirectory() as tmp:
        cache = AnalysisCache(Path(tmp) / "analysis.sqlite")
        workers = os.cpu_count() or 1
        t0 = time.perf_counter()
        cold = analyse(clips(), cache=cache, workers=workers, progress=False, total=CLIPS)
        t_cold = time.perf_counter() - t0
        t0 = time.perf_counter()
        warm = analyse(known(), cache=cache, workers=workers, progress=False, total=CLIPS)
        t_warm = time.perf_counter() - t0
        assert len(cold) == len(warm) == CLIPS
        same = cold.drop(columns=["blob_key"]).equals(warm.drop(columns=["blob_key"]))
        card = scorecard(adherence=cold).frame.set_index("model")
    me = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    kids = cold.attrs["worker_peak_rss_mib"]
    print(f"clips: {CLIPS} x {SECONDS:.0f} s ({audio_s:.0f} s of audio), {workers} workers")
    print(f"cold:   {t_cold:6.1f} s wall, {audio_s / t_cold:7.1f} audio s per wall s")
    print(
        f"cached: {t_warm:6.1f} s wall, {audio_s / t_warm:7.1f} audio s per wall s (same rows: {same})"
    )
    print(f"peak memory: this process {me:.0f} MiB, largest worker {kids:.0f} MiB")
    for model, row in card.iterrows():
        print(
            f"{model}: key {row['key_score']:.2f}  tempo {row['tempo_score']:.2f}  duration {row['duration_score']:.2f}"
        )
    print(f"scorecard_analysis_rtf: {audio_s / t_cold:.1f}")


if __name__ == "__main__":
    main()
