"""Loudness matching: attenuate to the quietest, never amplify, never clip."""

from __future__ import annotations

import numpy as np
import pytest

from songlab.audio import integrated_loudness, peak, peak_db
from songlab.listening import ListeningError, lowpass_anchor, match_loudness

SR = 16000


def _clips() -> list[np.ndarray]:
    t = np.arange(SR * 2) / SR
    rng = np.random.default_rng(0)
    return [
        (0.5 * np.sin(2 * np.pi * 440 * t)).astype(np.float32),
        (0.05 * rng.normal(size=t.size)).astype(np.float32),
        np.stack([0.2 * np.sin(2 * np.pi * 220 * t), 0.1 * np.sin(2 * np.pi * 330 * t)]).astype(
            np.float32
        ),
    ]


def test_matched_clips_are_within_half_an_lu_and_only_attenuated() -> None:
    clips = _clips()
    before = [integrated_loudness(c, sr=SR) for c in clips]
    m = match_loudness(clips, sr=[SR] * 3)
    after = [integrated_loudness(c, sr=SR) for c in m.clips]
    assert max(after) - min(after) < 0.5
    assert m.loudness == pytest.approx(tuple(before))
    assert all(g <= 0 for g in m.gains_db)
    assert max(m.gains_db) == pytest.approx(0.0)  # the quietest is untouched
    assert all(peak(a) <= peak(b) + 1e-7 for a, b in zip(m.clips, clips, strict=True))
    assert all(peak_db(c) <= -1.0 + 1e-6 for c in m.clips)
    assert min(after) == pytest.approx(min(before), abs=0.01)


def test_a_hot_clip_lowers_everyone_equally() -> None:
    t = np.arange(SR * 2) / SR
    hot = (1.5 * np.sign(np.sin(2 * np.pi * 100 * t))).astype(np.float32)  # peaks over full scale
    quiet = (0.9 * np.sin(2 * np.pi * 440 * t)).astype(np.float32)
    m = match_loudness([hot, quiet], sr=[SR, SR])
    assert all(peak_db(c) <= -1.0 + 1e-6 for c in m.clips)
    after = [integrated_loudness(c, sr=SR) for c in m.clips]
    assert abs(after[0] - after[1]) < 0.5
    assert all(g < 0 for g in m.gains_db)


def test_silent_or_short_clips_are_refused_by_name() -> None:
    clips = _clips()[:2] + [np.zeros(SR, dtype=np.float32)]
    with pytest.raises(ListeningError, match="^clips: v7: is silent"):
        match_loudness(clips, sr=[SR] * 3, names=["v5", "v6", "v7"])
    with pytest.raises(ListeningError, match="^clips: short: must be longer"):
        match_loudness([_clips()[0][:100]], sr=[SR], names=["short"])
    with pytest.raises(ListeningError, match="^peak_ceiling_db: "):
        match_loudness(_clips(), sr=[SR] * 3, peak_ceiling_db=3.0)


def test_lowpass_anchor_removes_the_high_band() -> None:
    t = np.arange(SR) / SR
    x = (0.3 * np.sin(2 * np.pi * 500 * t) + 0.3 * np.sin(2 * np.pi * 6000 * t)).astype(np.float32)
    y = lowpass_anchor(x, sr=SR)
    spectrum = np.abs(np.fft.rfft(y))
    freqs = np.fft.rfftfreq(y.size, 1 / SR)
    assert spectrum[freqs == 6000][0] < 1e-3 * spectrum[freqs == 500][0]
    with pytest.raises(ListeningError, match="^cutoff: "):
        lowpass_anchor(x, sr=SR, cutoff=9000)
