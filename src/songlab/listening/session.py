"""A blind listening session: trials, the hidden answer key, what was heard, answers, save/resume.

The answer key (which model is behind each label), the seed, the matching gains and
the session's key (its lead-ins) live in a closure (``self._unseal()``), never in a
public attribute, repr, str or results frame, until :meth:`ListeningSession.reveal`.
Saved files hold them too, sealed (base64 of compressed JSON: against accidental
peeking, not a cryptographic commitment).

Every clip is brought to one format first (:mod:`songlab.listening._format`: 48 kHz
stereo, leading silence cut, one common length with the same fades, loudness matched per
prompt), so nothing but its sound tells one model's clip from another's.

A *protocol* (preference, ABX, MUSHRA, ACR ...) is a subclass in one module of
:mod:`songlab.listening.protocols`, listed in :mod:`songlab.listening.registry`. It
fills in the hooks below: its options and trial design, its labels, the controls
that answer a trial (:mod:`songlab.listening.controls`, drawn by the rater page and
the notebook panel alike), what an answer is, its rater checks (a gold clip, a
trapping question), its result rows and statistics (one listener's and a panel's),
the summary a panel shows, and its scripted listener.

Answers record who gave them: a person (through a panel or a page) or the scripted
listener (:func:`~songlab.listening.simulate`). Statistics and summaries never mix the
two unless asked (``answers="all"``), and say which they are.
"""

from __future__ import annotations

import json
import math
import secrets
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, cast

import numpy as np
import pandas as pd

import songlab.audio as sa  # its loudness (pyloudnorm, scipy) loads on first use
import songlab.listening._format as fmt
from songlab.audio import Player, encode, player
from songlab.listening._errors import ListeningError, NotPlayedError, SessionError
from songlab.listening._kit import check_source
from songlab.listening._match import match_loudness
from songlab.listening._store import (
    FORMAT,
    fingerprint,
    read_clips,
    seal_text,
    sealed,
    unseal_text,
)
from songlab.listening._trials import Plan, with_checks
from songlab.listening.controls import Controls, Summary
from songlab.localfiles import replace_atomically, write_atomic

__all__ = ["ANSWERS", "ListeningSession", "Trial"]

#: whose answers a statistic or a summary is of
ANSWERS = ("person", "scripted", "all")
_BY = {"person": "person", "scripted": "scripted listener", "all": "person and scripted"}
MIN_HEARD = 5.0  # seconds of each clip a listener must hear (Music Arena), or the whole clip


@dataclass(frozen=True)
class Trial:
    """What a listener may know of a trial: its index, prompt and blinded labels."""

    index: int
    prompt: str
    labels: tuple[str, ...]


def _count(name: str, value: Any, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= high:
        raise ListeningError(name, f"must be an int in 0..{high}; got {value!r}")
    return value


class ListeningSession:
    """A blind session of one protocol (the base of every protocol's session class)."""

    #: the protocol's name: the registry's key, and what saved files and pages say
    kind: ClassVar[str] = ""
    #: the scripted listener's options and their defaults (see :meth:`_scripted`)
    behaviour: ClassVar[Mapping[str, Any]] = {}
    #: what a listener must do with a clip interrupted by beeps (the trapping question)
    trap_rule: ClassVar[str] = ""
    #: where :meth:`panel_stats` keeps the panel's score per model, ``(table, column)``;
    #: None for a protocol that does not score models (the scorecard reads it)
    panel_score: ClassVar[tuple[str, str] | None] = None

    def __init__(
        self,
        clips: Mapping[str, Sequence[Any]],
        /,
        *,
        sr: int | None = None,
        prompts: Sequence[str] | None = None,
        seed: int | None = None,
        repeats: int = 1,
        peak_ceiling_db: float = -1.0,
        seconds: float | None = None,
        min_heard: float = MIN_HEARD,
        gold: int = 0,
        traps: int = 0,
        **options: Any,
    ) -> None:
        models, n_prompts, decoded = read_clips(clips, sr)
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
            raise ListeningError("seed", f"must be a non-negative int or None; got {seed!r}")
        if isinstance(repeats, bool) or not isinstance(repeats, int) or not 1 <= repeats <= 100:
            raise ListeningError("repeats", f"must be an int in 1..100; got {repeats!r}")
        if seconds is not None and (
            isinstance(seconds, bool) or not isinstance(seconds, int | float) or seconds < 0.5
        ):
            raise ListeningError("seconds", f"must be None or at least 0.5 s; got {seconds!r}")
        if (
            isinstance(min_heard, bool)
            or not isinstance(min_heard, int | float)
            or not 0 < min_heard <= 60
        ):
            raise ListeningError("min_heard", f"must be seconds in (0, 60]; got {min_heard!r}")
        if prompts is None:
            prompts = [f"prompt {i + 1}" for i in range(n_prompts)]
        if (
            isinstance(prompts, str)
            or len(prompts) != n_prompts
            or len(set(map(str, prompts))) != n_prompts
        ):
            raise ListeningError(
                "prompts", f"must be {n_prompts} distinct names, one per clip of a model"
            )
        reserved = [m for m in models if check_source(m) is not None]
        if reserved:
            raise ListeningError("clips", f"model names like {reserved[0]!r} are reserved")
        options = self._check_options(models, dict(options))
        options["repeats"] = repeats
        options["peak_ceiling_db"] = peak_ceiling_db
        options["seconds"] = None if seconds is None else float(seconds)
        options["min_heard"] = float(min_heard)
        options["gold"] = _count("gold", gold, 20)
        options["traps"] = _count("traps", traps, 20)
        if seed is None:
            seed = cast(int, np.random.SeedSequence().entropy) % (2**63)  # drawn, recorded, sealed
        plans = self._plans(models, n_prompts, options, seed)
        key = secrets.token_bytes(32)
        self._setup(models, [str(p) for p in prompts], decoded, options, seed, plans, key)
        self._fresh()

    def _fresh(self) -> None:
        self._answers: dict[int, Any] = {}
        self._scripted_trials: set[int] = set()
        self._heard: dict[int, dict[str, float]] = {}
        self._revealed = False
        self._watchers: list[Callable[[ListeningSession], None]] = []

    # -- hooks of the protocols ----------------------------------------------------------
    def _check_options(self, models: list[str], options: dict[str, Any]) -> dict[str, Any]:
        raise NotImplementedError

    def _design(
        self, models: list[str], n_prompts: int, options: dict[str, Any], rng: np.random.Generator
    ) -> list[Plan]:
        raise NotImplementedError

    def _conditions(
        self, decoded: dict[str, list[tuple[np.ndarray, int]]], options: dict[str, Any]
    ) -> dict[str, list[tuple[np.ndarray, int]]]:
        return decoded

    def _labels(self, plan: Plan) -> tuple[str, ...]:
        raise NotImplementedError

    def _playable(self, trial: Trial) -> tuple[str, ...]:
        """The labels of ``trial`` a listener can play, in the order a screen shows them."""
        return trial.labels

    def _model_of_plan(self, trial: Trial, plan: Plan, label: str) -> str:
        """The model (condition) behind ``label`` (a protocol with extra labels overrides it)."""
        return plan.models[trial.labels.index(label)]

    def controls(self, trial: int, /) -> Controls:
        """The controls that answer ``trial`` (what the rater page and the panel draw)."""
        raise NotImplementedError

    def _check_answer(self, trial: Trial, value: Any) -> Any:
        raise NotImplementedError

    def _check_plan(self, check: str, template: Plan, rng: np.random.Generator) -> Plan:
        """A rater check made from a trial of the design: ``check`` is ``"gold"`` (a clip
        made plainly bad: its answer is known) or ``"trap"`` (a clip interrupted by beeps:
        the listener must do what :attr:`trap_rule` says)."""
        raise NotImplementedError

    def _passed(self, trial: Trial, plan: Plan, answer: Any) -> bool:
        """Whether ``answer`` passes the check trial ``trial``."""
        raise NotImplementedError

    def _expected(self, trial: Trial, plan: Plan) -> str:
        """What passes the check trial ``trial``, in words."""
        raise NotImplementedError

    def _rows(self, trial: Trial, plan: Plan, answer: Any, revealed: bool) -> list[dict[str, Any]]:
        raise NotImplementedError

    def _frame(self, rows: list[dict[str, Any]]) -> pd.DataFrame:
        raise NotImplementedError

    def _stats(self, frame: pd.DataFrame, /, **options: Any) -> dict[str, pd.DataFrame]:
        """Statistics by model of a revealed results ``frame``."""
        raise NotImplementedError

    @classmethod
    def panel_stats(
        cls,
        frame: pd.DataFrame,
        /,
        *,
        options: Mapping[str, Any],
        baseline: str | None = None,
        confidence: float = 0.95,
    ) -> dict[str, pd.DataFrame]:
        """Statistics across raters of a campaign's ``frame`` (with a ``rater`` column)."""
        raise NotImplementedError

    @classmethod
    def screen(cls, frame: pd.DataFrame, /, *, options: Mapping[str, Any]) -> pd.DataFrame | None:
        """The protocol's own screening of raters (``rater``, ``excluded``, ``reason``), if any."""
        return None

    def _summary(self, frame: pd.DataFrame) -> Summary:
        """What a panel shows of a revealed results ``frame``: a verdict and a table by model."""
        raise NotImplementedError

    def _check_behaviour(self, behaviour: dict[str, Any]) -> dict[str, Any]:
        """The scripted listener's options (``behaviour`` with defaults filled), checked."""
        return behaviour

    def _scripted(
        self, trial: Trial, plan: Plan, behaviour: Mapping[str, Any], rng: np.random.Generator
    ) -> Any:
        """A scripted listener's answer to ``trial`` (it knows the plan: the truth it follows)."""
        raise NotImplementedError

    def _right_answer(
        self, trial: Trial, plan: Plan, behaviour: Mapping[str, Any], rng: np.random.Generator
    ) -> Any:
        """An attentive scripted listener's answer to a check trial: one that passes."""
        raise NotImplementedError

    # -- construction --------------------------------------------------------------------
    def _plans(
        self, models: list[str], n_prompts: int, options: dict[str, Any], seed: int
    ) -> list[Plan]:
        """The design from ``seed``, with the rater checks placed at random among it."""
        rng = np.random.default_rng(seed)
        plans = self._design(models, n_prompts, options, rng)
        wanted = ["gold"] * options["gold"] + ["trap"] * options["traps"]
        if not wanted:
            return plans
        checks = [self._check_plan(c, plans[int(rng.integers(len(plans)))], rng) for c in wanted]
        return with_checks(plans, checks, rng=rng)

    def _setup(
        self,
        models: list[str],
        prompts: list[str],
        decoded: dict[str, list[tuple[np.ndarray, int]]],
        options: dict[str, Any],
        seed: int,
        plans: list[Plan],
        key: bytes,
    ) -> None:
        cores, gains, targets = self._match(prompts, decoded, options)
        secret = {
            "seed": seed,
            "plans": plans,
            "clips": cores,
            "gains": gains,
            "targets": targets,
            "key": key,
        }
        self._store(models, prompts, options, secret)
        self._fingerprint = fingerprint(models, decoded)

    def sibling(self, seed: int, /, *, key: bytes | None = None) -> ListeningSession:
        """A fresh, unanswered session of the same clips and options with its own design
        from ``seed`` (and its own ``key`` for lead-ins, random unless given).

        The loudness-matched clips are shared, not measured again (a campaign
        builds one sibling per rater).
        """
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            raise ListeningError("seed", f"must be a non-negative int; got {seed!r}")
        secret = self._unseal()
        other = type(self).__new__(type(self))
        plans = other._plans(list(self.models), len(self.prompts), self.options, seed)
        shared = dict(secret, seed=seed, plans=plans, key=key or secrets.token_bytes(32))
        other._store(list(self.models), list(self.prompts), self.options, shared)
        other._fingerprint = self._fingerprint
        other._fresh()
        return other

    def _match(
        self,
        prompts: list[str],
        decoded: dict[str, list[tuple[np.ndarray, int]]],
        options: dict[str, Any],
    ) -> tuple[dict[tuple[str, int], np.ndarray], dict[str, dict[str, float]], list[float]]:
        """Every clip (and anchor) in the common format, loudness-matched per prompt."""
        conditions = self._conditions(decoded, options)
        conformed = {c: [fmt.conform(a, r) for a, r in clips] for c, clips in conditions.items()}
        samples = _common_length(conformed, prompts, options["seconds"])
        cores: dict[tuple[str, int], np.ndarray] = {}
        gains: dict[str, dict[str, float]] = {}
        targets: list[float] = []
        for p, prompt in enumerate(prompts):
            names = list(conformed)
            group = [fmt.fit(conformed[c][p], samples) for c in names]
            result = match_loudness(
                [fmt.shape(a) for a in group],
                sr=[fmt.RATE] * len(group),
                names=[f"{c!r}, {prompt!r}" for c in names],
                peak_ceiling_db=options["peak_ceiling_db"],
            )
            for c, core, g, loud in zip(
                names, group, result.gains_db, result.loudness, strict=True
            ):
                cores[(c, p)] = (core * np.float32(10 ** (g / 20))).astype(np.float32)
                gains.setdefault(c, {})[str(p)] = g
                gains[c][f"loudness_{p}"] = loud
            targets.append(result.loudness[0] + result.gains_db[0])  # every clip's, matched
        return cores, gains, targets

    def _store(
        self, models: list[str], prompts: list[str], options: dict[str, Any], secret: dict[str, Any]
    ) -> None:
        self.models = tuple(models)
        self.prompts = tuple(prompts)
        self.options = dict(options)
        self.trials = tuple(
            Trial(i, prompts[plan.prompt], self._labels(plan))
            for i, plan in enumerate(secret["plans"])
        )
        self._unseal = sealed(secret)
        self._lead_plan: dict[int, dict[str, int]] | None = None  # _leads, made on first use

    def _core(self, condition: str, prompt: int) -> np.ndarray:
        """The matched common-format clip of ``condition`` for ``prompt``; a check clip (a
        gold clip, a clip with beeps) is made from its model's the first time it is needed,
        and matched to the prompt's loudness."""
        secret = self._unseal()
        cores: dict[tuple[str, int], np.ndarray] = secret["clips"]
        if (condition, prompt) not in cores:
            source = check_source(condition)
            if source is None:
                raise KeyError(condition)
            check, count, model = source
            base = self._core(model, prompt)
            made = fmt.degrade(base) if check == "gold" else fmt.beeps(base, count=count)
            loud = sa.integrated_loudness(fmt.shape(made), sr=fmt.RATE)
            gain = secret["targets"][prompt] - loud
            gain = min(gain, self.options["peak_ceiling_db"] - sa.peak_db(made))
            cores[(condition, prompt)] = (made * np.float32(10 ** (gain / 20))).astype(np.float32)
        return cores[(condition, prompt)]

    # -- the listener's side -------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.trials)

    def __repr__(self) -> str:
        state = "revealed" if self._revealed else "blinded"
        scripted = f", scripted={len(self._scripted_trials)}" if self._scripted_trials else ""
        return (
            f"{type(self).__name__}(models={len(self.models)}, prompts={len(self.prompts)}, "
            f"trials={len(self.trials)}, answered={len(self._answers)}{scripted}, {state})"
        )

    __str__ = __repr__

    @property
    def revealed(self) -> bool:
        return self._revealed

    @property
    def answers(self) -> dict[int, Any]:
        """Answers so far by trial index, in blinded labels."""
        return {
            t: (dict(a) if isinstance(a, dict) else a) for t, a in sorted(self._answers.items())
        }

    @property
    def scripted(self) -> frozenset[int]:
        """The trials the scripted listener answered (the others were answered by a person)."""
        return frozenset(self._scripted_trials)

    def answered_by(self) -> dict[str, int]:
        """How many trials a person and the scripted listener answered."""
        n = len(self._scripted_trials)
        return {"person": len(self._answers) - n, "scripted": n}

    @property
    def progress(self) -> tuple[int, int]:
        """``(answered, total)``."""
        return (len(self._answers), len(self.trials))

    @property
    def done(self) -> bool:
        return len(self._answers) == len(self.trials)

    @property
    def next_trial(self) -> int | None:
        """Index of the first unanswered trial, or None when all are answered."""
        return next((t.index for t in self.trials if t.index not in self._answers), None)

    def observe(self, callback: Callable[[ListeningSession], None], /) -> None:
        """Call ``callback(session)`` after every answer (a panel follows a session so)."""
        self._watchers.append(callback)

    def _trial(self, trial: Any) -> Trial:
        if (
            isinstance(trial, bool)
            or not isinstance(trial, int | np.integer)
            or not 0 <= trial < len(self.trials)
        ):
            raise ListeningError(
                "trial", f"must be an int in 0..{len(self.trials) - 1}; got {trial!r}"
            )
        return self.trials[int(trial)]

    def _check_label(self, trial: Trial, label: Any) -> str:
        if label not in self._playable(trial):
            raise ListeningError(
                "label", f"must be one of {', '.join(self._playable(trial))}; got {label!r}"
            )
        checked: str = label
        return checked

    def _model_of(self, trial: Trial, label: str) -> str:
        return self._model_of_plan(trial, self._unseal()["plans"][trial.index], label)

    def _clip_core(self, trial: int, label: str) -> np.ndarray:
        t = self._trial(trial)
        label = self._check_label(t, label)
        return self._core(self._model_of(t, label), self._unseal()["plans"][t.index].prompt)

    @property
    def seconds(self) -> float:
        """The length of every clip of the session, in seconds (the common length)."""
        core = next(iter(self._unseal()["clips"].values()))
        return float(core.shape[-1]) / fmt.RATE

    @property
    def need(self) -> float:
        """Seconds of a clip a listener must hear before it counts: ``min_heard`` (default
        5 s, as Music Arena), or the whole clip when it is shorter (a quarter second spared)."""
        whole = self.seconds
        return min(float(self.options["min_heard"]), max(whole - 0.25, 0.5 * whole))

    @property
    def need_ms(self) -> int:
        """:attr:`need` in whole milliseconds, rounded up: what a rater page waits for and what
        an answer file must show. Rounded down, a page could count 749 ms of a 749.98 ms need
        as played and send an answer that collecting then refused (seen under load)."""
        return math.ceil(self.need * 1000 - 1e-9)

    def clip(self, trial: int, label: str, /) -> tuple[np.ndarray, int]:
        """The clip behind ``label`` of ``trial`` as it is heard: ``(float32 (2, samples), 48000)``,
        in the common format (one length, the same fades, loudness matched)."""
        return fmt.shape(self._clip_core(trial, label)), fmt.RATE

    def delivered(self, trial: int, label: str, /, *, bitrate: int = fmt.DEFAULT_BITRATE) -> bytes:
        """:meth:`clip` as a listener's screen gets it: constant-bitrate MP3 after a lead-in
        drawn from the session's key, so no two labels' bytes are alike (X is not a copy of A)."""
        t = self._trial(trial)
        lead = self._leads(t)[self._check_label(t, label)]
        return fmt.encode_mp3(fmt.shape(self._clip_core(trial, label), lead=lead), bitrate=bitrate)

    def _leads(self, t: Trial) -> dict[str, int]:
        """The lead-in of each playable label of ``t``: all different within the trial, and
        never one that the same clip had in an earlier trial of the session.

        X (or the hidden reference) is the same clip as another label: one lead-in drawn for
        both (one trial in 1,151 when each label drew its own) gave both the same bytes. And
        the same clip comes back in other trials: X of one trial with the same bytes as A of
        another named X's clip to a rater who compared bytes across trials, as the campaign
        pages never allowed (``page.PageAudio``). Trials are taken in order and their labels
        in sorted order, each its first draw or the next variant where that one is taken, so
        the lead-ins depend only on the key and the design, never on what was played. The
        whole session's are drawn once, on first use (one pass: 360 trials drawn trial by
        trial again for each label took 4.4 s).
        """
        if self._lead_plan is None:
            self._lead_plan = self._draw_leads()
        return self._lead_plan[t.index]

    def _draw_leads(self) -> dict[int, dict[str, int]]:
        secret = self._unseal()
        key, plans = secret["key"], secret["plans"]
        used: dict[tuple[str, str], set[int]] = {}  # (model, prompt) -> lead-ins it had
        out: dict[int, dict[str, int]] = {}
        for trial in self.trials:
            plan = plans[trial.index]
            taken = out[trial.index] = {}
            for label in sorted(self._playable(trial)):
                had = used.setdefault((self._model_of_plan(trial, plan, label), plan.prompt), set())
                # variants 0..LEAD_MAX-1 give every lead-in once (fmt.lead)
                free = (
                    n
                    for v in range(fmt.LEAD_MAX)
                    if (n := fmt.lead(key, trial.index, label, variant=v)) not in had
                    and n not in taken.values()
                )
                lead = next(free, None)
                if lead is None:
                    raise ListeningError(
                        "clips",
                        f"one clip is in a session more than {fmt.LEAD_MAX} times: "
                        "no lead-in left to keep its copies apart",
                    )
                taken[label] = lead
                had.add(lead)
        return out

    def encoded(self, trial: int, label: str, /, *, format: str = "wav") -> bytes:
        """:meth:`clip` encoded (e.g. for ``ipywidgets.Audio(value=..., autoplay=False)``)."""
        arr, rate = self.clip(trial, label)
        return encode(arr, sr=rate, format=format)

    def player(self, trial: int, label: str, /, **options: Any) -> Player:
        """An inline player of :meth:`clip` (playing it is not marked: call :meth:`mark_played`)."""
        arr, rate = self.clip(trial, label)
        options.setdefault("label", label)
        return player((arr, rate), **options)

    def mark_played(self, trial: int, label: str, /, *, seconds: float | None = None) -> None:
        """Record that the listener heard ``seconds`` of ``label`` of ``trial`` (None: all of it).

        A clip counts as played once :attr:`need` seconds of it were heard."""
        t = self._trial(trial)
        label = self._check_label(t, label)
        heard = self.seconds if seconds is None else float(seconds)
        if not heard >= 0:
            raise ListeningError("seconds", f"must be >= 0; got {seconds!r}")
        per = self._heard.setdefault(t.index, {})
        per[label] = max(per.get(label, 0.0), heard)

    def heard(self, trial: int, /) -> dict[str, float]:
        """Seconds heard of each label of ``trial`` so far."""
        return dict(self._heard.get(self._trial(trial).index, {}))

    def played(self, trial: int, /) -> frozenset[str]:
        """Labels of ``trial`` heard for :attr:`need` seconds so far."""
        need = self.need - 1e-6
        return frozenset(
            label for label, s in self._heard.get(self._trial(trial).index, {}).items() if s >= need
        )

    def answer(self, trial: int, value: Any, /, *, replace: bool = False) -> None:
        """Answer ``trial`` (the protocol's ``value``); every clip of the trial must have been
        heard for :attr:`need` seconds."""
        self._answer(trial, value, replace=replace, scripted=False)

    def _answer(self, trial: int, value: Any, *, replace: bool, scripted: bool) -> None:
        t = self._trial(trial)
        value = self._check_answer(t, value)
        if self._revealed:
            raise SessionError("the session was revealed; it takes no more answers")
        played = self.played(t.index)
        missing = [label for label in t.labels if label not in played]
        if missing:
            raise NotPlayedError(
                f"trial {t.index}: play every clip before answering; not played yet: "
                f"{', '.join(missing)} (each must be heard for {self.need_ms / 1000:g} s; "
                f"call mark_played({t.index}, label) as each one plays)"
            )
        if t.index in self._answers and not replace:
            raise SessionError(
                f"trial {t.index} is already answered (pass replace=True to change it)"
            )
        self._answers[t.index] = value
        if scripted:
            self._scripted_trials.add(t.index)
        else:
            self._scripted_trials.discard(t.index)
        for watcher in list(self._watchers):
            watcher(self)

    # -- results -------------------------------------------------------------------------
    def reveal(self) -> pd.DataFrame:
        """Unblind: from now on :attr:`key`, :attr:`seed` and model columns are available. Returns :meth:`results`."""
        self._revealed = True
        return self.results()

    def _require_revealed(self, what: str) -> None:
        if not self._revealed:
            raise SessionError(f"{what} is hidden until the session is revealed (call reveal())")

    @property
    def key(self) -> dict[int, dict[str, str]]:
        """The answer key ``{trial: {label: model}}`` (after :meth:`reveal` only)."""
        self._require_revealed("the answer key")
        return {
            t.index: {label: self._model_of(t, label) for label in self._playable(t)}
            for t in self.trials
        }

    @property
    def seed(self) -> int:
        """The seed the design was drawn from (after :meth:`reveal` only: it regenerates the key)."""
        self._require_revealed("the seed")
        return int(self._unseal()["seed"])

    def results(self, *, answers: str = "all") -> pd.DataFrame:
        """Answered trials as a frame (the rater checks left out: see :meth:`checks`): blinded
        labels before reveal, models after; ``scripted`` says who answered each.
        ``answers``: ``"person"``, ``"scripted"`` or ``"all"`` of them."""
        wanted = self._who(answers)
        plans = self._unseal()["plans"]
        rows = [
            row
            for t in self.trials
            if t.index in self._answers
            and plans[t.index].check is None
            and (t.index in self._scripted_trials) in wanted
            for row in self._rows(t, plans[t.index], self._answers[t.index], self._revealed)
        ]
        frame = self._frame(rows)
        scripted = [int(t) in self._scripted_trials for t in frame["trial"]]
        frame.insert(2, "scripted", pd.Series(scripted, index=frame.index, dtype="boolean"))
        return frame

    @staticmethod
    def _who(answers: str) -> set[bool]:
        if answers not in ANSWERS:
            raise ListeningError("answers", f"must be one of {', '.join(ANSWERS)}; got {answers!r}")
        return {"person": {False}, "scripted": {True}, "all": {False, True}}[answers]

    def _source(self, answers: str | None) -> str:
        """Whose answers a statistic is of: ``answers``, or the only kind there is; never a
        silent mix of a person's and the scripted listener's."""
        by = self.answered_by()
        if answers is not None:
            self._who(answers)
            return answers
        if by["person"] and by["scripted"]:
            raise SessionError(
                f"this session mixes {by['person']} answers by a person and {by['scripted']} by "
                "the scripted listener; pass answers='person', 'scripted' or 'all' (mixed)"
            )
        return "scripted" if by["scripted"] else "person"

    def stats(self, *, answers: str | None = None, **options: Any) -> dict[str, pd.DataFrame]:
        """Statistics by model (after :meth:`reveal`), of ``answers`` (``"person"``,
        ``"scripted"``, ``"all"``; by default the only kind there is: a mix is refused).
        Each frame's ``answered_by`` column says whose they are. ``options``: the
        protocol's (see its ``_stats``)."""
        self._require_revealed("statistics by model")
        source = self._source(answers)
        out = self._stats(self.results(answers=source), **options)
        for frame in out.values():
            frame.insert(
                0, "answered_by", pd.Series(_BY[source], index=frame.index, dtype="string")
            )
            frame.attrs["answers"] = source
        return out

    def summary(self, *, answers: str | None = None) -> Summary:
        """What a panel shows once the session is revealed (of ``answers``, as :meth:`stats`)."""
        self._require_revealed("the summary by model")
        source = self._source(answers)
        return self._summary(self.results(answers=source))

    def summaries(self) -> list[tuple[str, int, Summary]]:
        """``(whose, trials, summary)`` for a person's answers and the scripted listener's,
        each on its own (the ones there are)."""
        by = self.answered_by()
        out = []
        for source in ("person", "scripted"):
            frame = self.results(answers=source)
            if not frame.empty:
                out.append((_BY[source], by[source], self._summary(frame)))
        return out

    def checks(self) -> pd.DataFrame:
        """The rater checks of the session (after :meth:`reveal`): per check trial, what it
        was (``gold``, ``trap``), the model it was made from, what passes, the answer given
        and whether it passed."""
        self._require_revealed("the rater checks")
        plans = self._unseal()["plans"]
        rows = []
        for t in self.trials:
            plan = plans[t.index]
            if plan.check is None:
                continue
            answered = t.index in self._answers
            source = check_source(plan.models[plan.at if plan.at is not None else 0])
            rows.append(
                {
                    "trial": t.index,
                    "check": plan.check,
                    "prompt": t.prompt,
                    "model": source[2] if source else None,
                    "expected": self._expected(t, plan),
                    "answer": _text(self._answers[t.index]) if answered else None,
                    "passed": self._passed(t, plan, self._answers[t.index]) if answered else None,
                    "scripted": t.index in self._scripted_trials,
                }
            )
        columns = {
            "trial": "Int64",
            "check": "string",
            "prompt": "string",
            "model": "string",
            "expected": "string",
            "answer": "string",
            "passed": "boolean",
            "scripted": "boolean",
        }
        return pd.DataFrame(rows, columns=list(columns)).astype(columns)

    def gains(self) -> pd.DataFrame:
        """Matching gain (dB) and loudness before matching (LUFS, in the common format) per
        model and prompt (after reveal)."""
        self._require_revealed("the matching gains")
        g = self._unseal()["gains"]
        rows = [
            {
                "model": m,
                "prompt": p,
                "gain_db": g[m][str(i)],
                "loudness_lufs": g[m][f"loudness_{i}"],
            }
            for m in g
            for i, p in enumerate(self.prompts)
        ]
        return pd.DataFrame(rows).astype({"model": "string", "prompt": "string"})

    def to_csv(self, path: str | Path, /) -> Path:
        """Write :meth:`results` to CSV, every text cell inert (a prompt like ``=HYPERLINK(...)``
        is written ``'=HYPERLINK(...)``, as the ledger's exports do); returns the path."""
        from songlab.ledger.export import inert

        frame = self.results()
        frame = frame.map(lambda v: inert(v) if isinstance(v, str) else v)
        # private (0600) and whole: a temporary file beside it, renamed over it
        return replace_atomically(path, lambda tmp: frame.to_csv(tmp, index=False))

    def to_parquet(self, path: str | Path, /) -> Path:
        """Write :meth:`results` to Parquet (pyarrow), private (0600); returns the path."""
        frame = self.results()
        return replace_atomically(path, lambda tmp: frame.to_parquet(tmp, index=False))

    # -- save / resume -------------------------------------------------------------------
    def save(self, path: str | Path, /) -> Path:
        """Save the session as JSON (answers, what was heard, the sealed key), a file only
        its owner can read (0600); resume with :func:`~songlab.listening.load`."""
        secret = self._unseal()
        sealed_part = {
            "seed": secret["seed"],
            "plans": [p.to_json() for p in secret["plans"]],
            "key": secret["key"].hex(),
        }
        doc = {
            "format": FORMAT,
            "kind": self.kind,
            "models": list(self.models),
            "prompts": list(self.prompts),
            "options": self.options,
            "fingerprint": self._fingerprint,
            "revealed": self._revealed,
            "trials": [
                {"index": t.index, "prompt": t.prompt, "labels": list(t.labels)}
                for t in self.trials
            ],
            "answers": {str(k): v for k, v in self._answers.items()},
            "scripted": sorted(self._scripted_trials),
            "heard": {str(k): v for k, v in self._heard.items()},
            "sealed": seal_text(sealed_part),
        }
        return write_atomic(Path(path), json.dumps(doc, indent=1))

    @classmethod
    def _restore(
        cls, doc: dict[str, Any], clips: Mapping[str, Sequence[Any]], sr: int | None
    ) -> ListeningSession:
        models, n_prompts, decoded = read_clips(clips, sr)
        if (
            models != doc["models"]
            or n_prompts != len(doc["prompts"])
            or fingerprint(models, decoded) != doc["fingerprint"]
        ):
            raise ListeningError(
                "clips",
                "are not the clips this session was made with (models, prompts or audio differ)",
            )
        sealed_part = unseal_text(doc["sealed"])
        plans = [Plan.from_json(p) for p in sealed_part["plans"]]
        options = dict(doc["options"])
        for name, default in (
            ("seconds", None),
            ("min_heard", MIN_HEARD),
            ("gold", 0),
            ("traps", 0),
        ):
            options.setdefault(name, default)
        key = bytes.fromhex(sealed_part["key"]) if "key" in sealed_part else secrets.token_bytes(32)
        self = cls.__new__(cls)
        self._setup(models, doc["prompts"], decoded, options, sealed_part["seed"], plans, key)
        self._fresh()
        self._answers = {int(k): v for k, v in doc["answers"].items()}
        self._scripted_trials = set(doc.get("scripted", []))
        if "heard" in doc:
            self._heard = {int(k): dict(v) for k, v in doc["heard"].items()}
        else:  # songlab.listening/1 files: the labels played, each in full
            self._heard = {int(k): dict.fromkeys(v, self.seconds) for k, v in doc["played"].items()}
        self._revealed = bool(doc["revealed"])
        return self


def _common_length(
    conformed: Mapping[str, list[np.ndarray]], prompts: list[str], seconds: float | None
) -> int:
    """The common length in samples: ``seconds``, or the shortest clip's sound. A clip with
    less sound than ``seconds`` (or under half a second) is refused, naming it: padding it
    with silence would tell its model apart (its clips alone would end in digital silence)."""
    least = int(0.25 * fmt.RATE)
    length, condition, p = min(
        (a.shape[-1], c, p) for c, clips in conformed.items() for p, a in enumerate(clips)
    )
    which = f"the clip of {condition!r} for {prompts[p]!r} has {length / fmt.RATE:.3f} s of sound"
    if length < least:
        raise ListeningError("clips", f"{which}: a clip needs at least 0.25 s")
    samples = length if seconds is None else int(round(seconds * fmt.RATE))
    if length < samples:
        raise ListeningError(
            "seconds",
            f"{which} (digital silence at either end cut), less than the {samples / fmt.RATE:.3f} "
            "s every clip is cut to; padding it with silence would tell its model apart: give "
            f"a shorter seconds= (at most {length / fmt.RATE:.3f} s) or a longer clip",
        )
    return samples


def _text(answer: Any) -> str:
    if isinstance(answer, Mapping):
        return ", ".join(f"{k} {v:g}" for k, v in sorted(answer.items()))
    return "None" if answer is None else str(answer)
