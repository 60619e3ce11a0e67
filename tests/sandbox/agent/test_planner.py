"""The planner: what each prompt asks for, per tier, and that it is deterministic."""

from __future__ import annotations

import pytest

from songlab.sandbox.agent.intents import read_prompt
from songlab.sandbox.agent.plan import Ref, Text
from songlab.sandbox.agent.planner import build_plan

MULTI = (
    "Write lyrics about a rainy night in Lisbon, then make a jazz song with them, "
    "split it into stems and check it for copyright."
)


def ops(plan) -> list[list[str]]:
    return [[c.operation for c in t.calls] for t in plan.turns]


def test_standard_multi_step_plan_in_dependency_turns() -> None:
    plan = build_plan(MULTI, "standard")
    assert ops(plan) == [["write_lyrics"], ["generate_song"], ["separate_stems", "copyright"]]
    song = plan.turns[1].calls[0]
    assert song.payload["lyrics"] == Ref("lyrics", "text")
    assert song.payload["duration_seconds"] == 8.0  # short by default
    assert song.payload["prompt"] == "jazz"
    assert plan.turns[2].calls[0].payload == {"audio": Ref("song", "file")}
    lyrics_prompt = plan.turns[0].calls[0].payload["prompt"]
    assert isinstance(lyrics_prompt, Text) and "a rainy night in Lisbon" in lyrics_prompt.parts[0]
    assert plan.dropped == ()
    assert all(t.kind == "work" for t in plan.turns)


def test_pro_adds_a_verification_turn() -> None:
    plan = build_plan(MULTI, "pro")
    assert ops(plan)[:3] == ops(build_plan(MULTI, "standard"))
    last = plan.turns[-1]
    assert last.kind == "verification"
    # the copyright check is already planned: pro verifies the lyrics by transcription
    assert [c.operation for c in last.calls] == ["transcribe"]
    assert last.calls[0].verify_against == Ref("lyrics", "text")


def test_pro_verifies_copyright_of_the_final_audio() -> None:
    plan = build_plan("make a 6 second pop song, extend it and add reverb", "pro")
    assert ops(plan) == [["generate_song"], ["extend_song"], ["audio_effect"], ["copyright"]]
    assert plan.turns[-1].calls[0].payload == {"audio": Ref("effect", "file")}


def test_flash_does_one_step_the_generation() -> None:
    plan = build_plan(MULTI, "flash")
    assert ops(plan) == [["generate_song"]]
    assert "lyrics" not in plan.turns[0].calls[0].payload  # it does not wait for lyrics
    assert len(plan.dropped) == 3


def test_flash_lookup() -> None:
    plan = build_plan("search what's trending in k-pop", "flash")
    assert ops(plan) == [["web_search"]]
    assert plan.turns[0].calls[0].payload == {"query": "trending k-pop music"}


@pytest.mark.parametrize("tier", ["flash", "standard", "pro"])
def test_same_prompt_same_plan(tier: str) -> None:
    assert build_plan(MULTI, tier) == build_plan(MULTI, tier)
    assert build_plan(" ".join(MULTI.split(" ")), tier) == build_plan(
        MULTI.replace(" ", "  "), tier
    )


@pytest.mark.parametrize(
    ("prompt", "expected"),
    [
        ("make a lofi beat", [["generate_music"]]),
        ("an instrumental track, 12 seconds, v7", [["generate_music"]]),
        ("write lyrics about the sea", [["write_lyrics"]]),
        ("a cappella singing about trains", [["write_lyrics"], ["generate_singing"]]),
        ("transcribe file_id:f_1 in French", [["transcribe"]]),
        (
            "transcribe file_id:f_1 and translate it to Spanish",
            [["transcribe"], ["translate_lyrics"]],
        ),
        (
            "translate the lyrics of file_id:f_1 into Italian",
            [["transcribe"], ["translate_lyrics"]],
        ),
        ("split the song file_id:abc into 6 stems", [["separate_stems"]]),
        ("separate the stems of a rock song", [["generate_song"], ["separate_stems"]]),
        ("a 2 second sound effect of thunder", [["sfx_gen"]]),
        (
            "a pop song with a sound effect of rain mixed under it",
            [["generate_song", "sfx_gen"], ["mix"]],
        ),
        (
            "make a song, split it into stems and mix them back",
            [["generate_song"], ["separate_stems"], ["mix"]],
        ),
        (
            "search trending reggae and write lyrics about it then make a song",
            [["web_search"], ["write_lyrics"], ["generate_song"]],
        ),
        (
            "write lyrics about home, translate them into German and make a folk song",
            [["write_lyrics"], ["translate_lyrics"], ["generate_song"]],
        ),
        ("remix file_id:x as disco", [["remix_song"]]),
        ("make some music and extend it", [["generate_music"], ["extend_music"]]),
        ("hello, how are you?", []),
    ],
    ids=[
        "music",
        "instrumental",
        "lyrics",
        "singing",
        "transcribe",
        "transcribe-translate",
        "translate-file",
        "file-stems",
        "implied-song",
        "sfx",
        "sfx-mix",
        "stems-mix",
        "search-chain",
        "translate-chain",
        "remix",
        "extend-music",
        "nothing",
    ],
)
def test_standard_plans(prompt: str, expected: list[list[str]]) -> None:
    assert ops(build_plan(prompt, "standard")) == expected


def test_song_uses_translated_lyrics_when_asked_first() -> None:
    plan = build_plan(
        "write lyrics about home, translate them into German and make a folk song", "standard"
    )
    assert plan.turns[2].calls[0].payload["lyrics"] == Ref("translate", "text")
    plan = build_plan(
        "write lyrics about home, make a folk song and translate the lyrics to German", "standard"
    )
    song = next(c for c in plan.calls if c.key == "song")
    assert song.payload["lyrics"] == Ref("lyrics", "text")


def test_parameters_from_the_prompt() -> None:
    it = read_prompt(
        "A 12 second sad v7 jazz song with a 4 second sound effect of rain, reverb 30%, 12 stems"
    )
    assert (it.song_seconds, it.sfx_seconds, it.version) == (12.0, 4.0, "v7")
    assert (it.mood, it.genre, it.style) == ("sad", "jazz", "sad jazz")
    assert (it.effect, it.effect_amount, it.stems_model) == ("reverb", 0.3, "12stem")
    assert it.sfx_prompt == "rain"


def test_durations_are_clamped_to_the_tool_ranges() -> None:
    it = read_prompt("a 2 second song and a 90 second sound effect of wind")
    assert it.song_seconds == 5.0
    assert it.sfx_seconds == 30.0


def test_file_ids_name_the_source_not_a_new_song() -> None:
    it = read_prompt("check the song file_id:abc-1 for copyright")
    assert it.sources == ("abc-1",) and it.generate is None
    assert read_prompt("make a new song like file_id:abc-1").generate == "song"


def test_seed_is_stable_and_prompt_specific() -> None:
    assert read_prompt("a song").seed == read_prompt("a  song").seed
    assert read_prompt("a song").seed != read_prompt("a tune").seed


def test_unknown_tier_refused() -> None:
    with pytest.raises(ValueError, match="tier"):
        build_plan("a song", "ultra")


def test_sfx_subject_stops_at_the_mixing_words() -> None:
    assert read_prompt("a pop song with a sound effect of rain mixed under it").sfx_prompt == "rain"
    assert read_prompt("sfx of distant thunder and a song").sfx_prompt == "distant thunder"
