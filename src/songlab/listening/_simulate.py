"""Scripted listeners: play every clip and answer each open trial from a chosen truth, seeded.

For notebooks that must run unattended and for tests of the statistics. The
simulated listener reads the answer key privately (it knows the truth it
was told to follow); nothing of the key is exposed. What it answers is the
protocol's (:meth:`ListeningSession._scripted`); the options it takes are the
protocol's ``behaviour``, and ``attentive``: the chance that it passes a rater check
(else it answers the check as any other trial). Its answers are marked scripted.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from songlab.listening._errors import ListeningError
from songlab.listening._kit import probability
from songlab.listening.registry import PROTOCOLS
from songlab.listening.session import ListeningSession


def simulate(
    session: ListeningSession, /, *, seed: int | None = 0, **behaviour: Any
) -> ListeningSession:
    """Play and answer every unanswered trial of ``session``; returns the session.

    ``behaviour``: the protocol's scripted-listener options (an option of another
    protocol's listener is ignored, so one set of options serves any). Preference: ``prefer`` (a
    model chosen with probability ``p`` when offered, else a uniform pick among the
    others; or a mapping of model weights), ``p``, ``p_tie`` ("no preference" with
    ``allow_tie``). ABX: ``p_correct``. MUSHRA: ``scores[model]`` (default 50) plus
    Gaussian ``noise`` (sd), clipped to 0..100. ACR: ``scores[model]`` as a MOS (default
    3) plus ``noise``, rounded to a category. Every protocol: ``attentive`` (default 1), the
    chance of answering a rater check (gold clip, trapping question) right.
    """
    if not isinstance(session, ListeningSession):
        raise ListeningError(
            "session", f"must be a listening session; got {type(session).__name__}"
        )
    options = {"attentive": 1.0} | dict(session.behaviour)
    anyone = {name for cls in PROTOCOLS.values() for name in cls.behaviour}
    for name, value in behaviour.items():
        if name in options:
            options[name] = value
        elif name not in anyone:
            known = ", ".join(options) or "none"
            raise ListeningError(
                name, f"is not an option of a scripted listener ({session.kind}'s: {known})"
            )
    attentive = probability("attentive", options["attentive"])
    options = session._check_behaviour(options)
    rng = np.random.default_rng(seed)
    plans = session._unseal()["plans"]
    for trial in session.trials:
        if trial.index in session._answers:
            continue
        for label in session._playable(trial):
            session.mark_played(trial.index, label)
        plan = plans[trial.index]
        if plan.check is not None and rng.random() < attentive:
            answer = session._right_answer(trial, plan, options, rng)
        else:
            answer = session._scripted(trial, plan, options, rng)
        session._answer(trial.index, answer, replace=False, scripted=True)
    return session
