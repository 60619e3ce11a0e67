"""Loudness matching of the clips one trial compares: attenuate everything to the quietest.

Integrated loudness per ITU-R BS.1770-4 (pyloudnorm). Each clip gets the gain
``g_i = min_j L_j - L_i <= 0`` dB, so all reach the quietest clip's
loudness; if any clip's sample peak would then exceed ``peak_ceiling_db``
(default -1 dBFS, headroom for lossy excerpts), every gain is lowered by the
same amount. Nothing is ever amplified, so nothing clips that did not
already, and the loudness differences stay zero.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import scipy  # scipy.signal (and the scipy.stats it imports) load on first use

import songlab.audio as sa  # its loudness (pyloudnorm, scipy) loads on first use
from songlab.audio import AudioError
from songlab.listening._errors import ListeningError

# ITU-R BS.1534-3 sec. 5.1: the low-quality anchor is the reference low-passed at 3.5 kHz.
ANCHOR_CUTOFF_HZ = 3500.0


@dataclass(frozen=True)
class Matched:
    """Loudness-matched clips with their gains (dB, all <= 0) and loudness before matching (LUFS)."""

    clips: tuple[np.ndarray, ...]
    gains_db: tuple[float, ...]
    loudness: tuple[float, ...]


def match_loudness(
    clips: Sequence[np.ndarray],
    /,
    *,
    sr: Sequence[int],
    names: Sequence[str] | None = None,
    peak_ceiling_db: float = -1.0,
) -> Matched:
    """Attenuate ``clips`` (float ``(channels, samples)``, rates ``sr``) to the quietest one.

    ``names`` label the clips in errors (a silent or sub-400 ms clip has no
    loudness and cannot be matched).
    """
    if len(clips) == 0 or len(clips) != len(sr):
        raise ListeningError("clips", "must be a non-empty sequence, one sample rate per clip")
    if not -20.0 <= peak_ceiling_db <= 0.0:
        raise ListeningError("peak_ceiling_db", f"must be in -20..0 dBFS; got {peak_ceiling_db!r}")
    names = list(names) if names is not None else [f"clip {i}" for i in range(len(clips))]
    loud = []
    for clip, rate, name in zip(clips, sr, names, strict=True):
        try:
            value = sa.integrated_loudness(clip, sr=rate)
        except AudioError as exc:
            raise ListeningError("clips", f"{name}: {exc.rule}") from None
        if not np.isfinite(value):
            raise ListeningError(
                "clips", f"{name}: is silent (integrated loudness -inf); cannot match it"
            )
        loud.append(value)
    target = min(loud)
    gains = np.array([target - value for value in loud])
    peaks = np.array([sa.peak_db(clip) for clip in clips]) + gains
    over = float(np.max(peaks)) - peak_ceiling_db
    if over > 0:
        gains -= over
    matched = tuple(sa.apply_gain(clip, db=float(g)) for clip, g in zip(clips, gains, strict=True))
    return Matched(matched, tuple(float(g) for g in gains), tuple(loud))


def lowpass_anchor(
    audio: np.ndarray, /, *, sr: int, cutoff: float = ANCHOR_CUTOFF_HZ
) -> np.ndarray:
    """The MUSHRA low anchor: ``audio`` low-passed at ``cutoff`` Hz (8th-order Butterworth, zero phase)."""
    if not 0 < cutoff < sr / 2:
        raise ListeningError("cutoff", f"must be between 0 and sr/2 = {sr / 2} Hz; got {cutoff!r}")
    sos = scipy.signal.butter(8, cutoff, btype="lowpass", fs=sr, output="sos")
    low: np.ndarray = scipy.signal.sosfiltfilt(sos, np.asarray(audio, dtype=np.float64), axis=-1)
    return low.astype(np.float32)
