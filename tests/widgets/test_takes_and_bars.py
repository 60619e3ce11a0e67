"""A take's player and download name, the elapsed time of a running row, the export's bar:
headless, on scripted clients."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from songlab.ledger.library import ExportProgress, ExportResult
from songlab.widgets import ExportBar, ProgressPanel, TakePlayer
from songlab.widgets._events import describe, initial, reduce


class _Files:
    def __init__(self, content: bytes | Exception) -> None:
        self.content = content

    def download(self, file_id: str) -> bytes:
        if isinstance(self.content, Exception):
            raise self.content
        return self.content


def test_a_take_plays_its_own_bytes_and_downloads_under_its_name(voice_mp3: bytes) -> None:
    take = TakePlayer(SimpleNamespace(files=_Files(voice_mp3)))
    assert take.player.layout.display == "none" and not take.loaded.is_set()
    take.load("file-1", name_of=lambda ext: f"v7-take2-lofi-3f2c1a2b.{ext}", more=2)
    assert take.loaded.is_set() and take.player.layout.display == ""
    assert bytes(take.player.value) == voice_mp3 and take.player.mime == "audio/mpeg"
    assert take.filename == take.player.filename == "v7-take2-lofi-3f2c1a2b.mp3"
    assert not take.player.show_button  # a take shows its <audio controls> and the link
    assert "+2 more files" in take.note.value


def test_a_take_that_cannot_be_fetched_says_so_under_its_row() -> None:
    take = TakePlayer(SimpleNamespace(files=_Files(ConnectionError("gone"))))
    take.load("file-1", name_of=lambda ext: f"x.{ext}")
    assert take.loaded.is_set() and take.player.filename == ""
    assert "ConnectionError: gone" in take.note.value
    lyrics = TakePlayer(SimpleNamespace())
    lyrics.set_text("la <la>")
    assert "la &lt;la&gt;" in lyrics.text.value and lyrics.text.layout.display == ""


def test_describe_shows_elapsed_and_leaves_the_label_out_on_request() -> None:
    s = reduce(initial("t", label="v5 take 1"), {"seq": 1, "kind": "progress"})
    assert describe(s, label=False, elapsed=12.4) == (
        "processing (1 event, progress not reported) \u00b7 12 s"
    )
    assert describe(s, elapsed=75) == (
        "v5 take 1: processing (1 event, progress not reported) \u00b7 1 min 15 s"
    )
    done = reduce(s, {"seq": 2, "kind": "terminal", "status": "completed"})
    assert describe(done, label=False, elapsed=5.2) == "completed (100%) \u00b7 5 s"


class _Quiet:
    """A service that sends one event, then nothing for a while, then the end."""

    def __init__(self, hold: threading.Event) -> None:
        self.hold = hold

    def stream(self, task_id: str, *, after: int = 0) -> Iterator[dict]:
        if after < 1:
            yield {"seq": 1, "kind": "progress"}
        self.hold.wait(20)
        yield {"seq": 2, "kind": "terminal"}

    def get(self, task_id: str) -> dict:
        return {"task_id": task_id, "status": "completed"}


def test_a_row_without_reported_progress_still_shows_time_passing() -> None:
    hold = threading.Event()
    panel = ProgressPanel(SimpleNamespace(generations=_Quiet(hold)))
    row = panel.track("t1", label="a long song whose label is shown whole, not cut at 24")
    try:
        deadline = time.monotonic() + 15
        while "\u00b7 2 s" not in row.status.value and time.monotonic() < deadline:
            time.sleep(0.05)
        assert "processing (1 event, progress not reported) \u00b7 2 s" in row.status.value
        assert "not cut at 24" in row.title.value and "a long song" not in row.status.value
    finally:
        hold.set()
    row.wait(10)
    assert "completed (100%)" in row.status.value
    frozen = row.status.value
    time.sleep(1.3)
    assert row.status.value == frozen  # a done row keeps its total time


def test_the_export_bar_shows_each_phase_and_the_outcome() -> None:
    bar = ExportBar(title="Export to out/lib")
    bar.update(ExportProgress("tasks", 3, 10))
    assert bar.bar.value == 30 and "reading the tasks&#x27; files 3/10" in bar.status.value
    bar.update(
        ExportProgress("files", 10, 10, downloaded=7, present=2, copied=1, bytes_downloaded=2048)
    )
    assert bar.bar.value == 100
    assert (
        "files 10/10 \u00b7 7 downloaded, 2 already there, 1 copied (same bytes) \u00b7 2 KiB"
        in (bar.status.value)
    )
    result: Any = ExportResult(
        folder=Path("out/lib"),
        manifest_path=Path("out/lib/manifest.csv"),
        manifest=None,
        files=9,
        downloaded=7,
        present=2,
        copied=0,
        failed=(("f1", "ConnectionError: gone"),),
        tasks=10,
        tasks_without_assets=0,
        bytes_downloaded=2048,
    )
    bar.finish(result)
    assert bar.bar.bar_style == "danger" and "1 failed" in bar.status.value
