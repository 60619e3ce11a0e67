"""Melodies from audio (a hum, a sung line): f0 track -> notes, and their key and tempo."""

from __future__ import annotations

import numpy as np
from scipy.ndimage import median_filter

from songlab.sandbox.engine._types import MelodyNote
from songlab.sandbox.engine.theory import estimate_key, hz_to_midi
from songlab.sandbox.engine.voice import f0_track

SR = 44100


def notes_from_audio(x: np.ndarray, sr: int = SR, *, min_dur: float = 0.08) -> list[list[float]]:
    """``[[onset_s, dur_s, midi], ...]`` of the sung/hummed notes (pitch rounded to semitones)."""
    times, f0 = f0_track(x, sr)
    if len(f0) == 0:
        return []
    midi = np.where(f0 > 0, hz_to_midi(np.maximum(f0, 1.0)), np.nan)
    voiced = ~np.isnan(midi)
    sm = median_filter(np.nan_to_num(midi, nan=0.0), size=5, mode="nearest")
    notes: list[list[float]] = []
    hop = times[1] - times[0] if len(times) > 1 else 0.01
    start, cur = None, None
    vals: list[float] = []
    for i in range(len(sm) + 1):  # one pass over frames (100 per second), not samples
        v = voiced[i] if i < len(sm) else False
        p = sm[i] if i < len(sm) else 0.0
        if v and start is not None and cur is not None and abs(p - cur) < 0.7:
            vals.append(p)
            cur = float(np.median(vals[-5:]))
            continue
        if start is not None:
            dur = (i - start) * hop
            if dur >= min_dur:
                notes.append(
                    [float(times[start] - hop / 2), float(dur), float(round(np.median(vals)))]
                )
            start = None
        if v:
            start, cur, vals = i, float(p), [float(p)]
    return notes


def key_of(notes: list[MelodyNote]) -> tuple[int, str]:
    hist = np.zeros(12)
    for _, d, m in notes:
        hist[int(round(m)) % 12] += d
    root, mode, _ = estimate_key(hist)
    return root, mode


def tempo_of(notes: list[MelodyNote], default: float = 100.0) -> float:
    """A plausible BPM from the note onsets (median inter-onset interval as an eighth or quarter)."""
    if len(notes) < 3:
        return default
    ioi = np.diff([n[0] for n in notes])
    ioi = ioi[ioi > 0.08]
    if len(ioi) == 0:
        return default
    bpm = 60.0 / float(np.median(ioi))
    while bpm < 70:
        bpm *= 2
    while bpm > 150:
        bpm /= 2
    return float(round(bpm))
