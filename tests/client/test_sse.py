"""The stream and wait loops (resume cursor, dedupe, pacing, deadlines), without a server."""

from __future__ import annotations

import json
import random

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from songlab.client import (
    APIConnectionError,
    Forbidden,
    MalformedResponse,
    RetryPolicy,
    StreamError,
    TaskFailed,
    WaitTimeout,
)
from songlab.client._loop import StreamLoop, WaitLoop, bounded_timeout
from songlab.client._models import parse_event, parse_task
from songlab.client._sse import StreamResume
from tests.client.fakes import task_body

POLICY = RetryPolicy(base_s=0.1, cap_s=0.4, max_total_s=10.0)
TIMEOUT = httpx.Timeout(30.0, connect=10.0)


def ev(seq, kind="progress", **extra):
    return parse_event(json.dumps({"seq": seq, "kind": kind, "task_id": "t", **extra}))


def frame(seq, kind="progress", **extra):
    return json.dumps({"seq": seq, "kind": kind, "task_id": "t", **extra}), str(seq), kind


def loop(now=0.0, deadline=None, after=0, policy=POLICY):
    return StreamLoop(
        "t",
        path="/v1/generations/t/stream",
        after=after,
        policy=policy,
        rng=random.Random(2),
        timeout=TIMEOUT,
        now=now,
        deadline=deadline,
    )


# -- StreamResume: cursor and dedupe -------------------------------------------------------


def test_first_connection_has_no_cursor_then_resumes_after_last_seq():
    s = StreamResume("t")
    assert s.params() == {}
    assert s.accept(ev(1)) and s.accept(ev(2))
    assert s.params() == {"after": 2}


def test_duplicates_and_old_events_are_dropped():
    s = StreamResume("t")
    assert [e.seq for e in map(ev, [1, 2, 2, 1, 3, 3, 4]) if s.accept(e)] == [1, 2, 3, 4]


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
    assert s.params() == {"after": 1}
    assert [e.seq for e in map(ev, [2, 3]) if s.accept(e)] == [2, 3]
    assert s.signals == 1


def test_an_explicit_after_skips_earlier_events():
    s = StreamResume("t", last_seq=5)
    assert s.params() == {"after": 5}
    assert not s.accept(ev(5)) and s.accept(ev(6))


def test_progress_resets_the_failure_count():
    s = StreamResume("t")
    for seq in range(1, 20):
        assert s.on_disconnect() == 1
        assert s.accept(ev(seq))
    assert s.failures == 0


# -- frames --------------------------------------------------------------------------------


def test_event_parsing_falls_back_to_sse_fields():
    e = parse_event(json.dumps({"status": "processing"}), sse_id="7", sse_event="progress")
    assert (e.seq, e.kind, e.status) == (7, "progress", "processing")


@pytest.mark.parametrize(
    ("data", "sse_id"),
    [
        ("{not json", "1"),
        ("[1, 2]", "1"),
        ('"text"', "1"),
        ('{"seq": "x1"}', "1"),
        ('{"seq": 1.5}', "1"),
        ('{"seq": true}', "1"),
        ('{"kind": "progress"}', "seven"),
        ('{"seq": 3, "cursor": "later"}', "3"),
        ('{"seq": 2, "kind": 5}', "2"),
        ('{"seq": 2}', "x2"),
        ('{"seq": 2}', "3"),
    ],
    ids=[
        "not-json",
        "array",
        "string",
        "seq-text",
        "seq-float",
        "seq-bool",
        "id-text",
        "cursor-text",
        "kind-number",
        "id-text-beside-seq",
        "id-disagrees",
    ],
)
def test_a_malformed_frame_is_a_songlab_error(data, sse_id):
    with pytest.raises(MalformedResponse) as info:
        loop().on_frame(data, sse_id, "progress")
    assert "stream frame" in str(info.value)


def test_keepalives_and_repeats_are_not_shown():
    lp = loop()
    assert lp.on_frame("", "", "") is None
    assert lp.on_frame(*frame(1)).seq == 1
    assert lp.on_frame(*frame(1)) is None
    assert lp.on_frame(*frame(2, "terminal", status="completed")).is_terminal and lp.finished


# -- StreamLoop: pacing, refusals, deadlines -------------------------------------------------


def test_reconnect_is_immediate_after_progress_then_backs_off_within_the_cap():
    lp = loop()
    lp.connect(0.0)
    lp.on_frame(*frame(1))
    assert lp.next_delay(1.0) == 0.0
    delays = [lp.next_delay(1.0 + i * 0.1) for i in range(8)]
    assert all(0.0 <= d <= POLICY.cap_s for d in delays) and max(delays) > 0
    params, _ = lp.connect(2.0)
    assert params == {"after": 1}


def test_a_stream_without_progress_gives_up_after_the_stall_limit_with_its_cursor():
    lp = loop(after=4)
    t = 0.0
    with pytest.raises(StreamError) as info:
        for _ in range(10_000):
            lp.on_broken(httpx.ConnectError("refused"))
            t += lp.next_delay(t) + 0.01
    assert POLICY.max_total_s - 1 <= t <= POLICY.max_total_s + 1
    assert info.value.last_seq == 4 and "ConnectError" in str(info.value)


def test_progress_restarts_the_stall_clock():
    lp = loop()
    t = 0.0
    for seq in range(1, 30):  # a restart every second for 30 s, each bringing one event
        lp.on_frame(*frame(seq))
        t += 1.0
        lp.next_delay(t)
    assert t > POLICY.max_total_s


def test_with_a_deadline_the_stream_ends_with_wait_timeout():
    lp = loop(deadline=5.0)
    with pytest.raises(WaitTimeout) as info:
        t = 0.0
        for _ in range(10_000):
            t += lp.next_delay(t) + 0.05
    assert info.value.task_id == "t"
    with pytest.raises(WaitTimeout):
        lp.connect(5.0)


def test_refusals_a_retry_cannot_change_are_raised():
    with pytest.raises(Forbidden):
        loop().on_refused(403, b'{"error": "FORBIDDEN"}', httpx.Headers())


def test_gateway_refusals_are_retried_after_retry_after():
    lp = loop()
    lp.on_frame(*frame(1))
    lp.on_refused(503, b"<html>maintenance</html>", httpx.Headers({"Retry-After": "2"}))
    assert lp.next_delay(0.0) == 2.0
    assert "503" in lp.reason


@pytest.mark.parametrize(
    "exc",
    [httpx.UnsupportedProtocol("ftp"), httpx.DecodingError("gzip")],
    ids=["unsupported-protocol", "decoding"],
)
def test_an_unfixable_transport_error_is_raised_as_a_songlab_error(exc):
    with pytest.raises(APIConnectionError):
        loop().on_broken(exc)


def test_connections_never_outlive_the_deadline():
    _, t = loop(deadline=3.0).connect(1.0)
    assert t.connect == t.read == t.write == t.pool == 2.0
    _, t = loop(deadline=1000.0).connect(0.0)
    assert t.read == 30.0 and t.connect == 10.0
    _, t = loop().connect(0.0)
    assert t == TIMEOUT
    assert bounded_timeout(TIMEOUT, -5).connect == 0.5


# -- WaitLoop ------------------------------------------------------------------------------


def test_wait_loop_polls_with_a_growing_interval_until_done():
    w = WaitLoop("t", timeout=100.0, poll_interval=0.5, raise_on_failure=True, now=0.0)
    running = parse_task(task_body("t", status="processing"))
    delays = [w.on_task(running, 1.0) for _ in range(8)]
    assert delays[0] == 0.5 and delays == sorted(delays) and max(delays) == 5.0
    assert w.on_task(parse_task(task_body("t")), 2.0) is None


def test_wait_loop_deadline_and_failure():
    w = WaitLoop("t", timeout=10.0, poll_interval=4.0, raise_on_failure=True, now=0.0)
    running = parse_task(task_body("t", status="processing"))
    assert w.on_task(running, 8.0) == 2.0  # never sleeps past the deadline
    with pytest.raises(WaitTimeout) as info:
        w.on_task(running, 10.0)
    assert info.value.task_id == "t" and info.value.last_status == "processing"
    failed = parse_task(task_body("t", status="failed", failure={"error": "X", "message": "m"}))
    with pytest.raises(TaskFailed):
        w.on_task(failed, 1.0)
    quiet = WaitLoop("t", timeout=10.0, poll_interval=1.0, raise_on_failure=False, now=0.0)
    assert quiet.on_task(failed, 1.0) is None


# -- property: any pattern of cuts, replays and signals delivers the log once, in order ---------


@settings(max_examples=200, deadline=None, derandomize=True)
@given(
    n=st.integers(1, 30),
    cuts=st.lists(
        st.tuples(st.integers(0, 6), st.booleans(), st.integers(0, 3)), min_size=1, max_size=40
    ),
)
def test_any_cuts_and_replays_deliver_every_event_once_in_order(n, cuts):
    """The server's log is seqs 1..n (the last terminal). Each connection replays from the
    cursor, may first resend old events, delivers ``k`` new ones, then is cut or sends an
    ``error`` signal carrying its cursor. The caller must see exactly the log."""
    log = [(seq, "terminal" if seq == n else "progress") for seq in range(1, n + 1)]
    lp = loop(deadline=1e9)
    seen, t, signal_seq = [], 0.0, 1000
    for k, signal, resend in cuts + [(n, False, 0)] * (n + 1):
        params, _ = lp.connect(t)
        after = params.get("after", 0)
        replay = [e for e in log if e[0] <= after][-resend:] if resend else []
        for seq, kind in replay + [e for e in log if e[0] > after][:k]:
            event = lp.on_frame(*frame(seq, kind))
            if event is not None:
                seen.append((event.seq, event.kind))
        if lp.finished:
            break
        if signal:
            signal_seq += 1
            assert lp.on_frame(*frame(signal_seq, "error", cursor=lp.resume.last_seq)) is None
        t += lp.next_delay(t)
    assert seen == log
