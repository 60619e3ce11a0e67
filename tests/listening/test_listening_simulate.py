"""Scripted listeners drive sessions to the truth they were given; statistics see it."""

from __future__ import annotations

import pytest

from songlab.listening import ListeningError, abx, mushra, preference, simulate
from tests.listening.listening_signals import MODELS, make_clips


def test_preference_for_one_model_shows_in_the_pair_statistics() -> None:
    s = preference(make_clips(8), seed=1, repeats=2)
    simulate(s, prefer=MODELS[2], p=1.0, seed=3)
    assert s.done
    s.reveal()
    pairs = s.stats()["pairs"]
    for _, row in pairs.iterrows():
        if MODELS[2] in (row["model_a"], row["model_b"]):
            wins = row["wins_a"] if row["model_a"] == MODELS[2] else row["wins_b"]
            assert wins == row["n"] == 16
            assert row["p_value"] == pytest.approx(2 / 2**16)  # two-sided exact: 2 * 0.5^16


def test_no_preference_answers_when_allowed() -> None:
    s = preference(make_clips(6), seed=1, allow_tie=True)
    simulate(s, p_tie=1.0)
    s.reveal()
    assert s.results()["tie"].all()
    assert (s.stats()["pairs"]["ties"] == 6).all()


def test_abx_correct_rate_follows_p_correct() -> None:
    s = abx(make_clips(8), seed=2)
    simulate(s, p_correct=1.0)
    s.reveal()
    pairs = s.stats()["pairs"]
    assert (pairs["correct"] == pairs["n"]).all() and (pairs["n"] == 8).all()
    assert (pairs["p_value"] == 0.5**8).all()
    assert (pairs["d_prime"] > 2).all()


def test_mushra_scores_order_the_means() -> None:
    s = mushra(make_clips(6), seed=3, reference=MODELS[0], anchor=True)
    simulate(s, scores={MODELS[0]: 95, MODELS[1]: 60, MODELS[2]: 30}, noise=3.0)
    s.reveal()
    means = s.stats()["models"].set_index("model")["mean"]
    assert means[MODELS[0]] > means[MODELS[1]] > means[MODELS[2]]
    assert "anchor (3.5 kHz low-pass)" in means.index
    pairs = s.stats(test="wilcoxon")["pairs"]
    assert len(pairs) == 6 and (pairs["p_holm"] >= pairs["p_value"]).all()


def test_simulate_is_seeded_and_checks_its_arguments() -> None:
    a, b = preference(make_clips(4), seed=1), preference(make_clips(4), seed=1)
    assert simulate(a, seed=5).answers == simulate(b, seed=5).answers
    with pytest.raises(ListeningError, match="^prefer: "):
        simulate(preference(make_clips(4), seed=1), prefer="v9")
    with pytest.raises(ListeningError, match="^p: "):
        simulate(preference(make_clips(4), seed=1), p=1.5)
    with pytest.raises(ListeningError, match="^session: "):
        simulate("not a session")  # type: ignore[arg-type]
