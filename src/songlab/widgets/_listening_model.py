"""The listening panel's state and what it shows: pure, no widgets.

The session (``songlab.listening``) holds the answers and what was heard; the panel's own
state is the trial it shows and the status of the last action a person took (play, answer,
reveal). :func:`view` derives everything the panel shows from the two: the trial's header,
each clip's mark ("not played", "heard 1.2 of 4.8 s", "played"), whether the answer
controls are enabled and why not, and the *Reveal* button.

Every place states the session's own minimum (:func:`need_text` of ``session.need``,
rounded up to a tenth of a second, so a person who hears what it says has heard enough):
the instruction, each clip's mark and the refusal of an answer given too soon. Time counts
at normal speed only (the player locks its rate to 1 and does not count time played
faster: :mod:`songlab.widgets._media`).

An answer control is enabled exactly when every clip of the shown trial was heard for
that minimum, so a second click of "I prefer A" (a double click) meets the next trial's
disabled controls: it saves nothing and says so for the trial on screen.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from songlab.widgets._status import Button, Status

__all__ = ["ListeningState", "TrialView", "how_long", "need_text", "view"]


def need_text(need: float) -> str:
    """``4.75`` -> ``"4.8 s"``: the minimum as a person reads it, never below the session's."""
    return f"{math.ceil(need * 10 - 1e-9) / 10:.1f} s"


def _listing(labels: Sequence[str]) -> str:
    items = list(labels)
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


@dataclass(frozen=True, slots=True)
class ListeningState:
    """The trial shown (None once every trial is answered) and the last action's status."""

    trial: int | None
    status: Status = Status("")


@dataclass(frozen=True, slots=True)
class TrialView:
    """What the panel shows for a state: ``marks`` by label, the ``answer`` controls'
    state, ``reveal``, and ``instruction`` (what to do now)."""

    marks: dict[str, str]
    answer: Button
    reveal: Button
    instruction: str


def how_long(session: Any) -> str:
    """``"for at least 4.8 s each, at normal speed"``: the session's minimum, as enforced."""
    return f"for at least {need_text(session.need)} each, at normal speed"


def view(session: Any, state: ListeningState, heard: dict[str, float]) -> TrialView:
    """What the panel shows for ``state``; ``heard``: seconds each label's player reported."""
    answered, total = session.progress
    if session.revealed:
        reveal = Button(False, "revealed")
    elif session.done:
        reveal = Button(True, "unblind: show the model behind each label")
    else:
        reveal = Button(
            False, f"Reveal unlocks once every trial is answered ({answered} of {total} so far)"
        )
    trial = state.trial
    if trial is None:
        return TrialView({}, Button(False, "every trial is answered"), reveal, "")
    played = session.played(trial)
    need = need_text(session.need)
    marks = {}
    for label in session._playable(session.trials[trial]):
        if label in played:
            marks[label] = "played"
        elif heard.get(label, 0.0) > 0:
            marks[label] = f"heard {math.floor(heard[label] * 10) / 10:.1f} of {need}"
        else:
            marks[label] = "not played"
    left = [lab for lab in session.trials[trial].labels if lab not in played]
    if left:
        why = f"play {_listing(left)} {how_long(session)}, to answer trial {trial + 1}"
        return TrialView(marks, Button(False, why), reveal, why[0].upper() + why[1:])
    return TrialView(marks, Button(True, f"answer trial {trial + 1}"), reveal, "Answer when ready.")
