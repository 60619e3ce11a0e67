"""MIDI and hummed melodies: their notes are what the rendered song plays."""

from __future__ import annotations

import numpy as np

import songlab.sandbox.engine as engine
from songlab.sandbox.engine import midi, recipe
from songlab.sandbox.engine.theory import hz_to_midi
from songlab.sandbox.engine.voice import f0_track
from tests.sandbox.engine._engine_util import SR, audio_of, read


def test_midi_notes_appear_in_the_pitch_track():
    data = read("melody.mid")
    notes, _ = midi.parse(data)
    res = engine.render(
        "midi_to_song",
        "v7",
        {"prompt": "no drums", "duration_seconds": 12},
        seed=1,
        inputs={"midi": engine.AudioIn(data, "audio/midi")},
    )
    assert res.metadata["tempo_bpm"] == 120
    piano = recipe.render(recipe.derive(res.assets[0].recipe, stems=["piano"]))["piano"]
    times, f0 = f0_track(piano)
    melody = [n for n in notes if n[4] == 0]
    hits = 0
    for onset, dur, pitch, *_ in melody:
        sel = (times > onset + 0.1) & (times < onset + min(dur, 0.45)) & (f0 > 0)
        if sel.any() and abs(np.median(hz_to_midi(f0[sel])) - pitch) < 0.5:
            hits += 1
    assert hits >= 0.8 * len(melody)
    # the mix carries them too (decoded from the MP3)
    assert audio_of(res.assets[0]).shape[1] / SR == 12


def test_hummed_melody_becomes_the_sung_line():
    hum = engine.AudioIn(read("hum.mp3"), "audio/mpeg")
    res = engine.render(
        "melody_to_song",
        "v6",
        {"prompt": "pop", "lyrics": "la la la la la la la la"},
        seed=2,
        inputs={"melody": hum},
    )
    assert res.metadata["melody_notes"] == 8
    lead = recipe.render(recipe.derive(res.assets[0].recipe, stems=["lead_vocals"]))["lead_vocals"]
    times, f0 = f0_track(lead)
    sung = np.round(hz_to_midi(f0[f0 > 0]))
    pcs = {int(p) % 12 for p in sung}
    assert {57 % 12, 60 % 12, 62 % 12, 64 % 12} <= pcs  # A C D E of the hum
    assert res.metadata["key"] in ("A minor", "C major", "D minor", "G major")
