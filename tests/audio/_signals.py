"""Synthetic clips whose tempo, key, length and melody are known (made here, no fixtures)."""

from __future__ import annotations

import numpy as np

SR = 44100
NAMES = ("C", "C#", "D", "Eb", "E", "F", "F#", "G", "Ab", "A", "Bb", "B")
MAJOR = (0, 2, 4, 5, 7, 9, 11)
HARMONIC_MINOR = (0, 2, 3, 5, 7, 8, 11)


def tone(midi: float, seconds: float, *, sr: int = SR, partials: int = 6) -> np.ndarray:
    t = np.arange(int(seconds * sr)) / sr
    f = 440.0 * 2 ** ((midi - 69) / 12)
    x = sum(np.sin(2 * np.pi * f * k * t) / k for k in range(1, partials + 1) if f * k < sr / 2)
    env = np.minimum(1.0, t / 0.01) * np.exp(-2.0 * t)
    return (x * env).astype(np.float32)


def click(seconds: float, *, sr: int = SR) -> np.ndarray:
    n = int(seconds * sr)
    rng = np.random.default_rng(0)
    return (rng.standard_normal(n) * np.exp(-np.arange(n) / (0.004 * sr))).astype(np.float32)


def song(
    tonic: int,
    mode: str,
    *,
    bpm: float = 100.0,
    seconds: float = 12.0,
    sr: int = SR,
    stereo: bool = True,
) -> np.ndarray:
    """Chords of the key (I-IV-V-I-I-V, or the same in minor with the harmonic V) a bar each, a melody of chord
    tones on every beat, and a click on every beat: a clip in ``tonic`` ``mode`` at ``bpm``."""
    scale = MAJOR if mode == "major" else HARMONIC_MINOR
    n = int(seconds * sr)
    out = np.zeros(n, dtype=np.float32)
    beat = 60.0 / bpm
    degrees = (0, 3, 4, 0, 0, 4)
    rng = np.random.default_rng(tonic * 2 + (mode == "minor"))
    for b in range(int(seconds / beat)):
        start = int(b * beat * sr)
        deg = degrees[(b // 4) % len(degrees)]
        if b % 4 == 0:  # a chord per bar
            for i in (0, 2, 4):
                pc = scale[(deg + i) % 7] + 12 * ((deg + i) // 7)
                x = 0.25 * tone(48 + tonic + pc, 4 * beat, sr=sr)
                out[start : start + x.size] += x[: n - start]
            x = 0.35 * tone(36 + tonic + scale[deg], 4 * beat, sr=sr)
            out[start : start + x.size] += x[: n - start]
        i = int(rng.choice([0, 2, 4]))  # a chord tone of the bar's chord
        pc = scale[(deg + i) % 7] + 12 * ((deg + i) // 7)
        x = 0.2 * tone(60 + tonic + pc, beat, sr=sr)
        out[start : start + x.size] += x[: n - start]
        c = 0.6 * click(0.05, sr=sr)
        out[start : start + c.size] += c[: n - start]
    out *= 0.5 / np.abs(out).max()
    return np.stack([out, out]) if stereo else out[None, :]


def melody(notes: list[tuple[float, float, float]], seconds: float, *, sr: int = SR) -> np.ndarray:
    """A monophonic line (a hum): ``(onset_s, dur_s, midi)`` notes of a pure-ish tone."""
    out = np.zeros(int(seconds * sr), dtype=np.float32)
    for onset, dur, midi in notes:
        t = np.arange(int(dur * sr)) / sr
        f = 440.0 * 2 ** ((midi - 69) / 12)
        x = (np.sin(2 * np.pi * f * t) + 0.3 * np.sin(4 * np.pi * f * t)) * np.minimum(
            1.0, np.minimum(t, dur - t) / 0.02
        )
        a = int(onset * sr)
        out[a : a + x.size] += 0.4 * x[: out.size - a].astype(np.float32)
    return out[None, :]
