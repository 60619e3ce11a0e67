"""Blind listening sessions as a widget: one panel for every protocol.

A panel runs a :mod:`songlab.listening` session trial by trial. It shows only
the blinded labels (A, B, X, Ref): the answer key stays inside the session
(which seals it) and never enters a widget trait, a repr or an output until
:meth:`ListeningPanel.reveal`. It knows no protocol by name: each trial's controls
come from the session (``session.controls(trial)``: answer buttons, or a slider per
label with its scale's words, beside that label's clip), and the summary after reveal
from ``session.summary()``.

Each label of a trial has a :class:`~songlab.widgets._media.ClipPlayer` (its own
play button and ``<audio>`` element) holding its clip as the session delivers it
(``session.delivered``: the common format, constant-bitrate MP3, a lead-in from the
session's key, so X's bytes are not A's). The open reference comes first. Pressing play
plays it, and starting one clip pauses the others. A clip counts as played only when the
browser's media element reports that the session's minimum of it (``session.need``: 5 s,
or the whole clip when shorter) has really played at normal speed (seeking ahead and time
played faster do not count; the player keeps its rate at 1); the answer controls stay
disabled until every clip of the trial has, and every line of the panel states that same
minimum. The panel's state (the trial shown, the last action's status) and what it shows
are :mod:`songlab.widgets._listening_model`'s: a click of a disabled control (the second
click of a double click, which meets the next trial) saves nothing and says why. The
players and controls are made once and reused from trial to trial, never closed while
the page shows them, so the browser never writes to a closed widget (JupyterLab's log
would say "No such comm").

The panel follows its session: answers given elsewhere (the scripted listener of
:func:`~songlab.listening.simulate`) show up at once, counted apart from the person's
("2 by you, 34 by the scripted listener"), and after reveal each has its own summary,
never one of the two mixed. *Reveal* says why it is not yet enabled.
"""

from __future__ import annotations

import html
from typing import Any

import ipywidgets as W

from songlab.listening.controls import Controls, Scale
from songlab.widgets._listening_model import ListeningState, need_text, view
from songlab.widgets._media import ClipPlayer
from songlab.widgets._status import Status, from_error, render
from songlab.widgets._ui import status_html

__all__ = ["ListeningPanel", "listening_panel"]


def _scale_words(scale: Scale) -> str:
    """The scale's words, each under its band (HTML)."""
    cells = "".join(
        f"<span style='flex:{hi - lo};text-align:center'>{html.escape(word)}</span>"
        for lo, hi, word in scale.words
    )
    return f"<div style='display:flex;width:20em;font-size:85%;color:#555'>{cells}</div>"


class ListeningPanel(W.VBox):
    """A blind session's panel: trial header, a player per label, the answer controls,
    Reveal, and the summary by model after it."""

    children: tuple[Any, ...]  # ipywidgets' trait, declared for the type checker

    def __init__(self, session: Any) -> None:
        if not callable(getattr(session, "controls", None)) or not hasattr(session, "trials"):
            raise ValueError(
                f"session: a listening session, got {getattr(session, 'kind', type(session).__name__)!r}"
            )
        self._session = session
        self.state = ListeningState(None)
        self._submitting = False  # the panel's own answer is being saved (not "elsewhere")
        self.errors: list[str] = []  # every error status shown, in order
        self.instruction = W.HTML()  # what to do now (why the answer controls are off)
        self.status_line = W.HTML()  # the last action's outcome
        self.header = W.HTML()
        self.question = W.HTML()
        self.players: dict[str, ClipPlayer] = {}
        self.marks: dict[str, W.HTML] = {}
        self.sliders: dict[str, W.IntSlider] = {}
        self._all_players: dict[str, ClipPlayer] = {}
        self._all_marks: dict[str, W.HTML] = {}
        self._all_sliders: dict[str, tuple[W.IntSlider, W.HTML, W.VBox]] = {}
        self._rows: dict[str, W.HBox] = {}
        self._buttons: list[W.Button] = []
        self.rate_button = W.Button(button_style="success")
        self.rate_button.on_click(lambda _b: self._guard("answer", self._rate))
        self._controls: Controls | None = None
        self.play_box = W.VBox()
        self.answer_box = W.HBox()
        self.reveal_button = W.Button(
            description="Reveal", icon="eye", disabled=True, tooltip="Answer every trial first"
        )
        self.reveal_note = W.HTML()
        # held for the panel's life: a widget Python drops is closed when collected, and
        # the page's view of it would then write to a closed comm
        self._reveal_row = W.HBox([self.reveal_button, self.reveal_note])
        self.results = W.HTML()
        self.trial: int | None = None
        self.summary: Any = None
        self.reveal_button.on_click(lambda _: self._guard("reveal", self._reveal_pressed))
        super().__init__(
            children=[
                self.header,
                self.question,
                self.play_box,
                self.instruction,
                self.answer_box,
                self._reveal_row,
                self.results,
                self.status_line,
            ]
        )
        self.add_class("songlab-listening")
        session.observe(self._followed)
        self._show(session.next_trial)

    def _followed(self, session: Any) -> None:
        """An answer was given: by this panel (it moves on itself) or elsewhere (the scripted
        listener): then show where the session now stands."""
        if self.trial is not None and self.trial in session.answers and not self._submitting:
            self._show(session.next_trial)

    def _counts(self) -> str:
        by = self._session.answered_by()
        if not by["scripted"]:
            return f"{by['person']} answered"
        return f"{by['person']} by you, {by['scripted']} by the scripted listener"

    def __repr__(self) -> str:
        answered, total = self._session.progress
        state = "revealed" if self._session.revealed else "blinded"
        return f"{type(self).__name__}(trial={self.trial}, answered={answered}/{total}, {state})"

    # -- the widgets, made once and reused ----------------------------------------

    def _player(self, label: str) -> ClipPlayer:
        if label not in self._all_players:
            player = ClipPlayer(label="Reference" if label == "Ref" else label)
            player.observe(
                lambda _c, lab=label: self._guard("play", lambda: self._heard(lab)),
                names="heard",
            )
            self._all_players[label] = player
            self._all_marks[label] = W.HTML()
            self._rows[label] = W.HBox()
        return self._all_players[label]

    def _slider(self, label: str, scale: Scale) -> tuple[W.IntSlider, W.HTML, W.VBox]:
        if label not in self._all_sliders:
            slider = W.IntSlider(
                min=scale.low,
                max=scale.high,
                step=scale.step,
                value=scale.start,
                continuous_update=False,
                readout=False,
                layout=W.Layout(width="20em"),
            )
            word = W.HTML()
            slider.observe(lambda _c, lab=label: self._word(lab), names="value")
            box = W.VBox([slider, W.HTML(_scale_words(scale))])
            self._all_sliders[label] = (slider, word, box)
        slider, word, box = self._all_sliders[label]
        slider.min, slider.max, slider.step = scale.low, scale.high, scale.step
        slider.value = scale.start
        return slider, word, box

    def _word(self, label: str) -> None:
        slider, word, _ = self._all_sliders[label]
        scale = self._controls.scale if self._controls is not None else None
        text = scale.word(slider.value) if scale is not None else ""
        word.value = status_html(f"{slider.value} ({text})" if text else str(slider.value))

    def _choice_buttons(self, controls: Controls) -> list[W.Button]:
        while len(self._buttons) < len(controls.choices):
            i = len(self._buttons)
            button = W.Button(button_style="success")
            button.on_click(lambda _b, i=i: self._guard("answer", lambda: self._choose(i)))
            self._buttons.append(button)
        for button, choice in zip(self._buttons, controls.choices, strict=False):
            button.description = choice.text
        return self._buttons[: len(controls.choices)]

    def _choose(self, i: int) -> None:
        if self._controls is None:
            self._say(Status("answer", "Not saved: every trial is answered already.", "warn"))
            return
        choice = self._controls.choices[i]
        self._answer_pressed(choice.value, choice.text)

    def _rate(self) -> None:
        self._answer_pressed({label: s.value for label, s in self.sliders.items()}, "the ratings")

    def _answer_pressed(self, value: Any, said: str) -> None:
        """An answer control was clicked: saved for the trial on screen when its controls
        are enabled; otherwise (a double click's second click, a stale view) nothing is saved
        and the status says why, for the trial on screen."""
        shown = view(self._session, self.state, self._heard_now())
        trial = self.trial
        if not shown.answer.enabled or trial is None:
            self._say(Status("answer", f"Not saved: {shown.answer.does}.", "warn"))
            return
        self.submit(value)
        self._say(Status("answer", f"Trial {trial + 1} answered: {said}.", "ok"))

    def _say(self, status: Status) -> None:
        self.state = ListeningState(self.trial, status)
        if status.tone == "error":
            self.errors.append(status.text)
        self._render()

    def _guard(self, action: str, fn: Any) -> None:
        """A handler; an error it raises is that action's status (person words), never lost."""
        try:
            fn()
        except Exception as exc:  # noqa: BLE001 - a callback's error is shown in the panel
            self._say(from_error(action, exc))

    def _heard_now(self) -> dict[str, float]:
        return {label: player.heard for label, player in self.players.items()}

    # -- trial flow -------------------------------------------------------------

    def _drop_players(self) -> None:
        for player in self.players.values():
            player.stop()
            player.load(b"")  # a saved notebook keeps no stale clip (its state is recorded)
        self.players, self.marks, self.sliders = {}, {}, {}
        self.play_box.children = ()

    def _show(self, trial: int | None) -> None:
        self.trial = trial
        self.state = ListeningState(trial, self.state.status)
        self._drop_players()
        s = self._session
        _, total = s.progress
        if trial is None:
            self._controls = None
            self.question.value = ""
            self.answer_box.children = ()
            self.header.value = (
                f"<b>All {total} trials answered</b> ({html.escape(self._counts())}). "
                "Press Reveal to unblind."
                if not s.revealed
                else ""
            )
            self._render()
            return
        t = s.trials[trial]
        self.header.value = (
            f"<b>Trial {trial + 1} of {total}</b> - {html.escape(t.prompt)} "
            f"({html.escape(self._counts())})"
        )
        controls = self._controls = s.controls(trial)
        self.question.value = f"<i>{html.escape(controls.question)}</i>"
        rows = []
        for label in s._playable(t):
            player = self._player(label)
            player.load(s.delivered(trial, label), duration=s.seconds)
            self.players[label] = player
            self.marks[label] = self._all_marks[label]
            row: list[Any] = [player, self.marks[label]]
            if controls.scale is not None and label in controls.rate:
                slider, word, box = self._slider(label, controls.scale)
                self.sliders[label] = slider
                self._word(label)
                row += [box, word]
            self._rows[label].children = tuple(row)
            rows.append(self._rows[label])
        self.play_box.children = tuple(rows)
        if controls.scale is not None:
            self.rate_button.description = controls.submit
            self.answer_box.children = (self.rate_button,)
        else:
            self.answer_box.children = tuple(self._choice_buttons(controls))
        self._render()

    def play(self, label: str) -> None:
        """Start ``label``'s clip in the browser (what its play button does); the others pause."""
        if self.trial is None:
            raise ValueError("label: no trial to play (the session is complete)")
        if label not in self.players:
            raise ValueError(f"label: one of {', '.join(self.players)}, got {label!r}")
        for other, player in self.players.items():
            if other != label:
                player.stop()
        self.players[label].play()
        self._say(
            Status(
                "play",
                f"Playing {label}: it counts once {need_text(self._session.need)} "
                "of it has played at normal speed.",
            )
        )

    def _heard(self, label: str) -> None:
        """The browser reported playback of ``label``: heard for the session's minimum, it counts."""
        player = self.players.get(label)
        if self.trial is None or player is None:
            return
        s = self._session
        if label not in s.played(self.trial):
            s.mark_played(self.trial, label, seconds=player.heard)
        self._render()

    def listened(self, label: str) -> None:
        """Stand in for the browser: report ``label``'s clip as heard to its end.

        In JupyterLab the ``<audio>`` element reports this itself as the clip plays;
        use it only where no browser plays the clip (a script, a test, a notebook run
        unattended by a scripted listener)."""
        if self.trial is None or label not in self.players:
            raise ValueError(
                f"label: one of {', '.join(self.players) or 'no labels'}, got {label!r}"
            )
        player = self.players[label]
        player.ended = True
        player.heard = player.duration

    def all_played(self) -> bool:
        if self.trial is None:
            return False
        played = self._session.played(self.trial)
        return all(label in played for label in self._session.trials[self.trial].labels)

    def _answer_controls(self) -> list[W.DOMWidget]:
        return [*self.answer_box.children, *self.sliders.values()]

    def _render(self) -> None:
        """Marks, answer controls, instruction, Reveal and the status, from the model."""
        shown = view(self._session, self.state, self._heard_now())
        for label, text in shown.marks.items():
            tone = "ok" if text == "played" else "info"
            self.marks[label].value = status_html(text, tone)
        for w in self._answer_controls():
            w.disabled = not shown.answer.enabled
            w.tooltip = shown.answer.does
        self.instruction.value = status_html(
            shown.instruction, "ok" if shown.answer.enabled else "info"
        )
        if not self._session.revealed:
            self.reveal_button.disabled = not shown.reveal.enabled
            self.reveal_button.tooltip = shown.reveal.does
            self.reveal_note.value = "" if shown.reveal.enabled else status_html(shown.reveal.does)
        self.status_line.value = render(self.state.status)

    def _reveal_pressed(self) -> None:
        shown = view(self._session, self.state, self._heard_now())
        if not shown.reveal.enabled:
            self._say(Status("reveal", f"Not yet: {shown.reveal.does}.", "warn"))
            return
        self.reveal()

    def submit(self, value: Any) -> None:
        """Answer the current trial with ``value`` (what the answer controls do)."""
        if self.trial is None:
            raise ValueError("answer: the session is complete")
        self._submitting = True
        try:
            self._session.answer(self.trial, value)
        finally:
            self._submitting = False
        self._show(self._session.next_trial)

    def reveal(self) -> Any:
        """Unblind (only once every trial is answered): the controls go, the summary shows."""
        s = self._session
        if not s.done:
            answered, total = s.progress
            raise ValueError(f"reveal: answer every trial first ({answered}/{total} answered)")
        frame = s.reveal()
        self._drop_players()
        self.answer_box.children = ()
        self.question.value = ""
        self.reveal_button.disabled = True
        self.reveal_note.value = ""
        self.children = tuple(c for c in self.children if c is not self._reveal_row)
        self.instruction.value = ""
        self.state = ListeningState(None, Status("reveal", "Revealed: the summary is below.", "ok"))
        self.status_line.value = render(self.state.status)
        self.header.value = (
            f"<b>Revealed</b> - {len(s.trials)} trials ({html.escape(self._counts())})"
        )
        parts = s.summaries()
        self.summaries = {whose: summary.frame for whose, _, summary in parts}
        self.summary = parts[0][2].frame if parts else None
        self.results.value = "".join(
            _summary_html(
                summary,
                f"{'Your answers' if whose == 'person' else 'The scripted listener'} ({n} trials)"
                if len(parts) > 1 or whose != "person"
                else "",
            )
            for whose, n, summary in parts
        )
        return frame


def _summary_html(summary: Any, title: str) -> str:
    cell = "padding:.15em .7em;text-align:right"
    out = [f"<h4 style='margin:.6em 0 .2em'>{html.escape(title)}</h4>" if title else ""]
    rule = f" Rule: {summary.rule}." if summary.rule else ""
    said = summary.verdict.replace(rule, "") if rule else summary.verdict
    out += [  # the verdict as the protocol's summary renders it, its rule in small print
        f"<b>{html.escape(said)}</b>",
        f"<div style='font-size:85%;color:#555'>{html.escape(rule.strip())}</div>" if rule else "",
        "<table style='border-collapse:collapse'><tr>",
    ]
    out += [f"<th style='{cell}'>{html.escape(h)}</th>" for h in summary.head]
    out.append("</tr>")
    for row in summary.rows:
        out.append(
            "<tr>" + "".join(f"<td style='{cell}'>{html.escape(v)}</td>" for v in row) + "</tr>"
        )
    out.append("</table>")
    return "".join(out)


def listening_panel(session: Any) -> ListeningPanel:
    """The panel of a listening session (any protocol)."""
    return ListeningPanel(session)
