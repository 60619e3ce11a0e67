"""The stream resume state machine, without a server."""

from __future__ import annotations

import json

import pytest

from songlab.client import StreamError
from songlab.client._models import parse_event
from songlab.client._sse import MAX_RECONNECTS_WITHOUT_PROGRESS, StreamResume


def ev(seq, kind="progress", **extra):
    return parse_event(json.dumps({"seq": seq, "kind": kind, "task_id": "t", **extra}))


def test_first_connection_has_no_cursor_then_resumes_after_last_seq():
    s = StreamResume("t")
    assert s.params() == {}
    assert s.accept(ev(1)) and s.accept(ev(2))
    assert s.params() == {"after": 2}


def test_duplicates_and_old_events_are_dropped():
    s = StreamResume("t")
    seen = [e.seq for e in map(ev, [1, 2, 2, 1, 3, 3, 4]) if s.accept(e)]
    assert seen == [1, 2, 3, 4]


def test_terminal_finishes_and_later_events_are_ignored():
    s = StreamResume("t")
    assert s.accept(ev(1)) and s.accept(ev(2, "terminal", status="completed"))
    assert s.finished and not s.accept(ev(3))
    with pytest.raises(RuntimeError):
        s.on_disconnect()


def test_timeout_and_error_are_consumed_and_resume_from_their_cursor():
    s = StreamResume("t")
    s.accept(ev(1))
    # replaying history: the signal's seq (10) is past events 2-9 not yet seen
    t = ev(10, "error", cursor=1)
    assert t.is_resume_signal and not s.accept(t)
    assert s.on_disconnect() == 0.0
    assert s.params() == {"after": 1}
    assert [e.seq for e in map(ev, [2, 3]) if s.accept(e)] == [2, 3]
    assert s.signals == 1


def test_idle_timeouts_do_not_count_as_failures():
    s = StreamResume("t")
    s.accept(ev(1))
    for i in range(3 * MAX_RECONNECTS_WITHOUT_PROGRESS):
        assert not s.accept(ev(100 + i, "timeout", cursor=1))
        s.on_disconnect()
    assert s.params() == {"after": 1} and s.idle_timeouts == 3 * MAX_RECONNECTS_WITHOUT_PROGRESS


def test_error_signals_without_progress_are_bounded():
    s = StreamResume("t")
    with pytest.raises(StreamError):
        for i in range(MAX_RECONNECTS_WITHOUT_PROGRESS + 1):
            s.accept(ev(100 + i, "error", cursor=0))
            s.on_disconnect()


def test_an_explicit_after_skips_earlier_events():
    s = StreamResume("t", last_seq=5)
    assert s.params() == {"after": 5}
    assert not s.accept(ev(5)) and s.accept(ev(6))


def test_reconnects_without_progress_are_bounded():
    s = StreamResume("t")
    s.accept(ev(1))
    for _ in range(MAX_RECONNECTS_WITHOUT_PROGRESS):
        assert s.on_disconnect() >= 0.0
    with pytest.raises(StreamError) as info:
        s.on_disconnect("ReadError")
    assert info.value.task_id == "t" and info.value.last_seq == 1


def test_progress_resets_the_failure_count():
    s = StreamResume("t")
    for seq in range(1, 20):
        s.on_disconnect()
        assert s.accept(ev(seq))
    assert s.failures == 0


def test_event_parsing_falls_back_to_sse_fields():
    e = parse_event(json.dumps({"status": "processing"}), sse_id="7", sse_event="progress")
    assert (e.seq, e.kind, e.status) == (7, "progress", "processing")
