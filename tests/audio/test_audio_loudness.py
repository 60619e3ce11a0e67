"""Integrated loudness against the BS.1770 calibration, peaks and gains."""

from __future__ import annotations

import numpy as np
import pytest

from songlab.audio import AudioError, apply_gain, db_to_gain, integrated_loudness, peak, peak_db

SR = 48000


def _sine(amp: float, seconds: float = 2.0, freq: float = 997.0) -> np.ndarray:
    t = np.arange(int(SR * seconds)) / SR
    return (amp * np.sin(2 * np.pi * freq * t)).astype(np.float32)


def test_bs1770_calibration_full_scale_997hz_sine_in_one_channel_reads_minus_3_01() -> None:
    # ITU-R BS.1770-4 sec. 2.8 / Annex 1: a 0 dBFS 997 Hz sine in one front channel reads -3.01 LKFS.
    assert integrated_loudness(_sine(1.0), sr=SR) == pytest.approx(-3.01, abs=0.05)


def test_loudness_follows_gain_in_db() -> None:
    x = _sine(0.5)
    base = integrated_loudness(x, sr=SR)
    assert integrated_loudness(apply_gain(x, db=-6.0), sr=SR) == pytest.approx(base - 6.0, abs=0.01)
    # The same signal in two channels adds 10 log10(2) = 3.01 LU (G = 1 for L and R).
    assert integrated_loudness(np.stack([x, x]), sr=SR) == pytest.approx(base + 3.0103, abs=0.01)


def test_silence_is_minus_infinity_and_short_clips_are_refused() -> None:
    assert integrated_loudness(np.zeros(SR), sr=SR) == float("-inf")
    with pytest.raises(AudioError, match="^audio: must be longer than 0.4 s"):
        integrated_loudness(_sine(0.5, seconds=0.3), sr=SR)


def test_peaks_and_gains() -> None:
    x = _sine(0.25)
    assert peak(x) == pytest.approx(0.25, abs=1e-4)
    assert peak_db(x) == pytest.approx(20 * np.log10(0.25), abs=1e-3)
    assert peak_db(np.zeros(4)) == float("-inf")
    assert db_to_gain(-20.0) == pytest.approx(0.1)
    y = apply_gain(x, db=-6.0)
    assert y is not x and peak(x) == pytest.approx(0.25, abs=1e-4)  # input untouched
    assert peak(y) == pytest.approx(0.25 * 10 ** (-6 / 20), abs=1e-4)
    with pytest.raises(AudioError, match="^db: "):
        apply_gain(x, db=float("nan"))


@pytest.mark.parametrize(
    ("sr", "channels", "seconds"),
    [(44100, 2, 7.3), (48000, 1, 3.05), (11025, 5, 2.77), (22050, 2, 0.41)],
    ids=["stereo-44k", "mono-48k", "5ch-11k-uneven-hop", "just-one-block"],
)
def test_the_same_figure_as_pyloudnorm_block_for_block(sr, channels, seconds) -> None:
    """songlab sums the gated blocks with numpy, pyloudnorm with a Python loop: the filters,
    block bounds, gates and channel weights are the same, so the figures are."""
    import pyloudnorm

    rng = np.random.default_rng(sr + channels)
    n = int(sr * seconds)
    x = rng.standard_normal((channels, n)).astype(np.float32) * 0.2
    x[:, : n // 3] *= 1e-3  # a quiet stretch: the relative gate drops its blocks
    x[:, n // 3 : n // 2] = 0.0  # silence: the absolute gate drops these
    ref = pyloudnorm.Meter(sr).integrated_loudness(x.T.astype(np.float64))
    assert integrated_loudness(x, sr=sr) == pytest.approx(ref, abs=1e-9)
