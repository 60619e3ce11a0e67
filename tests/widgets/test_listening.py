"""Listening panels headless: blinding until reveal, played-gate, balanced order, loudness.

Model names are chosen so they cannot occur by chance in base64 text ("-" and
spaces are outside its alphabet) and are long enough (14 bytes) never to turn
up in binary audio: a hit is a real leak.
"""

from __future__ import annotations

import math
from collections import Counter

import ipywidgets as W
import numpy as np
import pytest

from songlab import audio, listening
from songlab.widgets.listening import ListeningPanel, listening_panel

SR = 22050
MODELS = ("model-v5 quiet", "model-v7 loud", "model-v6 mid")


def tone(freq: float, db: float, seconds: float = 1.0) -> np.ndarray:
    t = np.arange(int(seconds * SR)) / SR
    x = sum(np.sin(2 * np.pi * freq * k * t) / k for k in range(1, 5))
    x = x / np.max(np.abs(x)) * 10 ** (db / 20)
    return x.astype(np.float32)[None]


def clips(models=MODELS[:2], prompts=2) -> dict[str, list[tuple[np.ndarray, int]]]:
    levels = {m: -30.0 + 10 * i for i, m in enumerate(models)}  # 10 dB apart before matching
    return {
        m: [(tone(200 + 50 * p + 30 * i, levels[m]), SR) for p in range(prompts)]
        for i, m in enumerate(models)
    }


def play_all(panel: object) -> None:
    for label in list(panel.players):
        panel.play(label)
        panel.listened(label)  # what the browser's <audio> reports once the clip played through


def test_preference_is_blind_until_reveal_and_gated_on_playing(assert_blind) -> None:
    session = listening.preference(clips(), seed=3)
    panel = listening_panel(session)
    assert isinstance(panel, ListeningPanel)
    while panel.trial is not None:
        assert_blind(panel, MODELS[:2])
        answer_buttons = list(panel.answer_box.children)
        assert [b.description for b in answer_buttons] == [
            "I prefer A",
            "I prefer B",
            "Both are bad",
        ]
        assert all(b.disabled for b in answer_buttons)
        count = panel.players["A"].play_count
        panel.play("A")  # asks the browser to play: not "played" until the browser says so
        assert panel.players["A"].play_count == count + 1
        need = f"{math.ceil(session.need * 10) / 10:.1f} s"  # the session's own minimum
        assert all(b.disabled for b in answer_buttons)
        assert f"Play A and B for at least {need} each, at normal speed" in panel.instruction.value
        player = panel.players["A"]
        player.heard = 0.5 * player.duration  # half of it heard: not yet
        assert all(b.disabled for b in answer_buttons)
        assert f"of {need}" in panel.marks["A"].value  # "heard 0.5 of 0.8 s": the same minimum
        player.heard = player.duration  # played through (reported by the media element)
        assert all(b.disabled for b in answer_buttons)
        assert f"Play B for at least {need} each" in panel.instruction.value
        answered = len(session.answers)
        answer_buttons[0].click()  # click() ignores `disabled`: the panel refuses, and says why
        assert len(session.answers) == answered
        assert f"Not saved: play B for at least {need}" in panel.status_line.value
        assert "NotPlayedError" not in panel.status_line.value
        panel.listened("B")
        assert not any(b.disabled for b in answer_buttons)
        assert_blind(panel, MODELS[:2])
        answer_buttons[0].click()
    assert_blind(panel, MODELS[:2])
    assert not panel.reveal_button.disabled
    panel.reveal_button.click()
    assert session.revealed
    assert all(m in panel.results.value for m in MODELS[:2])
    # revealed: a summary by model with intervals, no controls left; each model won 1 of 2
    # (Wilson 9-91 %), so no winner is named, and the rule says why
    said = panel.results.value
    assert "No clear winner on choice share" in said and "9-91 %" in said
    assert "Winner" not in said and "Highest" not in said
    assert "lies wholly above every other model" in said and "95 % interval" in said
    assert list(panel.summary.columns) == [
        "model",
        "chosen",
        "offered",
        "share",
        "ci_low",
        "ci_high",
    ]
    assert panel.summary["offered"].sum() == 2 * len(session.trials)
    assert not panel.players and not panel.answer_box.children and not panel.play_box.children
    assert panel.reveal_button not in panel.children
    assert "to answer" not in panel.instruction.value + panel.status_line.value
    with pytest.raises(AssertionError, match="visible before reveal"):
        assert_blind(panel, MODELS[:2])  # the scan does see what the panel shows


def test_reveal_before_the_end_is_refused_and_shown() -> None:
    panel = listening_panel(listening.abx(clips(), seed=1))
    assert panel.reveal_button.disabled
    panel.reveal_button.click()
    assert "Not yet: Reveal unlocks once every trial is answered (0 of" in panel.status_line.value
    assert not panel._session.revealed


def test_abx_panel_positions_are_balanced_and_blind(assert_blind) -> None:
    session = listening.abx(clips(prompts=2), seed=7, repeats=2)
    panel = listening_panel(session)
    assert isinstance(panel, ListeningPanel) and len(session) == 4
    while panel.trial is not None:
        assert set(panel.players) == {"A", "B", "X"}
        play_all(panel)
        assert_blind(panel, MODELS[:2])
        panel.answer_box.children[0].click()  # always "X is A"
    frame = panel.reveal()
    key = session.key
    a_models = Counter(key[t]["A"] for t in key)
    x_is_a = Counter(key[t]["X"] == key[t]["A"] for t in key)
    assert sorted(a_models.values()) == [2, 2]  # each model in position A equally often
    assert x_is_a[True] == x_is_a[False] == 2
    assert frame["correct"].sum() == 2
    assert "vs" in panel.results.value and "95 % interval" in panel.results.value
    # always "X is A", so correct 2 of 4 per pair: no pair separated from chance
    assert "No pair separated from chance (50 %) on correct" in panel.results.value
    assert "one-sided exact binomial test gives p &lt; 0.05" in panel.results.value
    assert not panel.players and panel.reveal_button not in panel.children


def test_mushra_sliders_rate_every_label_and_stay_blind(assert_blind) -> None:
    session = listening.mushra(clips(MODELS, prompts=1), reference=MODELS[1], anchor=True, seed=2)
    panel = listening_panel(session)
    assert isinstance(panel, ListeningPanel)
    labels = session.trials[0].labels
    assert set(panel.players) == {*labels, "Ref"}
    assert set(panel.sliders) == set(labels) and len(labels) == 4  # 3 models + anchor
    assert all(s.disabled for s in panel.sliders.values())
    play_all(panel)
    assert not any(s.disabled for s in panel.sliders.values())
    assert_blind(panel, MODELS)
    for i, slider in enumerate(panel.sliders.values()):
        slider.value = 20 * i
    panel.rate_button.click()
    assert session.done
    frame = panel.reveal()
    assert sorted(frame["rating"].tolist()) == [0.0, 20.0, 40.0, 60.0]
    best = panel.summary.iloc[0]
    assert best["mean"] == 60.0  # the best first, but one rating each has no interval:
    assert "No clear winner on score" in panel.results.value  # nothing is separated
    assert "have no interval to separate by" in panel.results.value
    assert not panel.sliders and not panel.answer_box.children


def test_clips_reach_the_player_loudness_matched(assert_blind) -> None:
    session = listening.preference(clips(), seed=5)
    panel = listening_panel(session)
    loudness = {}
    for label in ("A", "B"):
        samples, rate = audio.decode(bytes(panel.players[label].value))
        loudness[label] = audio.integrated_loudness(samples, sr=rate)
    assert abs(loudness["A"] - loudness["B"]) < 0.2  # they were 10 LU apart before matching
    assert_blind(panel, MODELS[:2])


def test_something_else_than_a_session_is_refused() -> None:
    with pytest.raises(ValueError, match="session: a listening session, got 'object'"):
        listening_panel(object())


def test_scripted_answers_are_counted_apart_and_summarised_apart() -> None:
    session = listening.preference(clips(MODELS, prompts=2), seed=4)
    panel = listening_panel(session)
    assert "Reveal unlocks once every trial is answered (0 of 6 so far)" in panel.reveal_note.value
    assert panel.reveal_button.disabled and "0 answered" in panel.header.value
    for _ in range(2):  # two answers by hand
        play_all(panel)
        panel.answer_box.children[0].click()
    assert "(2 answered)" in panel.header.value
    assert "(2 of 6 so far)" in panel.reveal_note.value
    listening.simulate(session, prefer=MODELS[1], seed=1)  # the rest by the scripted listener
    assert panel.trial is None and not panel.reveal_button.disabled
    assert "2 by you, 4 by the scripted listener" in panel.header.value
    assert panel.reveal_note.value == ""
    panel.reveal()
    html = panel.results.value
    assert "Your answers (2 trials)" in html and "The scripted listener (4 trials)" in html
    assert set(panel.summaries) == {"person", "scripted listener"}
    assert panel.summaries["person"]["offered"].sum() == 2 * 2  # two pair trials, never mixed


def test_players_and_controls_are_reused_never_closed(monkeypatch) -> None:
    """Closing a widget the page still shows makes JupyterLab log "No such comm" when the
    browser reports on it: the panel makes its widgets once and never closes them."""
    closed = []
    monkeypatch.setattr(W.Widget, "close", lambda self: closed.append(self))
    session = listening.mushra(clips(MODELS, prompts=2), reference=MODELS[1], seed=3)
    panel = listening_panel(session)
    first = dict(panel.players), dict(panel.sliders)
    play_all(panel)
    panel.rate_button.click()
    assert panel.trial == 1
    assert all(panel.players[k] is p for k, p in first[0].items())
    assert all(panel.sliders[k] is s for k, s in first[1].items())
    play_all(panel)
    panel.rate_button.click()
    panel.reveal()
    assert closed == []


def test_mushra_panel_shows_the_reference_first_and_the_words_beside_each_slider() -> None:
    session = listening.mushra(clips(MODELS, prompts=1), reference=MODELS[1], seed=2)
    panel = listening_panel(session)
    rows = panel.play_box.children
    assert [r.children[0].label for r in rows] == ["Reference", "A", "B", "C"]
    assert len(rows[0].children) == 2  # the reference: played, not rated
    for row in rows[1:]:
        player, mark, scale, value = row.children
        words = scale.children[1].value
        assert [w in words for w in ("Bad", "Poor", "Fair", "Good", "Excellent")] == [True] * 5
        assert words.index("Bad") < words.index("Excellent")
        assert "50 (Fair)" in value.value
        scale.children[0].value = 85
        assert "85 (Excellent)" in value.value


def test_the_panel_plays_the_common_format_x_never_a_copy_of_a() -> None:
    session = listening.abx(clips(), seed=1)
    panel = listening_panel(session)
    data = {label: bytes(p.value) for label, p in panel.players.items()}
    assert len(set(data.values())) == 3 and len({len(d) for d in data.values()}) == 1
    samples, rate = audio.decode(data["X"])
    assert rate == 48000 and samples.shape[0] == 2


def test_x_never_shares_a_lead_in_with_a_even_when_their_draws_coincide(monkeypatch) -> None:
    """Each label drew its own lead-in from the session key, so X (the same clip as A or B)
    took its twin's lead-in, and so its bytes, in one trial of 1,151 (a fresh clone's run
    saw it). Here every label's first draw is the same number: the labels must still get
    different lead-ins, and X bytes of its own."""
    from songlab.listening import _format as fmt

    real = fmt.lead
    monkeypatch.setattr(
        fmt,
        "lead",
        lambda key, *parts, variant=0: 77 if variant == 0 else real(key, *parts, variant=variant),
    )
    session = listening.abx(clips(), seed=1)
    for t in range(len(session.trials)):
        leads = session._leads(session.trials[t])
        assert len(set(leads.values())) == len(leads) == 3 and 77 in leads.values()
    panel = listening_panel(session)
    data = {label: bytes(p.value) for label, p in panel.players.items()}
    assert len(set(data.values())) == 3


def test_a_double_click_on_an_answer_saves_one_answer_for_the_trial_on_screen() -> None:
    session = listening.preference(clips(), seed=3)
    panel = listening_panel(session)
    play_all(panel)
    prefer_a = panel.answer_box.children[0]
    prefer_a.click()
    prefer_a.click()  # the second click of a double click meets trial 2
    assert session.answers == {0: session.answers[0]} and len(session.answers) == 1
    assert panel.trial == 1 and all(b.disabled for b in panel.answer_box.children)
    status = panel.status_line.value
    assert "Not saved: play A and B" in status and "trial 2" in status
    assert "NotPlayedError" not in status and "trial 1:" not in status
    play_all(panel)  # the next action replaces it
    prefer_a.click()
    assert "Trial 2 answered: I prefer A." in panel.status_line.value
    assert "Not saved" not in panel.status_line.value
