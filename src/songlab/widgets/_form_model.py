"""The generation form's state and its transitions: pure, no widgets, no I/O.

:class:`FormState` is everything the form shows: the inputs as typed, the take each
request's next *Generate* makes, the submissions the service accepted or refused, whether a
create is in flight, and the status of the last action. Each action is a method returning
the next state (``edited``, ``generate_pressed``, ``sent``, ``failed``, ``new_take_pressed``,
``use_take``); the view (:mod:`songlab.widgets.form`) only renders a state, so the screen
cannot drift from it, and the state machine test drives these transitions through the
widgets. What the client's record holds (a take made before, by this kernel or an earlier
one) is looked up by the panel and passed in as ``previous``.

A *submission* is the request as the form stands (tool, tier, payload: its fingerprint)
and its take. *Generate* is enabled exactly when a click would create or re-attach: the
request is valid (:func:`songlab.widgets._gate.validate_generation`), this submission was
not made already, the service did not refuse it, and no create is in flight. *New take* is
enabled exactly when this submission was made (here or in the record): it moves to the
next take not made yet, so a second click before *Generate* stays on that take.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, Protocol

import songlab.widgets._gate as _gate
from songlab.widgets._status import Button, Status, from_error

__all__ = ["FormState", "Inputs", "Made", "Previous", "when"]


class Previous(Protocol):
    """A create the client's record holds (``songlab.client.CreateRecord``)."""

    task_id: str
    accepted_at: datetime | None


@dataclass(frozen=True, slots=True)
class Inputs:
    """The form's fields as typed (``duration`` None where the operation has none)."""

    operation: str | None
    model: str | None
    prompt: str = ""
    lyrics: str = ""
    duration: float | None = None
    vocal_id: str = ""
    license: int = 1


@dataclass(frozen=True, slots=True)
class Made:
    """A submission the service accepted: its task, and how (``how``: "created",
    "re-attached", or "made again" when the service no longer had the recorded task)."""

    task_id: str
    take: int
    how: str = "created"
    price: str = ""


Submission = tuple[str, int]  # (the request's fingerprint, its take)


def when(moment: datetime | None) -> str:
    """``HH:MM`` in local time (the client's record and the form say the same)."""
    return moment.astimezone().strftime("%H:%M") if moment is not None else "earlier"


@dataclass(frozen=True)
class FormState:
    """Everything the generation form shows (see the module docstring)."""

    inputs: Inputs
    tools: Mapping[tuple[str, str], str]  # (operation, model) -> tool id, from GET /v1/tools
    takes: Mapping[str, int] = field(default_factory=dict)  # fingerprint -> its next take
    made: Mapping[Submission, Made] = field(default_factory=dict)
    refused: Mapping[Submission, Status] = field(default_factory=dict)
    busy: bool = False
    status: Status = Status("")

    # -- what the inputs ask for ------------------------------------------------------

    @property
    def tool_id(self) -> str | None:
        return self.tools.get((self.inputs.operation or "", self.inputs.model or ""))

    @property
    def rule(self) -> Any:
        return _gate.FORM_OPERATIONS.get(self.inputs.operation or "")

    def request(self) -> dict[str, Any]:
        """The request the form would send: tool_id, license and payload."""
        i = self.inputs
        payload = (
            _gate.build_payload(
                operation=i.operation or "",
                prompt=i.prompt,
                lyrics=i.lyrics,
                duration=i.duration,
                vocal_id=i.vocal_id,
            )
            if self.rule is not None
            else {}
        )
        return {"tool_id": self.tool_id, "license": i.license, "payload": payload}

    def fingerprint(self) -> str:
        return json.dumps(self.request(), sort_keys=True)

    @property
    def take(self) -> int:
        """The take the current values' next *Generate* makes (1 unless moved on)."""
        return self.takes.get(self.fingerprint(), 1)

    @property
    def submission(self) -> Submission:
        return (self.fingerprint(), self.take)

    def gate(self) -> _gate.Gate:
        i, rule = self.inputs, self.rule
        return _gate.validate_generation(
            operation=i.operation,
            model=i.model,
            tool_id=self.tool_id,
            prompt=i.prompt,
            lyrics=i.lyrics if rule is not None and rule.lyrics != "none" else "",
            duration=i.duration if rule is not None and rule.duration else None,
            license=i.license,
        )

    # -- what each button would do ------------------------------------------------------

    def generate_button(self, previous: Previous | None = None) -> Button:
        """*Generate*: enabled exactly when a click creates (or re-attaches to) this take."""
        gate, take = self.gate(), self.take
        made = self.made.get(self.submission)
        refused = self.refused.get(self.submission)
        if not gate.valid:
            return Button(False, gate.reason)
        if self.busy:
            return Button(False, "a create is in flight")
        if made is not None:
            return Button(
                False,
                f"take {take} was made: task {made.task_id[:8]}...; change a value, or press "
                "New take for another",
            )
        if refused is not None:
            return Button(False, "the service refused these values: change one to try again")
        price = _gate.format_price(gate.price)
        if previous is not None:
            return Button(
                True,
                f"would re-attach to task {previous.task_id[:8]}... from "
                f"{when(previous.accepted_at)} (take {take}): nothing is billed again; "
                "New take makes another",
            )
        return Button(True, f"ready: Generate makes take {take} for {price}")

    def new_take_button(self, previous: Previous | None = None) -> Button:
        """*New take*: enabled once this take was made (here, or earlier per the record)."""
        gate, take = self.gate(), self.take
        if not gate.valid:
            return Button(False, gate.reason)
        if self.busy:
            return Button(False, "a create is in flight")
        if self.submission in self.made or previous is not None:
            return Button(True, f"the same values as take {take + 1}, a new task")
        return Button(False, f"take {take} is not made yet: Generate makes it")

    # -- transitions ---------------------------------------------------------------------

    def edited(self, inputs: Inputs) -> FormState:
        """A value changed: the last action's message goes with it."""
        return replace(self, inputs=inputs, status=Status("edit"))

    def generate_pressed(self, previous: Previous | None = None) -> tuple[FormState, bool]:
        """*Generate* pressed: (the next state, whether to send). A press of a disabled
        button (a double click, a stale view, a call from code) sends nothing and says why."""
        button = self.generate_button(previous)
        if not button.enabled:
            made = self.made.get(self.submission)
            text = (
                f"Already made: take {made.take} is task {made.task_id[:8]}...; nothing new "
                "was sent"
                if made is not None
                else f"Not sent: {button.does}"
            )
            tone = "info" if made is not None else "warn"
            return replace(self, status=Status("generate", text, tone)), False
        price = _gate.format_price(self.gate().price)
        what = "re-attaching" if previous is not None else f"sending ({price})"
        return replace(
            self, busy=True, status=Status("generate", f"take {self.take}: {what}")
        ), True

    def sent(self, made: Made, submission: Submission) -> FormState:
        """The create of ``submission`` answered: it is made."""
        text = {
            "created": f"take {made.take}: task {made.task_id[:8]}... created ({made.price})",
            "re-attached": f"take {made.take}: re-attached to task {made.task_id[:8]}... "
            "(nothing billed again)",
        }.get(
            made.how,
            f"take {made.take}: the service no longer had the recorded task (it was reset); "
            f"this is a new task, {made.task_id[:8]}... ({made.price})",
        )
        done = {**self.made, submission: made}
        tone = "ok" if made.how != "made again" else "warn"
        return replace(self, made=done, busy=False, status=Status("generate", text, tone))

    def failed(self, exc: BaseException, submission: Submission) -> FormState:
        """The create of ``submission`` raised: its words; a request the service refused is
        held refused (its button disabled) until a value changes; a transient failure may
        be retried as it is."""
        status = from_error("generate", exc)
        refused = dict(self.refused)
        if not status.retry:
            refused[submission] = status
        return replace(self, refused=refused, busy=False, status=status)

    def new_take_pressed(self, next_take: int, previous: Previous | None = None) -> FormState:
        """*New take* pressed; ``next_take``: the first take after this one that neither this
        form nor the record made. A press while disabled stays on the current take."""
        button = self.new_take_button(previous)
        if not button.enabled:
            return replace(self, status=Status("new take", f"Not moved on: {button.does}", "warn"))
        takes = {**self.takes, self.fingerprint(): next_take}
        moved = replace(self, takes=takes)
        price = _gate.format_price(moved.gate().price)
        return replace(
            moved,
            status=Status("new take", f"take {next_take}: Generate makes it ({price})"),
        )

    def use_take(self, take: int) -> FormState:
        """The next *Generate* makes take number ``take`` of the current values."""
        takes = {**self.takes, self.fingerprint(): take}
        return replace(self, takes=takes, status=Status("use take", f"take {take} is next"))
