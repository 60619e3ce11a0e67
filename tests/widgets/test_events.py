"""The progress reducer: fraction, translation's six steps, final status and error, resumes."""

from __future__ import annotations

from dataclasses import dataclass

from songlab.spec import TRANSLATION_STEPS
from songlab.widgets import _events as ev


def fold(state: ev.TaskState, events: list[dict]) -> ev.TaskState:
    for e in events:
        state = ev.reduce(state, e)
    return state


def test_progress_then_terminal_completes() -> None:
    s = fold(
        ev.initial("t1"),
        [
            {"seq": 1, "kind": "progress", "status": "processing", "progress": 0.25},
            {"seq": 2, "kind": "progress", "progress": 0.5},
        ],
    )
    assert (s.status, s.fraction, s.done) == ("processing", 0.5, False)
    s = ev.reduce(s, {"seq": 3, "kind": "terminal", "status": "completed"})
    assert (s.status, s.fraction, s.done, s.error) == ("completed", 1.0, True, None)
    assert ev.describe(s) == "t1: completed (100%)"


def test_fraction_never_goes_back_and_duplicates_are_ignored() -> None:
    s = fold(
        ev.initial("t"),
        [
            {"seq": 1, "kind": "progress", "progress": 0.6},
            {"seq": 2, "kind": "progress", "progress": 0.3},
        ],
    )
    assert s.fraction == 0.6
    again = ev.reduce(s, {"seq": 2, "kind": "terminal", "status": "completed"})
    assert again == s  # a replay of seq 2 after a resume changes nothing


def test_translation_shows_its_six_named_steps() -> None:
    s = ev.initial("tr")
    seq = 0
    for i, step in enumerate(TRANSLATION_STEPS):
        seq += 1
        s = ev.reduce(s, {"seq": seq, "kind": "progress", "step": step, "phase": "started"})
        assert s.current_step == step
        assert s.message == f"step {i + 1}/6 {step}: started"
        seq += 1
        s = ev.reduce(s, {"seq": seq, "kind": "progress", "step": step, "phase": "finished"})
    assert [name for name, _ in s.steps] == list(TRANSLATION_STEPS)
    assert all(phase == "finished" for _, phase in s.steps)
    assert 0.9 < s.fraction < 1.0 and not s.done
    s = ev.reduce(s, {"seq": seq + 1, "kind": "terminal", "status": "completed"})
    assert s.fraction == 1.0


def test_a_later_translation_step_finishes_the_earlier_ones() -> None:
    s = ev.reduce(ev.initial("tr"), {"seq": 5, "kind": "progress", "step": "separate"})
    assert dict(s.steps) == {
        "transcribe": "finished",
        "translate": "finished",
        "separate": "started",
        "revoice": "pending",
        "layer": "pending",
        "render": "pending",
    }
    assert s.fraction == 2.5 / 6


def test_failed_terminal_carries_the_message_and_settle_adds_the_code() -> None:
    s = ev.reduce(ev.initial("t"), {"seq": 1, "kind": "terminal", "status": "failed"})
    assert s.done and s.status == "failed" and s.error == "the task failed"
    s = ev.settle(
        s,
        {
            "status": "failed",
            "failure": {"error": "InvalidGenerationInput", "message": "extend_type: bad"},
        },
    )
    assert s.error == "InvalidGenerationInput: extend_type: bad"
    assert ev.describe(s) == "t: failed - InvalidGenerationInput: extend_type: bad"


def test_timeout_and_error_events_do_not_end_the_row() -> None:
    s = fold(
        ev.initial("t"),
        [
            {"seq": 1, "kind": "progress", "progress": 0.2},
            {"seq": 2, "kind": "timeout", "cursor": "1"},
        ],
    )
    assert not s.done and s.last_seq == 1
    s = ev.reduce(s, {"seq": 4, "kind": "error", "message": "stream dropped", "cursor": 1})
    assert not s.done and s.message == "stream dropped; resuming"


def test_an_error_event_resumes_from_its_cursor_not_its_seq() -> None:
    # as the sandbox sends them under drop_stream_after=2: the error takes seq 4,
    # but only seqs 1-2 were delivered; seq 3 comes on the next connection
    s = fold(
        ev.initial("t"),
        [
            {"seq": 1, "kind": "progress", "progress": 0.1},
            {"seq": 2, "kind": "progress", "progress": 0.2},
            {"seq": 4, "kind": "error", "cursor": 2},
        ],
    )
    assert s.last_seq == 2
    s = ev.reduce(s, {"seq": 3, "kind": "progress", "progress": 0.3})
    assert s.fraction == 0.3 and s.last_seq == 3


def test_settle_from_snapshot() -> None:
    s = ev.settle(ev.initial("t"), {"status": "processing", "progress": 0.4})
    assert (s.status, s.fraction, s.done) == ("processing", 0.4, False)
    s = ev.settle(s, {"status": "completed"})
    assert s.done and s.fraction == 1.0


@dataclass
class _Obj:
    seq: int
    kind: object
    progress: float | None = None
    status: str | None = None


class _Kind:
    value = "progress"


def test_event_objects_are_accepted() -> None:
    s = ev.reduce(ev.initial("t"), _Obj(1, _Kind(), progress=0.75))
    assert s.fraction == 0.75 and s.status == "processing"
