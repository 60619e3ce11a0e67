"""Encode and decode audio bytes: soundfile for wav/flac/ogg (and mp3 decoding), PyAV for mp3
encoding (LAME) and m4a (AAC).

Audio inside the engine is float32 ``(channels, samples)`` at :data:`SR` (44.1 kHz);
:func:`decode` resamples anything else. :func:`probe` recognises a file by its
magic bytes and decodes it whole: what the decoders cannot read, or read short of
the length the file announces, is refused; what they skip (padding, tags) is not.
"""

from __future__ import annotations

import io
import math
import struct
from dataclasses import dataclass
from math import gcd

import numpy as np
import soundfile as sf

SR = 44100

MIME = {
    "mp3": "audio/mpeg",
    "wav": "audio/wav",
    "flac": "audio/flac",
    "ogg": "audio/ogg",
    "m4a": "audio/mp4",
    "mid": "audio/midi",
}


class CodecError(ValueError):
    """Bytes that are not (complete) audio of a known format."""


class Truncated(CodecError):
    """A decoder read fewer samples than the file announces."""


@dataclass(frozen=True, slots=True)
class Probe:
    format: str
    duration_s: float
    sample_rate: int
    channels: int


def sniff(data: bytes) -> str | None:
    """The format name from the magic bytes, or None."""
    head = data[:12]
    if head[:4] == b"MThd":
        return "mid"
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


def encode(audio: np.ndarray, fmt: str = "mp3", *, sr: int = SR) -> bytes:
    """Encode float ``(channels, samples)`` (or 1-D mono) audio; ``fmt`` mp3, wav, flac, ogg or m4a."""
    a = np.asarray(audio, dtype=np.float32)
    if a.ndim == 1:
        a = a[None, :]
    a = np.clip(a, -1.0, 1.0)
    if fmt == "m4a":
        return _encode_m4a(a, sr)
    if fmt == "mp3":
        return _encode_mp3(a, sr)
    buf = io.BytesIO()
    kw: dict = {"format": fmt.upper()}
    if fmt == "wav":
        kw["subtype"] = "PCM_16"
    with sf.SoundFile(buf, "w", sr, a.shape[0], **kw) as f:
        # In blocks: libvorbis allocates its analysis buffer on the stack, and one
        # write of a minute or more of audio overflows it (a segfault, not an error).
        for i in range(0, a.shape[1], _BLOCK):
            f.write(a[:, i : i + _BLOCK].T)
    return buf.getvalue()


_BLOCK = 1 << 16


def _encode_mp3(a: np.ndarray, sr: int) -> bytes:
    """LAME through PyAV: VBR -V 2, algorithm quality 7, plain stereo, no low-pass.

    Measured on a 30 s v7 song: about half the CPU time of libsndfile's LAME at VBR
    0.3 (which also runs the slower joint-stereo analysis), and the whole band is
    kept (libsndfile's LAME low-passes near 17-18 kHz). One stream, gapless (the
    LAME tag gives decoders the exact length), no ID3 tag; the same samples give
    the same bytes.
    """
    import av

    buf = io.BytesIO()
    layout = "mono" if a.shape[0] == 1 else "stereo"
    with av.open(buf, "w", format="mp3", options={"id3v2_version": "0"}) as out:
        st = out.add_stream("libmp3lame", rate=sr, layout=layout)
        st.codec_context.options = {
            "flags": "+qscale", "global_quality": str(2 * 118),  # -V 2 (quality * FF_QP2LAMBDA)
            "compression_level": "7",  # lame -q 7: fast psychoacoustics, no noise shaping search
            "joint_stereo": "0",  # plain L/R: skips the per-granule mid/side analysis
            "cutoff": str(sr // 2),  # no low-pass: v7's band above 16 kHz survives
        }
        _write_all(out, st, a, sr, layout)
    return buf.getvalue()


def _write_all(out, st, a: np.ndarray, sr: int, layout: str) -> None:  # noqa: ANN001 (PyAV)
    """Encode the whole signal as one frame into ``st`` and flush the encoder into ``out``."""
    import av

    frame = av.AudioFrame.from_ndarray(np.ascontiguousarray(a[:2]), format="fltp", layout=layout)
    frame.sample_rate = sr
    for pkt in st.encode(frame):
        out.mux(pkt)
    for pkt in st.encode(None):
        out.mux(pkt)


def _encode_m4a(a: np.ndarray, sr: int) -> bytes:
    import av

    buf = io.BytesIO()
    layout = "mono" if a.shape[0] == 1 else "stereo"
    with av.open(buf, "w", format="ipod") as out:
        st = out.add_stream("aac", rate=sr, layout=layout)
        st.bit_rate = 96000
        _write_all(out, st, a, sr, layout)
    return buf.getvalue()


def decode(data: bytes) -> tuple[np.ndarray, int]:
    """Decode to float32 ``(channels, samples)`` at the file's own rate."""
    fmt = sniff(data)
    if fmt == "mid":
        raise CodecError("a MIDI file holds no audio")
    if fmt == "m4a":
        return _decode_av(data)
    try:
        a, sr = sf.read(io.BytesIO(data), dtype="float32", always_2d=True)
    except Exception as exc:
        if fmt is None:
            try:
                return _decode_av(data)
            except CodecError:
                pass
        raise CodecError(f"not decodable audio ({type(exc).__name__})") from None
    return np.ascontiguousarray(a.T), int(sr)


def decode_head(data: bytes, seconds: float) -> tuple[np.ndarray, int]:
    """Decode only the first ``seconds`` (at least) to float32 ``(channels, samples)`` and the rate.

    The same samples as ``decode(data)[0][:, :n]``: libsndfile reads ``n`` frames from
    the start, PyAV stops after the packet that reaches ``n``.
    """
    fmt = sniff(data)
    if fmt == "mid":
        raise CodecError("a MIDI file holds no audio")
    if fmt != "m4a":
        try:
            with sf.SoundFile(io.BytesIO(data)) as f:
                n = max(1, math.ceil(seconds * f.samplerate))
                a = f.read(n, dtype="float32", always_2d=True)
                sr = f.samplerate
        except Exception as exc:
            if fmt is not None:
                raise CodecError(f"not decodable audio ({type(exc).__name__})") from None
        else:
            return np.ascontiguousarray(a.T), int(sr)
    return _decode_av(data, seconds)


def _decode_av(data: bytes, seconds: float | None = None) -> tuple[np.ndarray, int]:
    import av

    try:
        with av.open(io.BytesIO(data), "r") as cont:
            st = next((s for s in cont.streams if s.type == "audio"), None)
            if st is None:
                raise CodecError("the container has no audio stream")
            sr = st.codec_context.sample_rate
            want = None if seconds is None else max(1, math.ceil(seconds * sr))
            chunks, got = [], 0
            for frame in cont.decode(st):
                arr = frame.to_ndarray()
                if frame.format.is_planar:
                    chunks.append(arr.astype(np.float32))
                else:  # interleaved: (1, samples*channels)
                    chunks.append(arr.reshape(-1, len(frame.layout.channels)).T.astype(np.float32))
                got += chunks[-1].shape[1]
                if want is not None and got >= want:
                    break
    except CodecError:
        raise
    except Exception as exc:
        raise CodecError(f"not decodable audio ({type(exc).__name__})") from None
    if not chunks:
        raise CodecError("no audio frames")
    a = np.concatenate(chunks, axis=1)
    if want is not None:
        a = a[:, :want]
    if np.issubdtype(a.dtype, np.integer):  # pragma: no cover - PyAV gives float AAC
        a = a / 32768.0
    return np.ascontiguousarray(a, dtype=np.float32), int(sr)


def resample(audio: np.ndarray, sr: int, target: int = SR) -> np.ndarray:
    """Polyphase resampling along the last axis."""
    if sr == target:
        return audio
    from scipy.signal import resample_poly

    g = gcd(sr, target)
    return resample_poly(audio, target // g, sr // g, axis=-1).astype(np.float32)


def load(data: bytes) -> np.ndarray:
    """Decode and resample to ``(channels, samples)`` float32 at :data:`SR`."""
    a, sr = decode(data)
    return resample(a, sr)


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
            raise Truncated(f"is truncated (its header announces {announced} samples, "
                            f"the decoder found {frames})")
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
    except Exception as exc:
        raise CodecError(f"is not decodable audio ({type(exc).__name__})") from None
    return got, sr, channels


def _announced(data: bytes) -> int | None:
    """The sample count an MP3's Xing/Info/VBRI header announces (as mpg123 reads it), or None."""
    if not _announces_length(data):
        return None
    try:
        return sf.info(io.BytesIO(data)).frames
    except Exception:
        return None


def _count_av(data: bytes) -> tuple[int, int, int]:
    """ffmpeg (PyAV) decodes packet by packet, skipping packets it cannot decode, as players do."""
    import av

    got = 0
    try:
        with av.open(io.BytesIO(data), "r") as cont:
            st = next((s for s in cont.streams if s.type == "audio"), None)
            if st is None:
                raise CodecError("the container has no audio stream")
            sr, channels = st.codec_context.sample_rate, st.codec_context.channels
            for packet in cont.demux(st):
                try:
                    got += sum(frame.samples for frame in st.codec_context.decode(packet))
                except av.error.InvalidDataError:
                    continue
    except CodecError:
        raise
    except Exception as exc:
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
    riff_size = struct.unpack("<I", data[4:8])[0]
    if riff_size + 8 > len(data):
        raise CodecError("is truncated (the WAV header announces more bytes than it has)")
