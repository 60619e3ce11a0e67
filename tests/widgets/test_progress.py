"""The progress panel against a scripted client: drops resumed, many rows, errors shown.

The panel against the real sandbox is in test_live.py; here the stream is a
script, so every branch (drop, timeout, broken connection, failure) is exercised
deterministically.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from songlab.spec import TRANSLATION_STEPS
from songlab.widgets.progress import ProgressPanel


@dataclass
class ScriptedGenerations:
    """``stream`` serves events of a script, cutting each connection after ``drop_after``."""

    scripts: dict[str, list[dict]]
    finals: dict[str, dict]
    drop_after: int | None = None
    raise_on_connect: int = 0  # the first n connections raise
    connects: list[tuple[str, int | None]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def stream(self, task_id: str, *, after: int = 0) -> Iterator[dict]:
        with self.lock:
            self.connects.append((task_id, after))
            if self.raise_on_connect:
                self.raise_on_connect -= 1
                raise ConnectionError("connection reset by peer")
        sent = 0
        for event in self.scripts[task_id]:
            if event["seq"] <= (after or 0):
                continue
            if self.drop_after is not None and sent >= self.drop_after:
                return
            sent += 1
            yield event

    def get(self, task_id: str) -> dict:
        return {"task_id": task_id, **self.finals[task_id]}


@dataclass
class FakeClient:
    generations: Any


def song_script(task_id: str, n: int = 6) -> list[dict]:
    events = [
        {
            "seq": i,
            "kind": "progress",
            "task_id": task_id,
            "status": "processing",
            "progress": i / (n + 1),
        }
        for i in range(1, n + 1)
    ]
    return [*events, {"seq": n + 1, "kind": "terminal", "status": "completed"}]


def test_bar_reaches_its_end_and_resumes_after_drops() -> None:
    gens = ScriptedGenerations(
        {"t1": song_script("t1")}, {"t1": {"status": "completed"}}, drop_after=2
    )
    panel = ProgressPanel(FakeClient(gens))
    row = panel.track("t1", label="song")
    state = row.wait(10)
    assert state.done and state.status == "completed"
    assert row.bar.value == row.bar.max == 100
    assert row.bar.bar_style == "success"
    assert state.resumes == 3  # 7 events, 2 per connection
    assert [after for _, after in gens.connects] == [0, 2, 4, 6]
    assert "completed" in row.status.value
    assert panel.sink.errors == []


def test_translation_row_names_its_six_steps() -> None:
    script, seq = [], 0
    for step in TRANSLATION_STEPS:
        for phase in ("started", "finished"):
            seq += 1
            script.append({"seq": seq, "kind": "progress", "step": step, "phase": phase})
    script.append({"seq": seq + 1, "kind": "terminal", "status": "completed"})
    gens = ScriptedGenerations({"tr": script}, {"tr": {"status": "completed"}}, drop_after=5)
    panel = ProgressPanel(FakeClient(gens))
    row = panel.track("tr", label="translation")
    row.wait(10)
    for i, step in enumerate(TRANSLATION_STEPS, 1):
        assert f"{i} {step}" in row.steps.value
    assert row.steps.layout.display == ""
    assert row.bar.value == 100


def test_many_tasks_in_one_panel() -> None:
    ids = [f"t{i}" for i in range(5)]
    gens = ScriptedGenerations(
        {t: song_script(t, 3) for t in ids}, {t: {"status": "completed"} for t in ids}, drop_after=2
    )
    panel = ProgressPanel(FakeClient(gens))
    for t in ids:
        panel.track(t)
    assert panel.track("t0") is panel.rows["t0"]  # tracking twice keeps one row
    states = panel.wait(10)
    assert len(panel._box.children) == 5
    assert all(s.status == "completed" and s.fraction == 1.0 for s in states.values())


def test_failure_shows_the_error_message() -> None:
    script = [
        {"seq": 1, "kind": "progress", "progress": 0.3},
        {"seq": 2, "kind": "terminal", "status": "failed"},
    ]
    final = {
        "status": "failed",
        "failure": {
            "error": "InvalidGenerationInput",
            "message": "extend_type: must be tail or head",
        },
    }
    panel = ProgressPanel(FakeClient(ScriptedGenerations({"t": script}, {"t": final})))
    row = panel.track("t", label="extend")
    state = row.wait(10)
    assert state.status == "failed"
    assert state.error == "InvalidGenerationInput: extend_type: must be tail or head"
    assert "extend_type: must be tail or head" in row.status.value
    assert row.bar.bar_style == "danger"


def test_broken_connections_are_resumed_and_shown_while_resuming() -> None:
    gens = ScriptedGenerations(
        {"t": song_script("t", 2)}, {"t": {"status": "completed"}}, raise_on_connect=2
    )
    panel = ProgressPanel(FakeClient(gens))
    state = panel.track("t").wait(10)
    assert state.status == "completed" and state.resumes == 2


def test_a_stream_that_never_finishes_falls_back_to_polling() -> None:
    gens = ScriptedGenerations(
        {"t": [{"seq": 1, "kind": "progress", "progress": 0.5}]}, {"t": {"status": "completed"}}
    )
    panel = ProgressPanel(FakeClient(gens), max_resumes=2, poll_interval=0.01)
    state = panel.track("t").wait(10)
    assert state.done and state.fraction == 1.0 and state.resumes == 3


class Boom(Exception):
    pass


def test_errors_of_the_thread_and_of_callbacks_are_shown_in_the_panel() -> None:
    class Broken(ScriptedGenerations):
        def get(self, task_id: str) -> dict:
            raise Boom("snapshot unavailable")

    panel = ProgressPanel(FakeClient(Broken({"t": song_script("t", 1)}, {})))
    seen = threading.Event()

    def callback(row: Any) -> None:
        seen.set()
        raise RuntimeError("callback broke")

    panel.on_done(callback)
    row = panel.track("t", label="song")
    row.wait(10)
    assert seen.is_set()  # callbacks ran before wait() returned
    assert panel.sink.errors == [
        "song: Boom: snapshot unavailable",
        "song callback: RuntimeError: callback broke",
    ]
    assert "callback broke" in panel.sink.line.value
    assert row.state.status == "completed"  # the stream's terminal event stands
    assert "snapshot unavailable" in row.status.value
    assert {
        "name": "stderr",
        "output_type": "stream",
        "text": "song callback: RuntimeError: callback broke\n",
    } in panel.sink.log.outputs


def test_a_refused_stream_is_not_resumed_and_is_shown() -> None:
    from songlab.client import NotFound

    class Gone(ScriptedGenerations):
        def stream(self, task_id: str, *, after: int = 0) -> Iterator[dict]:
            self.connects.append((task_id, after))
            raise NotFound(None, status_code=404)
            yield {}  # pragma: no cover - makes this a generator

    gens = Gone({}, {})
    panel = ProgressPanel(FakeClient(gens))
    row = panel.track("missing", label="lost")
    state = row.wait(10)
    assert len(gens.connects) == 1  # no retry loop on an answer
    assert state.done and state.status == "failed"
    assert state.error == panel.sink.errors[0] == "lost: NOT_FOUND [404]"
    assert "NOT_FOUND [404]" in row.status.value
