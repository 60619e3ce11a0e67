"""The voice-clone panel: reference, rights statement, consent, then a saved voice.

The panel is a view of one :class:`~songlab.widgets._clone_model.CloneState`; every
widget event is a transition of it and the whole view is rendered from the new state.
A reference recording (a ``FileUpload``, or :meth:`ClonePanel.load_reference` from code)
is checked as it arrives: its bytes must be one of the formats the service takes for a
clone (the registry's: mp3 or m4a, the same words the panel shows and the upload button
offers), at most 15 MiB, and decode as audio; its length, size and SHA-256 are shown.
Consent is bound to that SHA-256 and to the rights statement: a new reference or an
edited statement unticks the box and says why. The clone button stays disabled until every
rule of :func:`songlab.widgets._gate.validate_clone` holds. A click uploads the reference
(checking that the service stored the same bytes, when it says), creates the clone
(``POST /v1/voice-clones``; the attestation sent names the SHA-256) and shows the consent
id, the flat price, the progress and finally the saved ``vocal_id`` with a button that
opens a song form sung with it: the voice filled in, the prompt left to the person (a
suggestion as placeholder), the price shown, and nothing sent until they press
*Generate*.
"""

from __future__ import annotations

import html
import threading
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import ipywidgets as W

import songlab.widgets._api as _api
import songlab.widgets._gate as _gate
from songlab.codec import MIME
from songlab.ledger.labels import attribution, default_project
from songlab.spec import SONG_VERSIONS
from songlab.widgets._clone_model import CloneInputs, CloneState, Sent
from songlab.widgets._status import from_error, render
from songlab.widgets._ui import status_html
from songlab.widgets.form import DEFAULT_PROJECT, GenerationForm
from songlab.widgets.progress import ProgressPanel, TaskRow

__all__ = ["ClonePanel"]

_WIDE = W.Layout(width="32em")
ATTESTATION_HINT = (
    "I am the person speaking in this recording, or I hold written permission "
    "from them, and I own the rights to the recording."
)
CONSENT_TEXT = (
    "I consent to this voice being cloned from this recording, and attest the statement "
    "in rights above"
)
_TEXT = "white-space:normal;max-width:40em;line-height:1.4"


class StoredOtherBytes(RuntimeError):
    """The service's answer to the upload names a SHA-256 other than the bytes consented to."""


class ClonePanel(W.VBox):
    """Clone a voice with consent; ``vocal_id`` holds the saved voice once done; ``state``
    is the model the view renders."""

    project: str | None = None

    def __init__(self, client: Any, *, form: GenerationForm | None = None) -> None:
        self.client = client
        self.state = CloneState()
        self.errors: list[str] = []  # every error status shown, in order (person words)
        self._content: dict[str, bytes] = {}  # sha256 -> the reference's bytes
        self._uploaded: dict[str, str] = {}  # sha256 of the reference -> file_id
        self._keys: dict[str, str] = {}  # submission -> its Idempotency-Key (reuse=False)
        self._lock = threading.RLock()
        self._rendering = False
        self._form = form
        self._form_box = W.VBox()
        self._make_widgets()
        self.progress = ProgressPanel(client, title="Voice clone")
        self.progress.on_done(self._clone_done)
        super().__init__(children=self._layout())
        self._render()

    def _make_widgets(self) -> None:
        self.upload = W.FileUpload(
            accept=_gate.CLONE_ACCEPT, multiple=False, description="reference"
        )
        self.reference_info = W.HTML()
        self.name = W.Text(description="name")
        self.description = W.Textarea(description="description", layout=_WIDE)
        self.version = W.Dropdown(options=list(SONG_VERSIONS), value="v5", description="version")
        self.license = W.Dropdown(
            options=[n for n, _ in _gate.license_options()],
            value="royalty_free",
            description="license",
        )
        self.attestation = W.Textarea(
            description="rights",
            placeholder=ATTESTATION_HINT,
            layout=W.Layout(width="32em", height="5em"),
        )
        # the statement and the consent are shown whole (a checkbox's own description is cut
        # to one line): the person must be able to read what they attest
        self.attestation_hint = W.HTML(
            f'<div style="{_TEXT}">In <b>rights</b>, state your rights to this voice in a '
            f"sentence of at least {_gate.RIGHTS_MIN_WORDS} words, for example: "
            f"<i>{html.escape(ATTESTATION_HINT)}</i></div>"
        )
        self.consent = W.Checkbox(
            value=False,
            indent=False,
            description="",
            tooltip=CONSENT_TEXT,
            layout=W.Layout(width="auto"),
        )
        self.consent_label = W.HTML(f'<div style="{_TEXT}">{html.escape(CONSENT_TEXT)}</div>')
        self.price_label = W.HTML()
        self.reason = W.HTML()
        self.submit = W.Button(description="Clone voice", button_style="warning", icon="microphone")
        self.consent_info = W.HTML()
        self.status_line = W.HTML()
        self.result = W.HTML()
        self.song_button = W.Button(
            description="Start a song with this voice",
            icon="music",
            button_style="success",
            layout=W.Layout(width="max-content"),  # the label shown whole, not stretched
        )
        self.upload.observe(self._upload_changed, names="value")
        for w in (self.name, self.description, self.version, self.license, self.attestation):
            w.observe(self._edited, names="value")
        self.consent.observe(self._consent_changed, names="value")
        self.submit.on_click(lambda _b: self._guard("clone", self.send))
        self.song_button.on_click(lambda _b: self._guard("song", self.start_song))

    def _layout(self) -> list[W.Widget]:
        consent_row = W.HBox(
            [self.consent, self.consent_label], layout=W.Layout(align_items="center")
        )
        consent_row.add_class("songlab-consent")
        return [
            W.HBox([self.upload, self.reference_info]),
            self.name,
            self.description,
            W.HBox([self.version, self.license]),
            self.attestation_hint,
            self.attestation,
            consent_row,
            self.price_label,
            self.reason,
            self.submit,
            self.consent_info,
            self.status_line,
            self.progress,
            self.result,
            self.song_button,
            self._form_box,
        ]

    # -- state -----------------------------------------------------------------

    @property
    def gate(self) -> _gate.Gate:
        return self.state.gate()

    @property
    def vocal_id(self) -> str | None:
        return self.state.vocal_id

    @property
    def task_id(self) -> str | None:
        return self.state.task_id

    @property
    def consent_id(self) -> str | None:
        sent = next((s for s in self.state.made.values() if s.task_id == self.task_id), None)
        return sent.consent_id if sent is not None else None

    def _apply(self, state: CloneState) -> None:
        with self._lock:
            self.state = state
            if state.status.tone == "error":
                self.errors.append(state.status.text)
            self._render()

    def _guard(self, action: str, fn: Any) -> None:
        """A handler; an error it raises is that action's status, never lost."""
        try:
            fn()
        except Exception as exc:  # noqa: BLE001 - a callback's error is shown in the panel
            self._apply(replace(self.state, busy=False, status=from_error(action, exc)))

    # -- the reference ---------------------------------------------------------

    def load_reference(self, source: str | Path | bytes, *, filename: str | None = None) -> None:
        """Use a recording from a path or bytes (what the upload button does in a browser)."""
        if isinstance(source, bytes | bytearray | memoryview):
            content, name = bytes(source), filename or "reference.mp3"
        else:
            path = Path(source)
            content, name = path.read_bytes(), filename or path.name
        self._set_reference(name, content)

    def _upload_changed(self, change: Any) -> None:
        if self._rendering:
            return
        files = change["new"]
        if not files:
            self._apply(self.state.reference_loaded(None))
            return
        item = files[0]
        self._set_reference(str(item["name"]), bytes(item["content"]))

    def _set_reference(self, name: str, content: bytes) -> None:
        reference = _gate.inspect_reference(name, content)
        self._content[reference.sha256] = content
        with self._lock:
            self._show_upload(name, content)
            self._apply(self.state.reference_loaded(reference))

    def _show_upload(self, name: str, content: bytes) -> None:
        """A reference given from code is shown on the button too: "reference (1)"."""
        current = self.upload.value
        if current and len(current) == 1 and current[0].get("name") == name:
            return
        kind = name.rsplit(".", 1)[-1].lower() if "." in name else ""
        self._rendering = True
        try:
            self.upload.value = (
                {
                    "name": name,
                    "type": MIME.get(kind, "application/octet-stream"),
                    "size": len(content),
                    "content": memoryview(content),
                    "last_modified": datetime.now(UTC),
                },
            )
        finally:
            self._rendering = False

    # -- edits -----------------------------------------------------------------

    def _inputs(self) -> CloneInputs:
        return CloneInputs(
            name=self.name.value,
            description=self.description.value,
            version=self.version.value,
            license=self.license.value,
            rights=self.attestation.value,
        )

    def _edited(self, _change: Any) -> None:
        if not self._rendering:
            self._apply(self.state.edited(self._inputs()))

    def _consent_changed(self, change: Any) -> None:
        if not self._rendering:
            self._apply(self.state.consent_ticked(bool(change["new"])))

    # -- the view --------------------------------------------------------------

    def _render(self) -> None:
        s = self.state
        gate, box, clone, song = s.gate(), s.consent_box(), s.clone_button(), s.song_button()
        ref = s.reference
        self._rendering = True
        try:
            if ref is None:
                self.reference_info.value = status_html(
                    f"no reference yet ({_gate.formats_text()}, at most "
                    f"{_gate.format_size(_gate.CLONE_MAX_BYTES)})"
                )
            elif ref.problem:
                self.reference_info.value = status_html(
                    f"{ref.filename}: {_gate.format_size(ref.size)} - refused: {ref.problem}",
                    "error",
                )
            else:
                self.reference_info.value = status_html(
                    f"{ref.filename}: {_gate.format_size(ref.size)}, {ref.seconds:.1f} s "
                    f"{ref.kind}, SHA-256 {ref.sha256[:12]}...",
                    "ok",
                )
            self.consent.value = s.consented
            self.consent.disabled, self.consent.tooltip = not box.enabled, box.does
            self.price_label.value = (
                f"<b>Price: {_gate.format_price(gate.price)}</b> (flat per clone, any tier)"
            )
            self.reason.value = status_html(clone.does, "ok" if clone.enabled else "warn")
            self.submit.disabled, self.submit.tooltip = not clone.enabled, clone.does
            self.status_line.value = render(s.status)
            self.result.value = (
                status_html(f"saved voice: vocal_id = {s.vocal_id}", "ok") if s.vocal_id else ""
            )
            self.song_button.disabled, self.song_button.tooltip = not song.enabled, song.does
            self.song_button.layout.display = "" if song.enabled else "none"
        finally:
            self._rendering = False

    # -- actions ---------------------------------------------------------------

    def send(self) -> TaskRow | None:
        """Upload the reference and create the clone (what the button does); the clone's
        row, or None when nothing was sent (the status says why)."""
        with self._lock:
            before = self.state
            self.state, go = before.clone_pressed()
            self._render()
            if not go:
                sent = before.made.get(before.submission())
                return self.progress.rows.get(sent.task_id) if sent is not None else None
            submission, ref, inputs = before.submission(), before.reference, before.inputs
            price = _gate.format_price(before.gate().price)
        assert ref is not None
        try:
            handle = self._create(ref, inputs, submission)
        except Exception as exc:  # noqa: BLE001 - the create's error is this action's status
            self._apply(self.state.failed(exc, submission))
            return None
        sent = Sent(handle.task_id, getattr(handle, "consent_id", None), ref.sha256)
        with self._lock:
            self._apply(self.state.sent(sent, submission))
            self.consent_info.value = status_html(
                f"consent record {sent.consent_id} - task {sent.task_id} - {price} - for "
                f"SHA-256 {ref.sha256[:12]}...",
                "ok",
            )
        return self.progress.track(sent.task_id, label=f"voice clone {inputs.version}")

    def _create(self, ref: _gate.Reference, inputs: CloneInputs, submission: str) -> Any:
        """Upload the reference (once per SHA-256) and create the clone for it."""
        if ref.sha256 not in self._uploaded:
            uploaded = _api.upload(self.client, self._content[ref.sha256], filename=ref.filename)
            stored = getattr(uploaded, "sha256", None)  # not shown by the spec: checked if there
            if isinstance(stored, str) and stored and stored != ref.sha256:
                raise StoredOtherBytes(
                    f"the service stored SHA-256 {stored}, not the consented {ref.sha256}; "
                    "nothing was cloned"
                )
            self._uploaded[ref.sha256] = uploaded.file_id
        reuse = getattr(self.client, "reuse", False) is not False
        key = None if reuse else self._keys.setdefault(submission, _api.new_key())
        project = self.project or default_project(self.client) or DEFAULT_PROJECT
        with attribution(project=project, tags=[f"widget:{type(self).__name__}"]):
            return _api.create_voice_clone(
                self.client,
                idempotency_key=key,
                reference_file_id=self._uploaded[ref.sha256],
                name=inputs.name or None,
                description=inputs.description or None,
                version=inputs.version,
                license=inputs.license,
                consent=True,
                rights_attestation=_gate.attestation_text(inputs.rights, ref.sha256),
            )

    def _clone_done(self, row: TaskRow) -> None:
        """From the row's thread: the clone ended; the saved voice is shown."""
        vocal_id = getattr(row.task, "vocal_id", None)
        self._apply(self.state.finished(row.task_id, vocal_id, row.state.status))

    @property
    def song_form(self) -> GenerationForm | None:
        """The song form :meth:`start_song` opened (None before)."""
        return self._form

    def start_song(self, prompt: str | None = None) -> GenerationForm | None:
        """Open the generation form for a song sung with the saved voice: the voice filled
        in, ``prompt`` if given (else the person's own, with a suggestion as placeholder),
        the price shown. Nothing is sent: the form's *Generate* does that."""
        self._apply(self.state.song_opened())
        if not self.state.vocal_id:
            return None
        if self._form is None:
            songs = ProgressPanel(self.client, title="Songs with this voice")
            self._form = GenerationForm(self.client, progress=songs)
        if self._form not in self._form_box.children:
            self._form_box.children = (self._form,)
        form = self._form
        form.operation.value = "generate_song"
        form.vocal_id.value = self.state.vocal_id
        voice = self.name.value.strip() or "my voice"
        form.prompt.placeholder = f"describe the song, e.g. a warm pop song sung by {voice}"
        if prompt is not None:
            form.prompt.value = prompt
        return form
