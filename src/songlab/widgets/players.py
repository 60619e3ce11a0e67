"""Audio as widgets: a player, a waveform and a spectrogram for any file id; stems side by side.

The player element and the figures are songlab.audio's (``player``,
``waveform``, ``spectrogram``); this module only puts them in widgets. An
:class:`AudioView` is created empty (from the main thread, where widgets are
displayed) and :meth:`AudioView.load` fills it by setting widget values, so a
background thread may load it when a task completes.
"""

from __future__ import annotations

import html
import io
import re
import threading
from collections.abc import Callable, Mapping
from typing import Any

import ipywidgets as W

import songlab.audio as audio
import songlab.widgets._api as _api
from songlab.widgets._media import ClipPlayer
from songlab.widgets._ui import ErrorSink, status_html

__all__ = ["AudioView", "StemsView", "TakePlayer", "task_audio"]

_MIME = {"mp3": "audio/mpeg", "wav": "audio/wav", "flac": "audio/flac", "ogg": "audio/ogg"}
_MIME["m4a"] = "audio/mp4"

_PLOTS = ("waveform", "spectrogram")
# a task or file id (a UUID, or a prefixed hex/base62 token) inside a label
_ID = re.compile(
    r"\b(?:[a-z]+_)?[0-9a-f]{8}(?:-[0-9a-f]{4}){3}-[0-9a-f]{12}\b"
    r"|\b[a-z]+_[0-9A-Za-z]{16,}\b"
)


def short_ids(text: str) -> str:
    """``text`` with every whole task or file id cut to its first 8 characters and an ellipsis
    (plot titles and headings stay readable; the full id stays in the view's ``file_id``)."""
    return _ID.sub(lambda m: m.group(0)[: 8 + m.group(0).find("_") + 1] + "\u2026", text)


def figure_png(fig: Any, *, dpi: int = 80) -> bytes:
    """A matplotlib Figure as PNG bytes (no pyplot state involved)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight")
    return buf.getvalue()


class AudioView(W.VBox):
    """One clip: ``player`` (an ``<audio>`` element), ``waveform`` and ``spectrogram`` images."""

    def __init__(
        self,
        client: Any = None,
        source: Any = None,
        *,
        label: str = "",
        plots: tuple[str, ...] = _PLOTS,
        figsize: tuple[float, float] = (6, 1.8),
    ) -> None:
        bad = [p for p in plots if p not in _PLOTS]
        if bad:
            raise ValueError(f"plots: each one of {', '.join(_PLOTS)}, got {bad}")
        self.client = client
        self.plots = plots
        self.figsize = figsize
        self.sink = ErrorSink()
        self.title = W.HTML(value=self._title(label))
        self.player = W.HTML(value="")
        self.waveform = W.Image(format="png")
        self.spectrogram = W.Image(format="png")
        self.file_id: str | None = None
        self.duration: float | None = None
        self.loaded = threading.Event()  # set after each load (even a failed one)
        images = [getattr(self, p) for p in plots]
        for image in images:
            image.layout.display = "none"
            image.layout.max_width = f"{100 // max(1, len(images))}%"
        super().__init__(children=[self.title, self.player, W.HBox(images), self.sink.line])
        if source is not None:
            self.load(source, label=label or None)

    @staticmethod
    def _title(label: str) -> str:
        if not label:
            return ""
        short = short_ids(label)
        if short == label:
            return f"<b>{html.escape(label)}</b>"
        return f'<b title="{html.escape(label)}">{html.escape(short)}</b>'

    def load(self, source: Any, *, label: str | None = None) -> AudioView:
        """Show ``source``: a file id (fetched with the client), encoded bytes or ``(array, sr)``."""
        try:
            if isinstance(source, str):
                if self.client is None:
                    raise ValueError("client: needed to play a file id")
                self.file_id = source
                self.sink.info(f"loading {source}")
                data: Any = _api.download(self.client, source)
            else:
                data = source
            samples, rate = audio.as_audio(data)
            self.duration = samples.shape[-1] / rate
            name = short_ids(label or self.file_id or "")
            if label:
                self.title.value = self._title(label)
            shown = audio.player(
                data if isinstance(data, bytes) else (samples, rate), label=name or None
            )
            self.player.value = shown.html
            from matplotlib.figure import Figure  # loaded when a view first draws

            for kind in self.plots:
                fig = Figure(figsize=self.figsize)
                getattr(audio, kind)(
                    (samples, rate), ax=fig.add_subplot(), title=f"{kind} {name}".strip()
                )
                image = getattr(self, kind)
                image.value = figure_png(fig)
                image.layout.display = ""
            self.sink.info(f"{self.duration:.1f} s", "info")
        except Exception as exc:  # noqa: BLE001 - shown in the view
            self.sink.error(exc, context="audio")
        finally:
            self.loaded.set()
        return self

    def set_text(self, text: str) -> None:
        """Show a line of text instead of audio (a task without an audio output)."""
        self.player.value = f"<pre>{html.escape(text)}</pre>"
        self.loaded.set()


class TakePlayer(W.VBox):
    """The result of one take, shown under its progress row: its own ``<audio>`` element
    (``player``; starting it pauses every other clip of the page, so takes compare one at a
    time) and a download link saving it under a name made by ``name_of(ext)`` (model, take,
    prompt words, id); or ``text`` for a result without audio. Created empty, from the main
    thread; :meth:`load` fills it from any thread (widget values only)."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.player = ClipPlayer(label="", show_button=False)
        self.text = W.HTML()
        self.note = W.HTML()
        self.file_id: str | None = None
        self.filename = ""
        self.loaded = threading.Event()  # set after each load (even a failed one)
        super().__init__(children=[self.player, self.text, self.note])
        self.player.layout.display = self.text.layout.display = "none"

    def load(self, file_id: str, *, name_of: Callable[[str], str], more: int = 0) -> None:
        """Fetch ``file_id`` and show it with its download link; ``more``: files of the same
        task not shown here (named in a note)."""
        try:
            from songlab.codec import sniff

            data = _api.download(self.client, file_id)
            kind = sniff(data) or "bin"
            self.file_id, self.filename = file_id, name_of(kind)
            self.player.load(data, mime=_MIME.get(kind, "application/octet-stream"))
            self.player.filename = self.filename
            self.player.layout.display = ""
            if more:
                self.note.value = status_html(
                    f"+{more} more file{'s' if more > 1 else ''} in this task "
                    "(task_audio(client, task) shows them all)"
                )
        except Exception as exc:  # noqa: BLE001 - shown under the take
            self.note.value = status_html(f"audio: {type(exc).__name__}: {exc}", "error")
        finally:
            self.loaded.set()

    def set_text(self, text: str) -> None:
        """A result without audio (lyrics, ...): its text."""
        self.text.value = f'<pre style="white-space:pre-wrap">{html.escape(text)}</pre>'
        self.text.layout.display = ""
        self.loaded.set()


class StemsView(W.HBox):
    """Stems (or models) side by side: one column per label with its player and waveform."""

    def __init__(
        self, client: Any, stems: Mapping[str, Any], *, plots: tuple[str, ...] = ("waveform",)
    ) -> None:
        if not isinstance(stems, Mapping) or not stems:
            raise ValueError("stems: a non-empty mapping of label -> file id or bytes")
        self.columns = {
            str(name): AudioView(client, source, label=str(name), plots=plots, figsize=(3.2, 1.4))
            for name, source in stems.items()
        }
        for column in self.columns.values():
            column.layout = W.Layout(flex="1 1 0", min_width="12em")
        super().__init__(
            children=list(self.columns.values()), layout=W.Layout(width="100%", overflow="auto")
        )

    @classmethod
    def from_task(cls, client: Any, task: Any, **options: Any) -> StemsView:
        """The output assets of a completed task (e.g. ``separate_stems``), named as the
        service names them (an asset's ``name``), else by position."""
        from songlab.client.field_names import ASSET_NAME, first  # a name the spec does not show

        assets = getattr(getattr(task, "output", None), "assets", ()) or ()
        if not assets:
            raise ValueError(f"task: no output assets (status {getattr(task, 'status', '?')})")
        stems: dict[str, str] = {}
        for i, asset in enumerate(assets):
            name = str(first(getattr(asset, "raw", None), ASSET_NAME) or f"stem {i + 1}")
            stems[name if name not in stems else f"{name} {i + 1}"] = asset.file_id
        return cls(client, stems, **options)


def task_audio(client: Any, task: Any, *, plots: tuple[str, ...] = _PLOTS) -> W.VBox:
    """One :class:`AudioView` per output asset of a completed task (a client ``Task``)."""
    file_ids = tuple(getattr(task, "file_ids", ()) or ())
    if not file_ids:
        status = getattr(task, "status", "?")
        return W.VBox([W.HTML(status_html(f"no audio in this task (status {status})", "warn"))])
    return W.VBox([AudioView(client, fid, label=fid, plots=plots) for fid in file_ids])
