"""Numerical robustness: sweeps of seeds and awkward inputs render without any float warning.

pytest turns warnings into errors, so one overflow, division by zero, invalid cast
or library warning anywhere in a render fails here; ``np.errstate`` makes the
same three float errors raise even where a library would only record them.
"""

from __future__ import annotations

import numpy as np
import pytest

import songlab.sandbox.engine as engine
from songlab.sandbox.engine import audio_io
from tests.sandbox.engine._engine_util import as_foreign, as_input

PROMPTS = [
    "sad metal",
    "happy reggae",
    "slow ambient, no drums",
    "fast electronic",
    "male blues",
    "female jazz",
    "dark cinematic",
    "latin",
]
RAISE = {"over": "raise", "divide": "raise", "invalid": "raise"}


@pytest.mark.parametrize("i", range(8))
def test_song_extend_and_singing_sweep_has_no_float_errors(i):
    # worker-style 32-bit seeds (a hash of the task id), every model, sandbox and foreign inputs
    seed = int(np.random.default_rng(i).integers(0, 2**32))
    model = ("v5", "v6", "v7")[i % 3]
    with np.errstate(**RAISE):
        song = engine.render(
            "generate_song",
            model,
            {
                "prompt": PROMPTS[i],
                "lyrics": "la la la\nhello my love",
                "duration_seconds": 5,
                "format": "wav",
            },
            seed=seed,
        )
        engine.render(
            "extend_song",
            model,
            {"duration_seconds": 5, "format": "wav"},
            seed=seed,
            inputs={"song": as_input(song.assets[0])},
        )
        engine.render(
            "extend_song",
            "v5",
            {"duration_seconds": 5, "format": "wav", "lyrics": "and then"},
            seed=seed,
            inputs={"song": as_foreign(song.assets[0])},
        )
        sung = engine.render(
            "generate_singing",
            "v5",
            {"lyrics": "oh yeah\nhold me close", "format": "wav"},
            seed=seed,
            inputs={"vocal_reference": as_foreign(song.assets[0])},
        )
    assert sung.assets[0].duration_s > 1


def test_short_and_silent_uploads_have_no_float_errors():
    """A clip shorter than one analysis frame, digital silence before a tone (the silent
    400 ms blocks of a loudness measurement), a near-silent upload."""
    t = np.arange(int(0.5 * 22050)) / 22050
    short = audio_io.encode((0.3 * np.sin(2 * np.pi * 220 * t))[None, :], "mp3", sr=22050)
    gap = np.zeros((1, 3 * 44100), dtype=np.float32)
    gap[0, 2 * 44100 :] = 0.3 * np.sin(2 * np.pi * 330 * np.arange(44100) / 44100)
    quiet = (1e-5 * np.random.default_rng(1).standard_normal((2, 44100))).astype(np.float32)
    with np.errstate(**RAISE):
        for data in (short, audio_io.encode(gap, "wav"), audio_io.encode(quiet, "wav")):
            a = engine.AudioIn(data, "audio/mpeg")
            ext = engine.render(
                "extend_song",
                "v5",
                {"duration_seconds": 5, "format": "wav"},
                seed=3,
                inputs={"song": a},
            )
            assert ext.assets[0].duration_s > 5
            norm = engine.render(
                "audio_effect",
                "v5",
                {"effect": "normalize", "format": "wav"},
                seed=3,
                inputs={"audio": a},
            )
            assert norm.assets[0].data
            engine.render("separate_stems", "2stem", {"format": "wav"}, seed=3, inputs={"audio": a})
    lufs = engine.render(
        "audio_effect",
        "v5",
        {"effect": "normalize", "format": "wav"},
        seed=3,
        inputs={"audio": engine.AudioIn(audio_io.encode(gap, "wav"), "audio/wav")},
    ).metadata["loudness_lufs"]
    assert abs(lufs + 14) < 1  # silent blocks are gated out, the tone is measured
