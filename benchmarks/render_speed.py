"""Real-time factor of the audio engine: a 30 s v7 song with vocals, MP3 included, one core.

Prints the best of a few runs, split into composition + synthesis (the recipe
render) and MP3 encoding, for a 30 s v7 song and a 5 s v5 song, and the
worker's 5 s partial-output excerpt of the 30 s MP3. The RTF is
audio seconds per CPU second of this single-threaded process (BLAS/FFT threads
are pinned to one), so other load on the machine does not distort it; wall
times are printed next to it. Last line: ``render_speed_rtf: X``, end to end
(``render()`` including the MP3 encoding).
"""

from __future__ import annotations

import os

for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS"):
    os.environ.setdefault(var, "1")

import time  # noqa: E402

import songlab.sandbox.engine as E  # noqa: E402
from songlab.sandbox.engine import _ops_shared, audio_io, ops_music  # noqa: E402

LYRICS = (
    "[Verse]\nHello my love the night is young\nWe sing along under the sun\n"
    "Every light is calling out your name\nNothing in the world will be the same\n"
    "[Chorus]\nOh my heart stay with me\nOh my love set me free\n"
    "Hold me close until the morning comes\nWe are the song the city hums"
)


def timed(fn, runs: int = 3) -> tuple[float, float, object]:
    best_cpu, best_wall, out = float("inf"), float("inf"), None
    for _ in range(runs):
        c0, w0 = time.process_time(), time.perf_counter()
        out = fn()
        best_cpu = min(best_cpu, time.process_time() - c0)
        best_wall = min(best_wall, time.perf_counter() - w0)
    return best_cpu, best_wall, out


def main() -> None:
    payload = {
        "prompt": "upbeat pop song with piano, guitar and strings",
        "lyrics": LYRICS,
        "duration_seconds": 30,
    }
    E.render(
        "generate_song", "v7", {**payload, "duration_seconds": 5}, seed=0
    )  # warm caches/imports

    def synth():
        rec, _ = ops_music.generate("generate_song", "v7", payload, 1, None)
        return _ops_shared.finish(rec)[1]

    c_syn, w_syn, mix = timed(synth)
    c_enc, w_enc, _ = timed(lambda: audio_io.encode(mix, "mp3"))
    c_all, w_all, res = timed(lambda: E.render("generate_song", "v7", payload, seed=1))
    c5, w5, _ = timed(
        lambda: E.render("generate_song", "v5", {**payload, "duration_seconds": 5}, seed=1)
    )
    c_ex, w_ex, _ = timed(lambda: E.excerpt(res.assets[0].data, 5.0))
    dur = res.assets[0].duration_s
    print(f"30 s v7 song, synthesis:   {c_syn:.3f} s CPU ({w_syn:.3f} s wall)")
    print(f"30 s v7 song, MP3 encode:  {c_enc:.3f} s CPU ({w_enc:.3f} s wall)")
    print(f"30 s v7 song, render():    {c_all:.3f} s CPU ({w_all:.3f} s wall)")
    print(f"5 s v5 song, render():     {c5:.3f} s CPU ({w5:.3f} s wall)")
    print(f"excerpt(30 s MP3, 5 s):    {c_ex:.3f} s CPU ({w_ex:.3f} s wall)")
    print(f"synthesis-only RTF: {dur / c_syn:.1f}x")
    print(f"encode-only RTF: {dur / c_enc:.1f}x")
    print(f"end-to-end RTF (wall): {dur / w_all:.1f}x")
    print(f"render_speed_rtf: {dur / c_all:.1f}")


if __name__ == "__main__":
    main()
