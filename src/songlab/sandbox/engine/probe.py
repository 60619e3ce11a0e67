"""The audio probe: recognise a file and decode it whole, by the decoders' verdict.

What no decoder reads, or reads short of the length the file announces, is
refused (:class:`Truncated`); what decoders skip (zero padding, APEv2, ID3v1 and
Lyrics3 tags after the last frame, free-format frames) is accepted. Decoding
runs in blocks and keeps nothing, so a long file costs time, not memory.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

import numpy as np
import soundfile as sf

from songlab.codec import cut_off
from songlab.sandbox.engine.audio_io import CodecError, sniff

if TYPE_CHECKING:
    from av.audio.stream import AudioStream


class Truncated(CodecError):
    """A decoder read fewer samples than the file announces."""


@dataclass(frozen=True, slots=True)
class Probe:
    format: str
    duration_s: float
    sample_rate: int
    channels: int


def probe(data: bytes) -> Probe:
    """Recognise a file and decode it whole (in blocks, keeping nothing): the decoders' verdict.

    Raises :class:`CodecError` when no decoder can read it, when it holds no
    samples, or when it is truncated: a WAV whose header announces more bytes
    than it has, or an MP3 whose Xing/Info/VBRI header announces more samples
    than the decoder can read. What decoders skip is accepted: zero padding,
    APEv2, ID3v1 and Lyrics3 tags after the last frame, free-format frames.
    """
    if len(data) < 12:
        raise CodecError("is too short to be an audio file")
    fmt = sniff(data)
    if fmt is None:
        raise CodecError("is not a recognised audio file (mp3, m4a, wav, flac, ogg or midi)")
    if fmt == "mid":
        from songlab.sandbox.engine.midi import MidiError, parse

        try:
            notes, length = parse(data)
        except MidiError as exc:
            raise CodecError(str(exc)) from None
        return Probe("mid", length, 0, 0)
    if fmt == "wav":
        _check_wav(data)
    if fmt == "m4a":
        frames, sr, channels = _count_av(data)
    else:
        announced = _announced(data) if fmt == "mp3" else None
        try:
            frames, sr, channels = _count_sf(data)
        except CodecError:
            if fmt != "mp3":
                raise
            # mpg123 gives up resyncing after 1 KiB of junk (zero padding after a stream
            # without a length header); ffmpeg skips the packet and goes on, as players do.
            frames, sr, channels = _count_av(data)
            announced = None if announced is None else announced - _AV_SLACK
        if announced is not None and frames < announced:
            raise Truncated(
                f"is truncated (its header announces {announced} samples, "
                f"the decoder found {frames})"
            )
    if frames == 0:
        raise CodecError("holds no audio samples (truncated?)")
    return Probe(fmt, frames / sr, sr, channels)


_PROBE_BLOCK = 1 << 16


_AV_SLACK = 576  # ffmpeg and mpg123 may trim the encoder delay differently (half a frame)


def _count_sf(data: bytes) -> tuple[int, int, int]:
    """libsndfile (mpg123 for MP3) reads every frame; (frames, rate, channels)."""
    try:
        with sf.SoundFile(io.BytesIO(data)) as f:
            sr, channels = f.samplerate, f.channels
            buf = np.empty((_PROBE_BLOCK, channels), dtype=np.int16)
            got = 0
            while n := len(f.read(_PROBE_BLOCK, dtype="int16", out=buf)):
                got += n
    except Exception as exc:  # noqa: BLE001 - libsndfile on untrusted bytes: any failure is a 422
        raise CodecError(f"is not decodable audio ({type(exc).__name__})") from None
    return got, sr, channels


def _announced(data: bytes) -> int | None:
    """The sample count an MP3's Xing/Info/VBRI header announces (as mpg123 reads it), or None."""
    if not _announces_length(data):
        return None
    try:
        frames: int = sf.info(io.BytesIO(data)).frames  # soundfile ships no types
        return frames
    except Exception:  # noqa: BLE001 - libsndfile on untrusted bytes: no announced length
        return None


def _count_av(data: bytes) -> tuple[int, int, int]:
    """ffmpeg (PyAV) decodes packet by packet, skipping packets it cannot decode, as players do."""
    import av

    got = 0
    try:
        with av.open(io.BytesIO(data), "r") as cont:
            found = next((s for s in cont.streams if s.type == "audio"), None)
            if found is None:
                raise CodecError("the container has no audio stream")
            st = cast(
                "AudioStream", found
            )  # PyAV makes every stream of type "audio" an AudioStream
            sr, channels = st.codec_context.sample_rate, st.codec_context.channels
            for packet in cont.demux(st):
                try:
                    got += sum(frame.samples for frame in st.codec_context.decode(packet))
                except av.error.InvalidDataError:
                    continue
    except CodecError:
        raise
    except Exception as exc:  # noqa: BLE001 - ffmpeg on untrusted bytes: any failure is a 422
        raise CodecError(f"is not decodable audio ({type(exc).__name__})") from None
    return got, sr, channels


def _announces_length(data: bytes) -> bool:
    """Whether an MP3's first frame is a Xing, Info (LAME, ffmpeg) or VBRI length header."""
    pos = 0
    if data[:3] == b"ID3" and len(data) >= 10:
        size = data[6:10]
        pos = 10 + ((size[0] << 21) | (size[1] << 14) | (size[2] << 7) | size[3])
        pos += 10 if data[5] & 0x10 else 0  # a footer
    frame = data[pos : pos + 64]
    return b"Xing" in frame or b"Info" in frame or frame[36:40] == b"VBRI"


def _check_wav(data: bytes) -> None:
    problem = cut_off(data)  # the client's files.read refuses by the same rule
    if problem is not None:
        raise CodecError(problem)
