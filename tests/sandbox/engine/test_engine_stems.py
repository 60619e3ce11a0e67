"""Stems: a sandbox song's stems are its true parts; karaoke, drumless and beat-swap chains."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.signal import stft

import songlab.sandbox.engine as engine
from songlab.sandbox.engine import recipe
from songlab.spec import STEMS
from tests.sandbox.engine._engine_util import SR, as_foreign, as_input, audio_of


def stems_of(res, model, fmt="wav"):
    """Separated stems (lossless WAV unless asked: the tests measure, and MP3 encoding is slow)."""
    out = engine.render(
        "separate_stems", model, {"format": fmt}, seed=1, inputs={"audio": as_input(res.assets[0])}
    )
    return {a.name: a for a in out.assets}, out


@pytest.fixture(scope="module")
def six(song_v7):
    return stems_of(song_v7, "6-stem")[0]


@pytest.mark.parametrize(("model", "fmt"), [("2stem", "mp3"), ("6-stem", "wav"), ("12stem", "wav")])
def test_stem_names_follow_the_vocabulary(song_v5, model, fmt):
    stems, out = stems_of(song_v5, model, fmt)
    assert tuple(stems) == STEMS[model]
    assert out.metadata["method"] == "recipe"
    assert {a.mime_type for a in stems.values()} == {"audio/mpeg" if fmt == "mp3" else "audio/wav"}


@pytest.mark.parametrize("model", ["2stem", "6-stem"])
def test_stems_sum_back_to_the_mix(song_v7, six, model):
    stems = six if model == "6-stem" else stems_of(song_v7, model)[0]
    mix = audio_of(song_v7.assets[0])
    total = sum(audio_of(a) for a in stems.values())
    err = total - mix
    snr = 10 * np.log10((mix**2).sum() / (err**2).sum())
    assert snr > 20  # equal up to MP3 coding noise


def _spec(x):
    return stft(x.mean(axis=0), fs=SR, nperseg=2048)[2]


def test_karaoke_mix_has_no_vocal(song_v7, six):
    stems = six
    vocal = audio_of(stems["vocals"])
    rest = [a for n, a in stems.items() if n != "vocals"]
    inst = sum(audio_of(a) for a in rest)
    assert np.sqrt((vocal**2).mean()) > 0.01
    tracks = {f"track{i}": as_input(a) for i, a in enumerate(rest)}
    karaoke = engine.render("mix", "v5", {"format": "wav"}, seed=1, inputs=tracks)
    # the vocal band: time-frequency bins where the singer is 10x louder than the band
    v, i = _spec(vocal), _spec(inst)
    band = np.abs(v) > 10 * np.abs(i) + 1e-4
    assert band.sum() > 1000
    full = np.abs(_spec(audio_of(song_v7.assets[0])))[band]
    k = np.abs(_spec(audio_of(karaoke.assets[0])))[band]
    assert 10 * np.log10((k**2).sum() / (full**2).sum()) < -20
    # and the recipe knows: transcribing the karaoke track finds no lyrics
    tr = engine.render(
        "transcribe",
        "whisper-transcribe-v1",
        {},
        seed=1,
        inputs={"audio": as_input(karaoke.assets[0])},
    )
    assert tr.text == ""


def test_drumless_mix_has_no_drums(song_v5):
    stems, _ = stems_of(song_v5, "6-stem")
    tracks = {
        f"track{i}": as_input(a) for i, a in enumerate(a for n, a in stems.items() if n != "drums")
    }
    out = engine.render("mix", "v5", {"format": "wav"}, seed=1, inputs=tracks).assets[0]
    again, _ = stems_of(engine.RenderResult(assets=[out]), "6-stem")
    assert np.abs(audio_of(again["drums"])).max() < 1e-3
    assert np.abs(audio_of(again["vocals"])).max() > 0.05


def test_beat_swap_keeps_the_vocal(song_v5):
    stems, _ = stems_of(song_v5, "2stem")
    beat = engine.render(
        "generate_music",
        "v5",
        {"prompt": "hip hop beat", "duration_seconds": 12, "format": "wav"},
        seed=4,
    )
    out = engine.render(
        "mix",
        "v5",
        {"format": "wav"},
        seed=1,
        inputs={"track0": as_input(stems["vocals"]), "track1": as_input(beat.assets[0])},
    )
    tr = engine.render(
        "transcribe", "whisper-transcribe-v1", {}, seed=1, inputs={"audio": as_input(out.assets[0])}
    )
    assert "Hello my love" in tr.text
    again, _ = stems_of(out, "2stem")
    v = audio_of(again["vocals"])
    assert np.corrcoef(v.mean(axis=0), audio_of(stems["vocals"]).mean(axis=0))[0, 1] > 0.95


def test_foreign_audio_is_split_spectrally_and_sums_back(song_v7):
    out = engine.render(
        "separate_stems",
        "2stem",
        {"format": "wav"},
        seed=1,
        inputs={"audio": as_foreign(song_v7.assets[0])},
    )
    assert out.metadata["method"] == "spectral"
    stems = {a.name: audio_of(a) for a in out.assets}
    mix = audio_of(song_v7.assets[0])
    err = stems["vocals"] + stems["instrumental"] - mix
    assert 10 * np.log10((mix**2).sum() / (err**2).sum()) > 15
    # the vocal stem takes more of the singing than of the drums
    tv = recipe.render(
        recipe.derive(song_v7.assets[0].recipe, stems=["lead_vocals", "backing_vocals"])
    )
    tv = sum(tv.values()).mean(axis=0)
    est = stems["vocals"].mean(axis=0)
    assert np.corrcoef(tv, est)[0, 1] > 0.3
