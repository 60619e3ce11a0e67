"""Progress with events that carry only their kind and seq (all the spec promises):
indeterminate until terminal, never a stuck "0%", then ONE GET gives the outcome."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from songlab.client._models import parse_event
from songlab.widgets import _events as ev
from songlab.widgets.progress import ProgressPanel


def spec_script(n: int = 4) -> list[dict]:
    return [
        *({"seq": i, "kind": "progress"} for i in range(1, n + 1)),
        {"seq": n + 1, "kind": "terminal"},
    ]


@dataclass
class SpecGenerations:
    """Streams kind+seq events; the snapshot says ``processing`` for the first ``late`` GETs."""

    final: dict
    late: int = 0
    gets: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def stream(self, task_id: str, *, after: int = 0) -> Iterator[Any]:
        for e in spec_script():
            if e["seq"] > after:  # as the client yields them: parsed from the SSE frame
                yield parse_event(
                    f'{{"seq": {e["seq"]}}}', sse_id=str(e["seq"]), sse_event=e["kind"]
                )

    def get(self, task_id: str) -> dict:
        with self.lock:
            self.gets += 1
            if self.gets <= self.late:
                return {"task_id": task_id, "status": "processing", "output": {}}
        return {"task_id": task_id, **self.final}


@dataclass
class FakeClient:
    generations: Any


def test_the_reducer_claims_no_percentage_until_the_outcome_is_read() -> None:
    s = ev.initial("t", label="song")
    for e in spec_script()[:-1]:
        s = ev.reduce(s, e)
        assert not s.determinate and not s.done and "%" not in ev.describe(s)
    assert s.status == "processing" and s.events == 4
    assert ev.describe(s) == "song: processing (4 events, progress not reported)"
    s = ev.reduce(s, spec_script()[-1])
    assert s.ended and not s.done and "%" not in ev.describe(s)
    s = ev.settle(s, {"task_id": "t", "status": "completed", "output": {}})
    assert (s.done, s.status, s.fraction) == (True, "completed", 1.0)
    assert ev.describe(s) == "song: completed (100%)"


def test_a_failed_outcome_without_detail_says_so() -> None:
    s = ev.reduce(
        ev.reduce(ev.initial("t"), {"seq": 1, "kind": "progress"}), {"seq": 2, "kind": "terminal"}
    )
    s = ev.settle(s, {"task_id": "t", "status": "failed"})
    assert s.done and s.status == "failed" and s.error == "the task failed"


def test_progress_or_steps_make_the_row_determinate() -> None:
    s = ev.reduce(ev.initial("t"), {"seq": 1, "kind": "progress", "progress": 0.4})
    assert s.determinate and ev.describe(s).endswith("40%")
    s = ev.reduce(
        ev.initial("t"), {"seq": 1, "kind": "progress", "step": "translate", "phase": "started"}
    )
    assert s.determinate and [n for n, _ in s.steps][:2] == ["transcribe", "translate"]


def test_the_panel_finishes_with_one_get_after_terminal() -> None:
    gens = SpecGenerations({"status": "completed", "output": {"assets": []}})
    panel = ProgressPanel(FakeClient(gens), poll_interval=0.01)
    row = panel.track("t1", label="song")
    state = row.wait(timeout=10)
    assert row.finished.is_set() and state.done and state.status == "completed"
    assert gens.gets == 1  # the outcome: one GET
    assert row.bar.value == 100 and row.bar.bar_style == "success"
    assert row.bar.style.bar_color is None  # no longer the grey indeterminate bar
    assert "completed (100%)" in row.status.value


def test_the_panel_polls_when_the_snapshot_lags_the_terminal_event() -> None:
    gens = SpecGenerations({"status": "completed", "output": {}}, late=2)
    panel = ProgressPanel(FakeClient(gens), poll_interval=0.01)
    state = panel.track("t1").wait(timeout=10)
    assert state.done and state.status == "completed" and gens.gets == 3


def test_an_indeterminate_row_is_drawn_as_a_full_grey_bar() -> None:
    panel = ProgressPanel(FakeClient(SpecGenerations({"status": "completed"})))
    row = panel.track("t1", start=False)
    row.apply({"seq": 1, "kind": "progress"})
    assert row.bar.value == 100 and row.bar.style.bar_color is not None
    assert "progress not reported" in row.status.value and "0%" not in row.status.value
