"""The DCR protocol (ITU-T P.800 Annex D / P.808 degradation MOS): its one module and its
line in the registry are all it takes, from a session to a campaign and the scorecard."""

from __future__ import annotations

import json
from collections import Counter

import numpy as np
import pytest

from songlab.listening import (
    PROTOCOLS,
    ListeningError,
    NotPlayedError,
    campaign,
    load,
    protocol,
    simulate,
)
from songlab.listening.protocols.dcr import DEGRADATION, DCRSession
from songlab.listening.scorecard import scorecard
from tests.listening.listening_signals import MODELS, make_clips

REF = MODELS[0]


def _dcr(clips=None, **options):
    options.setdefault("reference", REF)
    return protocol("dcr")(clips or make_clips(3, seconds=0.5), **options)


def test_dcr_plays_the_reference_then_the_clip_and_covers_every_clip() -> None:
    assert PROTOCOLS["dcr"] is DCRSession
    s = _dcr(seed=1, repeats=2)
    assert len(s) == 3 * 3 * 2 and all(t.labels == ("Ref", "A") for t in s.trials)
    simulate(s)
    s.reveal()
    key = s.key
    assert all(key[t.index]["Ref"] == REF for t in s.trials)  # the reference, openly
    shown = Counter((row["model"], row["prompt"]) for _, row in s.results().iterrows())
    assert set(shown.values()) == {2} and len(shown) == 9  # the reference's own clip too
    a, b = s.delivered(0, "Ref"), s.delivered(0, "A")
    assert a != b  # even the null pair's two clips are not one byte string


def test_the_five_degradation_categories_answer_a_trial() -> None:
    s = _dcr(seed=2)
    controls = s.controls(0)
    assert [(c.value, c.text) for c in controls.choices] == [
        (5, "5 Degradation is inaudible"),
        (4, "4 Degradation is audible but not annoying"),
        (3, "3 Degradation is slightly annoying"),
        (2, "2 Degradation is annoying"),
        (1, "1 Degradation is very annoying"),
    ]
    assert "reference" in controls.question
    with pytest.raises(NotPlayedError):
        s.answer(0, 4)
    s.mark_played(0, "A")
    with pytest.raises(NotPlayedError):  # the reference must be heard too
        s.answer(0, 4)
    s.mark_played(0, "Ref")
    for bad in (0, 6, 3.5, True, "4"):
        with pytest.raises(ListeningError, match="^rating: must be a category 1"):
            s.answer(0, bad)
    s.answer(0, np.int64(4))
    assert s.answers == {0: 4}


def test_scripted_dmos_orders_the_models_and_the_verdict_reads_the_intervals(tmp_path) -> None:
    clips = make_clips(4, seconds=0.5)
    s = _dcr(clips, seed=3, repeats=3)
    simulate(s, scores={REF: 5.0, MODELS[1]: 3.5, MODELS[2]: 1.5}, noise=0.4, seed=5)
    again = load(s.save(tmp_path / "dcr.json"), clips)
    s.reveal()
    out = s.stats()
    models = out["models"].set_index("model")
    assert models.loc[REF, "dmos"] > models.loc[MODELS[1], "dmos"] > models.loc[MODELS[2], "dmos"]
    votes = s.results().query("model == @MODELS[1]")["rating"].to_numpy(float)
    assert models.loc[MODELS[1], "dmos"] == pytest.approx(votes.mean())
    assert (models["ci_low"] >= 1).all() and (models["ci_high"] <= 5).all()  # on the scale
    assert len(out["pairs"]) == 3 and (out["pairs"]["n"] == 4).all()  # paired over prompts
    said = s.summary()
    assert said.verdict.startswith(f"Highest DMOS: {REF}, ") and said.rule in said.verdict
    again.reveal()  # a saved DCR session resumes with its answers
    assert again.results().equals(s.results())


def test_the_rater_checks_gold_and_trap() -> None:
    s = _dcr(seed=4, gold=1, traps=1)
    simulate(s, attentive=1.0)
    s.reveal()
    checks = s.checks()
    assert sorted(checks["check"]) == ["gold", "trap"] and checks["passed"].all()
    careless = _dcr(seed=4, gold=1, traps=1)
    simulate(careless, attentive=0.0, scores={m: 5.0 for m in MODELS}, noise=0.0)
    careless.reveal()
    gold = careless.checks().set_index("check").loc["gold"]
    assert not gold["passed"]  # a plainly bad clip rated 5 fails


def test_a_dcr_campaign_page_collects_and_the_scorecard_takes_its_dmos(tmp_path) -> None:
    clips = make_clips(2, seconds=0.5)
    c = campaign("dcr", clips, raters=4, seed=4, reference=REF)
    design = json.loads(c.design("r01"))
    trial = design["trials"][0]
    assert [t for _, t in trial["controls"]["choices"]][0] == "5 Degradation is inaudible"
    page = c.page("r01")
    assert "Degradation is inaudible" in page and not any(m in page for m in MODELS)
    files = [
        c.simulate(r, scores={REF: 5, MODELS[1]: 3, MODELS[2]: 1}, noise=0.3, seed=i)
        for i, r in enumerate(c.raters)
    ]
    frame = c.collect(files)
    assert len(frame) == 4 * 6 and set(frame["rater"]) == set(c.raters)
    models = c.stats()["models"].set_index("model")
    assert models["raters"].eq(4).all()
    assert (models["ci_low_rater"] <= models["dmos"]).all()
    assert (models["dmos"] <= models["ci_high_rater"]).all()
    card = scorecard(listening=c, boot=50).frame.set_index("model")
    assert card.loc[REF, "listening_score"] == pytest.approx(models.loc[REF, "dmos"])


def test_the_reference_is_a_model_of_the_clips_and_no_foreign_option_is_taken() -> None:
    assert protocol("dcr")(make_clips(2, seconds=0.5)).options["reference"] == MODELS[0]
    with pytest.raises(ListeningError) as info:
        _dcr(reference="v9")
    assert info.value.argument == "reference"
    with pytest.raises(ListeningError) as info:
        _dcr(anchor=True)
    assert info.value.argument == "anchor"
    with pytest.raises(ListeningError, match="^noise: "):
        simulate(_dcr(seed=1), noise=-1)
    assert [v for v, _ in DEGRADATION] == [5, 4, 3, 2, 1]
