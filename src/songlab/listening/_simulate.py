"""Scripted listeners: play every clip and answer each open trial from a chosen truth, seeded.

For notebooks that must run unattended and for tests of the statistics. The
simulated listener reads the answer key privately (it knows the truth it
was told to follow); nothing of the key is exposed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from songlab.listening._errors import ListeningError
from songlab.listening._protocols import ABXSession, MushraSession, PreferenceSession
from songlab.listening.session import ListeningSession


def _check_p(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
        raise ListeningError(name, f"must be a probability in 0..1; got {value!r}")
    return float(value)


def simulate(
    session: ListeningSession,
    /,
    *,
    prefer: str | Mapping[str, float] | None = None,
    p: float = 0.8,
    p_tie: float = 0.0,
    p_correct: float = 0.9,
    scores: Mapping[str, float] | None = None,
    noise: float = 8.0,
    seed: int | None = 0,
) -> ListeningSession:
    """Play and answer every unanswered trial of ``session``; returns the session.

    Preference: ``prefer`` is a model chosen with probability ``p`` when
    offered (else a uniform pick among the others), or a mapping of model
    weights (choice probability proportional to weight); with ``allow_tie``
    the answer is "no preference" with probability ``p_tie``. ABX: correct
    with probability ``p_correct``. MUSHRA: rating ``scores[model]`` (default
    50) plus Gaussian ``noise`` (sd), clipped to 0..100.
    """
    if not isinstance(session, ListeningSession):
        raise ListeningError(
            "session", f"must be a listening session; got {type(session).__name__}"
        )
    p, p_tie, p_correct = (
        _check_p("p", p),
        _check_p("p_tie", p_tie),
        _check_p("p_correct", p_correct),
    )
    if isinstance(prefer, str) and prefer not in session.models:
        raise ListeningError(
            "prefer", f"must be one of the models {list(session.models)}; got {prefer!r}"
        )
    if isinstance(prefer, Mapping) and (not prefer or any(w < 0 for w in prefer.values())):
        raise ListeningError(
            "prefer", "weights must be a non-empty mapping of non-negative numbers"
        )
    if not noise >= 0:
        raise ListeningError("noise", f"must be >= 0; got {noise!r}")
    rng = np.random.default_rng(seed)
    plans = session._unseal()["plans"]
    for trial in session.trials:
        if trial.index in session._answers:
            continue
        for label in session._playable(trial):
            session.mark_played(trial.index, label)
        plan = plans[trial.index]
        answer: str | dict[str, float] | None
        if isinstance(session, PreferenceSession):
            answer = _prefer(
                trial.labels,
                plan.models,
                prefer,
                p,
                p_tie if session.options["allow_tie"] else 0.0,
                rng,
            )
        elif isinstance(session, ABXSession):
            x = "AB"[plan.x]
            answer = x if rng.random() < p_correct else "AB"[1 - plan.x]
        elif isinstance(session, MushraSession):
            means = [float((scores or {}).get(m, 50.0)) for m in plan.models]
            ratings = np.clip(np.array(means) + rng.normal(0.0, noise, len(means)), 0, 100)
            answer = {
                label: round(float(r), 1) for label, r in zip(trial.labels, ratings, strict=True)
            }
        else:  # pragma: no cover - only the three kinds exist
            raise ListeningError("session", f"unknown kind {session.kind!r}")
        session.answer(trial.index, answer)
    return session


def _prefer(
    labels: Sequence[str],
    models: Sequence[str],
    prefer: str | Mapping[str, float] | None,
    p: float,
    p_tie: float,
    rng: np.random.Generator,
) -> str | None:
    if p_tie and rng.random() < p_tie:
        return None
    if isinstance(prefer, Mapping):
        w = np.array([float(prefer.get(m, 0.0)) for m in models])
        w = w / w.sum() if w.sum() > 0 else np.full(len(models), 1 / len(models))
        return labels[int(rng.choice(len(models), p=w))]
    if prefer in models and rng.random() < p:
        return labels[models.index(prefer)]
    others = [i for i, m in enumerate(models) if m != prefer]
    return labels[int(rng.choice(others))]
