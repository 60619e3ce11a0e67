"""Fixtures of the engine tests: short renders shared per session."""

from __future__ import annotations

import pytest

import songlab.sandbox.engine as engine

LYRICS = "[Verse]\nHello my love the night is young\n[Chorus]\nOh my heart stay with me"
SONG = {
    "prompt": "upbeat pop song with piano and guitar at 130 bpm",
    "lyrics": LYRICS,
    "duration_seconds": 12,
}


@pytest.fixture(scope="session")
def song_v7() -> engine.RenderResult:
    """A 12 s v7 song with two sung lines, made once per session."""
    return engine.render("generate_song", "v7", SONG, seed=7)


@pytest.fixture(scope="session")
def song_v5() -> engine.RenderResult:
    """The same request on v5."""
    return engine.render("generate_song", "v5", SONG, seed=7)
