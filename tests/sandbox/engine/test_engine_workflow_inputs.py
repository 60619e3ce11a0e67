"""The sandbox's workflow pipelines hand the engine the inputs its contract takes."""

from __future__ import annotations

from types import SimpleNamespace

import songlab.sandbox.engine as engine
from songlab.sandbox.engine import analysis, recipe
from songlab.sandbox.tasks.pipelines import WORKFLOW_STEPS, WorkflowCall
from tests.sandbox.engine._engine_util import as_input


def _ctx(song: engine.AudioIn, payload: dict, seconds: float) -> SimpleNamespace:
    """The part of a TaskContext the workflow steps use, rendering with the real engine."""

    def render(operation, model, payload, *, inputs=None, voice=None):
        return engine.render(operation, model, payload, seed=11, inputs=inputs, voice=voice)

    return SimpleNamespace(
        payload=payload,
        durations={"song": seconds},
        audio_in=lambda name: song,
        render=render,
        voice=lambda *a: None,
    )


def test_instrument_layer_follows_the_songs_tempo_and_key():
    song = engine.render(  # v7 renders the asked tempo exactly (v5 drifts: test_engine_follow.py)
        "generate_music",
        "v7",
        {"prompt": "folk song in E flat major at 97 bpm", "duration_seconds": 8, "format": "wav"},
        seed=4,
    )
    assert (song.metadata["tempo_bpm"], song.metadata["key"]) == (97, "D# major")
    ctx = _ctx(as_input(song.assets[0]), {"instrument": "cello"}, 8.0)
    part = WORKFLOW_STEPS["instrument-layers"](WorkflowCall.of(ctx))["part"](ctx, {})
    assert part.metadata["tempo_bpm"] == 97
    assert part.metadata["key"] == "D# major"
    # and the rendered part's drums pulse at that tempo
    drums = recipe.render(
        recipe.derive(part.assets[0].recipe, stems=["kick", "snare", "hihat", "perc"])
    )
    got = analysis.tempo(sum(drums.values()), lo=60, hi=180)
    assert min(abs(got - 97), abs(got - 2 * 97), abs(got / 2 - 97)) < 4
