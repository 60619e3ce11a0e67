"""Sound effects render at every allowed duration, for every keyword the engine knows."""

from __future__ import annotations

import numpy as np
import pytest

from songlab.sandbox.engine import sfx

# every word of every effect of the renderer's table, so a new effect is covered without
# editing this test
KEYWORDS = [word for _, words, _ in sfx.EFFECTS for word in words]


def test_keywords_were_found():
    assert {"rain", "knock"} <= set(KEYWORDS) and len(sfx.EFFECTS) >= 6


@pytest.mark.parametrize("name", [name for name, _, _ in sfx.EFFECTS])
def test_each_effect_is_used_by_each_of_its_words(name):
    words = next(words for n, words, _ in sfx.EFFECTS if n == name)
    for word in words:
        assert name in sfx.render(word, 0.5, np.random.default_rng(0))[1], word


@pytest.mark.parametrize("duration", [0.5, 0.7, 1.0, 2.5], ids=lambda d: f"{d}s")
@pytest.mark.parametrize("word", [*KEYWORDS, "something unknown"])
def test_every_keyword_renders_at_every_duration(word, duration):
    audio, used = sfx.render(word, duration, np.random.default_rng(0))
    assert audio.shape == (int(duration * sfx.SR),)
    assert np.isfinite(audio).all() and np.abs(audio).max() > 0
    assert used


def test_short_door_still_knocks_three_times():
    # 0.5 s is the shortest allowed effect; the knocks are squeezed into it, not dropped
    audio, used = sfx.render("door", 0.5, np.random.default_rng(0))
    assert used == ["knock"]
    env = np.abs(audio)
    onsets = [i for i in range(1, len(env)) if env[i] > 0.3 * env.max() >= env[i - 1]]
    clusters = [o for k, o in enumerate(onsets) if k == 0 or o - onsets[k - 1] > 0.05 * sfx.SR]
    assert len(clusters) == 3
