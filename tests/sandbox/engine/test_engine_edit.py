"""Edits: inpaint changes only its range; extend joins without a click; clamping is reported."""

from __future__ import annotations

import numpy as np
import pytest

import songlab.sandbox.engine as engine
from tests.sandbox.engine._engine_util import SR, as_foreign, as_input, audio_of


def _snr(ref, x):
    return 10 * np.log10((ref**2).sum() / max(((x - ref) ** 2).sum(), 1e-20))


@pytest.mark.parametrize("provenance", [as_input, as_foreign], ids=["sandbox", "foreign"])
def test_inpaint_changes_only_the_range(song_v7, provenance):
    res = engine.render(
        "inpaint",
        "v5",
        {"start_ms": 4000, "end_ms": 7000},
        seed=3,
        inputs={"song": provenance(song_v7.assets[0])},
    )
    x, y = audio_of(song_v7.assets[0]), audio_of(res.assets[0])
    assert y.shape == x.shape
    a, b = 4 * SR, 7 * SR
    assert _snr(x[:, : a - SR // 10], y[:, : a - SR // 10]) > 25
    assert _snr(x[:, b + SR // 10 :], y[:, b + SR // 10 :]) > 25
    assert _snr(x[:, a:b], y[:, a:b]) < 3  # the range was rewritten


def _click_score(y, at):
    """Largest sample-to-sample jump in 20 ms around ``at`` over the 90th percentile of such
    window maxima along the song: a splice click stands out, a drum hit does not."""
    d = np.abs(np.diff(y.mean(axis=0)))
    w = int(0.01 * SR)
    local = d[at - w : at + w].max()
    typical = np.percentile([d[i : i + 2 * w].max() for i in range(SR, len(d) - SR, SR // 8)], 90)
    return local / typical


@pytest.mark.parametrize("provenance", [as_input, as_foreign], ids=["sandbox", "foreign"])
def test_extend_tail_join_is_seamless(song_v7, provenance):
    res = engine.render(
        "extend_song",
        "v7",
        {"duration_seconds": 6},
        seed=3,
        inputs={"song": provenance(song_v7.assets[0])},
    )
    y = audio_of(res.assets[0])
    x = audio_of(song_v7.assets[0])
    assert res.metadata["extend_at_ms"] == 0
    join = res.metadata["join_s"]  # the end, or for foreign audio where its fade-out begins
    assert 10.5 <= join <= 12
    assert y.shape[1] / SR == pytest.approx(join + 6, abs=0.05)
    at = int(join * SR)
    assert _click_score(y, at) < 1.5
    rms = [np.sqrt((y[:, i : i + SR // 20] ** 2).mean()) for i in range(at - SR, at + SR, SR // 20)]
    assert min(rms) > 0.25 * np.median(rms)  # no gap at the join
    # the head of the song is kept
    assert _snr(x[:, : at - SR // 2], y[:, : at - SR // 2]) > 20
    # and the new part is not silent
    assert np.sqrt((y[:, at + SR :] ** 2).mean()) > 0.02


@pytest.mark.parametrize(
    ("asked", "applied"), [(3000, 8000), (10000, 10000), (999999, 420000), (0, 0)]
)
def test_extend_at_ms_is_clamped_and_reported(song_v5, asked, applied):
    res = engine.render(
        "extend_song",
        "v5",
        {"extend_at_ms": asked, "duration_seconds": 5},
        seed=1,
        inputs={"song": as_input(song_v5.assets[0])},
    )
    assert res.metadata["extend_at_ms"] == applied
    join = 12.0 if applied in (0, 420000) else applied / 1000
    assert res.metadata["join_s"] == pytest.approx(join)
    assert audio_of(res.assets[0]).shape[1] / SR == pytest.approx(join + 5, abs=0.05)


def test_extend_head_and_extend_music(song_v5):
    head = engine.render(
        "extend_song",
        "v5",
        {"extend_type": "head", "duration_seconds": 5},
        seed=1,
        inputs={"song": as_input(song_v5.assets[0])},
    )
    y, x = audio_of(head.assets[0]), audio_of(song_v5.assets[0])
    assert y.shape[1] == pytest.approx(x.shape[1] + 5 * SR, abs=100)
    assert _snr(x[:, SR:], y[:, 6 * SR :]) > 20
    music = engine.render(
        "extend_music",
        "v5",
        {"extend_seconds": 3, "side": "tail"},
        seed=1,
        inputs={"music": as_input(song_v5.assets[0])},
    )
    assert audio_of(music.assets[0]).shape[1] / SR == pytest.approx(15, abs=0.05)
    with pytest.raises(engine.RenderError, match="side"):
        engine.render(
            "extend_music",
            "v5",
            {"side": "middle"},
            seed=1,
            inputs={"music": as_input(song_v5.assets[0])},
        )
