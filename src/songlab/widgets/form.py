"""The generation form: tool, prompt, lyrics, duration and tier, priced as you type.

Operations and models come from ``GET /v1/tools``. The form is a view of one
:class:`~songlab.widgets._form_model.FormState` (the inputs, the takes, what was made or
refused, the last action's status): every widget event becomes a transition of that state
and the whole view is rendered from the new state, so the price, the reason beside
*Generate*, the buttons and the status line always say the same thing. The price of this
exact request is shown on every change; *Generate* is enabled only while a click would
create (or re-attach to) this take, and the reason is shown otherwise. One submission (the
current values and their take) makes one task: a double click, a retry, or the same values
after a kernel restart re-attach to it (the client's record), and the form says so before
you click ("would re-attach to task ... from 10:02 (take 1); nothing is billed"). "New
take" moves to the next take the record does not hold yet, so the same values make a new
task; it is enabled once the current take is made, so a double click does not skip one.

A name passed in that the tool listing does not hold (``GenerationForm(client,
model="v8")``) is refused, naming the allowed values and the nearest: the form never shows
or prices another model in its place. Each result is named in the progress list by model,
take, a short prompt and the time, so takes can be told apart. Each take has a row of its
own in ``takes`` (its progress, then its own player and a download link named after the
take), so an older take plays as well as the newest; starting one pauses the others.
"""

from __future__ import annotations

import json
import threading
from dataclasses import replace
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import ipywidgets as W

import songlab.widgets._api as _api
import songlab.widgets._gate as _gate
from songlab.ledger.labels import attribution, default_project
from songlab.ledger.naming import take_filename
from songlab.spec import LIMITS
from songlab.widgets._form_model import FormState, Inputs, Made, when
from songlab.widgets._status import from_error, render
from songlab.widgets._ui import status_html
from songlab.widgets.players import TakePlayer
from songlab.widgets.progress import ProgressPanel, TaskRow

__all__ = ["GenerationForm"]

_WIDE = W.Layout(width="32em")
# The project a panel's creates are labelled with when neither the panel nor its client names
# one (labels stay local: see songlab.ledger.attribution).
DEFAULT_PROJECT = "widgets"
_MAX_TAKE = 1000


class GenerationForm(W.VBox):
    """A priced, gated generation request; ``task_ids`` lists what it created; ``state`` is
    the model the view renders. ``project``: the label of its creates (None: the client's
    default project, else ``"widgets"``); each create is also tagged ``widget:GenerationForm``."""

    project: str | None = None

    def __init__(
        self,
        client: Any,
        *,
        progress: ProgressPanel | None = None,
        operation: str = "generate_song",
        model: str | None = None,
        tools: Any = None,
    ) -> None:
        self.client = client
        self.tools = tuple(tools if tools is not None else _api.list_tools(client))
        tool_ids = {
            (t.operation, t.model): t.id for t in self.tools if t.operation in _gate.FORM_OPERATIONS
        }
        ops = [o for o in _gate.FORM_OPERATIONS if any(k[0] == o for k in tool_ids)]
        first = _gate.form_choice(operation, model, tool_ids, ops)
        self.state = FormState(
            Inputs(*first, duration=float(LIMITS["song_seconds_default"])), tool_ids
        )
        self._make_widgets(ops)
        self.progress = progress if progress is not None else ProgressPanel(client, title="Takes")
        self.takes: dict[str, TakePlayer] = {}  # task id -> its player, under its row
        self._names: dict[str, tuple[str | None, int, str]] = {}  # task id -> model, take, prompt
        self.task_ids: list[str] = []
        self.errors: list[str] = []  # every error status shown, in order (person words)
        self._keys: dict[Any, str] = {}  # submission -> its Idempotency-Key (reuse=False)
        self._lock = threading.RLock()
        self._rendering = False
        self.progress.on_done(self._task_done)
        super().__init__(children=self._layout())
        self._render()

    def _make_widgets(self, ops: list[str]) -> None:
        i = self.state.inputs
        self.operation = W.Dropdown(options=ops, value=i.operation, description="operation")
        self.model = W.Dropdown(
            options=self._models(i.operation), value=i.model, description="model"
        )
        self.prompt = W.Textarea(description="prompt", layout=_WIDE)
        self.lyrics = W.Textarea(description="lyrics", layout=_WIDE)
        self.duration = W.FloatText(value=i.duration, description="duration (s)")
        self.vocal_id = W.Text(description="vocal_id", placeholder="optional saved voice")
        self.license = W.Dropdown(options=_gate.license_options(), value=1, description="license")
        self.price_label = W.HTML()
        self.reason = W.HTML()
        self.submit = W.Button(description="Generate", button_style="primary", icon="play")
        self.new_take = W.Button(description="New take", icon="refresh")
        self.take_label = W.HTML()
        self.status_line = W.HTML()
        for w in self._inputs():
            w.observe(self._changed, names="value")
        self.submit.on_click(lambda _b: self._guard("generate", self.send))
        self.new_take.on_click(lambda _b: self._guard("new take", self._start_new_take))

    def _inputs(self) -> tuple[W.ValueWidget, ...]:
        return (
            self.operation,
            self.model,
            self.prompt,
            self.lyrics,
            self.duration,
            self.vocal_id,
            self.license,
        )

    def _layout(self) -> list[W.Widget]:
        return [
            W.HBox([self.operation, self.model, self.license]),
            self.prompt,
            self.lyrics,
            W.HBox([self.duration, self.vocal_id]),
            self.price_label,
            self.reason,
            W.HBox([self.submit, self.new_take, self.take_label]),
            self.status_line,
            self.progress,
        ]

    # -- state -----------------------------------------------------------------

    def _models(self, operation: str | None) -> list[str]:
        return sorted(m for (o, m) in self.state.tools if o == operation)

    @property
    def tool_id(self) -> str | None:
        return self.state.tool_id

    @property
    def gate(self) -> _gate.Gate:
        """The rule's answer for the request as the form stands (valid, reasons, price)."""
        return self.state.gate()

    @property
    def price(self) -> Decimal | None:
        """The price of the request as the form stands (None if it has none)."""
        return self.gate.price

    def request(self) -> dict[str, Any]:
        """The request the form would send: tool_id, license and payload."""
        return self.state.request()

    def take(self) -> int:
        """The take the current values would be submitted as (1 unless moved on)."""
        return self.state.take

    def _body(self, state: FormState | None = None) -> dict[str, Any]:
        """The native create body the client would send (its record's look-up key)."""
        req = (state or self.state).request()
        return {
            "tool_id": req["tool_id"],
            "payload_json": json.dumps(req["payload"]),
            "license": req["license"],
        }

    def _recorded(self, state: FormState, take: int) -> Any:
        """The create the client's record holds for ``state``'s values as ``take``, or None
        (a local look-up: nothing is sent)."""
        find = getattr(self.client, "previous_create", None)
        if find is None or not state.gate().valid or state.tool_id is None:
            return None
        try:
            return find("/v1/generations", self._body(state), take=take)
        except Exception:  # noqa: BLE001 - a record that cannot be read: no hint, no harm
            return None

    def would_reuse(self) -> Any:
        """The recorded create the current values and take would re-attach to (nothing
        billed), or None."""
        return self._recorded(self.state, self.state.take)

    def _read_inputs(self) -> Inputs:
        rule = _gate.FORM_OPERATIONS.get(self.operation.value or "")
        return Inputs(
            operation=self.operation.value,
            model=self.model.value,
            prompt=self.prompt.value,
            lyrics=self.lyrics.value,
            duration=float(self.duration.value) if rule is not None and rule.duration else None,
            vocal_id=self.vocal_id.value,
            license=self.license.value,
        )

    def _changed(self, change: Any) -> None:
        if self._rendering:
            return
        with self._lock:
            if change["owner"] is self.operation:
                self._follow_operation()
            self.state = self.state.edited(self._read_inputs())
            self._render()

    def _follow_operation(self) -> None:
        """The model list, the duration range and the fields of the operation chosen."""
        models = self._models(self.operation.value)
        current = self.model.value
        self._rendering = True
        try:
            self.model.options = models
            self.model.value = current if current in models else (models[-1] if models else None)
            rule = _gate.FORM_OPERATIONS.get(self.operation.value or "")
            span = rule.duration if rule is not None else None
            if span is not None and not (span[0] <= self.duration.value <= span[1]):
                self.duration.value = span[2]
        finally:
            self._rendering = False

    # -- the view --------------------------------------------------------------

    def _render(self) -> None:
        """Every widget from ``self.state`` (and the record's look-up)."""
        s = self.state
        previous = None if s.submission in s.made else self.would_reuse()
        generate, new_take = s.generate_button(previous), s.new_take_button(previous)
        gate, rule = s.gate(), s.rule
        self._rendering = True
        try:
            self.duration.disabled = rule is None or rule.duration is None
            self.lyrics.disabled = rule is None or rule.lyrics == "none"
            self.vocal_id.disabled = rule is None or not rule.vocal_id
            tier = dict((v, k) for k, v in _gate.license_options()).get(s.inputs.license, "?")
            self.price_label.value = (
                f"<b>Price: {_gate.format_price(gate.price)}</b> "
                f"({s.inputs.operation} {s.inputs.model}, {tier})"
                if gate.price is not None
                else "<b>Price: -</b>"
            )
            tone = "ok" if generate.enabled and previous is None else "info"
            tone = tone if generate.enabled or s.submission in s.made else "warn"
            self.reason.value = status_html(generate.does, tone)
            self.submit.disabled, self.submit.tooltip = not generate.enabled, generate.does
            self.new_take.disabled, self.new_take.tooltip = not new_take.enabled, new_take.does
            self.take_label.value = f"take {s.take}"
            self.status_line.value = render(s.status)
        finally:
            self._rendering = False

    def _guard(self, action: str, fn: Any) -> None:
        """A click's handler; an error it raises is that action's status, never lost."""
        try:
            fn()
        except Exception as exc:  # noqa: BLE001 - a callback's error is shown in the panel
            with self._lock:
                self.state = replace(self.state, busy=False, status=from_error(action, exc))
                self.errors.append(self.state.status.text)
                self._render()

    # -- takes -----------------------------------------------------------------

    def use_take(self, take: int) -> None:
        """Submit the current values as take number ``take`` next (what *New take* does, by
        number: a notebook that names its takes re-attaches to them when it is run again,
        where *New take* would move on to a take the record does not hold yet)."""
        if not (isinstance(take, int) and not isinstance(take, bool) and take >= 1):
            raise ValueError(f"take: a whole number >= 1, got {take!r}")
        with self._lock:
            self.state = self.state.use_take(take)
            self._render()

    def _start_new_take(self) -> None:
        """*New take*: the next take of the current values that neither this form nor the
        record made."""
        with self._lock:
            s = self.state
            previous = None if s.submission in s.made else self.would_reuse()
            take = s.take + 1
            fingerprint = s.fingerprint()
            while take < _MAX_TAKE and (
                (fingerprint, take) in s.made or self._recorded(s, take) is not None
            ):
                take += 1
            self.state = s.new_take_pressed(take, previous)
            self._render()

    def _label(self, model: str | None, take: int, prompt: str, when_: datetime | None) -> str:
        """How a take is named in its row: model, take, the time it was made (a re-attached
        take's own time, as the re-attach line says) and the prompt's first words."""
        words = " ".join(prompt.split())
        short = words if len(words) <= 60 else words[:59] + "\u2026"
        return f"{model} take {take} \u00b7 {when(when_)} \u00b7 {short}".rstrip(" \u00b7")

    def _task_done(self, row: TaskRow) -> None:
        """From the row's thread: show the take's audio (or text) under its row."""
        view = self.takes.get(row.task_id)
        if view is None or row.state.status != "completed":
            return
        file_ids = tuple(getattr(row.task, "file_ids", ()) or ())
        model, take, prompt = self._names[row.task_id]
        if file_ids:

            def name_of(ext: str) -> str:
                return take_filename(
                    model=model, take=take, prompt=prompt, task_id=row.task_id, ext=ext
                )

            view.load(file_ids[0], name_of=name_of, more=len(file_ids) - 1)
        else:
            text = getattr(getattr(row.task, "output", None), "text", None)
            view.set_text(text or "completed (no audio)")

    # -- submit ----------------------------------------------------------------

    def send(self) -> TaskRow | None:
        """Create the task for the current values (what *Generate* does); the take's row, or
        None when nothing was sent (the status says why)."""
        with self._lock:
            before = self.state
            previous = None if before.submission in before.made else self.would_reuse()
            self.state, go = before.generate_pressed(previous)
            self._render()
            if not go:
                made = before.made.get(before.submission)
                return self.progress.rows.get(made.task_id) if made is not None else None
            submission, take, inputs = before.submission, before.take, before.inputs
            request, price = before.request(), _gate.format_price(before.gate().price)
        try:
            project = self.project or default_project(self.client) or DEFAULT_PROJECT
            with attribution(project=project, tags=[f"widget:{type(self).__name__}"]):
                handle = _api.create_generation(
                    self.client,
                    tool_id=request["tool_id"],
                    payload=request["payload"],
                    license=request["license"],
                    idempotency_key=None
                    if self._client_keys()
                    else self._keys.setdefault(submission, _api.new_key()),
                    take=take,
                )
        except Exception as exc:  # noqa: BLE001 - the create's error is this action's status
            with self._lock:
                self.state = self.state.failed(exc, submission)
                self.errors.append(self.state.status.text)
                self._render()
            return None
        return self._created(handle, submission, take, inputs, previous, price)

    def _client_keys(self) -> bool:
        """Whether the client derives the Idempotency-Key from the request and take (its
        record re-attaches): else the form makes one per submission."""
        return getattr(self.client, "reuse", False) is not False

    def _created(
        self, handle: Any, submission: Any, take: int, inputs: Inputs, previous: Any, price: str
    ) -> TaskRow:
        task_id = handle.task_id
        reused = isinstance(getattr(handle, "raw", None), dict) and handle.raw.get("reused")
        how = "re-attached" if reused else ("made again" if previous is not None else "created")
        found = previous if reused and previous is not None else None
        made_at = found.accepted_at if found is not None else datetime.now(UTC)
        with self._lock:
            if task_id not in self.task_ids:
                self.task_ids.append(task_id)
            if task_id not in self.takes:
                self.takes[task_id] = TakePlayer(self.client)
                self._names[task_id] = (inputs.model, take, inputs.prompt)
            self.state = self.state.sent(Made(task_id, take, how, price), submission)
            self._render()
        label = self._label(inputs.model, take, inputs.prompt, made_at)
        return self.progress.track(task_id, label=label, extra=(self.takes[task_id],))
