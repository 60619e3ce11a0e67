"""The planner's sentences read as a person writes them (the way an LLM agent narrates a plan)."""

from __future__ import annotations

import re

import pytest

from songlab.sandbox.agent.planner import build_plan
from songlab.sandbox.agent.prose import a_or_an, listing, narrate, turn_sentence

DOC_EXAMPLES = [  # docs/agent-one.md, and the prompts the issue quotes
    "Write lyrics about a rainy night in Lisbon, then make a jazz song with them, split it "
    "into stems and check it for copyright.",
    "Search what's trending in k-pop and write lyrics about it, then make a song",
    "transcribe file_id:F and translate it to Spanish",
    "a 6 second pop song with a sound effect of rain mixed under it",
    "make a lofi beat and extend it",
    "write lyrics and make a short song",
    "write lyrics about a rainy city, then make a 20 second song in v5 with them",
    "a cappella singing about trains",
    "remix file_id:abc as jazz and add echo",
    "make an upbeat 8 second song, add reverb 30% and split it into 6 stems",
    "make a sad 11 second song about the sea, extend it with an intro, then split it into "
    "12 stems and mix the stems",
    "hello there",
]
BAD = [
    re.compile(r"\ba [aeiou8]", re.I),  # "a 8 s", "a upbeat"
    re.compile(r"\ban [^aeiou8\d]", re.I),
    re.compile(r"\b(\w+) \1\b", re.I),  # "song song"
    re.compile(r"about (write|make|search|split)", re.I),  # the prompt pasted as a topic
    re.compile(r"\d s\b|\(v[567]\)|\)\s*\("),  # "8 s", "(v5)" tags
    re.compile(r"\s[,.]|;\s*$|\.\.|  "),
]


def sentences(prompt: str, tier: str) -> list[str]:
    plan = build_plan(prompt, tier)
    return [plan.summary, *(t.prose for t in plan.turns)]


@pytest.mark.parametrize("tier", ["flash", "standard", "pro"])
@pytest.mark.parametrize("prompt", DOC_EXAMPLES, ids=range(len(DOC_EXAMPLES)))
def test_every_sentence_reads_as_written_by_a_person(prompt: str, tier: str) -> None:
    for text in sentences(prompt, tier):
        assert text[0].isupper() and text.endswith("."), text
        assert "I'll" in text, text
        for rx in BAD:
            assert not rx.search(text), (rx.pattern, text)


def test_the_anchor() -> None:
    plan = build_plan(
        "write lyrics about a rainy city, then make a 20 second song in v5 with them", "standard"
    )
    assert plan.summary == (
        "I'll write lyrics about a rainy city first, then make a 20-second "
        "song in v5 with those lyrics."
    )
    assert [t.prose for t in plan.turns] == [
        "First, I'll write lyrics about a rainy city.",
        "Then I'll make a 20-second song in v5 with those lyrics.",
    ]


def test_the_issue_prompt_no_longer_garbles() -> None:
    """Was "generate a 8 s write lyrics and make a short song song (v5)" and "write lyrics
    about write lyrics and make a short song"."""
    plan = build_plan("write lyrics and make a short song", "standard")
    assert plan.summary == (
        "I'll write the lyrics first, then make an 8-second song in v5 with those lyrics."
    )


def test_a_named_file_is_yours_not_it() -> None:
    assert (
        build_plan("remix file_id:abc as jazz", "standard").summary
        == "I'll remix your file as jazz."
    )


@pytest.mark.parametrize(
    ("phrase", "expected"),
    [
        ("8-second song", "an 8-second song"),
        ("11-second song", "an 11-second song"),
        ("18-second song", "an 18-second song"),
        ("80-second song", "an 80-second song"),
        ("20-second song", "a 20-second song"),
        ("1-second sound", "a 1-second sound"),
        ("upbeat song", "an upbeat song"),
        ("jazz song", "a jazz song"),
    ],
)
def test_articles_follow_the_sound(phrase: str, expected: str) -> None:
    assert a_or_an(phrase) == expected


def test_lists_and_turns() -> None:
    assert listing(["a"]) == "a" and listing(["a", "b"]) == "a and b"
    assert listing(["a", "b", "c"]) == "a, b and c"
    assert narrate(["x"]) == "I'll x."
    assert narrate(["x", "y"]) == "I'll x first, then y."
    assert narrate(["x", "y", "z"]) == "I'll x first, then y, and then z."
    assert turn_sentence(1, 1, ["x"]) == "I'll x."
    assert [turn_sentence(i, 3, ["x"]) for i in (1, 2, 3)] == [
        "First, I'll x.",
        "Next, I'll x.",
        "Finally, I'll x.",
    ]
    assert turn_sentence(2, 2, ["x", "y"]) == "Then I'll x and y."
