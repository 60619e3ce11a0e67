"""Audio arguments checked and clips as arrays: :mod:`songlab.codec` with named errors.

Decoding and encoding are :mod:`songlab.codec`'s (the one codec of songlab:
soundfile for wav/flac/ogg and mp3 decoding, PyAV for mp3 encoding and m4a);
this module checks the arguments first and names the bad one in an
:class:`AudioError`. Arrays are ``float32`` with time on the last axis, shape ``(channels, samples)``;
a 1-D array is mono. Nothing here rescales: values are what the file holds
(decoding) or what the caller gave (encoding; PCM formats clip beyond +-1.0,
which is what a listener would hear anyway).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

import songlab.codec as codec
from songlab.audio._audio_error import AudioError

FORMATS = codec.FORMATS
MIME_TYPES = {fmt: codec.MIME[fmt] for fmt in FORMATS}
_MAX_CHANNELS = 8


def sniff(data: bytes, /) -> str | None:
    """The audio format of encoded ``data`` from its first bytes (one of :data:`FORMATS`), or None.

    :func:`songlab.codec.sniff` without MIDI, which holds no audio.
    """
    kind = codec.sniff(data)
    return kind if kind in FORMATS else None


def as_channels(audio: Any, /, *, argument: str = "audio") -> np.ndarray:
    """``audio`` as a C-contiguous float32 array of shape ``(channels, samples)``.

    Accepts a 1-D array (mono) or a 2-D ``(channels, samples)`` array with at
    most 8 channels; a 2-D array with more rows is refused as probably
    transposed. Raises :class:`AudioError` naming ``argument``.
    """
    try:
        arr = np.asarray(audio, dtype=np.float32)
    except (TypeError, ValueError) as exc:
        raise AudioError(argument, f"must be a numeric array ({exc})") from None
    if arr.ndim == 1:
        arr = arr[np.newaxis, :]
    if arr.ndim != 2:
        raise AudioError(argument, f"must be 1-D or (channels, samples); got shape {arr.shape}")
    if arr.shape[0] > _MAX_CHANNELS:
        raise AudioError(
            argument,
            f"must be (channels, samples) with at most {_MAX_CHANNELS} channels; got shape "
            f"{arr.shape} (time goes on the last axis: transpose it?)",
        )
    if arr.shape[1] == 0:
        raise AudioError(argument, "has no samples")
    if not np.all(np.isfinite(arr)):
        raise AudioError(argument, "contains NaN or infinite samples")
    return np.ascontiguousarray(arr)


def _check_sr(sr: Any, argument: str = "sr") -> int:
    if isinstance(sr, bool) or not isinstance(sr, int | np.integer) or not 1000 <= sr <= 384000:
        raise AudioError(argument, f"must be an int sample rate in Hz (1000-384000); got {sr!r}")
    return int(sr)


def decode(data: bytes, /) -> tuple[NDArray[np.float32], int]:
    """Decode mp3/wav/flac/ogg (soundfile) or m4a (PyAV) bytes.

    Returns ``(audio, sr)``: float32 ``(channels, samples)`` and the sample
    rate in Hz. Raises :class:`AudioError` naming ``data`` for anything that
    is not decodable audio.
    """
    if not isinstance(data, bytes | bytearray | memoryview):
        raise AudioError("data", f"must be bytes; got {type(data).__name__}")
    data = bytes(data)
    if not data:
        raise AudioError("data", "is empty")
    try:
        audio, sr = codec.decode(data)
    except codec.CodecError as exc:
        raise AudioError("data", str(exc)) from None
    if audio.shape[1] == 0:
        raise AudioError("data", "decodes to no samples")
    return audio, sr


def encode(audio: Any, /, *, sr: int, format: str = "wav", bitrate: int | None = None) -> bytes:
    """Encode ``audio`` (``(channels, samples)`` or 1-D) at ``sr`` Hz as ``format``.

    ``format``: wav/flac (16-bit PCM), ogg (Vorbis), mp3 (LAME VBR),
    m4a (AAC in an MP4 container). ``bitrate`` (bits/s) applies to
    m4a only (default 128 kbit/s per stereo pair). Samples are not rescaled.
    """
    arr = as_channels(audio)
    sr = _check_sr(sr)
    if format not in FORMATS:
        raise AudioError("format", f"must be one of {', '.join(FORMATS)}; got {format!r}")
    if bitrate is not None and (not isinstance(bitrate, int) or not 8000 <= bitrate <= 512000):
        raise AudioError("bitrate", f"must be an int in 8000-512000 bits/s; got {bitrate!r}")
    if format == "m4a" and arr.shape[0] > 2:
        raise AudioError("audio", "m4a encoding supports 1 or 2 channels")
    if format == "mp3":
        if sr not in codec.MP3_RATES:
            raise AudioError("sr", f"mp3 supports {codec.MP3_RATES} Hz; got {sr}")
        if arr.shape[0] > 2:
            raise AudioError("audio", "mp3 holds at most 2 channels")
    try:
        return codec.encode(arr, format, sr=sr, bitrate=bitrate if format == "m4a" else None)
    except codec.CodecError as exc:
        raise AudioError("audio", str(exc)) from None


def as_audio(
    source: Any, /, *, sr: int | None = None, argument: str = "source"
) -> tuple[np.ndarray, int]:
    """``(audio, sr)`` from encoded bytes, an ``(array, sr)`` pair, or an array with ``sr=``.

    The one place that turns "a clip" into float32 ``(channels, samples)``.
    """
    if isinstance(source, bytes | bytearray | memoryview):
        try:
            return decode(bytes(source))
        except AudioError as exc:
            raise AudioError(argument, exc.rule) from None
    if isinstance(source, tuple) and len(source) == 2 and not isinstance(source[1], np.ndarray):
        return as_channels(source[0], argument=argument), _check_sr(source[1], f"{argument}[1]")
    if isinstance(source, np.ndarray | list):
        if sr is None:
            raise AudioError("sr", f"is required when {argument} is an array")
        return as_channels(source, argument=argument), _check_sr(sr)
    raise AudioError(
        argument,
        f"must be encoded bytes, an (array, sr) pair or an array; got {type(source).__name__}",
    )


def duration(audio: np.ndarray, /, *, sr: int) -> float:
    """Length in seconds of a ``(..., samples)`` array at ``sr`` Hz."""
    return float(np.shape(audio)[-1]) / float(sr)
