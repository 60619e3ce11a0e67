"""The generation form: tool, prompt, lyrics, duration and tier, priced as you type.

Operations and models come from ``GET /v1/tools``. Every change re-runs the pure
rule of :mod:`songlab.widgets._gate`: the price of this exact request is shown,
and the submit button is enabled only while the request is valid (the reason is
shown otherwise). One submission (the current values and their take) makes one
task: a double click, a retry, or the same values after a kernel restart re-attach
to it (the client's record), and the form says so before you click ("would
re-attach to task ... from 10:02 (take 1); nothing is billed"). "New take" moves to
the next take the record does not hold yet, so the same values make a new task.
Each result is named in the progress list by model, take, a short prompt and the
time, so takes can be told apart. Each take has a row of its own in ``takes`` (its
progress, then its own player and a download link named after the take), so an older
take plays as well as the newest; starting one pauses the others.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import ipywidgets as W

import songlab.widgets._api as _api
import songlab.widgets._gate as _gate
from songlab.ledger.naming import take_filename
from songlab.spec import LIMITS
from songlab.widgets._submit import SubmitOnce
from songlab.widgets._ui import ErrorSink, status_html
from songlab.widgets.players import TakePlayer
from songlab.widgets.progress import ProgressPanel, TaskRow

__all__ = ["GenerationForm"]

_WIDE = W.Layout(width="32em")


def _when(moment: datetime | None) -> str:
    """``HH:MM`` in local time; the client's record and the form say the same."""
    return moment.astimezone().strftime("%H:%M") if moment is not None else "earlier"


class GenerationForm(SubmitOnce, W.VBox):
    """A priced, gated generation request; ``task_ids`` lists what it created."""

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
        self.sink = ErrorSink()
        self.tools = tuple(tools if tools is not None else _api.list_tools(client))
        self._tool_ids = {
            (t.operation, t.model): t.id for t in self.tools if t.operation in _gate.FORM_OPERATIONS
        }
        ops = [o for o in _gate.FORM_OPERATIONS if any(k[0] == o for k in self._tool_ids)]
        self.operation = W.Dropdown(
            options=ops,
            value=operation if operation in ops else (ops[0] if ops else None),
            description="operation",
        )
        self.model = W.Dropdown(options=[], description="model")
        self.prompt = W.Textarea(description="prompt", layout=_WIDE)
        self.lyrics = W.Textarea(description="lyrics", layout=_WIDE)
        self.duration = W.FloatText(
            value=float(LIMITS["song_seconds_default"]), description="duration (s)"
        )
        self.vocal_id = W.Text(description="vocal_id", placeholder="optional saved voice")
        self.license = W.Dropdown(options=_gate.license_options(), value=1, description="license")
        self.price_label = W.HTML()
        self.reason = W.HTML()
        self.submit = W.Button(description="Generate", button_style="primary", icon="play")
        self.new_take = W.Button(
            description="New take",
            icon="refresh",
            tooltip="The same values as a new task (the next take)",
        )
        self.take_label = W.HTML()
        self.progress = progress if progress is not None else ProgressPanel(client, title="Takes")
        self.takes: dict[str, TakePlayer] = {}  # task id -> its player, under its row
        self._names: dict[str, tuple[str | None, int, str]] = {}  # task id -> model, take, prompt
        self.task_ids: list[str] = []
        self.gate = _gate.Gate(False)
        self._init_submit()
        self._sync_models(model)
        for w in (
            self.operation,
            self.model,
            self.prompt,
            self.lyrics,
            self.duration,
            self.vocal_id,
            self.license,
        ):
            w.observe(self.sink.guard(self._changed, context="form"), names="value")
        self.operation.observe(self.sink.guard(lambda _: self._sync_models(None)), names="value")
        self.submit.on_click(self.sink.guard(lambda _: self.send(), context="submit"))
        self.new_take.on_click(self.sink.guard(lambda _: self._start_new_take()))
        self.progress.on_done(self._task_done)
        super().__init__(
            children=[
                W.HBox([self.operation, self.model, self.license]),
                self.prompt,
                self.lyrics,
                W.HBox([self.duration, self.vocal_id]),
                self.price_label,
                self.reason,
                W.HBox([self.submit, self.new_take, self.take_label]),
                self.sink.line,
                self.sink.log,
                self.progress,
            ]
        )
        self._refresh()

    # -- state -----------------------------------------------------------------

    @property
    def tool_id(self) -> str | None:
        return self._tool_ids.get((self.operation.value, self.model.value))

    @property
    def price(self) -> Decimal | None:
        """The price of the request as the form stands (None if it has none)."""
        return self.gate.price

    def request(self) -> dict[str, Any]:
        """The request the form would send: tool_id, license and payload."""
        op = self.operation.value
        payload = (
            _gate.build_payload(
                operation=op,
                prompt=self.prompt.value,
                lyrics=self.lyrics.value,
                duration=self.duration.value,
                vocal_id=self.vocal_id.value,
            )
            if op in _gate.FORM_OPERATIONS
            else {}
        )
        return {"tool_id": self.tool_id, "license": self.license.value, "payload": payload}

    def _fingerprint(self) -> str:
        return json.dumps(self.request(), sort_keys=True)

    def _body(self) -> dict[str, Any]:
        """The native create body the client would send (its record's look-up key)."""
        req = self.request()
        return {
            "tool_id": req["tool_id"],
            "payload_json": json.dumps(req["payload"]),
            "license": req["license"],
        }

    def would_reuse(self) -> Any:
        """The recorded create the current values and take would re-attach to (nothing
        billed), or None. A local look-up in the client's record; nothing is sent."""
        find = getattr(self.client, "previous_create", None)
        if find is None or not self.gate.valid or self.tool_id is None:
            return None
        try:
            return find("/v1/generations", self._body(), take=self.take())
        except Exception:  # noqa: BLE001 - a record that cannot be read: no hint, no harm
            return None

    def _sync_models(self, preferred: str | None) -> None:
        op = self.operation.value
        models = sorted(m for (o, m) in self._tool_ids if o == op)
        current = preferred or self.model.value
        self.model.options = models
        self.model.value = current if current in models else (models[-1] if models else None)
        rule = _gate.FORM_OPERATIONS.get(op or "")
        if rule is not None:
            span = rule.duration
            self.duration.disabled = span is None
            if span is not None and not (span[0] <= self.duration.value <= span[1]):
                self.duration.value = span[2]
            self.lyrics.disabled = rule.lyrics == "none"
            self.vocal_id.disabled = not rule.vocal_id
        self._refresh()

    def _changed(self, _change: Any = None) -> None:
        self._refresh()

    def _refresh(self) -> None:
        rule = _gate.FORM_OPERATIONS.get(self.operation.value or "")
        self.gate = _gate.validate_generation(
            operation=self.operation.value,
            model=self.model.value,
            tool_id=self.tool_id,
            prompt=self.prompt.value,
            lyrics=self.lyrics.value if rule and rule.lyrics != "none" else "",
            duration=self.duration.value if rule and rule.duration else None,
            license=self.license.value,
        )
        tier = dict((v, k) for k, v in _gate.license_options()).get(self.license.value, "?")
        if self.gate.price is not None:
            self.price_label.value = (
                f"<b>Price: {_gate.format_price(self.gate.price)}</b> "
                f"({self.operation.value} {self.model.value}, {tier})"
            )
        else:
            self.price_label.value = "<b>Price: -</b>"
        done = self._submitted.get(self._fingerprint())
        take = self.take()
        self.take_label.value = f"take {take}"
        previous = None if done else self.would_reuse()
        if not self.gate.valid:
            self.reason.value = status_html(self.gate.reason, "warn")
        elif done:
            self.reason.value = status_html(
                f"submitted as task {done} (take {take}); change "
                "a value or press New take to submit again",
                "info",
            )
        elif previous is not None:
            self.reason.value = status_html(
                f"would re-attach to task {previous.task_id[:8]}... from "
                f"{_when(previous.accepted_at)} (take {take}): nothing is billed again; "
                "New take makes another",
                "info",
            )
        else:
            self.reason.value = status_html("ready", "ok")
        self.submit.disabled = not self.gate.valid or bool(done) or self._busy.locked()

    def use_take(self, take: int) -> None:
        """Submit the current values as take number ``take`` next (what *New take* does, by
        number: a notebook that names its takes re-attaches to them when it is run again,
        where *New take* would move on to a take the record does not hold yet)."""
        if not (isinstance(take, int) and not isinstance(take, bool) and take >= 1):
            raise ValueError(f"take: a whole number >= 1, got {take!r}")
        fingerprint = self._fingerprint()
        self._submitted.pop(fingerprint, None)
        self._key = self._key_for = None
        self._takes[fingerprint] = take
        self._refresh()

    def _start_new_take(self) -> None:
        """The next take of the current values that the record does not hold yet."""
        fingerprint = self._fingerprint()
        self._submitted.pop(fingerprint, None)
        self._key = self._key_for = None
        take = self.take() + 1
        find = getattr(self.client, "previous_create", None)
        while find is not None and self.gate.valid and self.tool_id is not None and take < 1000:
            try:
                if find("/v1/generations", self._body(), take=take) is None:
                    break
            except Exception:  # noqa: BLE001 - no record to ask: the next number
                break
            take += 1
        self._takes[fingerprint] = take
        self._refresh()

    def _label(self, take: int, when: datetime | None = None) -> str:
        """How a take is named in its row: model, take, the time it was made (a re-attached
        take's own time, as the re-attach line says) and the prompt's first words."""
        prompt = " ".join(str(self.prompt.value or "").split())
        short = prompt if len(prompt) <= 60 else prompt[:59] + "\u2026"
        return f"{self.model.value} take {take} \u00b7 {_when(when)} \u00b7 {short}".rstrip(
            " \u00b7"
        )

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
        """Create the task for the current values (what the button does); None if refused."""

        take = self.take()
        previous = self.would_reuse()  # a re-attach keeps the recorded task's own time

        def create(key: str | None) -> Any:
            req = self.request()
            self.sink.info(f"sending ({_gate.format_price(self.gate.price)})")
            return _api.create_generation(
                self.client,
                tool_id=req["tool_id"],
                payload=req["payload"],
                license=req["license"],
                idempotency_key=key,
                take=take,
            )

        def created(handle: Any) -> TaskRow:
            task_id = handle.task_id
            if task_id not in self.task_ids:
                self.task_ids.append(task_id)
            reused = isinstance(getattr(handle, "raw", None), dict) and handle.raw.get("reused")
            found = previous if reused and previous is not None else None
            when = found.accepted_at if found is not None else datetime.now(UTC)
            self.sink.info(
                f"task {task_id[:8]}... "
                + (
                    f"from {_when(when)} re-attached (nothing billed again)"
                    if reused
                    else "created"
                ),
                "ok",
            )
            if task_id not in self.takes:
                self.takes[task_id] = TakePlayer(self.client)
                self._names[task_id] = (self.model.value, take, str(self.prompt.value or ""))
            return self.progress.track(
                task_id, label=self._label(take, when), extra=(self.takes[task_id],)
            )

        return self._submit_once(create, created)
