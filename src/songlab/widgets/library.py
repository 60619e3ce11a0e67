"""The library export with a progress bar: :func:`export_library` shows where it stands.

The export itself is :func:`songlab.ledger.library.export_library` (what to export, the
naming template, the manifest, resuming after a kill); this module only draws its progress
callback as a bar and a line ("files 120/300 - 90 downloaded, 30 already there - 3.1 MB"),
and says at the end what was written. The bar is updated at most ten times a second, and
always at a change of phase and at the end.
"""

from __future__ import annotations

import html
import os
import threading
import time
from typing import Any

import ipywidgets as W

import songlab.ledger.library as library
from songlab.widgets._gate import format_size
from songlab.widgets._ui import status_html

__all__ = ["ExportBar", "export_library"]

_MIN_INTERVAL = 0.1  # seconds between two redraws of the same phase


class ExportBar(W.VBox):
    """A bar and a status line for an export; ``update`` is its progress callback."""

    def __init__(self, *, title: str = "Export") -> None:
        self.bar = W.IntProgress(value=0, min=0, max=100, bar_style="info")
        self.status = W.HTML(value=status_html("starting"))
        self.last: library.ExportProgress | None = None
        self._shown_at = 0.0
        self._lock = threading.Lock()
        super().__init__(
            children=[
                W.HTML(f"<b>{html.escape(title)}</b>"),
                W.HBox([self.bar, self.status], layout=W.Layout(align_items="center")),
            ]
        )

    def update(self, progress: library.ExportProgress) -> None:
        """Show ``progress`` (from any thread)."""
        with self._lock:
            now = time.monotonic()
            same_phase = self.last is not None and self.last.phase == progress.phase
            self.last = progress
            finished = progress.phase == "done" or progress.done == progress.total
            if same_phase and not finished and now - self._shown_at < _MIN_INTERVAL:
                return
            self._shown_at = now
            self.bar.value = round(progress.fraction * 100)
            self.status.value = status_html(describe(progress), "info")

    def finish(self, result: library.ExportResult) -> None:
        """The outcome: green when every file is written, red naming the failures."""
        self.bar.value = 100
        self.bar.bar_style = "success" if result.ok else "danger"
        self.status.value = status_html(str(result), "ok" if result.ok else "error")


def describe(p: library.ExportProgress) -> str:
    """One line for a progress report."""
    if p.phase == "tasks":
        return f"reading the tasks' files {p.done}/{p.total}"
    if p.phase == "manifest":
        return f"writing the manifest ({p.total} files)"
    counts = [f"{p.downloaded} downloaded"]
    if p.present:
        counts.append(f"{p.present} already there")
    if p.copied:
        counts.append(f"{p.copied} copied (same bytes)")
    if p.failed:
        counts.append(f"{p.failed} failed")
    size = f" \u00b7 {format_size(p.bytes_downloaded)}" if p.bytes_downloaded else ""
    head = "done" if p.phase == "done" else "files"
    return f"{head} {p.done}/{p.total} \u00b7 {', '.join(counts)}{size}"


def export_library(
    client: Any, folder: str | os.PathLike[str], **options: Any
) -> library.ExportResult:
    """:func:`songlab.ledger.library.export_library` with its progress shown as a bar in the
    notebook (``options``: the selection, ``template``, ``manifest``, ...). Returns its
    result; run it again after an interruption to finish."""
    from IPython.display import display

    bar = ExportBar(title=f"Export to {os.fspath(folder)}")
    display(bar)  # type: ignore[no-untyped-call]
    result = library.export_library(client, folder, progress=bar.update, **options)
    bar.finish(result)
    return result
