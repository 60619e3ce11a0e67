"""Name, decode and encode audio bytes: the one sniffer and codec of songlab (engine, client, audio).

Arrays are float32 ``(channels, samples)`` (time on the last axis) at the file's
own rate; nothing is rescaled or resampled. soundfile (libsndfile) reads and
writes wav, flac, ogg and reads mp3; PyAV (FFmpeg) writes mp3 (LAME) and reads
and writes m4a (AAC). Bad bytes raise :class:`CodecError` (a ``ValueError``)
whose message reads after a field name ("is not decodable ... audio").

A leaf below the client: it imports nothing of songlab, and numpy, soundfile
and PyAV only inside the functions that need them, so importing it (and the
client, which sniffs downloads with it) costs no third-party import.
"""

from __future__ import annotations

import io
import math
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

__all__ = [
    "CodecError",
    "FORMATS",
    "KINDS",
    "MIME",
    "MP3_RATES",
    "decode",
    "decode_head",
    "encode",
    "sniff",
]

#: The audio formats :func:`decode` reads and :func:`encode` writes.
FORMATS = ("flac", "m4a", "mp3", "ogg", "wav")
#: What :func:`sniff` names: the audio formats and MIDI (a file kind that holds no audio).
KINDS = ("flac", "m4a", "mid", "mp3", "ogg", "wav")
MIME = {
    "flac": "audio/flac",
    "m4a": "audio/mp4",
    "mid": "audio/midi",
    "mp3": "audio/mpeg",
    "ogg": "audio/ogg",
    "wav": "audio/wav",
}
#: The sample rates an MP3 (MPEG-1/2/2.5 layer III) can hold.
MP3_RATES = (8000, 11025, 12000, 16000, 22050, 24000, 32000, 44100, 48000)

# Frames per write: libvorbis allocates its analysis buffer on the stack, and one
# write of a minute or more of audio overflows it (a segfault, not an error).
_BLOCK = 1 << 16
_LAYOUTS = {1: "mono", 2: "stereo"}
# soundfile's (container, subtype) for each format it writes.
_SF_FORMATS = {"wav": ("WAV", "PCM_16"), "flac": ("FLAC", "PCM_16"), "ogg": ("OGG", "VORBIS")}


class CodecError(ValueError):
    """Bytes that are not (complete) audio of a known format, or audio a format cannot hold."""


def sniff(data: bytes | bytearray | memoryview, /) -> str | None:
    """The kind of a file from its magic bytes (one of :data:`KINDS`), or None.

    Container signatures are checked before the MP3 frame sync (11 set bits, a
    weak signature): ``MThd`` mid, ``RIFF....WAVE`` wav, ``fLaC`` flac, ``OggS``
    ogg, ``....ftyp`` m4a, then ``ID3`` or a frame sync mp3.
    """
    head = bytes(data[:12])
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


def decode(data: bytes, /) -> tuple[NDArray[np.float32], int]:
    """Decode to float32 ``(channels, samples)`` and the sample rate in Hz.

    m4a goes to PyAV; everything else to soundfile first, then to PyAV when
    soundfile cannot read it (mpg123 gives up resyncing after junk such as zero
    padding, where FFmpeg skips it, as players do; the engine's probe accepts
    such a file, so it must decode too). A soundfile file with no frames
    decodes to ``(channels, 0)``; a PyAV stream with none is refused.
    """
    kind = _audio_kind(data)
    refused = None
    if kind != "m4a":
        import numpy as np
        import soundfile as sf

        try:
            frames, sr = sf.read(io.BytesIO(data), dtype="float32", always_2d=True)
        except Exception as exc:  # noqa: BLE001 - libsndfile raises several types
            refused = _undecodable(kind, exc)
        else:
            return np.ascontiguousarray(frames.T), int(sr)
    return _decode_av(data, kind, refused=refused)


def decode_head(data: bytes, seconds: float, /) -> tuple[NDArray[np.float32], int]:
    """Decode only the first ``seconds`` (at least) to float32 ``(channels, samples)`` and the rate.

    The same samples as ``decode(data)[0][:, :n]``: libsndfile reads ``n`` frames
    from the start, PyAV stops after the frame that reaches ``n`` (where mpg123
    reads the head but gives up later, PyAV decodes the whole: equal to ~1e-6).
    """
    kind = _audio_kind(data)
    refused = None
    if kind != "m4a":
        import numpy as np
        import soundfile as sf

        try:
            with sf.SoundFile(io.BytesIO(data)) as f:
                n = max(1, math.ceil(seconds * f.samplerate))
                frames = f.read(n, dtype="float32", always_2d=True)
                sr = f.samplerate
        except Exception as exc:  # noqa: BLE001 - libsndfile raises several types
            refused = _undecodable(kind, exc)
        else:
            return np.ascontiguousarray(frames.T), int(sr)
    return _decode_av(data, kind, seconds, refused=refused)


def _audio_kind(data: bytes) -> str | None:
    kind = sniff(data)
    if kind == "mid":
        raise CodecError("is a MIDI file, which holds no audio")
    return kind


def _undecodable(kind: str | None, exc: BaseException) -> CodecError:
    what = f"{kind} audio" if kind else "audio"
    return CodecError(f"is not decodable {what} ({type(exc).__name__})")


def _decode_av(
    data: bytes,
    kind: str | None,
    seconds: float | None = None,
    *,
    refused: CodecError | None = None,
) -> tuple[NDArray[np.float32], int]:
    """PyAV's decode; ``refused``: soundfile's verdict, raised instead of PyAV's if both fail."""
    try:
        return _decode_av_only(data, kind, seconds)
    except CodecError:
        if refused is None:
            raise
        raise refused from None


def _decode_av_only(
    data: bytes, kind: str | None, seconds: float | None
) -> tuple[NDArray[np.float32], int]:
    import av
    import numpy as np

    chunks: list[NDArray[np.float32]] = []
    got = 0
    try:
        with av.open(io.BytesIO(data), mode="r") as container:
            if not container.streams.audio:
                raise CodecError("has no audio stream")
            stream = container.streams.audio[0]
            sr = int(stream.codec_context.sample_rate or stream.rate)
            want = None if seconds is None else max(1, math.ceil(seconds * sr))
            # to planar float at the stream's own layout and rate (AAC decodes to it already)
            resampler = av.AudioResampler(format="fltp", layout=stream.layout, rate=sr)
            for frame in _frames(container, stream):
                for out in resampler.resample(frame):
                    chunks.append(out.to_ndarray().astype(np.float32, copy=False))
                    got += chunks[-1].shape[1]
                if want is not None and got >= want:
                    break
            else:
                chunks.extend(
                    f.to_ndarray().astype(np.float32, copy=False) for f in resampler.resample(None)
                )
    except CodecError:
        raise
    except Exception as exc:  # noqa: BLE001 - FFmpeg errors and malformed containers alike
        raise _undecodable(kind, exc) from None
    if not chunks:
        raise CodecError("decodes to no samples")
    audio = np.concatenate(chunks, axis=1)
    if want is not None:
        audio = audio[:, :want]
    return np.ascontiguousarray(audio, dtype=np.float32), sr


def _frames(container: Any, stream: Any) -> Iterator[Any]:
    """The stream's decoded frames; a packet the decoder refuses is skipped, as players
    skip it (the probe counts samples the same way), and the last packet flushes."""
    import av

    for packet in container.demux(stream):
        try:
            frames = stream.codec_context.decode(packet)
        except av.error.InvalidDataError:
            continue
        yield from frames


def encode(
    audio: NDArray[np.float32], fmt: str, /, *, sr: int, bitrate: int | None = None
) -> bytes:
    """Encode float32 ``(channels, samples)`` audio at ``sr`` Hz as ``fmt`` (one of :data:`FORMATS`).

    wav and flac are 16-bit PCM, ogg Vorbis (both written in blocks: one long
    write crashes libvorbis), mp3 LAME through PyAV (VBR -V 2, or constant
    ``bitrate`` bits/s when given; see :func:`_encode_av`), m4a AAC in an MP4
    container at ``bitrate`` bits/s (default 64 kbit/s per channel, at most
    two). ``bitrate`` is ignored for wav, flac and ogg. Samples are not
    rescaled: PCM clips beyond +-1.0. Raises :class:`CodecError` for a format,
    rate or channel count the format cannot hold.
    """
    import numpy as np

    a = np.ascontiguousarray(audio, dtype=np.float32)
    if a.ndim != 2:
        raise CodecError(f"must be (channels, samples); got shape {a.shape}")
    if fmt == "m4a":
        return _encode_av(a, sr, "m4a", bitrate or 64000 * min(a.shape[0], 2))
    if fmt == "mp3":
        if sr not in MP3_RATES:
            raise CodecError(f"cannot be mp3 at {sr} Hz (mp3 rates: {MP3_RATES})")
        return _encode_av(a, sr, "mp3", bitrate)
    if fmt not in _SF_FORMATS:
        raise CodecError(f"cannot be encoded as {fmt!r} (formats: {', '.join(FORMATS)})")
    import soundfile as sf

    container, subtype = _SF_FORMATS[fmt]
    buf = io.BytesIO()
    with sf.SoundFile(buf, "w", sr, a.shape[0], subtype, format=container) as f:
        for i in range(0, a.shape[1], _BLOCK):
            f.write(a[:, i : i + _BLOCK].T)
    return buf.getvalue()


def _encode_av(a: NDArray[np.float32], sr: int, fmt: str, bitrate: int | None) -> bytes:
    """mp3 or m4a through PyAV, fed in blocks (PyAV re-frames them for the encoder).

    mp3 with a ``bitrate``: LAME CBR, algorithm quality 7, no low-pass, plain stereo, no
    Xing/LAME tag (the listening pages' encoder: every frame header of every clip alike,
    so the format tells nothing of the clip). mp3 without: LAME at VBR -V 2, algorithm quality
    7, plain stereo, no low-pass (the engine's encoder).
    Measured on a 30 s v7 song: about half the CPU time of libsndfile's LAME at
    VBR 0.3 (which also runs the slower joint-stereo analysis), and the whole
    band is kept (libsndfile's LAME low-passes near 17-18 kHz). One stream,
    gapless (the LAME tag gives decoders the exact length), no ID3 tag; the same
    samples give the same bytes.
    """
    import av
    import numpy as np

    layout = _LAYOUTS.get(a.shape[0])
    if layout is None:
        raise CodecError(f"{fmt} holds 1 or 2 channels; got {a.shape[0]}")
    buf = io.BytesIO()
    try:
        if fmt == "mp3":
            # CBR (the listening pages'): no Xing/LAME tag either, whose fields (peak, replay
            # gain, CRCs) would differ from clip to clip: every frame header is the same
            muxer = {"id3v2_version": "0"} | ({"write_xing": "0"} if bitrate else {})
            out = av.open(buf, "w", format="mp3", options=muxer)
        else:
            out = av.open(buf, "w", format="ipod")
        with out:
            if fmt == "mp3" and bitrate is not None:
                st: Any = out.add_stream("libmp3lame", rate=sr, layout=layout)
                st.bit_rate = bitrate
                st.codec_context.options = {
                    "compression_level": "7",
                    "cutoff": str(sr // 2),
                    "joint_stereo": "0",  # plain L/R in every frame, mono content or not
                }
            elif fmt == "mp3":
                st = out.add_stream("libmp3lame", rate=sr, layout=layout)
                st.codec_context.options = {
                    "flags": "+qscale",
                    "global_quality": str(2 * 118),  # -V 2 (quality * FF_QP2LAMBDA)
                    "compression_level": "7",  # lame -q 7: no noise shaping search
                    "joint_stereo": "0",  # plain L/R: skips the per-granule mid/side analysis
                    "cutoff": str(sr // 2),  # no low-pass: the band above 16 kHz survives
                }
            else:
                st = out.add_stream("aac", rate=sr, layout=layout)
                st.bit_rate = bitrate
            for i in range(0, max(a.shape[1], 1), _BLOCK):
                frame = av.AudioFrame.from_ndarray(
                    np.ascontiguousarray(a[:, i : i + _BLOCK]), format="fltp", layout=layout
                )
                frame.sample_rate = sr
                for pkt in st.encode(frame):
                    out.mux(pkt)
            for pkt in st.encode(None):
                out.mux(pkt)
    except CodecError:
        raise
    except Exception as exc:  # noqa: BLE001 - FFmpeg refuses a rate or layout with its own types
        raise CodecError(f"cannot be encoded as {fmt} ({type(exc).__name__}: {exc})") from None
    return buf.getvalue()
