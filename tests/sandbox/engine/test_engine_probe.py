"""The audio probe follows the decoders: what they play is accepted, what they cut short is not.

Real-world MP3s carry zero padding (a 15 MiB reference padded to a block size),
APEv2, ID3v1 and Lyrics3 tags after the last frame, and free-format frames
(bitrate index 0); libsndfile's mpg123 and ffmpeg play them all. A file whose
Xing/Info header announces more samples than the decoder can read is truncated.
"""

from __future__ import annotations

import io

import av
import numpy as np
import pytest

import songlab.sandbox.engine as engine
from songlab.sandbox.engine import audio_io

SR = 44100
_T = np.arange(SR * 3) / SR
TONE = np.stack([0.3 * np.sin(2 * np.pi * 440 * _T), 0.3 * np.sin(2 * np.pi * 660 * _T)]).astype(
    np.float32
)
BITRATES = (0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320)
APE = b"APETAGEX" + (2000).to_bytes(4, "little") + (32).to_bytes(4, "little") + bytes(20)
LYRICS3 = b"LYRICSBEGIN" + b"IND0000210" + b"LYR00005hello" + b"000026" + b"LYRICS200"
ID3V1 = b"TAG" + b"title".ljust(30, b"\0") + bytes(94)


def cbr(kbps: int, *, xing: bool) -> bytes:
    """A constant-bitrate MP3 from ffmpeg's LAME, with or without its Info header."""
    buf = io.BytesIO()
    with av.open(
        buf, "w", format="mp3", options={"id3v2_version": "0", "write_xing": "1" if xing else "0"}
    ) as out:
        st = out.add_stream("libmp3lame", rate=SR, layout="stereo")
        st.bit_rate = kbps * 1000
        frame = av.AudioFrame.from_ndarray(
            np.ascontiguousarray(TONE), format="fltp", layout="stereo"
        )
        frame.sample_rate = SR
        for pkt in [*st.encode(frame), *st.encode(None)]:
            out.mux(pkt)
    return buf.getvalue()


def free_format(data: bytes) -> bytes:
    """The same MPEG-1 Layer III frames with bitrate index 0 ("free format"): a decoder
    must find each frame's length from the distance to the next sync word."""
    out, pos, frames = bytearray(data), 0, 0
    while pos + 4 <= len(out) and out[pos] == 0xFF and out[pos + 1] & 0xE0 == 0xE0:
        b2 = out[pos + 2]
        length = 144000 * BITRATES[b2 >> 4] // SR + ((b2 >> 1) & 1)
        out[pos + 2] = b2 & 0x0F
        pos, frames = pos + length, frames + 1
    assert pos == len(out) and frames > 50  # every frame rewritten
    assert all(out[p + 2] >> 4 == 0 for p in (0, 144000 * 320 // SR))
    return bytes(out)


VBR = audio_io.encode(TONE, "mp3")  # the engine's own encoder: VBR with a Xing/LAME header
CBR_INFO = cbr(128, xing=True)
CBR_BARE = cbr(320, xing=False)
FREE = free_format(CBR_BARE)

ACCEPTED = {
    "vbr": VBR,
    "vbr+1MiB-zeros": VBR + bytes(1 << 20),
    "vbr+apev2": VBR + APE,
    "vbr+lyrics3+id3v1": VBR + LYRICS3 + ID3V1,
    "cbr-info+zeros": CBR_INFO + bytes(100_000),
    "cbr-no-header+zeros": CBR_BARE + bytes(100_000),
    "free-format": FREE,
    "free-format+lyrics3+id3v1": FREE + LYRICS3 + ID3V1,
}


@pytest.mark.parametrize("name", ACCEPTED)
def test_what_decoders_play_is_accepted_with_its_true_length(name):
    info = engine.check_audio(ACCEPTED[name], field="reference_file_id", formats=("mp3", "m4a"))
    assert info.format == "mp3" and info.mime_type == "audio/mpeg" and info.channels == 2
    # padding and tags add no time: the length is the stream's (LAME's priming aside)
    assert info.duration_s == pytest.approx(3.0, abs=0.06), name


@pytest.mark.parametrize("source", [VBR, CBR_INFO], ids=["vbr-xing", "cbr-info"])
@pytest.mark.parametrize("cut", [417, 5000])
def test_a_stream_cut_short_of_its_announced_length_is_refused(source, cut):
    with pytest.raises(engine.EngineInputError, match="truncated") as info:
        engine.check_audio(source[:-cut], field="reference_file_id")
    assert info.value.field == "reference_file_id"


def test_padding_after_a_truncated_stream_does_not_hide_the_cut():
    with pytest.raises(engine.EngineInputError, match="truncated"):
        engine.check_audio(VBR[: len(VBR) // 2] + bytes(1 << 16), field="song")


@pytest.mark.parametrize(
    "data",
    [b"\xff\xfb" + bytes(5000), b"ID3" + bytes(4000)],
    ids=["sync-then-zeros", "id3-then-nothing"],
)
def test_what_no_decoder_can_read_is_refused(data):
    with pytest.raises(engine.EngineInputError):
        engine.check_audio(data, field="audio")


def test_the_probe_decodes_in_blocks_and_keeps_nothing():
    """A long file is counted, not held: the probe's answer matches a full decode."""
    info = engine.check_audio(VBR, field="song")
    x, sr = engine.decode(VBR)
    assert info.duration_s == pytest.approx(x.shape[1] / sr, abs=1e-4)
