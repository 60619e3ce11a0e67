"""Blind at the edges: no model's clips stand out by digital silence at either end.

Two probes of issue 40, each a model whose files differ from the others' only at an edge: one
whose clips are shorter (asked to fill a longer common length, it was padded with 23,000-24,400
silent samples against 660-740 for the others: a guesser named it 16 of 16 times), and one
with a 2.5 s silent intro (the silence cut stopped at 2 s: named 17 of 17). Now every clip's
silence is cut at both ends, a clip with less sound than the common length is refused with the
reason, and a nearest-neighbour guess on the silence at each end of every element of every
page is at chance.
"""

from __future__ import annotations

import hashlib
import io

import numpy as np
import pytest
import soundfile as sf

from songlab.listening import ListeningError, campaign
from tests.listening._adversary import nearest_neighbour, page_elements

SR = 48_000
SECRET = hashlib.sha256(b"tests/listening/test_blind_edges").digest()


def _clips(*, short: float = 2.0, intro: float = 0.0, prompts: int = 3) -> dict:
    """Three models of tones with one noise floor; ``odd`` ends at ``short`` s and starts
    after ``intro`` s of digital silence, the others last 2 s with no intro."""
    rng = np.random.default_rng(40)
    out = {}
    for m, name in enumerate(("plain-a", "plain-b", "odd")):
        takes = []
        for p in range(prompts):
            seconds = short if name == "odd" else 2.0
            t = np.arange(int(seconds * SR)) / SR
            x = 0.3 * np.sin(2 * np.pi * (220 + 40 * p + 15 * m) * t)
            x = x + rng.normal(0, 3e-3, t.size)
            lead = np.zeros(int((intro if name == "odd" else 0.0) * SR))
            takes.append((np.concatenate([lead, x]).astype(np.float32), SR))
        out[name] = takes
    return out


def _edges(data: bytes) -> tuple[int, int]:
    audio, _ = sf.read(io.BytesIO(data), dtype="float32", always_2d=True)
    loud = np.flatnonzero(np.max(np.abs(audio), axis=1) > 1e-4)
    return int(loud[0]), int(len(audio) - 1 - loud[-1])


def _guess(c) -> tuple[float, float]:
    """Accuracy of a nearest-neighbour guess of the model from the two edges' silence, and
    the 99 % bound of guessing by luck."""
    features, truth = [], []
    for rater in c.raters:
        session = c._sessions[rater]
        session._revealed = True
        key, plans = session.key, session._unseal()["plans"]
        for trial, label, _, _, data in page_elements(c.page(rater)):
            if plans[trial].check is None:
                features.append(_edges(data))
                truth.append(key[trial][label])
    verdict = nearest_neighbour(np.array(features, dtype=float), truth, permutations=199)
    return verdict.accuracy, verdict.bound


def test_a_common_length_longer_than_a_models_clips_is_refused_not_padded() -> None:
    clips = _clips(short=1.8)
    with pytest.raises(ListeningError) as info:
        campaign("preference", clips, raters=2, seed=1, seconds=1.95, secret=SECRET)
    assert info.value.argument == "seconds"
    assert "'odd'" in str(info.value) and "1.8" in str(info.value) and "padding" in str(info.value)


@pytest.mark.slow  # encodes every element of two pages
def test_shorter_clips_cut_to_one_length_are_named_at_chance() -> None:
    c = campaign("preference", _clips(short=1.8), raters=2, seed=1, secret=SECRET, gold=0, traps=0)
    accuracy, bound = _guess(c)
    assert accuracy <= bound, (accuracy, bound)


@pytest.mark.slow  # encodes every element of two pages
def test_a_long_silent_intro_is_cut_and_named_at_chance() -> None:
    c = campaign("preference", _clips(intro=2.5), raters=2, seed=1, secret=SECRET, gold=0, traps=0)
    accuracy, bound = _guess(c)
    assert accuracy <= bound, (accuracy, bound)
