"""Voice cloning: timbre extraction from the data/ references, and singing inside their range."""

from __future__ import annotations

import numpy as np
import pytest

import songlab.sandbox.engine as engine
from songlab.sandbox.engine import recipe
from songlab.sandbox.engine.voice import f0_track
from tests.sandbox.engine._engine_util import audio_of, read


@pytest.fixture(scope="module")
def voices():
    return {g: engine.extract_voice(read(f"voice_{g}.mp3")) for g in ("male", "female")}


def test_extracted_ranges_and_gender(voices):
    m, f = voices["male"], voices["female"]
    assert m.gender == "male" and f.gender == "female"
    assert 90 < m.f0_low < m.f0_median < m.f0_high < 160  # the reference glides 95-150 Hz
    assert 180 < f.f0_low < f.f0_median < f.f0_high < 320  # 190-300 Hz
    assert np.mean(f.formants[:3]) > np.mean(m.formants[:3])  # shorter vocal tract
    assert engine.Voice.from_dict(m.to_dict()) == m


def test_extract_voice_refuses_what_is_not_a_voice():
    silence = (
        engine.render("sfx_gen", "v5", {"prompt": "", "duration_seconds": 1}, seed=1).assets[0].data
    )
    with pytest.raises(engine.EngineInputError) as info:
        engine.extract_voice(b"not audio at all, certainly not a voice")
    assert info.value.field == "reference_file_id"
    del silence


def _vocal_f0(res):
    """Pitch track of the lead vocal stem (re-rendered from the recipe, as separate_stems does)."""
    v = recipe.render(recipe.derive(res.assets[0].recipe, stems=["lead_vocals"]))["lead_vocals"]
    _, f0 = f0_track(v)
    return f0[f0 > 0]


@pytest.mark.parametrize("gender", ["male", "female"])
def test_song_with_a_cloned_voice_sings_in_its_range(voices, gender):
    voice = voices[gender]
    res = engine.render(
        "generate_song",
        "v6",
        {
            "prompt": "pop at 130 bpm",
            "duration_seconds": 10,
            "lyrics": "Sing it loud and sing it clear\nAll the night",
            "format": "wav",
        },
        seed=5,
        voice=voice,
    )
    f0 = _vocal_f0(res)
    assert len(f0) > 100
    inside = ((f0 > voice.f0_low / 1.06) & (f0 < voice.f0_high * 1.06)).mean()
    assert inside > 0.9
    assert res.metadata["voice"]["gender"] == gender


def test_singing_with_a_vocal_reference_uses_its_timbre(voices):
    ref = engine.AudioIn(read("voice_male.mp3"), "audio/mpeg")
    res = engine.render(
        "generate_singing",
        "v5",
        {"lyrics": "Over the hills and far away"},
        seed=2,
        inputs={"vocal_reference": ref},
    )
    _, f0 = f0_track(audio_of(res.assets[0]))
    f0 = f0[f0 > 0]
    assert np.median(f0) < 165  # sung by the male reference's voice
    assert engine.extract_voice(res.assets[0].data).gender == "male"
