"""songlab.codec, the one sniffer and codec: every kind sniffed, every format decoded and
encoded, the Ogg block writer on a long signal, and the errors."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from songlab import codec

SR = 44100
T = np.arange(SR) / SR
TONE = np.stack([0.3 * np.sin(2 * np.pi * 440 * T), 0.2 * np.sin(2 * np.pi * 660 * T)])
TONE = TONE.astype(np.float32)
# children import this songlab (the one under test), not another on the path
ENV = {**os.environ, "PYTHONPATH": str(Path(codec.__file__).resolve().parents[1])}


@pytest.mark.parametrize(
    ("head", "kind"),
    [
        (b"MThd\0\0\0\x06\0\x01\0\x01", "mid"),
        (b"RIFF\0\0\0\0WAVEfmt ", "wav"),
        (b"RIFF\0\0\0\0AVI LIST", None),  # RIFF, but not WAVE
        (b"fLaC" + b"\0" * 8, "flac"),
        (b"OggS" + b"\0" * 8, "ogg"),
        (b"\0\0\0\x1cftypM4A ", "m4a"),
        (b"\0\0\0\x20ftypisom", "m4a"),
        (b"ID3\x04" + b"\0" * 8, "mp3"),
        (b"\xff\xfb\x90d" + b"\0" * 8, "mp3"),  # MPEG-1 layer III frame sync
        (b"\xff\xe3\x18\xc4" + b"\0" * 8, "mp3"),  # MPEG-2.5 frame sync (11 bits)
        (b"\xff\xd8\xff\xe0" + b"\0" * 8, None),  # JPEG: 0xFF then 0xD8 is no frame sync
        (b"\xff", None),
        (b"", None),
        (b"hello world!", None),
    ],
)
def test_sniff_names_every_kind(head: bytes, kind: str | None) -> None:
    assert codec.sniff(head) == kind
    assert codec.sniff(memoryview(head)) == kind
    assert codec.sniff(bytearray(head) + bytes(20)) == kind  # only the head counts


def test_container_signatures_win_over_the_weak_mp3_frame_sync() -> None:
    # a frame sync at byte 0 and "ftyp" at 4: the copies disagreed (the client and the
    # widgets said mp3, the engine and audio/ m4a); the foundation checks containers first
    assert codec.sniff(b"\xff\xfb\x90\x00ftypM4A ") == "m4a"


@pytest.mark.parametrize("fmt", codec.FORMATS)
def test_each_format_encodes_sniffs_and_decodes(fmt: str) -> None:
    data = codec.encode(TONE, fmt, sr=SR)
    assert codec.sniff(data) == fmt
    audio, sr = codec.decode(data)
    assert sr == SR and audio.dtype == np.float32 and audio.shape[0] == 2
    assert audio.flags["C_CONTIGUOUS"]
    if fmt in ("wav", "flac"):  # 16-bit PCM: exact to a quantisation step
        np.testing.assert_allclose(audio, TONE, atol=1 / 32768)
    elif fmt == "m4a":  # AAC adds priming: about the length, and the same loudness
        assert abs(audio.shape[1] - SR) < 3000
        assert abs(np.sqrt(np.mean(audio**2)) - np.sqrt(np.mean(TONE**2))) < 0.02
    else:  # gapless (LAME tag) or exact-length (Vorbis) lossy
        assert audio.shape == TONE.shape
        assert np.corrcoef(audio[0], TONE[0])[0, 1] > 0.99


@pytest.mark.parametrize("fmt", codec.FORMATS)
def test_decode_head_is_the_start_of_decode(fmt: str) -> None:
    data = codec.encode(np.tile(TONE, 3), fmt, sr=SR)
    whole, sr = codec.decode(data)
    head, sr2 = codec.decode_head(data, 1.0)
    assert sr == sr2 == SR and SR <= head.shape[1] <= whole.shape[1]
    np.testing.assert_array_equal(head, whole[:, : head.shape[1]])


def test_ogg_block_writer_round_trips_a_long_signal() -> None:
    # 100 s of stereo in one write crashes libvorbis (a segfault): the writer goes in blocks.
    # Run in a child process so a crash fails this test instead of killing the run.
    code = (
        "import numpy as np; from songlab import codec\n"
        "t = np.arange(100 * 44100) / 44100\n"
        "x = np.stack([0.3 * np.sin(2 * np.pi * 330 * t), 0.3 * np.sin(2 * np.pi * 550 * t)])\n"
        "y, sr = codec.decode(codec.encode(x.astype(np.float32), 'ogg', sr=44100))\n"
        "assert sr == 44100 and y.shape == x.shape, y.shape\n"
        "assert np.corrcoef(x[1], y[1])[0, 1] > 0.99\n"
        "print('ok')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env=ENV,
    )
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]


def test_mp3_vbr_is_deterministic_and_cbr_keeps_its_bitrate() -> None:
    vbr = codec.encode(TONE, "mp3", sr=SR)
    assert vbr == codec.encode(TONE, "mp3", sr=SR) and vbr[:3] != b"ID3"
    cbr = codec.encode(TONE, "mp3", sr=SR, bitrate=192000)
    assert cbr != vbr
    assert abs(len(cbr) * 8 / 1.0 - 192000) < 192000 * 0.15  # one second at 192 kbit/s
    # CBR is the listening pages' encoder: no Xing/LAME tag (every frame header alike, so the
    # format tells nothing of the clip), hence no gapless info: it decodes to whole frames,
    # the encoder's delay and padding included (less than two 1,152-sample frames more)
    channels, n = codec.decode(cbr)[0].shape
    assert channels == TONE.shape[0] and 0 <= n - TONE.shape[1] < 2 * 1152 and n % 1152 == 0


def test_m4a_bitrate_is_honoured() -> None:
    small = codec.encode(np.tile(TONE, 4), "m4a", sr=SR, bitrate=32000)
    large = codec.encode(np.tile(TONE, 4), "m4a", sr=SR, bitrate=256000)
    assert len(small) < len(large) / 3


@pytest.mark.parametrize(
    ("args", "kwargs", "message"),
    [
        ((TONE, "aiff"), {"sr": SR}, "cannot be encoded as 'aiff'"),
        ((TONE, "mp3"), {"sr": 96000}, "cannot be mp3 at 96000 Hz"),
        ((np.zeros((3, 100), np.float32), "m4a"), {"sr": SR}, "m4a holds 1 or 2 channels"),
        ((np.zeros((3, 100), np.float32), "mp3"), {"sr": SR}, "mp3 holds 1 or 2 channels"),
        ((TONE[0], "wav"), {"sr": SR}, r"must be \(channels, samples\)"),
    ],
)
def test_encode_refuses_what_a_format_cannot_hold(args: tuple, kwargs: dict, message: str) -> None:
    with pytest.raises(codec.CodecError, match=message):
        codec.encode(*args, **kwargs)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"MThd\0\0\0\x06\0\x01\0\x01\0\x60", "^is a MIDI file, which holds no audio$"),
        (b"RIFF\0\0\0\0WAVEjunkjunkjunk", r"^is not decodable wav audio \(\w+\)$"),
        (b"\0\0\0\x1cftypM4A " + bytes(64), r"^is not decodable m4a audio \(\w+\)$"),
        (b"hello world, this is not audio at all" * 4, r"^is not decodable audio \(\w+\)$"),
    ],
)
def test_decode_refuses_what_is_not_audio(data: bytes, message: str) -> None:
    with pytest.raises(codec.CodecError, match=message):
        codec.decode(data)
    with pytest.raises(codec.CodecError, match=message):
        codec.decode_head(data, 1.0)


def test_importing_the_foundation_imports_no_third_party_library() -> None:
    code = (
        "import sys; import songlab.codec; "
        "print(sorted(m for m in ('numpy', 'soundfile', 'av') if m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        env=ENV,
    )
    assert done.stdout.strip() == "[]"


def test_what_soundfile_gives_up_on_pyav_decodes_as_the_probe_accepts_it() -> None:
    # CBR frames without a length header, then zero padding: mpg123 gives up resyncing
    # after 1 KiB of junk, FFmpeg skips the bad packets; the engine's probe accepts such an
    # upload, so decoding must not refuse it
    import io

    import av

    buf = io.BytesIO()
    with av.open(buf, "w", format="mp3", options={"id3v2_version": "0", "write_xing": "0"}) as out:
        st = out.add_stream("libmp3lame", rate=SR, layout="stereo")
        st.bit_rate = 320_000
        frame = av.AudioFrame.from_ndarray(
            np.ascontiguousarray(TONE), format="fltp", layout="stereo"
        )
        frame.sample_rate = SR
        for pkt in [*st.encode(frame), *st.encode(None)]:
            out.mux(pkt)
    padded = buf.getvalue() + bytes(100_000)
    assert codec.sniff(padded) == "mp3"
    audio, sr = codec.decode(padded)
    assert sr == SR and audio.shape[0] == 2 and abs(audio.shape[1] - SR) < 2 * 1152
    head, _ = codec.decode_head(padded, 0.5)  # mpg123 reads the head: equal to ~1e-6
    np.testing.assert_allclose(head, audio[:, : head.shape[1]], atol=1e-5)
