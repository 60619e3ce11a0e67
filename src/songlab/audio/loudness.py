"""Loudness and level: integrated loudness (ITU-R BS.1770 via pyloudnorm), peaks, gains.

All functions take ``(channels, samples)`` or 1-D float arrays (time on the
last axis) and never modify their input.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import numpy as np
import pyloudnorm

from songlab.audio._codec import _check_sr, as_channels
from songlab.audio._errors import AudioError

# ITU-R BS.1770-4 sec. 2.1: gating blocks are 400 ms; a clip shorter than one
# block has no integrated loudness.
BLOCK_SECONDS = 0.4
# pyloudnorm's channel weights G_i (BS.1770-4 Table 3) cover up to 5 channels.
_MAX_LOUDNESS_CHANNELS = 5


@lru_cache(maxsize=16)
def _meter(sr: int) -> pyloudnorm.Meter:
    # K-weighting filter (BS.1770-4 Annex 1, Tables 1-2), 400 ms blocks, 75 % overlap.
    return pyloudnorm.Meter(sr, filter_class="K-weighting", block_size=BLOCK_SECONDS)


def integrated_loudness(audio: Any, /, *, sr: int) -> float:
    """Integrated loudness in LUFS (ITU-R BS.1770-4, gated), via pyloudnorm.

    ``L_K = -0.691 + 10 log10(sum_i G_i z_i)`` over the gated 400 ms blocks
    (absolute gate -70 LUFS, relative gate -10 LU). Returns ``-inf`` for
    silence. Raises :class:`AudioError` naming ``audio`` for clips shorter
    than one 400 ms block or with more than 5 channels.
    """
    arr = as_channels(audio)
    sr = _check_sr(sr)
    if arr.shape[1] <= BLOCK_SECONDS * sr:
        raise AudioError("audio", f"must be longer than {BLOCK_SECONDS} s for integrated loudness")
    if arr.shape[0] > _MAX_LOUDNESS_CHANNELS:
        raise AudioError(
            "audio", f"integrated loudness supports at most {_MAX_LOUDNESS_CHANNELS} channels"
        )
    return float(_meter(sr).integrated_loudness(arr.T.astype(np.float64)))


def peak(audio: Any, /) -> float:
    """Sample peak: the largest absolute sample value (linear, 1.0 = full scale)."""
    return float(np.max(np.abs(as_channels(audio))))


def peak_db(audio: Any, /) -> float:
    """Sample peak in dBFS (``20 log10(peak)``); ``-inf`` for silence."""
    p = peak(audio)
    return float(20.0 * np.log10(p)) if p > 0 else float("-inf")


def db_to_gain(db: float, /) -> float:
    """Linear amplitude factor for a gain in dB: ``10 ** (db / 20)``."""
    return float(10.0 ** (db / 20.0))


def apply_gain(audio: Any, /, *, db: float) -> np.ndarray:
    """A float32 copy of ``audio`` scaled by ``db`` decibels (shape kept)."""
    if not np.isfinite(db):
        raise AudioError("db", f"must be a finite number of dB; got {db!r}")
    arr = np.asarray(audio, dtype=np.float32)
    return (arr * np.float32(db_to_gain(db))).astype(np.float32)
