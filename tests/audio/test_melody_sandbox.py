"""Melody adherence on what the sandbox makes: melody_to_song from a hum and midi_to_song
from a MIDI file, measured through the study as a user runs it (the asked melody fetched
from the request's file_id), against the same songs judged by a melody they were not
given (the same line a fourth up; pYIN on a wrong hum is tested on synthetic clips in
test_adherence.py)."""

from __future__ import annotations

import io
from dataclasses import replace

import mido
import pytest
import soundfile as sf

import songlab.audio.study as study
from songlab.client import Client
from tests.audio._signals import SR, melody

# a C major scale up and back down, a note every half second from 0.5 s
LINE = [(0.5 + 0.5 * i, 0.45, m) for i, m in enumerate((60, 62, 64, 65, 67, 69, 71, 72, 71, 69))]
FOURTH_UP = [(o, d, m + 5) for o, d, m in LINE]


def _midi(notes) -> bytes:
    mid = mido.MidiFile(ticks_per_beat=480)
    track = mido.MidiTrack()
    mid.tracks.append(track)
    track.append(mido.MetaMessage("set_tempo", tempo=mido.bpm2tempo(120)))
    now = 0
    for onset, dur, pitch in notes:
        start, stop = round(onset * 960), round((onset + dur) * 960)
        track.append(mido.Message("note_on", note=pitch, velocity=90, time=start - now))
        track.append(mido.Message("note_off", note=pitch, velocity=0, time=stop - start))
        now = stop
    buf = io.BytesIO()
    mid.save(file=buf)
    return buf.getvalue()


def _hum(notes) -> bytes:
    buf = io.BytesIO()
    sf.write(buf, melody(notes, 6.5).T, SR, format="WAV")
    return buf.getvalue()


@pytest.mark.slow  # two songs, their contours and pYIN on the hum: ~12 s
def test_sandbox_songs_follow_the_asked_melody_and_a_wrong_one_scores_lower(
    sandbox, new_account, tmp_path
):
    acct = new_account()
    with Client(base_url=sandbox.base_url, api_key=acct.api_key, quiet=True) as client:
        midi_id = client.files.upload(_midi(LINE), filename="line.mid").file_id
        hum_id = client.files.upload(_hum(LINE), filename="line.wav").file_id
        requests = [
            {
                "operation": op,
                "model": "v7",
                "payload": {field: f"file_id:{fid}", "prompt": "pop", "duration_seconds": 7},
            }
            for op, field, fid in (
                ("midi_to_song", "midi", midi_id),
                ("melody_to_song", "melody", hum_id),
            )
        ]
        made = client.batch(requests, budget_usd="1.00")
        assert [r.status for r in made] == ["completed", "completed"]
        from_midi, from_hum = study.clips_from_batch(made, requests, client)
        # the same song (same blob: measured once) judged against a line it was not given
        wrong = replace(from_midi, reference=_midi(FOURTH_UP), label="midi, a fourth up")
        cache = study.AnalysisCache(tmp_path / "melody.sqlite")
        got = study.analyse(
            [from_midi, from_hum, wrong], client=client, cache=cache, workers=1, progress=False
        ).set_index("clip")

    right = got.loc[[from_midi.label, from_hum.label], "melody_score"]
    assert (right >= 0.8).all(), right  # raw chroma accuracy: the asked line is heard
    bad = got.loc["midi, a fourth up", "melody_score"]
    assert bad <= 0.5 and got.loc[from_midi.label, "melody_score"] - bad >= 0.4
    # only the melody was asked: no key or tempo in "pop", so neither is scored
    assert got["key_score"].isna().all() and got["tempo_score"].isna().all()
    assert got.attrs["provenance"]["melody"]["version"] == 2
