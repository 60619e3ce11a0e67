"""docs/widgets.md's state tables say what is: each state a table names is built from the
panel's model (or the panel itself) and every "on", "off" and "none" of its row is checked.

A row of a table that this test cannot build fails it, so a table cannot gain a state the
models do not have; a state built here that is not in the table fails it too.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

import songlab.widgets._events as events
from songlab import listening
from songlab.client import InvalidGenerationInput
from songlab.widgets import _gate
from songlab.widgets._clone_model import CloneInputs, CloneState, Consent, Sent
from songlab.widgets._form_model import FormState, Inputs, Made
from songlab.widgets.listening import listening_panel
from songlab.widgets.progress import TaskRow

DOC = Path(__file__).resolve().parents[2] / "docs" / "widgets.md"
TOOLS = {("generate_song", "v5"): "tool-song-v5"}


def table(section: str) -> dict[str, list[str]]:
    """The first table under ``### section``: its first column -> the other cells."""
    text = DOC.read_text(encoding="utf-8")
    body = text.split(f"### {section}\n", 1)[1]
    rows: dict[str, list[str]] = {}
    started = False
    for line in body.splitlines():
        if line.startswith("|"):
            started = True
            cells = [c.strip() for c in line.strip("|").split("|")]
            if set(cells[0]) <= {"-"} or cells[0] == "State":
                continue
            rows[cells[0]] = cells[1:]
        elif started:
            break
    return rows


def switch(cell: str) -> str:
    word = re.match(r"(on|off|none)\b", cell)
    assert word, f"a cell of a state table starts with on, off or none: {cell!r}"
    return word.group(1)


# -- the generation form ------------------------------------------------------------------

READY = FormState(Inputs("generate_song", "v5", prompt="rain", duration=30.0), TOOLS)
RECORDED = SimpleNamespace(task_id="3f2c1a2b-0000", accepted_at=datetime(2026, 1, 1, tzinfo=UTC))
FORM: dict[str, Callable[[], tuple[FormState, Any]]] = {
    "a value breaks a rule": lambda: (
        replace(READY, inputs=replace(READY.inputs, prompt="")),
        None,
    ),
    "ready, this take not made": lambda: (READY, None),
    "the record holds this take": lambda: (READY, RECORDED),
    "this take made": lambda: (
        replace(READY, made={READY.submission: Made("3f2c1a2b-0000", 1)}),
        None,
    ),
    "the service refused these values": lambda: (
        READY.failed(InvalidGenerationInput("payload.x: no", status_code=422), READY.submission),
        None,
    ),
    "a create in flight": lambda: (READY.generate_pressed()[0], None),
}


def test_the_forms_table_is_the_form() -> None:
    rows = table("The generation form")
    assert set(rows) == set(FORM)
    for name, build in FORM.items():
        state, previous = build()
        generate, new_take = state.generate_button(previous), state.new_take_button(previous)
        cells = rows[name]
        assert switch(cells[0]) == ("on" if generate.enabled else "off"), name
        assert switch(cells[1]) == ("on" if new_take.enabled else "off"), name


# -- the voice-clone panel ----------------------------------------------------------------

REF = _gate.Reference("voice_female.mp3", "9b" * 32, 21_000, "mp3", 5.0)
BAD = _gate.Reference("junk.mp3", "00" * 32, 293 * 1024, None, None, "not a recognised audio")
GOOD = CloneInputs(name="Ana", rights="I am the speaker of this recording and I own its rights.")
TICKED = CloneState(REF, GOOD, Consent(REF.sha256, GOOD.rights))
SENT = TICKED.sent(Sent("task-1", "consent-1", REF.sha256), TICKED.submission())
CLONE: dict[str, Callable[[], CloneState]] = {
    "no reference": lambda: CloneState(),
    "an unusable reference": lambda: CloneState(BAD, GOOD),
    "a usable reference, the statement below the minimum": lambda: CloneState(
        REF, replace(GOOD, rights="ok")
    ),
    "a usable reference and a statement, not ticked": lambda: CloneState(REF, GOOD),
    "ticked for this reference and this statement": lambda: TICKED,
    "sent, the clone running": lambda: SENT,
    "the voice saved": lambda: replace(SENT, status=SENT.status).finished(
        "task-1", "voice_1", "completed"
    ),
    "the service refused this clone": lambda: TICKED.failed(
        InvalidGenerationInput("name: no", status_code=422), TICKED.submission()
    ),
}


def test_the_clone_panels_table_is_the_panel() -> None:
    rows = table("The voice-clone panel")
    assert set(rows) == set(CLONE)
    for name, build in CLONE.items():
        state = build()
        cells = rows[name]
        for cell, button in zip(
            cells, (state.consent_box(), state.clone_button(), state.song_button()), strict=True
        ):
            assert switch(cell) == ("on" if button.enabled else "off"), (name, cell)


# -- the listening panel ------------------------------------------------------------------


def _panel() -> Any:
    t = np.arange(22050) / 22050
    clips = {
        m: [((0.2 * np.sin(2 * np.pi * f * t)).astype(np.float32)[None], 22050)]
        for m, f in (("a", 220), ("b", 330))
    }
    return listening_panel(listening.preference(clips, prompts=["p"], seed=1))


def _heard(panel: Any) -> Any:
    for label in list(panel.players):
        panel.listened(label)
    return panel


def _answered(panel: Any) -> Any:
    _heard(panel).answer_box.children[0].click()
    return panel


def _revealed(panel: Any) -> Any:
    _answered(panel).reveal_button.click()
    return panel


LISTENING: dict[str, Callable[[Any], Any]] = {
    "a clip of the trial not yet heard for the minimum": lambda p: p,
    "every clip of the trial heard for the minimum": _heard,
    "every trial answered": _answered,
    "revealed": _revealed,
}


def test_the_listening_panels_table_is_the_panel() -> None:
    rows = table("The listening panel")
    assert set(rows) == set(LISTENING)
    for name, build in LISTENING.items():
        panel = build(_panel())
        controls = list(panel.answer_box.children)
        answer = "none" if not controls else ("off" if controls[0].disabled else "on")
        shown = panel._reveal_row in panel.children
        reveal = "none" if not shown else ("off" if panel.reveal_button.disabled else "on")
        assert (switch(rows[name][0]), switch(rows[name][1])) == (answer, reveal), name


# -- a progress row -----------------------------------------------------------------------

ROW: dict[str, list[dict[str, Any]]] = {
    "no progress reported": [{"seq": 1, "kind": "progress", "status": "queued"}],
    "progress reported": [{"seq": 1, "kind": "progress", "progress": 0.4}],
    "the stream cut and resumed": [{"seq": 1, "kind": "progress", "progress": 0.4}],
    "completed": [{"seq": 1, "kind": "terminal", "status": "completed"}],
    "failed": [{"seq": 1, "kind": "terminal", "status": "failed", "message": "x"}],
}
BAR = {  # what each Bar cell says, as the row draws it: (value, style, colour)
    "full, grey": (100, "info", "#c8d1dc"),
    "its fraction": (40, "info", None),
    "as before": (40, "info", None),
    "full, green": (100, "success", None),
    "red": (None, "danger", None),
}


@pytest.mark.parametrize("name", list(ROW))
def test_the_progress_rows_table_is_the_row(name: str) -> None:
    rows = table("A progress row")
    assert set(rows) == set(ROW)
    row = TaskRow("t", label="take 1")
    for event in ROW[name]:
        row.apply(event)
    if name == "the stream cut and resumed":
        row.note("stream closed; resuming after seq 1", resumed=True)
        assert "resuming after seq 1" in row.status.value
        row.tick()
        assert "resuming after seq 1" in row.status.value  # the ticker keeps the note
    value, style, colour = BAR[rows[name][0]]
    assert row.bar.bar_style == style and row.bar.style.bar_color == colour
    if value is not None:
        assert row.bar.value == value
    assert isinstance(row.state, events.TaskState)
