"""songlab.widgets: ipywidgets panels built only on the client, ledger, audio and listening.

- :class:`GenerationForm`: tool, prompt, lyrics, duration and tier, priced as you type,
  gated (the reason shown), one Idempotency-Key per submission;
- :class:`ClonePanel`: reference upload, rights attestation and consent, then the saved voice;
- :class:`ProgressPanel`: many tasks at once, live from their event streams;
- :class:`AudioView`, :class:`StemsView`: players, waveform and spectrogram;
- :class:`PreferencePanel`, :class:`ABXPanel`, :class:`MushraPanel`: blind listening;
- :class:`CostPanel`: balance, spend by tier and operation, the tier comparison;
- :func:`batch` / :func:`abatch`: ``client.batch`` with a progress bar (a line on a
  terminal), returning the result as a frame (:class:`BatchDisplay` is the bar).

Display panels from the main thread; they update themselves from background
threads by setting widget values. Callback errors are shown in each panel.
"""

from __future__ import annotations

from songlab.widgets.batches import BatchDisplay, abatch, batch
from songlab.widgets.clone import ClonePanel
from songlab.widgets.cost import CostPanel
from songlab.widgets.form import GenerationForm
from songlab.widgets.listening import (
    ABXPanel,
    ListeningPanel,
    MushraPanel,
    PreferencePanel,
    listening_panel,
)
from songlab.widgets.players import AudioView, StemsView, task_audio
from songlab.widgets.progress import ProgressPanel, TaskRow

__all__ = [
    "ABXPanel",
    "AudioView",
    "BatchDisplay",
    "ClonePanel",
    "CostPanel",
    "GenerationForm",
    "ListeningPanel",
    "MushraPanel",
    "PreferencePanel",
    "ProgressPanel",
    "StemsView",
    "TaskRow",
    "abatch",
    "batch",
    "listening_panel",
    "task_audio",
]
