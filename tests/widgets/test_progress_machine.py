"""A progress row as a state machine: random streams of events (progress, steps, repeats
after a resume, timeouts and errors with cursors, a terminal with or without the outcome),
notes of resumes, snapshots and the ticking clock, folded into a :class:`TaskRow`, with the
row's promises checked after every step:

- the screen is the state: the bar and the status line are what the row's state says
  (a note included, until the next event takes it away), even after the clock ticks;
- progress never goes back, an event seen once is not counted twice, and a finished row
  does not change again;
- a row with no reported progress claims no percentage.
"""

from __future__ import annotations

import html
import re
from dataclasses import replace

import hypothesis.strategies as st
import pytest
from hypothesis import settings
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

import songlab.widgets._events as events
from songlab.spec import TRANSLATION_STEPS
from songlab.widgets.progress import TaskRow


def _no_time(shown: str) -> str:
    """The status line's text without its elapsed time and its colour."""
    return re.sub(r" \u00b7 \d+( min \d+)? s", "", re.sub(r"<[^>]+>", "", shown))


def _outcome(state: events.TaskState) -> events.TaskState:
    """A row's state but what may still be said of it once done: a note of its stream, the
    resumes, and its error (checked apart: a failure's generic "the task failed" may become
    the snapshot's code and message, nothing else)."""
    return replace(state, note="", note_tone="warn", resumes=0, error=None)


def _same_end(now: events.TaskState, then: events.TaskState) -> bool:
    refined = now.error == then.error or then.error == "the task failed"
    return _outcome(now) == _outcome(then) and refined


class RowMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.row = TaskRow("task-1", label="take 1")
        self.seq = 0
        self.fraction = 0.0
        self.done_at: events.TaskState | None = None

    def _fold(self, event: dict) -> None:
        before = self.row.state
        self.row.apply(event)
        after = self.row.state
        if before.done:
            assert _same_end(after, before), "a finished row changed"
        if after.events > before.events:
            assert after.note == "", "a new event left an old note"

    def _next(self) -> int:
        self.seq += 1
        return self.seq

    @rule(progress=st.floats(0, 1) | st.none(), status=st.sampled_from(["processing", None]))
    def a_progress_event(self, progress: float | None, status: str | None) -> None:
        event = {"seq": self._next(), "kind": "progress"}
        if progress is not None:
            event["progress"] = progress
        if status:
            event["status"] = status
        self._fold(event)

    @rule(step=st.sampled_from(TRANSLATION_STEPS), phase=st.sampled_from(["started", "finished"]))
    def a_step_event(self, step: str, phase: str) -> None:
        self._fold({"seq": self._next(), "kind": "progress", "step": step, "phase": phase})

    @rule(back=st.integers(0, 3))
    def a_repeat_after_a_resume(self, back: int) -> None:
        seen = self.row.state.last_seq  # what the row holds (a cut moves it to its cursor)
        if seen < 1:
            return
        before = self.row.state
        self.row.apply({"seq": max(1, seen - back), "kind": "progress", "progress": 0.01})
        assert self.row.state == before, "an event seen once was counted again"

    @rule(kind=st.sampled_from(["timeout", "error"]))
    def a_cut(self, kind: str) -> None:
        self._fold({"seq": self._next(), "kind": kind, "cursor": str(self.seq - 1)})

    @rule()
    def the_stream_is_resumed(self) -> None:
        resumes = self.row.state.resumes
        self.row.note("stream closed; resuming", resumed=True)
        assert self.row.state.resumes == resumes + 1
        assert "resuming" in self.row.status.value

    @rule(outcome=st.sampled_from(["completed", "failed", None]))
    def the_terminal_event(self, outcome: str | None) -> None:
        event = {"seq": self._next(), "kind": "terminal"}
        if outcome:
            event["status"] = outcome
        self._fold(event)

    @rule(status=st.sampled_from(["processing", "completed", "failed"]))
    def a_snapshot(self, status: str) -> None:
        self.row.settle({"status": status, "failure": {"error": "X", "message": "broke"}})

    @rule()
    def the_clock_ticks(self) -> None:
        self.row.tick()

    @invariant()
    def the_screen_is_the_state(self) -> None:
        s = self.row.state
        unknown = not (s.done or s.determinate)
        assert self.row.bar.value == (100 if unknown else round(s.fraction * 100))
        text = events.describe(s, label=False, elapsed=self.row.elapsed)
        if s.note:
            text += f" - {s.note}"
        # the elapsed time (" · 3 s") moves between the render and this check
        assert _no_time(self.row.status.value) == _no_time(html.escape(text))
        if unknown:
            assert "%" not in text  # no percentage claimed

    @invariant()
    def progress_never_goes_back_and_the_end_is_final(self) -> None:
        s = self.row.state
        assert s.fraction >= self.fraction
        self.fraction = s.fraction
        if self.done_at is not None:
            assert _same_end(s, self.done_at)
        if s.done:
            self.done_at = s


RowMachine.TestCase.settings = settings(max_examples=60, stateful_step_count=25, deadline=None)


class TestRowMachine(RowMachine.TestCase):
    pytestmark = pytest.mark.slow  # a few seconds of event sequences
