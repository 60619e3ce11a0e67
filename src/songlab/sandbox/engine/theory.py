"""Music theory: pitch names, scales, chord progressions, key estimation profiles."""

from __future__ import annotations

import re

import numpy as np

NOTE_NAMES = ("C", "C#", "D", "D#", "E", "F", "F#", "G", "G#", "A", "A#", "B")
_PC = {"C": 0, "D": 2, "E": 4, "F": 5, "G": 7, "A": 9, "B": 11}

SCALES = {
    "major": (0, 2, 4, 5, 7, 9, 11),
    "minor": (0, 2, 3, 5, 7, 8, 10),
}

# Scale-degree progressions (0 = tonic), four bars each; all open on the tonic.
PROGRESSIONS = {
    "major": ((0, 4, 5, 3), (0, 5, 3, 4), (0, 3, 4, 3), (0, 3, 0, 4), (0, 1, 4, 0)),
    "minor": ((0, 5, 2, 6), (0, 3, 4, 0), (0, 6, 5, 6), (0, 5, 3, 4), (0, 3, 6, 2)),
}

# Krumhansl-Kessler key profiles (Krumhansl 1990, "Cognitive Foundations of Musical Pitch").
KK_MAJOR = np.array([6.35, 2.23, 3.48, 2.33, 4.38, 4.09, 2.52, 5.19, 2.39, 3.66, 2.29, 2.88])
KK_MINOR = np.array([6.33, 2.68, 3.52, 5.38, 2.60, 3.53, 2.54, 4.75, 3.98, 2.69, 3.34, 3.17])

_KEY_RE = re.compile(
    r"\b(?:key\s+of\s+)?([A-G])(\s?[#♯b♭]|\s+sharp|\s+flat)?\s*(major|minor|maj|min|m)?\b",
)


def midi_to_hz(m: np.ndarray | float) -> np.ndarray | float:
    return 440.0 * 2.0 ** ((np.asarray(m, dtype=np.float64) - 69.0) / 12.0)


def hz_to_midi(f: np.ndarray | float) -> np.ndarray | float:
    return 69.0 + 12.0 * np.log2(np.maximum(np.asarray(f, dtype=np.float64), 1e-6) / 440.0)


def key_name(root: int, mode: str) -> str:
    return f"{NOTE_NAMES[root % 12]} {mode}"


def parse_key(text: str) -> tuple[int, str | None] | None:
    """``"... in A minor"`` -> (9, "minor"); ``"key of D"`` -> (2, None). Needs a mode word or "key of"."""
    for m in _KEY_RE.finditer(text):
        letter, acc, mode = m.group(1), (m.group(2) or "").strip(), m.group(3)
        explicit = m.group(0).lower().startswith("key")
        if not (mode or explicit):
            continue
        if mode == "m" and acc == "" and not explicit:
            continue  # "A m" is too weak a signal
        pc = _PC[letter] + (
            1 if acc in ("#", "♯", "sharp") else -1 if acc in ("b", "♭", "flat") else 0
        )
        md = None if mode is None else ("major" if mode.startswith("maj") else "minor")
        return pc % 12, md
    return None


def scale_pitches(root: int, mode: str, low: int, high: int) -> np.ndarray:
    """All MIDI pitches of the scale within ``[low, high]``."""
    pcs = np.array([(root + s) % 12 for s in SCALES[mode]])
    allp = np.arange(low, high + 1)
    return allp[np.isin(allp % 12, pcs)]


def chord(
    root: int,
    mode: str,
    degree: int,
    *,
    octave: int = 4,
    seventh: bool = False,
    leading_tone: bool = False,
) -> list[int]:
    """MIDI pitches of the diatonic triad (or seventh chord) on a scale degree.

    ``leading_tone``: in minor, the dominant (degree 4) takes the harmonic minor's raised
    seventh, so V is major and leads into the tonic (the cadence that names a minor key)."""
    sc = SCALES[mode]
    base = 12 * (octave + 1) + root
    idx = [degree, degree + 2, degree + 4] + ([degree + 6] if seventh else [])
    out = [base + sc[i % 7] + 12 * (i // 7) for i in idx]
    if leading_tone and mode == "minor" and degree % 7 == 4:
        out[1] += 1  # the third of v is the scale's seventh: raised, V
    return out


def estimate_key(chroma: np.ndarray) -> tuple[int, str, float]:
    """Best (root, mode, correlation) for a 12-bin pitch-class profile (Krumhansl-Schmuckler)."""
    c = np.asarray(chroma, dtype=np.float64)
    if not np.any(c > 0):
        return 0, "major", 0.0
    best = (0, "major", -2.0)
    for mode, prof in (("major", KK_MAJOR), ("minor", KK_MINOR)):
        rolled = np.stack([np.roll(prof, k) for k in range(12)])
        r = np.array([np.corrcoef(c, row)[0, 1] for row in rolled])
        k = int(np.argmax(r))
        if r[k] > best[2]:
            best = (k, mode, float(r[k]))
    return best
