"""Uploads: format detection, m4a through PyAV, and refusals that name the field."""

from __future__ import annotations

import numpy as np
import pytest

import songlab.sandbox.engine as engine
from songlab.sandbox.engine import audio_io
from tests.sandbox.engine._engine_util import read

TONE = (0.3 * np.sin(2 * np.pi * 440 * np.arange(44100) / 44100)).astype(np.float32)[None, :]


@pytest.mark.parametrize("fmt", ["mp3", "wav", "flac", "ogg", "m4a"])
def test_formats_are_recognised_and_decoded(fmt):
    data = audio_io.encode(np.repeat(TONE, 2, axis=0), fmt)
    info = engine.check_audio(data, field="audio")
    assert info.format == fmt and info.mime_type == audio_io.MIME[fmt]
    assert info.channels == 2 and info.duration_s == pytest.approx(1.0, abs=0.06)
    x, sr = engine.decode(data)
    assert sr == 44100 and x.shape[0] == 2
    spec = np.abs(np.fft.rfft(x[0]))
    assert abs(np.argmax(spec) * sr / len(x[0]) - 440) < 3


def test_midi_is_recognised():
    info = engine.check_audio(read("melody.mid"), field="midi", formats=("mid",))
    assert info.format == "mid" and info.duration_s > 10


@pytest.mark.parametrize("fmt", ["mp3", "wav", "flac", "m4a"])
def test_truncated_files_are_refused(fmt):
    data = audio_io.encode(TONE, fmt)
    with pytest.raises(engine.EngineInputError) as info:
        engine.check_audio(data[: len(data) // 2 + 7], field="song")
    assert info.value.field == "song" and "song" in str(info.value)


@pytest.mark.parametrize(
    "data", [b"", b"hello world, this is not audio", b"\x00" * 4096, b"MThd\x00\x00garbage"]
)
def test_non_audio_is_refused(data):
    with pytest.raises(engine.EngineInputError) as info:
        engine.check_audio(data, field="reference_file_id")
    assert info.value.field == "reference_file_id"


def test_wrong_format_is_refused():
    with pytest.raises(engine.EngineInputError, match="mp3 or m4a"):
        engine.check_audio(audio_io.encode(TONE, "wav"), field="song", formats=("mp3", "m4a"))


def test_excerpt_is_a_short_mp3():
    song = audio_io.encode(np.repeat(TONE, 3, axis=1), "wav")
    ex = engine.excerpt(song, 1.5)
    assert engine.check_audio(ex, field="x").duration_s == pytest.approx(1.5, abs=0.05)


def _song_like(seconds: float, sr: int = 44100) -> np.ndarray:
    """Stereo noise with a tone: broadband, so resampling and coding are exercised."""
    rng = np.random.default_rng(5)
    t = np.arange(int(seconds * sr)) / sr
    x = 0.1 * rng.standard_normal((2, len(t))) + 0.3 * np.sin(2 * np.pi * 330 * t)
    return x.astype(np.float32)


@pytest.mark.parametrize(
    ("fmt", "sr"),
    [
        ("mp3", 44100),
        ("wav", 48000),
        ("flac", 44100),
        ("ogg", 44100),
        ("m4a", 44100),
        ("mp3", 22050),
    ],
)
def test_excerpt_decodes_only_the_head_and_gives_the_same_samples(fmt, sr):
    data = audio_io.encode(_song_like(6.0, sr), fmt, sr=sr)
    full, rate = audio_io.decode(data)
    head, rate2 = audio_io.decode_head(data, 2.0)
    assert rate2 == rate == sr
    assert 2.0 * sr <= head.shape[1] < full.shape[1]
    # the same samples (mpg123 may differ by one float32 ulp with the read size)
    np.testing.assert_allclose(head, full[:, : head.shape[1]], atol=1e-6, rtol=0)
    # resampled with a margin, the head's samples equal the whole file's resampled head
    n = int(1.5 * 44100)
    whole = audio_io.resample(full, sr)[:, :n]
    part = audio_io.resample(audio_io.decode_head(data, 1.55)[0], sr)[:, :n]
    np.testing.assert_allclose(part, whole, atol=1e-6, rtol=0)
    ex = engine.excerpt(data, 1.5)
    assert ex[:3] != b"ID3" and audio_io.sniff(ex) == "mp3"
    y, _ = engine.decode(ex)
    assert y.shape == (2, n)


def test_mp3_keeps_the_whole_band_and_is_deterministic():
    x = _song_like(3.0)
    a, b = audio_io.encode(x, "mp3"), audio_io.encode(x, "mp3")
    assert a == b
    y, sr = audio_io.decode(a)
    assert y.shape == x.shape  # gapless: the LAME tag trims the encoder delay

    def above(z, hz):
        p = np.abs(np.fft.rfft(z.mean(axis=0))) ** 2
        return p[np.fft.rfftfreq(z.shape[1], 1 / sr) >= hz].sum() / p.sum()

    assert above(y, 16000) > 0.8 * above(x, 16000)  # no low-pass (libsndfile's LAME cut at ~17 kHz)
    mono = audio_io.encode(x[:1], "mp3")
    assert audio_io.decode(mono)[0].shape == (1, x.shape[1])


def test_long_ogg_is_written_in_blocks():
    """libvorbis overflows its stack (a segfault) on one write of a minute of stereo."""
    x = np.repeat(_song_like(1.0), 70, axis=1)
    y, _ = audio_io.decode(audio_io.encode(x, "ogg"))
    assert y.shape == x.shape
