"""Decode/encode round trips for every format, sniffing, and input errors."""

from __future__ import annotations

import numpy as np
import pytest

from songlab.audio import FORMATS, AudioError, as_audio, decode, encode, integrated_loudness, sniff

SR = 44100


def _tone(seconds: float = 1.0, channels: int = 2, amp: float = 0.3) -> np.ndarray:
    t = np.arange(int(SR * seconds)) / SR
    return np.stack(
        [amp * np.sin(2 * np.pi * (440 + 110 * c) * t) for c in range(channels)]
    ).astype(np.float32)


@pytest.mark.parametrize("fmt", FORMATS, ids=FORMATS)
def test_round_trip_keeps_shape_rate_and_level(fmt: str) -> None:
    x = _tone()
    data = encode(x, sr=SR, format=fmt)
    assert sniff(data) == fmt
    y, sr = decode(data)
    assert sr == SR and y.dtype == np.float32 and y.shape[0] == 2
    assert y.shape[1] >= x.shape[1]  # lossy codecs may pad (AAC priming)
    loud_in, loud_out = integrated_loudness(x, sr=SR), integrated_loudness(y, sr=sr)
    assert abs(loud_in - loud_out) < 0.5


@pytest.mark.parametrize("fmt", ["wav", "flac"], ids=["wav", "flac"])
def test_lossless_formats_are_exact_to_16_bits(fmt: str) -> None:
    x = _tone(0.5)
    y, _ = decode(encode(x, sr=SR, format=fmt))
    assert y.shape == x.shape
    np.testing.assert_allclose(y, x, atol=1.0 / 32768 + 1e-7)


def test_mono_is_one_row_and_nothing_is_rescaled() -> None:
    x = _tone(0.5, channels=1, amp=0.05)[0]
    y, _ = decode(encode(x, sr=SR, format="wav"))
    assert y.shape == (1, x.size)
    assert abs(float(np.max(np.abs(y))) - 0.05) < 1e-3


def test_decode_refuses_garbage_naming_data() -> None:
    with pytest.raises(AudioError, match="^data: "):
        decode(b"not audio at all" * 20)
    with pytest.raises(AudioError, match="^data: is empty"):
        decode(b"")
    with pytest.raises(AudioError, match="^data: must be bytes"):
        decode("file.wav")  # type: ignore[arg-type]


def test_truncated_wav_is_refused() -> None:
    data = encode(_tone(0.5), sr=SR, format="wav")
    with pytest.raises(AudioError, match="^data: "):
        decode(data[:30])


@pytest.mark.parametrize(
    ("kwargs", "argument"),
    [
        ({"audio": np.zeros((44100, 2)), "sr": SR}, "audio"),  # transposed
        ({"audio": np.zeros((2, 2, 10)), "sr": SR}, "audio"),
        ({"audio": np.array([0.0, np.nan]), "sr": SR}, "audio"),
        ({"audio": np.zeros(10), "sr": 12}, "sr"),
        ({"audio": np.zeros(10), "sr": SR, "format": "aiff"}, "format"),
        ({"audio": np.zeros(100), "sr": 40000, "format": "mp3"}, "sr"),
        ({"audio": np.zeros((3, 100)), "sr": SR, "format": "m4a"}, "audio"),
    ],
    ids=["transposed", "3d", "nan", "bad-sr", "bad-format", "mp3-rate", "m4a-channels"],
)
def test_encode_checks_arguments(kwargs: dict, argument: str) -> None:
    audio = kwargs.pop("audio")
    with pytest.raises(AudioError) as info:
        encode(audio, **kwargs)
    assert info.value.argument == argument


def test_transposed_hint_in_message() -> None:
    with pytest.raises(AudioError, match="transpose"):
        encode(np.zeros((44100, 2)), sr=SR)


def test_as_audio_accepts_bytes_pairs_and_arrays() -> None:
    x = _tone(0.5)
    for source, kw in [(encode(x, sr=SR), {}), ((x, SR), {}), (x, {"sr": SR})]:
        y, sr = as_audio(source, **kw)
        assert sr == SR and y.shape == x.shape
    with pytest.raises(AudioError, match="^sr: is required"):
        as_audio(x)
    with pytest.raises(AudioError, match="^source: must be"):
        as_audio(3.0)


@pytest.mark.parametrize(
    ("head", "kind"),
    [
        (b"RIFF\0\0\0\0WAVEfmt ", "wav"),
        (b"fLaC" + b"\0" * 8, "flac"),
        (b"OggS" + b"\0" * 8, "ogg"),
        (b"\0\0\0\x1cftypM4A ", "m4a"),
        (b"ID3\x04" + b"\0" * 8, "mp3"),
        (b"\xff\xfb\x90d" + b"\0" * 8, "mp3"),
        (b"hello world!", None),
    ],
    ids=["wav", "flac", "ogg", "m4a", "mp3-id3", "mp3-frame", "unknown"],
)
def test_sniff(head: bytes, kind: str | None) -> None:
    assert sniff(head) == kind
