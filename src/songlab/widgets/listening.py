"""Blind listening sessions as widgets: A/B preference, ABX, MUSHRA sliders.

A panel runs a :mod:`songlab.listening` session trial by trial. It shows only
the blinded labels (A, B, X, Ref): the answer key stays inside the session
(which seals it) and never enters a widget trait, a repr or an output until
:meth:`ListeningPanel.reveal`.

Each label of a trial has a :class:`~songlab.widgets._media.ClipPlayer` (its own
play button and ``<audio>`` element) holding its loudness-matched clip
(``session.clip``, as constant-bitrate MP3). Pressing play plays it, and starting
one clip pauses the others. A clip counts as played only when the browser's
media element reports that ``min_fraction`` of it (90 % by default) has really
played (``audio.played``: seeking ahead does not count); the answer controls stay
disabled until every clip of the trial has. After the last answer, *Reveal*
unblinds: the players and answer controls go away and the panel shows a summary
by model (shares or scores with 95 % intervals, and the winner).
"""

from __future__ import annotations

import html
from typing import Any

import ipywidgets as W
import pandas as pd

from songlab.listening import stats as st
from songlab.listening.page import encode_mp3
from songlab.widgets._media import ClipPlayer
from songlab.widgets._ui import ErrorSink, status_html

__all__ = ["ABXPanel", "ListeningPanel", "MushraPanel", "PreferencePanel", "listening_panel"]


class ListeningPanel(W.VBox):
    """The shared part: trial header, one player per label, answer row, reveal, summary."""

    kind = ""
    children: tuple[Any, ...]  # ipywidgets' trait, declared for the type checker

    def __init__(self, session: Any, *, min_fraction: float = 0.9) -> None:
        if self.kind and getattr(session, "kind", None) != self.kind:
            raise ValueError(f"session: a {self.kind} session, got {getattr(session, 'kind', '?')}")
        if not isinstance(min_fraction, int | float) or not 0 < min_fraction <= 1:
            raise ValueError(f"min_fraction: a share of each clip in (0, 1], got {min_fraction!r}")
        self._session = session
        self.min_fraction = float(min_fraction)
        self.sink = ErrorSink()
        self.header = W.HTML()
        self.players: dict[str, ClipPlayer] = {}
        self.marks: dict[str, W.HTML] = {}
        self.play_box = W.VBox()
        self.answer_box = W.HBox()
        self.reveal_button = W.Button(description="Reveal", icon="eye", disabled=True)
        self.results = W.HTML()
        self.trial: int | None = None
        self.reveal_button.on_click(self.sink.guard(lambda _: self.reveal(), context="reveal"))
        super().__init__(
            children=[
                self.header,
                self.play_box,
                self.answer_box,
                self.reveal_button,
                self.results,
                self.sink.line,
                self.sink.log,
            ]
        )
        self.add_class("songlab-listening")
        self._show(session.next_trial)

    def __repr__(self) -> str:
        answered, total = self._session.progress
        state = "revealed" if self._session.revealed else "blinded"
        return f"{type(self).__name__}(trial={self.trial}, answered={answered}/{total}, {state})"

    # -- trial flow -------------------------------------------------------------

    def _labels(self) -> tuple[str, ...]:
        """Labels of the current trial that can be played (answerable ones and Ref)."""
        return tuple(self._session.trials[self.trial].labels) if self.trial is not None else ()

    def _drop_players(self) -> None:
        for player in self.players.values():
            player.stop()
            player.value = b""  # a saved notebook keeps no stale clip (its state is recorded)
            player.close()
        self.players, self.marks = {}, {}
        self.play_box.children = ()

    def _show(self, trial: int | None) -> None:
        self.trial = trial
        self._drop_players()
        s = self._session
        answered, total = s.progress
        if trial is None:
            self.header.value = (
                f"<b>All {total} trials answered.</b> Press Reveal to unblind."
                if not s.revealed
                else ""
            )
            self._build_answer(None)
            self.reveal_button.disabled = s.revealed
            self.sink.info("")
            return
        t = s.trials[trial]
        self.header.value = (
            f"<b>Trial {trial + 1} of {total}</b> - {html.escape(t.prompt)} ({answered} answered)"
        )
        rows = []
        for label in self._labels():
            samples, rate = s.clip(trial, label)
            player = ClipPlayer(label=label)
            player.load(encode_mp3(samples, sr=rate), duration=samples.shape[-1] / rate)
            player.observe(
                self.sink.guard(lambda _c, lab=label: self._heard(lab), context="play"),
                names="heard",
            )
            self.players[label] = player
            self.marks[label] = W.HTML(status_html("not played"))
            rows.append(W.HBox([player, self.marks[label]]))
        self.play_box.children = tuple(rows)
        self._build_answer(t)
        self._gate()

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

    def _heard(self, label: str) -> None:
        """The browser reported playback of ``label``: played through enough, it counts."""
        player = self.players.get(label)
        if self.trial is None or player is None:
            return
        if player.played_fraction() + 1e-6 < self.min_fraction:
            return
        if label not in self._session.played(self.trial):
            self._session.mark_played(self.trial, label)
            self.marks[label].value = status_html("played", "ok")
            self._gate()

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

    def _gate(self) -> None:
        ready = self.all_played()
        for w in self._answer_controls():
            w.disabled = not ready
        if self.trial is not None and not ready:
            played = self._session.played(self.trial)
            left = [lab for lab in self._session.trials[self.trial].labels if lab not in played]
            self.sink.info(f"play {', '.join(left)} to the end to answer")
        elif ready:
            self.sink.info("answer when ready", "ok")

    def submit(self, value: Any) -> None:
        """Answer the current trial with ``value`` (what the answer controls do)."""
        if self.trial is None:
            raise ValueError("answer: the session is complete")
        self._session.answer(self.trial, value)
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
        self.reveal_button.disabled = True
        self.children = tuple(c for c in self.children if c is not self.reveal_button)
        self.sink.info("")
        self.header.value = f"<b>Revealed</b> - {len(s.trials)} trials"
        self.summary = self._summary()
        self.results.value = self._summary_html(self.summary)
        return frame

    # -- the summary after reveal ---------------------------------------------

    def _summary(self) -> pd.DataFrame:
        raise NotImplementedError

    def _summary_html(self, summary: pd.DataFrame) -> str:
        raise NotImplementedError

    # -- kind-specific ----------------------------------------------------------

    def _build_answer(self, trial: Any) -> None:
        raise NotImplementedError

    def _answer_controls(self) -> list[W.DOMWidget]:
        return list(self.answer_box.children)


def _pct(x: float) -> str:
    return "-" if pd.isna(x) else f"{100 * x:.0f} %"


def _table(rows: list[list[str]], head: list[str]) -> str:
    cell = "padding:.15em .7em;text-align:right"
    out = ["<table style='border-collapse:collapse'><tr>"]
    out += [f"<th style='{cell}'>{html.escape(h)}</th>" for h in head]
    out.append("</tr>")
    for row in rows:
        out.append(
            "<tr>" + "".join(f"<td style='{cell}'>{html.escape(v)}</td>" for v in row) + "</tr>"
        )
    out.append("</table>")
    return "".join(out)


class PreferencePanel(ListeningPanel):
    """Which one do you prefer? One button per label (plus "no preference" with ties)."""

    kind = "preference"

    def _build_answer(self, trial: Any) -> None:
        buttons = []
        if trial is not None:
            for label in trial.labels:
                b = W.Button(description=f"prefer {label}", button_style="success")
                b.on_click(
                    self.sink.guard(lambda _b, lab=label: self.submit(lab), context="answer")
                )
                buttons.append(b)
            if self._session.options.get("allow_tie"):
                b = W.Button(description="no preference")
                b.on_click(self.sink.guard(lambda _b: self.submit(None), context="answer"))
                buttons.append(b)
        self.answer_box.children = tuple(buttons)

    def _summary(self) -> pd.DataFrame:
        models = self._session.stats()["models"]
        rows = []
        for m in models.itertuples():
            low, high = st.proportion_ci(int(m.chosen), int(m.offered))
            rows.append(
                {
                    "model": m.model,
                    "chosen": int(m.chosen),
                    "offered": int(m.offered),
                    "share": m.share,
                    "ci_low": low,
                    "ci_high": high,
                }
            )
        return pd.DataFrame(rows).sort_values("share", ascending=False, ignore_index=True)

    def _summary_html(self, summary: pd.DataFrame) -> str:
        best = summary.iloc[0]
        clear = len(summary) > 1 and best["ci_low"] > summary.iloc[1:]["ci_high"].max()
        verdict = (
            f"<b>Winner: {html.escape(str(best['model']))}</b>, chosen in "
            f"{_pct(best['share'])} of the trials it was in (95 % interval "
            f"{_pct(best['ci_low'])}-{_pct(best['ci_high'])})"
            + ("" if clear else "; its interval overlaps the next one's, so the lead may be chance")
        )
        rows = [
            [
                str(r.model),
                f"{r.chosen} of {r.offered}",
                _pct(r.share),
                f"{_pct(r.ci_low)}-{_pct(r.ci_high)}",
            ]
            for r in summary.itertuples()
        ]
        return verdict + _table(rows, ["model", "chosen", "share", "95 % interval (Wilson)"])


class ABXPanel(ListeningPanel):
    """Is X the same as A or as B?"""

    kind = "abx"

    def _build_answer(self, trial: Any) -> None:
        buttons = []
        if trial is not None:
            for label in ("A", "B"):
                b = W.Button(description=f"X is {label}", button_style="success")
                b.on_click(
                    self.sink.guard(lambda _b, lab=label: self.submit(lab), context="answer")
                )
                buttons.append(b)
        self.answer_box.children = tuple(buttons)

    def _summary(self) -> pd.DataFrame:
        pairs = self._session.stats()["pairs"]
        keep = [
            c
            for c in ("model_a", "model_b", "n", "correct", "rate", "ci_low", "ci_high", "p_value")
            if c in pairs.columns
        ]
        return pairs[keep].reset_index(drop=True)

    def _summary_html(self, summary: pd.DataFrame) -> str:
        rows = []
        for r in summary.to_dict("records"):
            rate = r.get("rate", float("nan"))
            rows.append(
                [
                    f"{r['model_a']} vs {r['model_b']}",
                    str(r.get("n", "")),
                    _pct(rate),
                    f"{_pct(r.get('ci_low'))}-{_pct(r.get('ci_high'))}",
                    f"{r.get('p_value', float('nan')):.3f}",
                ]
            )
        heard = [
            f"{r['model_a']} vs {r['model_b']}"
            for r in summary.to_dict("records")
            if r.get("p_value", 1.0) < 0.05
        ]
        verdict = (
            "<b>Heard a difference:</b> " + html.escape(", ".join(heard))
            if heard
            else "<b>No pair was told apart</b> (p &ge; 0.05 for every pair)"
        )
        return verdict + _table(rows, ["pair", "trials", "correct", "95 % interval", "p"])


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
            self.sliders[label] = W.IntSlider(
                value=50,
                min=0,
                max=100,
                description=label,
                orientation="vertical",
                continuous_update=False,
            )
        self.rate_button = W.Button(description="submit ratings", button_style="success")
        self.rate_button.on_click(
            self.sink.guard(
                lambda _b: self.submit({k: s.value for k, s in self.sliders.items()}),
                context="answer",
            )
        )
        self.answer_box.children = (*self.sliders.values(), self.rate_button)

    def _summary(self) -> pd.DataFrame:
        models = self._session.stats()["models"]
        keep = [c for c in ("model", "n", "mean", "ci_low", "ci_high") if c in models.columns]
        return models[keep].sort_values("mean", ascending=False, ignore_index=True)

    def _summary_html(self, summary: pd.DataFrame) -> str:
        best = summary.iloc[0]
        verdict = (
            f"<b>Highest score: {html.escape(str(best['model']))}</b>, "
            f"{best['mean']:.1f} (95 % interval {best['ci_low']:.1f}-{best['ci_high']:.1f})"
        )
        rows = [
            [
                str(r["model"]),
                str(r.get("n", "")),
                f"{r['mean']:.1f}",
                f"{r['ci_low']:.1f}-{r['ci_high']:.1f}",
            ]
            for r in summary.to_dict("records")
        ]
        return verdict + _table(rows, ["model", "ratings", "mean", "95 % interval (t)"])


_PANELS = {c.kind: c for c in (PreferencePanel, ABXPanel, MushraPanel)}


def listening_panel(session: Any, **options: Any) -> ListeningPanel:
    """The panel of the session's protocol (preference, abx or mushra)."""
    try:
        cls = _PANELS[session.kind]
    except (KeyError, AttributeError):
        raise ValueError(
            f"session: one of {', '.join(_PANELS)} sessions, got "
            f"{getattr(session, 'kind', type(session).__name__)!r}"
        ) from None
    return cls(session, **options)
