"""The ACR protocol (ITU-T P.800/P.808 five-point MOS): its one module is all it takes."""

from __future__ import annotations

import json
from collections import Counter

import numpy as np
import pytest
from scipy import stats

from songlab.listening import (
    PROTOCOLS,
    ListeningError,
    NotPlayedError,
    campaign,
    load,
    protocol,
    simulate,
)
from songlab.listening.protocols.acr import CATEGORIES, ACRSession
from tests.listening.listening_signals import MODELS, make_clips


def _acr(clips=None, **options):
    return protocol("acr")(clips or make_clips(4), **options)


def test_acr_is_registered_and_plays_one_clip_per_trial() -> None:
    assert PROTOCOLS["acr"] is ACRSession
    s = _acr(seed=1, repeats=2)
    assert len(s) == 3 * 4 * 2 and all(t.labels == ("A",) for t in s.trials)
    simulate(s)
    s.reveal()
    shown = Counter((row["model"], row["prompt"]) for _, row in s.results().iterrows())
    assert set(shown.values()) == {2}  # every clip twice
    # each repetition is a full pass over the clips: no clip twice before all were heard once
    first = [(r["model"], r["prompt"]) for _, r in s.results().head(12).iterrows()]
    assert len(set(first)) == 12


def test_the_five_categories_and_their_words_answer_a_trial() -> None:
    s = _acr(seed=2)
    controls = s.controls(0)
    assert [(c.value, c.text) for c in controls.choices] == [
        (5, "5 Excellent"),
        (4, "4 Good"),
        (3, "3 Fair"),
        (2, "2 Poor"),
        (1, "1 Bad"),
    ]
    assert controls.scale is None and "quality" in controls.question
    with pytest.raises(NotPlayedError):
        s.answer(0, 4)
    s.mark_played(0, "A")
    for bad in (0, 6, 3.5, True, "4"):
        with pytest.raises(ListeningError, match="^rating: must be a category 1"):
            s.answer(0, bad)
    s.answer(0, np.int64(4))
    assert s.answers == {0: 4}


def test_scripted_mos_orders_the_models_and_the_statistics_are_by_hand(tmp_path) -> None:
    clips = make_clips(4)
    s = _acr(clips, seed=3, repeats=3)
    scores = {MODELS[0]: 4.5, MODELS[1]: 3.0, MODELS[2]: 1.5}
    simulate(s, scores=scores, noise=0.4, seed=5)
    again = load(s.save(tmp_path / "acr.json"), clips)
    s.reveal()
    frame = s.results()
    assert frame["rating"].between(1, 5).all() and str(frame["rating"].dtype) == "Int64"
    out = s.stats()
    models = out["models"].set_index("model")
    assert (
        models.loc[MODELS[0], "mos"] > models.loc[MODELS[1], "mos"] > models.loc[MODELS[2], "mos"]
    )
    votes = frame.loc[frame["model"] == MODELS[1], "rating"].to_numpy(float)
    half = stats.t.ppf(0.975, votes.size - 1) * votes.std(ddof=1) / np.sqrt(votes.size)
    assert models.loc[MODELS[1], "n"] == 12
    assert models.loc[MODELS[1], ["ci_low", "ci_high"]].tolist() == pytest.approx(
        [votes.mean() - half, votes.mean() + half]
    )
    pairs = out["pairs"].set_index(["model_a", "model_b"])
    assert len(pairs) == 3 and (pairs["n"] == 4).all()  # paired over the four prompts
    assert (pairs["p_holm"] >= pairs["p_value"]).all()
    assert s.summary().verdict.startswith(f"Highest MOS: {MODELS[0]}")
    again.reveal()  # a saved ACR session resumes with its answers
    assert again.results().equals(frame)


def test_an_acr_campaign_page_shows_the_words_and_collect_reads_its_answers(tmp_path) -> None:
    clips = make_clips(2, seconds=1.0)
    c = campaign("acr", clips, raters=4, seed=4)
    design = json.loads(c.design("r01"))
    trial = design["trials"][0]
    assert [text for _, text in trial["controls"]["choices"]] == [f"{v} {w}" for v, w in CATEGORIES]
    page = c.page("r01")
    assert "Excellent" in page and not any(m in page for m in MODELS)
    files = [
        c.simulate(r, scores={MODELS[0]: 5, MODELS[1]: 3, MODELS[2]: 1}, noise=0.3, seed=i)
        for i, r in enumerate(c.raters)
    ]
    frame = c.collect(files)
    assert len(frame) == 4 * 6 and set(frame["rater"]) == set(c.raters)
    out = c.stats()
    models = out["models"].set_index("model")
    assert models["raters"].eq(4).all()
    assert models.loc[MODELS[0], "mos"] == pytest.approx(
        frame.loc[frame["model"] == MODELS[0], "rating"].mean()
    )
    assert (models["ci_low_rater"] <= models["mos"]).all()
    assert (models["mos"] <= models["ci_high_rater"]).all()
    assert out["pairs"]["n"].eq(4).all()  # paired over the four raters' means


def test_acr_takes_no_foreign_options() -> None:
    with pytest.raises(ListeningError) as info:
        _acr(reference=MODELS[0])
    assert info.value.argument == "reference"
    with pytest.raises(ListeningError, match="^noise: "):
        simulate(_acr(seed=1), noise=-1)
