"""The engine's audio I/O: :mod:`songlab.codec` at the engine's rate (44.1 kHz), plus resampling.

Audio inside the engine is float32 ``(channels, samples)`` at :data:`SR`;
:func:`load` decodes and resamples anything else. Sniffing, decoding and
encoding are :mod:`songlab.codec`'s (the one codec of songlab); ``probe.py``
checks a file whole.
"""

from __future__ import annotations

from math import gcd

import numpy as np

from songlab.codec import MIME, CodecError, decode, decode_head, sniff
from songlab.codec import encode as _encode

__all__ = [
    "CodecError",
    "MIME",
    "SR",
    "decode",
    "decode_head",
    "encode",
    "load",
    "resample",
    "sniff",
]

SR = 44100
_M4A_BITRATE = 96000


def encode(audio: np.ndarray, fmt: str = "mp3", *, sr: int = SR) -> bytes:
    """Encode float ``(channels, samples)`` (or 1-D mono) audio; ``fmt`` mp3, wav, flac, ogg or m4a.

    Samples are clipped to +-1.0 first; mp3 and m4a keep the first two channels.
    """
    a = np.asarray(audio, dtype=np.float32)
    if a.ndim == 1:
        a = a[None, :]
    a = np.clip(a, -1.0, 1.0)
    if fmt in ("mp3", "m4a"):
        a = a[:2]
    return _encode(a, fmt, sr=sr, bitrate=_M4A_BITRATE if fmt == "m4a" else None)


def resample(audio: np.ndarray, sr: int, target: int = SR) -> np.ndarray:
    """Polyphase resampling along the last axis."""
    if sr == target:
        return audio
    from scipy.signal import resample_poly

    g = gcd(sr, target)
    out: np.ndarray = resample_poly(audio, target // g, sr // g, axis=-1).astype(np.float32)
    return out


def load(data: bytes) -> np.ndarray:
    """Decode and resample to ``(channels, samples)`` float32 at :data:`SR`."""
    a, sr = decode(data)
    return resample(a, sr)
