"""The listening panel as a state machine: random sequences of plays, what the browser
reports as heard (none, part, all of a clip), answer clicks and double clicks, the scripted
listener answering elsewhere, and Reveal, through the panel's widgets, with its promises
checked after each step:

- an answer is saved only from an enabled control, once, for the trial on screen: a double
  click's second click never answers the next trial;
- the answer controls are enabled exactly when every clip of the trial was heard for the
  session's minimum, and every line of the panel states that same minimum;
- the status line shows the last action only; Reveal is enabled exactly when every trial
  is answered.
"""

from __future__ import annotations

import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import HealthCheck, settings
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from songlab import listening
from songlab.widgets._listening_model import need_text
from songlab.widgets.listening import listening_panel

SR = 22050


def _clips() -> dict[str, list[tuple[np.ndarray, int]]]:
    t = np.arange(int(1.2 * SR)) / SR
    return {
        "model-a": [((0.2 * np.sin(2 * np.pi * 220 * t)).astype(np.float32)[None], SR)],
        "model-b": [((0.1 * np.sin(2 * np.pi * 330 * t)).astype(np.float32)[None], SR)],
    }


CLIPS = _clips()


class ListeningMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.session = listening.preference(CLIPS, prompts=["tones"], repeats=2, seed=5)
        self.panel = listening_panel(self.session)

    def controls(self) -> list:
        return list(self.panel.answer_box.children)

    @precondition(lambda self: self.panel.trial is not None)
    @rule(data=st.data())
    def play(self, data: st.DataObject) -> None:
        label = data.draw(st.sampled_from(sorted(self.panel.players)))
        self.panel.play(label)
        assert f"Playing {label}" in self.panel.status_line.value

    @precondition(lambda self: self.panel.trial is not None)
    @rule(data=st.data(), part=st.sampled_from([0.0, 0.3, 1.0]))
    def the_browser_reports_heard(self, data: st.DataObject, part: float) -> None:
        label = data.draw(st.sampled_from(sorted(self.panel.players)))
        player = self.panel.players[label]
        player.heard = max(player.heard, part * player.duration)

    def _click(self, i: int) -> None:
        p, s = self.panel, self.session
        if p.trial is None or i >= len(self.controls()):
            return
        trial, enabled = p.trial, not self.controls()[i].disabled
        before = dict(s.answers)
        self.controls()[i].click()
        gained = set(s.answers) - set(before)
        if enabled:
            assert gained == {trial}, "an enabled answer did not save the trial on screen"
            assert f"Trial {trial + 1} answered" in p.status_line.value
        else:
            assert gained == set(), "a disabled answer control saved an answer"
            assert "Not saved" in p.status_line.value
            if p.trial is not None:  # said for the trial on screen
                assert f"trial {p.trial + 1}" in p.status_line.value

    @rule(i=st.integers(0, 2))
    def click_an_answer(self, i: int) -> None:
        self._click(i)

    @rule(i=st.integers(0, 2))
    def double_click_an_answer(self, i: int) -> None:
        self._click(i)
        self._click(i)

    @precondition(lambda self: not self.session.done)
    @rule()
    def the_scripted_listener_answers_the_rest(self) -> None:
        listening.simulate(self.session, prefer="model-a", p=0.8, seed=1)
        assert self.panel.trial is None

    @rule()
    def click_reveal(self) -> None:
        p, enabled = self.panel, not self.panel.reveal_button.disabled
        if p._reveal_row not in p.children:
            return
        p.reveal_button.click()
        assert self.session.revealed == enabled
        if not enabled:
            assert "Not yet" in p.status_line.value

    @invariant()
    def controls_follow_what_was_heard(self) -> None:
        p, s = self.panel, self.session
        if p.trial is None:
            return
        everything = all(lab in s.played(p.trial) for lab in s.trials[p.trial].labels)
        assert all(c.disabled != everything for c in self.controls())

    @invariant()
    def every_line_states_the_sessions_minimum(self) -> None:
        p, need = self.panel, need_text(self.session.need)
        for mark in p.marks.values():
            if "heard" in mark.value:
                assert f"of {need}" in mark.value
        if p.trial is not None and "Play" in p.instruction.value:
            assert f"for at least {need} each, at normal speed" in p.instruction.value

    @invariant()
    def reveal_is_enabled_exactly_when_every_trial_is_answered(self) -> None:
        p, s = self.panel, self.session
        if p._reveal_row in p.children and not s.revealed:
            assert p.reveal_button.disabled != s.done


ListeningMachine.TestCase.settings = settings(
    max_examples=25,
    stateful_step_count=20,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


class TestListeningMachine(ListeningMachine.TestCase):
    pytestmark = pytest.mark.slow  # a few seconds of widget sequences
