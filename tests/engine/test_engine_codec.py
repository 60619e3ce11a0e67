"""Uploads: format detection, m4a through PyAV, and refusals that name the field."""

from __future__ import annotations

import numpy as np
import pytest

import songlab.sandbox.engine as E
from songlab.sandbox.engine import codec
from tests.engine._engine_util import read

TONE = (0.3 * np.sin(2 * np.pi * 440 * np.arange(44100) / 44100)).astype(np.float32)[None, :]


@pytest.mark.parametrize("fmt", ["mp3", "wav", "flac", "ogg", "m4a"])
def test_formats_are_recognised_and_decoded(fmt):
    data = codec.encode(np.repeat(TONE, 2, axis=0), fmt)
    info = E.check_audio(data, field="audio")
    assert info.format == fmt and info.mime_type == codec.MIME[fmt]
    assert info.channels == 2 and info.duration_s == pytest.approx(1.0, abs=0.06)
    x, sr = E.decode(data)
    assert sr == 44100 and x.shape[0] == 2
    spec = np.abs(np.fft.rfft(x[0]))
    assert abs(np.argmax(spec) * sr / len(x[0]) - 440) < 3


def test_midi_is_recognised():
    info = E.check_audio(read("melody.mid"), field="midi", formats=("mid",))
    assert info.format == "mid" and info.duration_s > 10


@pytest.mark.parametrize("fmt", ["mp3", "wav", "flac", "m4a"])
def test_truncated_files_are_refused(fmt):
    data = codec.encode(TONE, fmt)
    with pytest.raises(E.EngineInputError) as info:
        E.check_audio(data[: len(data) // 2 + 7], field="song")
    assert info.value.field == "song" and "song" in str(info.value)


@pytest.mark.parametrize("data", [b"", b"hello world, this is not audio", b"\x00" * 4096, b"MThd\x00\x00garbage"])
def test_non_audio_is_refused(data):
    with pytest.raises(E.EngineInputError) as info:
        E.check_audio(data, field="reference_file_id")
    assert info.value.field == "reference_file_id"


def test_wrong_format_is_refused():
    with pytest.raises(E.EngineInputError, match="mp3 or m4a"):
        E.check_audio(codec.encode(TONE, "wav"), field="song", formats=("mp3", "m4a"))


def test_excerpt_is_a_short_mp3():
    song = codec.encode(np.repeat(TONE, 3, axis=1), "wav")
    ex = E.excerpt(song, 1.5)
    assert E.check_audio(ex, field="x").duration_s == pytest.approx(1.5, abs=0.05)
