"""Renders measured: decodable, as long as asked, audible, sane loudness, deterministic, model traits."""

from __future__ import annotations

import numpy as np
import pyloudnorm
import pytest

import songlab.sandbox.engine as engine
from tests.sandbox.engine._engine_util import SR, audio_of, band_share

CASES = [
    ("generate_song", "v7", {"prompt": "slow sad piano ballad in A minor", "duration_seconds": 6}),
    ("generate_music", "v6", {"prompt": "fast electronic dance track", "duration_seconds": 5}),
    ("generate_singing", "v5", {"prompt": "folk", "lyrics": "Walking home along the river"}),
    ("sfx_gen", "v5", {"prompt": "rain with distant thunder", "duration_seconds": 3}),
]


@pytest.mark.parametrize(("op", "model", "payload"), CASES, ids=[c[0] for c in CASES])
def test_render_is_real_audio(op, model, payload):
    res = engine.render(op, model, payload, seed=3)
    assert len(res.assets) == 1
    a = res.assets[0]
    assert a.mime_type == "audio/mpeg"
    x = audio_of(a)
    want = payload.get("duration_seconds", a.duration_s)
    assert x.shape[1] / SR == pytest.approx(want, abs=0.05)
    assert np.sqrt((x**2).mean()) > 0.01  # not silent
    assert np.abs(x).max() <= 1.0
    lufs = pyloudnorm.Meter(SR).integrated_loudness(x.T.astype(np.float64))
    assert -30 < lufs < -8


def test_same_request_same_bytes():
    p = {"prompt": "lofi hip hop", "duration_seconds": 5}
    a = engine.render("generate_song", "v6", p, seed=11)
    b = engine.render("generate_song", "v6", p, seed=11)
    assert a.assets[0].data == b.assets[0].data
    assert a.assets[0].recipe == b.assets[0].recipe
    c = engine.render("generate_song", "v6", p, seed=12)
    assert c.assets[0].data != a.assets[0].data


def test_channels_per_model(song_v5, song_v7):
    assert audio_of(song_v5.assets[0]).shape[0] == 1
    assert audio_of(song_v7.assets[0]).shape[0] == 2
    v6 = engine.render("generate_music", "v6", {"prompt": "pop", "duration_seconds": 5}, seed=1)
    assert audio_of(v6.assets[0]).shape[0] == 2


def test_v7_has_more_energy_above_10k_than_v5(song_v5, song_v7):
    hi5 = band_share(audio_of(song_v5.assets[0]), 10000, 22050)
    hi7 = band_share(audio_of(song_v7.assets[0]), 10000, 22050)
    assert hi7 > 5 * hi5
    assert band_share(audio_of(song_v5.assets[0]), 9000, 22050) < 1e-3  # v5 stops near 8 kHz


def test_v6_is_narrower_stereo_than_v7():
    def side_share(model):
        x = audio_of(
            engine.render(
                "generate_music",
                model,
                {"prompt": "folk with guitar and strings", "duration_seconds": 5},
                seed=2,
            ).assets[0]
        )
        return float(((x[0] - x[1]) ** 2).mean() / ((x[0] + x[1]) ** 2).mean())

    assert 0 < side_share("v6") < side_share("v7")


def test_unknown_operation_and_extend_type_raise():
    with pytest.raises(engine.RenderError, match="extend_type"):
        engine.render(
            "extend_song",
            "v5",
            {"extend_type": "middle"},
            seed=1,
            inputs={"song": engine.AudioIn(b"x", "audio/mpeg")},
        )
    with pytest.raises(engine.RenderError, match="operation"):
        engine.render("teleport", "v5", {}, seed=1)


def test_exports_are_sorted_and_complete():
    names = [
        "Asset",
        "AudioIn",
        "AudioInfo",
        "EngineInputError",
        "Metadata",
        "Recipe",
        "RenderError",
        "RenderResult",
        "Voice",
        "check_audio",
        "decode",
        "excerpt",
        "extract_voice",
        "fingerprint",
        "render",
        "similarity",
    ]
    assert engine.__all__ == sorted(engine.__all__) == names
