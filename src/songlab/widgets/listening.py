"""Blind listening sessions as widgets: A/B preference, ABX, MUSHRA sliders.

A panel runs a :mod:`songlab.listening` session trial by trial. It shows only
the blinded labels (A, B, X, Ref): the answer key stays inside the session
(which seals it) and never enters a widget trait, a repr or an output until
:meth:`ListeningPanel.reveal`. A "play" button per label loads that label's
loudness-matched clip (``session.clip``) into one shared ``Audio`` widget and
marks it played; the answer controls are enabled only once every clip of the
trial was played. After the last answer, "Reveal" unblinds and shows the
results by model.
"""

from __future__ import annotations

import html
from typing import Any

import ipywidgets as W

from songlab import audio
from songlab.widgets._ui import ErrorSink, status_html

__all__ = ["ABXPanel", "ListeningPanel", "MushraPanel", "PreferencePanel", "listening_panel"]


class ListeningPanel(W.VBox):
    """The shared part: trial header, play buttons, shared player, answer row, reveal."""

    kind = ""

    def __init__(self, session: Any) -> None:
        if self.kind and getattr(session, "kind", None) != self.kind:
            raise ValueError(f"session: a {self.kind} session, got {getattr(session, 'kind', '?')}")
        self._session = session
        self.sink = ErrorSink()
        self.header = W.HTML()
        self.play_buttons: dict[str, W.Button] = {}
        self.play_box = W.HBox()
        self.player = W.Audio(value=b"", format="wav", autoplay=False, controls=True, loop=False)
        self.now_playing = W.HTML()
        self.answer_box = W.HBox()
        self.reveal_button = W.Button(description="Reveal", icon="eye", disabled=True)
        self.results = W.HTML()
        self.trial: int | None = None
        self.reveal_button.on_click(self.sink.guard(lambda _: self.reveal(), context="reveal"))
        super().__init__(children=[self.header, self.play_box, self.player, self.now_playing,
                                   self.answer_box, self.reveal_button, self.results,
                                   self.sink.line, self.sink.log])
        self._show(session.next_trial)

    def __repr__(self) -> str:
        answered, total = self._session.progress
        state = "revealed" if self._session.revealed else "blinded"
        return f"{type(self).__name__}(trial={self.trial}, answered={answered}/{total}, {state})"

    # -- trial flow -------------------------------------------------------------

    def _labels(self) -> tuple[str, ...]:
        """Labels of the current trial that can be played (answerable ones and Ref)."""
        return tuple(self._session.trials[self.trial].labels) if self.trial is not None else ()

    def _show(self, trial: int | None) -> None:
        self.trial = trial
        self.player.value = b""
        self.now_playing.value = ""
        s = self._session
        answered, total = s.progress
        if trial is None:
            self.header.value = f"<b>All {total} trials answered.</b> Press Reveal to unblind."
            self.play_box.children = ()
            self._build_answer(None)
            self.reveal_button.disabled = s.revealed
            return
        t = s.trials[trial]
        self.header.value = (f"<b>Trial {trial + 1} of {total}</b> - {html.escape(t.prompt)} "
                             f"({answered} answered)")
        self.play_buttons = {}
        for label in self._labels():
            button = W.Button(description=f"\u25b6 {label}", tooltip=f"play {label}")
            button.on_click(self.sink.guard(lambda _b, lab=label: self.play(lab), context="play"))
            self.play_buttons[label] = button
        self.play_box.children = tuple(self.play_buttons.values())
        self._build_answer(t)
        self._gate()

    def play(self, label: str) -> None:
        """Load ``label``'s loudness-matched clip into the player and mark it played."""
        if self.trial is None:
            raise ValueError("label: no trial to play (the session is complete)")
        samples, rate = self._session.clip(self.trial, label)
        self.player.value = audio.encode(samples, sr=rate, format="wav")
        self._session.mark_played(self.trial, label)
        self.now_playing.value = status_html(f"playing {label}")
        self.play_buttons[label].button_style = "info"
        self._gate()

    def all_played(self) -> bool:
        if self.trial is None:
            return False
        played = self._session.played(self.trial)
        return all(label in played for label in self._session.trials[self.trial].labels)

    def _gate(self) -> None:
        ready = self.all_played()
        for w in self._answer_controls():
            w.disabled = not ready
        if self.trial is not None and not ready:
            played = self._session.played(self.trial)
            left = [lab for lab in self._session.trials[self.trial].labels if lab not in played]
            self.sink.info(f"play {', '.join(left)} to answer")
        elif ready:
            self.sink.info("answer when ready", "ok")

    def submit(self, value: Any) -> None:
        """Answer the current trial with ``value`` (what the answer controls do)."""
        if self.trial is None:
            raise ValueError("answer: the session is complete")
        self._session.answer(self.trial, value)
        self._show(self._session.next_trial)

    def reveal(self) -> Any:
        """Unblind (only once every trial is answered) and show the results by model."""
        s = self._session
        if not s.done:
            answered, total = s.progress
            raise ValueError(f"reveal: answer every trial first ({answered}/{total} answered)")
        frame = s.reveal()
        self.reveal_button.disabled = True
        self.header.value = "<b>Revealed.</b>"
        self.results.value = frame.to_html(index=False, max_rows=60)
        return frame

    # -- kind-specific ----------------------------------------------------------

    def _build_answer(self, trial: Any) -> None:
        raise NotImplementedError

    def _answer_controls(self) -> list[W.DOMWidget]:
        return list(self.answer_box.children)


class PreferencePanel(ListeningPanel):
    """Which one do you prefer? One button per label (plus "no preference" with ties)."""

    kind = "preference"

    def _build_answer(self, trial: Any) -> None:
        buttons = []
        if trial is not None:
            for label in trial.labels:
                b = W.Button(description=f"prefer {label}", button_style="success")
                b.on_click(self.sink.guard(lambda _b, lab=label: self.submit(lab), context="answer"))
                buttons.append(b)
            if self._session.options.get("allow_tie"):
                b = W.Button(description="no preference")
                b.on_click(self.sink.guard(lambda _b: self.submit(None), context="answer"))
                buttons.append(b)
        self.answer_box.children = tuple(buttons)


class ABXPanel(ListeningPanel):
    """Is X the same as A or as B?"""

    kind = "abx"

    def _build_answer(self, trial: Any) -> None:
        buttons = []
        if trial is not None:
            for label in ("A", "B"):
                b = W.Button(description=f"X is {label}", button_style="success")
                b.on_click(self.sink.guard(lambda _b, lab=label: self.submit(lab), context="answer"))
                buttons.append(b)
        self.answer_box.children = tuple(buttons)


class MushraPanel(ListeningPanel):
    """Rate every stimulus 0-100 on a slider (MUSHRA); ``Ref`` plays but is not rated."""

    kind = "mushra"

    def _labels(self) -> tuple[str, ...]:
        labels = super()._labels()
        has_ref = self.trial is not None and self._session.options.get("reference") is not None
        return (*labels, "Ref") if has_ref else labels

    def _build_answer(self, trial: Any) -> None:
        self.sliders: dict[str, W.IntSlider] = {}
        if trial is None:
            self.answer_box.children = ()
            return
        for label in trial.labels:
            self.sliders[label] = W.IntSlider(value=50, min=0, max=100, description=label,
                                              orientation="vertical", continuous_update=False)
        self.rate_button = W.Button(description="submit ratings", button_style="success")
        self.rate_button.on_click(self.sink.guard(
            lambda _b: self.submit({k: s.value for k, s in self.sliders.items()}),
            context="answer"))
        self.answer_box.children = (*self.sliders.values(), self.rate_button)


_PANELS = {c.kind: c for c in (PreferencePanel, ABXPanel, MushraPanel)}


def listening_panel(session: Any) -> ListeningPanel:
    """The panel of the session's protocol (preference, abx or mushra)."""
    try:
        cls = _PANELS[session.kind]
    except (KeyError, AttributeError):
        raise ValueError(f"session: one of {', '.join(_PANELS)} sessions, got "
                         f"{getattr(session, 'kind', type(session).__name__)!r}") from None
    return cls(session)
