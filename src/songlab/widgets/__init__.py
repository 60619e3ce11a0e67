"""songlab.widgets: ipywidgets panels built only on the client, ledger, audio and listening.

- :class:`GenerationForm`: tool, prompt, lyrics, duration and tier, priced as you type,
  gated (the reason shown), one Idempotency-Key per submission;
- :class:`ClonePanel`: reference upload, rights attestation and consent, then the saved voice;
- :class:`ProgressPanel`: many tasks at once, live from their event streams;
- :class:`AudioView`, :class:`StemsView`: players, waveform and spectrogram;
- :class:`ListeningPanel` (:func:`listening_panel`): a blind listening session, any protocol;
- :class:`CostPanel`: balance, spend by tier and operation, the tier comparison;
- :func:`batch` / :func:`abatch`: ``client.batch`` with a progress bar (a line on a
  terminal), returning the result as a frame (:class:`BatchDisplay` is the bar);
- :func:`export_library`: every asset of a project, notebook or period into a folder, with a
  progress bar (:class:`ExportBar`).

Each panel's module is imported on first use of its name (``from songlab.widgets import
ClonePanel`` loads the clone panel, not the listening panel's statistics or the cost
panel's charts): a kernel that shows one panel pays for that one. No lazy name is also a
submodule's name.

Display panels from the main thread; they update themselves from background
threads by setting widget values. Callback errors are shown in each panel.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from songlab.lazy import attach

if TYPE_CHECKING:
    from songlab.widgets.batches import BatchDisplay, abatch, batch
    from songlab.widgets.clone import ClonePanel
    from songlab.widgets.cost import CostPanel
    from songlab.widgets.form import GenerationForm
    from songlab.widgets.library import ExportBar, export_library
    from songlab.widgets.listening import ListeningPanel, listening_panel
    from songlab.widgets.players import AudioView, StemsView, TakePlayer, task_audio
    from songlab.widgets.progress import ProgressPanel, TaskRow

__all__ = [
    "AudioView",
    "BatchDisplay",
    "ClonePanel",
    "CostPanel",
    "ExportBar",
    "GenerationForm",
    "ListeningPanel",
    "ProgressPanel",
    "StemsView",
    "TakePlayer",
    "TaskRow",
    "abatch",
    "batch",
    "export_library",
    "listening_panel",
    "task_audio",
]

# name -> the submodule that defines it, imported on first use
_LAZY = {
    **dict.fromkeys(("BatchDisplay", "abatch", "batch"), "batches"),
    "ClonePanel": "clone",
    "CostPanel": "cost",
    "GenerationForm": "form",
    **dict.fromkeys(("ExportBar", "export_library"), "library"),
    **dict.fromkeys(("ListeningPanel", "listening_panel"), "listening"),
    **dict.fromkeys(("AudioView", "StemsView", "TakePlayer", "task_audio"), "players"),
    **dict.fromkeys(("ProgressPanel", "TaskRow"), "progress"),
}


__getattr__, __dir__ = attach(__name__, globals(), _LAZY)
