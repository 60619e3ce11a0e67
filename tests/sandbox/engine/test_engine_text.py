"""Words: transcription returns the sung lyrics; translation keeps syllables; lyrics are deterministic."""

from __future__ import annotations

import songlab.sandbox.engine as engine
from songlab.sandbox.engine.text import line_syllables, lyric_lines, translate
from tests.sandbox.engine._engine_util import as_input


def test_transcription_returns_the_sung_lyrics(song_v7):
    res = engine.render(
        "transcribe",
        "whisper-transcribe-v1",
        {},
        seed=1,
        inputs={"audio": as_input(song_v7.assets[0])},
    )
    assert res.text == "Hello my love the night is young\nOh my heart stay with me"
    segs = res.metadata["segments"]
    assert [s["text"] for s in segs] == res.text.splitlines()
    assert all(0 <= s["start_ms"] < s["end_ms"] <= 12000 for s in segs)
    assert segs[0]["end_ms"] <= segs[1]["start_ms"]
    assert res.metadata["language"] == "en"


def test_translation_keeps_syllable_counts():
    src = "[Verse]\nHello my love the night is young\nOh my heart stay with me"
    out = translate(src, "Spanish", syllable_matched=True)
    assert out.splitlines()[0] == "[Verse]"
    for a, b in zip(lyric_lines(src), lyric_lines(out), strict=True):
        assert len(line_syllables(a)) == len(line_syllables(b, "es"))
        assert a != b
    assert translate(src, "Spanish") == out  # deterministic
    loose = translate(src, "Spanish", syllable_matched=False)
    assert loose != out
    res = engine.render(
        "translate_lyrics", "v5", {"lyrics": src, "target_language": "French"}, seed=1
    )
    assert res.metadata["language"] == "fr" and res.text


def test_write_lyrics_and_web_search_are_plausible_and_deterministic():
    a = engine.render("write_lyrics", "v5", {"prompt": "a sad song about the sea"}, seed=1)
    b = engine.render("write_lyrics", "v5", {"prompt": "a sad song about the sea"}, seed=2)
    assert a.text == b.text and "[Chorus]" in a.text and len(lyric_lines(a.text)) >= 8
    assert a.metadata["theme"] == "sad"
    c = engine.render("write_lyrics", "v5", {"prompt": "happy summer party"}, seed=1)
    assert c.text != a.text
    s = engine.render("web_search", "internal", {"query": "trending music genres"}, seed=1)
    assert len(s.metadata["results"]) == 5 and all(
        r["url"].startswith("https://") for r in s.metadata["results"]
    )
    assert (
        s.text
        == engine.render("web_search", "internal", {"query": "trending music genres"}, seed=9).text
    )


def test_song_translation_chain(song_v7):
    """transcribe -> translate -> separate 2stem -> sing the vocals anew -> mix -> normalize."""
    song = as_input(song_v7.assets[0])
    tr = engine.render("transcribe", "whisper-transcribe-v1", {}, seed=1, inputs={"audio": song})
    es = engine.render(
        "translate_lyrics",
        "v5",
        {"lyrics": tr.text, "target_language": "Spanish", "syllable_matched": True},
        seed=1,
    )
    stems = {
        a.name: a
        for a in engine.render("separate_stems", "2stem", {}, seed=1, inputs={"audio": song}).assets
    }
    sung = engine.render(
        "generate_singing",
        "v5",
        {"lyrics": es.text, "prompt": "pop, female voice"},
        seed=1,
        inputs={"vocal_reference": as_input(stems["vocals"])},
    )
    mixed = engine.render(
        "mix",
        "v5",
        {},
        seed=1,
        inputs={"track0": as_input(stems["instrumental"]), "track1": as_input(sung.assets[0])},
    )
    final = engine.render(
        "audio_effect",
        "v5",
        {"effect": "normalize"},
        seed=1,
        inputs={"audio": as_input(mixed.assets[0])},
    )
    assert (
        final.metadata["loudness_lufs"] is not None
        and abs(final.metadata["loudness_lufs"] + 14) < 1
    )
    back = engine.render(
        "transcribe",
        "whisper-transcribe-v1",
        {},
        seed=1,
        inputs={"audio": as_input(final.assets[0])},
    )
    assert back.text == es.text
    assert back.metadata["language"] == "es"
    # same singer (range and gender), same timing as the original vocal line
    orig = tr.metadata["segments"]
    new = back.metadata["segments"]
    assert [s["start_ms"] for s in new] == [s["start_ms"] for s in orig]
    assert sung.metadata["voice"] == song_v7.metadata["voice"]
