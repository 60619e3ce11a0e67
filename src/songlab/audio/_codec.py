"""Decode and encode audio bytes: soundfile for wav/flac/ogg/mp3, PyAV for m4a (AAC).

Arrays are ``float32`` with time on the last axis, shape ``(channels, samples)``;
a 1-D array is mono. Nothing here rescales: values are what the file holds
(decoding) or what the caller gave (encoding; PCM formats clip beyond +-1.0,
which is what a listener would hear anyway).
"""

from __future__ import annotations

import io
from typing import Any

import av
import numpy as np
import soundfile as sf

from songlab.audio._errors import AudioError

FORMATS = ("flac", "m4a", "mp3", "ogg", "wav")
MIME_TYPES = {
    "flac": "audio/flac",
    "m4a": "audio/mp4",
    "mp3": "audio/mpeg",
    "ogg": "audio/ogg",
    "wav": "audio/wav",
}
# soundfile's (format, subtype) for each container it writes.
_SF_FORMATS = {
    "wav": ("WAV", "PCM_16"),
    "flac": ("FLAC", "PCM_16"),
    "ogg": ("OGG", "VORBIS"),
    "mp3": ("MP3", "MPEG_LAYER_III"),
}
_MP3_RATES = (8000, 11025, 12000, 16000, 22050, 24000, 32000, 44100, 48000)
_MAX_CHANNELS = 8


def sniff(data: bytes, /) -> str | None:
    """The container of encoded ``data`` from its first bytes, or None if unknown."""
    head = bytes(data[:16])
    if head[:4] == b"RIFF" and head[8:12] == b"WAVE":
        return "wav"
    if head[:4] == b"fLaC":
        return "flac"
    if head[:4] == b"OggS":
        return "ogg"
    if head[4:8] == b"ftyp":
        return "m4a"
    if head[:3] == b"ID3" or (len(head) > 1 and head[0] == 0xFF and head[1] & 0xE0 == 0xE0):
        return "mp3"
    return None


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


def decode(data: bytes, /) -> tuple[np.ndarray, int]:
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
    kind = sniff(data)
    if kind != "m4a":
        try:
            frames, sr = sf.read(io.BytesIO(data), dtype="float32", always_2d=True)
        except (sf.LibsndfileError, RuntimeError, TypeError) as exc:
            if kind is not None:
                raise AudioError("data", f"is not decodable {kind} audio ({exc})") from None
        else:
            if frames.shape[0] == 0:
                raise AudioError("data", "decodes to no samples")
            return np.ascontiguousarray(frames.T), int(sr)
    return _decode_av(data)


def _decode_av(data: bytes) -> tuple[np.ndarray, int]:
    chunks: list[np.ndarray] = []
    try:
        with av.open(io.BytesIO(data), mode="r") as container:
            if not container.streams.audio:
                raise AudioError("data", "has no audio stream")
            stream = container.streams.audio[0]
            sr = int(stream.codec_context.sample_rate)
            resampler = av.AudioResampler(format="fltp", layout=stream.layout, rate=sr)
            for frame in container.decode(stream):
                chunks.extend(f.to_ndarray() for f in resampler.resample(frame))
            chunks.extend(f.to_ndarray() for f in resampler.resample(None))
    except av.FFmpegError as exc:
        raise AudioError("data", f"is not decodable audio ({exc})") from None
    if not chunks:
        raise AudioError("data", "decodes to no samples")
    return np.ascontiguousarray(np.concatenate(chunks, axis=1), dtype=np.float32), sr


def encode(audio: Any, /, *, sr: int, format: str = "wav", bitrate: int | None = None) -> bytes:
    """Encode ``audio`` (``(channels, samples)`` or 1-D) at ``sr`` Hz as ``format``.

    ``format``: wav/flac (16-bit PCM), ogg (Vorbis), mp3 (soundfile/LAME),
    m4a (AAC in an MP4 container via PyAV). ``bitrate`` (bits/s) applies to
    m4a only (default 128 kbit/s per stereo pair). Samples are not rescaled.
    """
    arr = as_channels(audio)
    sr = _check_sr(sr)
    if format not in FORMATS:
        raise AudioError("format", f"must be one of {', '.join(FORMATS)}; got {format!r}")
    if bitrate is not None and (not isinstance(bitrate, int) or not 8000 <= bitrate <= 512000):
        raise AudioError("bitrate", f"must be an int in 8000-512000 bits/s; got {bitrate!r}")
    if format == "m4a":
        return _encode_m4a(arr, sr, bitrate or 64000 * min(arr.shape[0], 2))
    if format == "mp3":
        if sr not in _MP3_RATES:
            raise AudioError("sr", f"mp3 supports {_MP3_RATES} Hz; got {sr}")
        if arr.shape[0] > 2:
            raise AudioError("audio", "mp3 holds at most 2 channels")
    container, subtype = _SF_FORMATS[format]
    buf = io.BytesIO()
    sf.write(buf, arr.T, sr, format=container, subtype=subtype)
    return buf.getvalue()


def _encode_m4a(arr: np.ndarray, sr: int, bitrate: int) -> bytes:
    layouts = {1: "mono", 2: "stereo"}
    if arr.shape[0] not in layouts:
        raise AudioError("audio", "m4a encoding supports 1 or 2 channels")
    buf = io.BytesIO()
    with av.open(buf, mode="w", format="ipod") as container:
        stream = container.add_stream("aac", rate=sr)
        stream.layout = layouts[arr.shape[0]]
        stream.bit_rate = bitrate
        step = 1024 * 64
        for start in range(0, arr.shape[1], step):
            frame = av.AudioFrame.from_ndarray(
                np.ascontiguousarray(arr[:, start : start + step]),
                format="fltp",
                layout=layouts[arr.shape[0]],
            )
            frame.sample_rate = sr
            for packet in stream.encode(frame):
                container.mux(packet)
        for packet in stream.encode(None):
            container.mux(packet)
    return buf.getvalue()


def as_audio(
    source: Any, /, *, sr: int | None = None, argument: str = "source"
) -> tuple[np.ndarray, int]:
    """``(audio, sr)`` from encoded bytes, an ``(array, sr)`` pair, or an array with ``sr=``.

    The one place that turns "a clip" into float32 ``(channels, samples)``.
    """
    if isinstance(source, bytes | bytearray | memoryview):
        try:
            return decode(source)
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
