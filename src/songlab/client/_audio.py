"""Decode downloaded audio bytes to an :class:`AudioArray`: :func:`songlab.codec.decode`."""

from __future__ import annotations

from songlab.client._models import AudioArray
from songlab.codec import decode

__all__ = ["decode_audio"]


def decode_audio(content: bytes) -> AudioArray:
    """Samples as float32 of shape (channels, frames), and the sample rate in Hz.

    soundfile first, PyAV for m4a/AAC; bytes that are not audio raise
    :class:`songlab.codec.CodecError` (a ``ValueError``).
    """
    samples, rate = decode(content)
    return AudioArray(samples, rate)
