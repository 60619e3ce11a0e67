"""A blind listening session: trials, the hidden answer key, played tracking, answers, save/resume.

The answer key (which model is behind each label), the seed and the
matching gains live in a closure (``self._unseal()``), never in a public
attribute, repr, str or results frame, until :meth:`ListeningSession.reveal`.
Saved files hold the key too, sealed (base64 of compressed JSON: against
accidental peeking, not a cryptographic commitment).

A *protocol* (preference, ABX, MUSHRA, ACR ...) is a subclass in one module of
:mod:`songlab.listening.protocols`, listed in :mod:`songlab.listening.registry`. It
fills in the hooks below: its options and trial design, its labels, the controls
that answer a trial (:mod:`songlab.listening.controls`, drawn by the rater page and
the notebook panel alike), what an answer is, its result rows and statistics (one
listener's and a panel's), the summary a panel shows, and its scripted listener.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, cast

import numpy as np
import pandas as pd

from songlab.audio import Player, encode, player
from songlab.listening._errors import ListeningError, NotPlayedError, SessionError
from songlab.listening._match import match_loudness
from songlab.listening._store import (
    FORMAT,
    fingerprint,
    read_clips,
    seal_text,
    sealed,
    unseal_text,
)
from songlab.listening._trials import Plan
from songlab.listening.controls import Controls, Summary

LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWYZ"  # no X: it is ABX's reference
#: the columns every protocol's results share, with their dtypes
TRIAL_COLUMNS = {"trial": "Int64", "prompt": "string"}


def frame_of(
    rows: list[dict[str, Any]],
    blinded: Mapping[str, str],
    revealed: Mapping[str, str],
    is_revealed: bool,
) -> pd.DataFrame:
    """A results frame: the ``blinded`` columns, and the ``revealed`` ones after reveal
    (each mapping column -> dtype, in order)."""
    columns = dict(blinded) | (dict(revealed) if is_revealed else {})
    return pd.DataFrame(rows, columns=list(columns)).astype(columns)


def no_extra(options: Mapping[str, Any], allowed: set[str]) -> None:
    """Refuse an option the protocol does not take, naming it."""
    extra = sorted(set(options) - allowed)
    if extra:
        raise ListeningError(extra[0], "is not an option of this protocol")


def probability(name: str, value: Any) -> float:
    """``value`` checked to be a probability in 0..1."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
        raise ListeningError(name, f"must be a probability in 0..1; got {value!r}")
    return float(value)


def non_negative(name: str, value: Any) -> float:
    """``value`` checked to be a number >= 0."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not value >= 0:
        raise ListeningError(name, f"must be >= 0; got {value!r}")
    return float(value)


def score_summary(
    frame: pd.DataFrame,
    *,
    score: str,
    digits: int,
    what: str,
    head: tuple[str, ...],
    word: Callable[[float], str] | None = None,
) -> Summary:
    """A panel summary of a score per model (``frame``: model, n, ``score``, ci_low, ci_high,
    best first): the highest one as the verdict, and one row per model."""

    def number(x: float) -> str:
        return f"{x:.{digits}f}" + (f" ({word(x)})" if word is not None else "")

    best = frame.iloc[0]
    verdict = (
        f"Highest {what}: {best['model']}, {number(best[score])} "
        f"(95 % interval {best['ci_low']:.{digits}f}-{best['ci_high']:.{digits}f})"
    )
    rows = tuple(
        (
            str(r["model"]),
            str(r["n"]),
            number(r[score]),
            f"{r['ci_low']:.{digits}f}-{r['ci_high']:.{digits}f}",
        )
        for r in frame.to_dict("records")
    )
    return Summary(verdict, head, rows, frame)


def pct(x: float) -> str:
    """A share as a whole percentage (``-`` when undefined)."""
    return "-" if pd.isna(x) else f"{100 * x:.0f} %"


@dataclass(frozen=True)
class Trial:
    """What a listener may know of a trial: its index, prompt and blinded labels."""

    index: int
    prompt: str
    labels: tuple[str, ...]


class ListeningSession:
    """A blind session of one protocol (the base of every protocol's session class)."""

    #: the protocol's name: the registry's key, and what saved files and pages say
    kind: ClassVar[str] = ""
    #: the scripted listener's options and their defaults (see :meth:`_scripted`)
    behaviour: ClassVar[Mapping[str, Any]] = {}

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
        **options: Any,
    ) -> None:
        models, n_prompts, decoded = read_clips(clips, sr)
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
            raise ListeningError("seed", f"must be a non-negative int or None; got {seed!r}")
        if isinstance(repeats, bool) or not isinstance(repeats, int) or not 1 <= repeats <= 100:
            raise ListeningError("repeats", f"must be an int in 1..100; got {repeats!r}")
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
        options = self._check_options(models, dict(options))
        options["repeats"] = repeats
        options["peak_ceiling_db"] = peak_ceiling_db
        if seed is None:
            seed = cast(int, np.random.SeedSequence().entropy) % (2**63)  # drawn, recorded, sealed
        rng = np.random.default_rng(seed)
        plans = self._design(models, n_prompts, options, rng)
        self._setup(models, [str(p) for p in prompts], decoded, options, seed, plans)
        self._answers: dict[int, Any] = {}
        self._played: dict[int, set[str]] = {}
        self._revealed = False

    # -- hooks of the kinds -------------------------------------------------------------
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

    def _rows(self, trial: Trial, plan: Plan, answer: Any, revealed: bool) -> list[dict[str, Any]]:
        raise NotImplementedError

    def stats(self, **options: Any) -> dict[str, pd.DataFrame]:
        """Statistics by model (requires :meth:`reveal`); see :mod:`songlab.listening.stats`."""
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

    def summary(self) -> Summary:
        """What a panel shows once the session is revealed: a verdict and a table by model."""
        raise NotImplementedError

    def _check_behaviour(self, behaviour: dict[str, Any]) -> dict[str, Any]:
        """The scripted listener's options (``behaviour`` with defaults filled), checked."""
        return behaviour

    def _scripted(
        self, trial: Trial, plan: Plan, behaviour: Mapping[str, Any], rng: np.random.Generator
    ) -> Any:
        """A scripted listener's answer to ``trial`` (it knows the plan: the truth it follows)."""
        raise NotImplementedError

    # -- construction ------------------------------------------------------------------
    def _setup(
        self,
        models: list[str],
        prompts: list[str],
        decoded: dict[str, list[tuple[np.ndarray, int]]],
        options: dict[str, Any],
        seed: int,
        plans: list[Plan],
    ) -> None:
        matched, gains = self._match(prompts, decoded, options)
        self._store(models, prompts, options, seed, plans, matched, gains)
        self._fingerprint = fingerprint(models, decoded)

    def sibling(self, seed: int, /) -> ListeningSession:
        """A fresh, unanswered session of the same clips and options with its own design from ``seed``.

        The loudness-matched clips are shared, not measured again (a campaign
        builds one sibling per rater).
        """
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            raise ListeningError("seed", f"must be a non-negative int; got {seed!r}")
        secret = self._unseal()
        other = type(self).__new__(type(self))
        rng = np.random.default_rng(seed)
        plans = other._design(list(self.models), len(self.prompts), self.options, rng)
        other._store(
            list(self.models),
            list(self.prompts),
            self.options,
            seed,
            plans,
            secret["clips"],
            secret["gains"],
        )
        other._fingerprint = self._fingerprint
        other._answers, other._played, other._revealed = {}, {}, False
        return other

    def _match(
        self,
        prompts: list[str],
        decoded: dict[str, list[tuple[np.ndarray, int]]],
        options: dict[str, Any],
    ) -> tuple[dict[tuple[str, int], tuple[np.ndarray, int]], dict[str, dict[str, float]]]:
        conditions = self._conditions(decoded, options)
        matched: dict[tuple[str, int], tuple[np.ndarray, int]] = {}
        gains: dict[str, dict[str, float]] = {}
        for p, prompt in enumerate(prompts):
            names = list(conditions)
            group = [conditions[c][p] for c in names]
            result = match_loudness(
                [a for a, _ in group],
                sr=[r for _, r in group],
                names=[f"{c!r}, {prompt!r}" for c in names],
                peak_ceiling_db=options["peak_ceiling_db"],
            )
            for c, clip, (_, rate), g, loud in zip(
                names, result.clips, group, result.gains_db, result.loudness, strict=True
            ):
                matched[(c, p)] = (clip, rate)
                gains.setdefault(c, {})[str(p)] = g
                gains[c][f"loudness_{p}"] = loud
        return matched, gains

    def _store(
        self,
        models: list[str],
        prompts: list[str],
        options: dict[str, Any],
        seed: int,
        plans: list[Plan],
        matched: dict[tuple[str, int], tuple[np.ndarray, int]],
        gains: dict[str, dict[str, float]],
    ) -> None:
        self.models = tuple(models)
        self.prompts = tuple(prompts)
        self.options = dict(options)
        self.trials = tuple(
            Trial(i, prompts[plan.prompt], self._labels(plan)) for i, plan in enumerate(plans)
        )
        self._unseal = sealed({"seed": seed, "plans": plans, "clips": matched, "gains": gains})

    # -- the listener's side -----------------------------------------------------------
    def __len__(self) -> int:
        return len(self.trials)

    def __repr__(self) -> str:
        state = "revealed" if self._revealed else "blinded"
        return (
            f"{type(self).__name__}(models={len(self.models)}, prompts={len(self.prompts)}, "
            f"trials={len(self.trials)}, answered={len(self._answers)}, {state})"
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

    def clip(self, trial: int, label: str, /) -> tuple[np.ndarray, int]:
        """The loudness-matched clip behind ``label`` of ``trial``: ``(float32 (channels, samples), sr)``."""
        t = self._trial(trial)
        label = self._check_label(t, label)
        arr, rate = self._unseal()["clips"][
            (self._model_of(t, label), self.prompts.index(t.prompt))
        ]
        return arr.copy(), rate

    def encoded(self, trial: int, label: str, /, *, format: str = "wav") -> bytes:
        """:meth:`clip` encoded (e.g. for ``ipywidgets.Audio(value=..., autoplay=False)``)."""
        arr, rate = self.clip(trial, label)
        return encode(arr, sr=rate, format=format)

    def player(self, trial: int, label: str, /, **options: Any) -> Player:
        """An inline player of :meth:`clip` (playing it is not marked: call :meth:`mark_played`)."""
        arr, rate = self.clip(trial, label)
        options.setdefault("label", label)
        return player((arr, rate), **options)

    def mark_played(self, trial: int, label: str, /) -> None:
        """Record that the listener played ``label`` of ``trial``."""
        t = self._trial(trial)
        self._played.setdefault(t.index, set()).add(self._check_label(t, label))

    def played(self, trial: int, /) -> frozenset[str]:
        """Labels of ``trial`` played so far."""
        return frozenset(self._played.get(self._trial(trial).index, ()))

    def answer(self, trial: int, value: Any, /, *, replace: bool = False) -> None:
        """Answer ``trial`` (kind-specific ``value``); every clip of the trial must have been played."""
        t = self._trial(trial)
        value = self._check_answer(t, value)
        if self._revealed:
            raise SessionError("the session was revealed; it takes no more answers")
        missing = [label for label in t.labels if label not in self._played.get(t.index, set())]
        if missing:
            raise NotPlayedError(
                f"trial {t.index}: play every clip before answering; not played yet: {', '.join(missing)} "
                f"(call mark_played({t.index}, label) as each one plays)"
            )
        if t.index in self._answers and not replace:
            raise SessionError(
                f"trial {t.index} is already answered (pass replace=True to change it)"
            )
        self._answers[t.index] = value

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

    def results(self) -> pd.DataFrame:
        """Answered trials as a frame: blinded labels before reveal, models (and gains) after."""
        plans = self._unseal()["plans"]
        rows = [
            row
            for t in self.trials
            if t.index in self._answers
            for row in self._rows(t, plans[t.index], self._answers[t.index], self._revealed)
        ]
        return self._frame(rows)

    def _frame(self, rows: list[dict[str, Any]]) -> pd.DataFrame:
        raise NotImplementedError

    def gains(self) -> pd.DataFrame:
        """Matching gain (dB) and loudness before matching (LUFS) per model and prompt (after reveal)."""
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
        """Write :meth:`results` to CSV; returns the path."""
        path = Path(path)
        self.results().to_csv(path, index=False)
        return path

    def to_parquet(self, path: str | Path, /) -> Path:
        """Write :meth:`results` to Parquet (pyarrow); returns the path."""
        path = Path(path)
        self.results().to_parquet(path, index=False)
        return path

    # -- save / resume -------------------------------------------------------------------
    def save(self, path: str | Path, /) -> Path:
        """Save the session as JSON (answers, played, the sealed key); resume with :func:`load`."""
        secret = self._unseal()
        sealed = {
            "seed": secret["seed"],
            "plans": [[p.prompt, list(p.models), p.x] for p in secret["plans"]],
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
            "played": {str(k): sorted(v) for k, v in self._played.items()},
            "sealed": seal_text(sealed),
        }
        path = Path(path)
        path.write_text(json.dumps(doc, indent=1), encoding="utf-8")
        return path

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
        sealed = unseal_text(doc["sealed"])
        plans = [Plan(p, tuple(m), x) for p, m, x in sealed["plans"]]
        self = cls.__new__(cls)
        self._setup(models, doc["prompts"], decoded, doc["options"], sealed["seed"], plans)
        self._answers = {int(k): v for k, v in doc["answers"].items()}
        self._played = {int(k): set(v) for k, v in doc["played"].items()}
        self._revealed = bool(doc["revealed"])
        return self
