"""The voice-clone panel: reference, rights attestation, consent, then a saved voice.

A reference recording (a ``FileUpload``, or :meth:`ClonePanel.load_reference`
from code) is checked as it arrives: mp3 or m4a, its size shown, refused over
15 MiB. The clone button stays disabled until every rule of
:func:`songlab.widgets._gate.validate_clone` holds, in particular the consent
box ticked and the attestation filled. A click uploads the reference, creates
the clone (``POST /v1/voice-clones``, one Idempotency-Key per submission) and
shows the consent id, the flat price, the progress and finally the saved
``vocal_id`` with a button that opens a song form sung with it: the voice filled in, the
prompt left to the person (a suggestion as placeholder), the price shown, and nothing sent
until they press *Generate*.
"""

from __future__ import annotations

import hashlib
import html
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import ipywidgets as W

import songlab.widgets._api as _api
import songlab.widgets._gate as _gate
from songlab.spec import SONG_VERSIONS
from songlab.widgets._submit import SubmitOnce
from songlab.widgets._ui import ErrorSink, status_html
from songlab.widgets.form import GenerationForm
from songlab.widgets.progress import ProgressPanel, TaskRow

__all__ = ["ClonePanel"]

_WIDE = W.Layout(width="32em")
ATTESTATION_HINT = (
    "I am the person speaking in this recording, or I hold written permission "
    "from them, and I own the rights to the recording."
)
CONSENT_TEXT = "I consent to this voice being cloned and attest the statement in rights above"
_TEXT = "white-space:normal;max-width:40em;line-height:1.4"


class ClonePanel(SubmitOnce, W.VBox):
    """Clone a voice with consent; ``vocal_id`` holds the saved voice once done."""

    def __init__(self, client: Any, *, form: GenerationForm | None = None) -> None:
        self.client = client
        self.sink = ErrorSink()
        self.upload = W.FileUpload(
            accept=".mp3,.m4a,audio/mpeg,audio/mp4", multiple=False, description="reference"
        )
        self.reference_info = W.HTML(
            value=status_html("no reference yet (mp3 or m4a, at most 15 MiB)")
        )
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
            f'<div style="{_TEXT}">In <b>rights</b>, state your rights to this voice, for '
            f"example: <i>{html.escape(ATTESTATION_HINT)}</i></div>"
        )
        self.consent = W.Checkbox(
            value=False,
            indent=False,
            description="",
            tooltip=CONSENT_TEXT,
            layout=W.Layout(width="auto"),
        )
        self.consent_label = W.HTML(f'<div style="{_TEXT}">{html.escape(CONSENT_TEXT)}</div>')
        consent_row = W.HBox(
            [self.consent, self.consent_label], layout=W.Layout(align_items="center")
        )
        consent_row.add_class("songlab-consent")
        self.price_label = W.HTML()
        self.reason = W.HTML()
        self.submit = W.Button(
            description="Clone voice", button_style="warning", icon="microphone", disabled=True
        )
        self.consent_info = W.HTML()
        self.progress = ProgressPanel(client, title="Voice clone")
        self.result = W.HTML()
        self.song_button = W.Button(
            description="Start a song with this voice",
            icon="music",
            button_style="success",
            disabled=True,
            tooltip="Opens a song form with this voice; nothing is sent until you press Generate",
            layout=W.Layout(width="max-content"),  # the label shown whole, not stretched
        )
        self.song_button.layout.display = "none"
        self._form = form
        self._form_box = W.VBox()
        self.gate = _gate.Gate(False)
        self.consent_id: str | None = None
        self.vocal_id: str | None = None
        self.task_id: str | None = None
        self._reference: tuple[str, bytes] | None = None
        self._uploaded: dict[str, str] = {}  # sha256 of the reference -> file_id
        self._init_submit()
        self.upload.observe(
            self.sink.guard(self._uploaded_changed, context="reference"), names="value"
        )
        for w in (
            self.name,
            self.description,
            self.version,
            self.license,
            self.attestation,
            self.consent,
        ):
            w.observe(self.sink.guard(lambda _: self._refresh(), context="clone"), names="value")
        self.submit.on_click(self.sink.guard(lambda _: self.send(), context="clone"))
        self.song_button.on_click(self.sink.guard(lambda _: self.start_song(), context="song"))
        self.progress.on_done(self._clone_done)
        super().__init__(
            children=[
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
                self.sink.line,
                self.sink.log,
                self.progress,
                self.result,
                self.song_button,
                self._form_box,
            ]
        )
        self._refresh()

    # -- reference -------------------------------------------------------------

    def load_reference(self, source: str | Path | bytes, *, filename: str | None = None) -> None:
        """Use a recording from a path or bytes (what the upload button does in a browser)."""
        if isinstance(source, bytes | bytearray | memoryview):
            content, name = bytes(source), filename or "reference.mp3"
        else:
            path = Path(source)
            content, name = path.read_bytes(), filename or path.name
        self._set_reference(name, content)

    def _uploaded_changed(self, change: Any) -> None:
        files = change["new"]
        if not files:
            self._reference = None
        else:
            item = files[0]
            self._set_reference(str(item["name"]), bytes(item["content"]))
        self._refresh()

    def _set_reference(self, name: str, content: bytes) -> None:
        self._reference = (name, content)
        current = self.upload.value
        if not current or current[0].get("name") != name or len(current) != 1:
            # a reference given from code is shown on the button too: "reference (1)"
            mime = "audio/mp4" if name.lower().endswith(".m4a") else "audio/mpeg"
            self.upload.value = (
                {
                    "name": name,
                    "type": mime,
                    "size": len(content),
                    "content": memoryview(content),
                    "last_modified": datetime.now(UTC),
                },
            )
        self._refresh()

    # -- gate ------------------------------------------------------------------

    def _fields(self) -> dict[str, Any]:
        name, content = self._reference or (None, None)
        return dict(
            filename=name,
            size=None if content is None else len(content),
            content=content,
            name=self.name.value,
            description=self.description.value,
            version=self.version.value,
            license=self.license.value,
            attestation=self.attestation.value,
            consent=bool(self.consent.value),
        )

    def _fingerprint(self) -> str:
        fields = self._fields()
        content = fields.pop("content")
        fields["sha256"] = hashlib.sha256(content).hexdigest() if content else None
        return json.dumps(fields, sort_keys=True)

    def _refresh(self) -> None:
        fields = self._fields()
        self.gate = _gate.validate_clone(**fields)
        if self._reference is not None:
            name, size = fields["filename"], fields["size"]
            refused = [r for r in self.gate.reasons if r.startswith("reference:")]
            tone, note = ("error", f" - refused: {refused[0]}") if refused else ("ok", "")
            self.reference_info.value = status_html(
                f"{name}: {_gate.format_size(size)}{note}", tone
            )
        self.price_label.value = (
            f"<b>Price: {_gate.format_price(self.gate.price)}</b> (flat per clone, any tier)"
        )
        done = self._submitted.get(self._fingerprint())
        if not self.gate.valid:
            self.reason.value = status_html(self.gate.reason, "warn")
        elif done:
            self.reason.value = status_html(f"submitted as task {done}", "info")
        else:
            self.reason.value = status_html("ready", "ok")
        self.submit.disabled = not self.gate.valid or bool(done) or self._busy.locked()

    # -- actions ---------------------------------------------------------------

    def send(self) -> TaskRow | None:
        """Upload the reference and create the clone (what the button does); None if refused."""
        f = self._fields()

        def create(key: str | None) -> Any:
            name, content = self._reference  # type: ignore[misc]  # the gate checked it
            digest = hashlib.sha256(content).hexdigest()
            if digest not in self._uploaded:
                self.sink.info(f"uploading {name} ({_gate.format_size(len(content))})")
                self._uploaded[digest] = _api.upload(self.client, content, filename=name).file_id
            return _api.create_voice_clone(
                self.client,
                idempotency_key=key,
                reference_file_id=self._uploaded[digest],
                name=f["name"] or None,
                description=f["description"] or None,
                version=f["version"],
                license=f["license"],
                consent=True,
                rights_attestation=f["attestation"],
            )

        def created(handle: Any) -> TaskRow:
            self.task_id = handle.task_id
            self.consent_id = getattr(handle, "consent_id", None)
            self.consent_info.value = status_html(
                f"consent record {self.consent_id} - task {self.task_id} - "
                f"{_gate.format_price(self.gate.price)}",
                "ok",
            )
            self.sink.info(f"clone sent as task {self.task_id[:8]}...", "ok")
            return self.progress.track(self.task_id, label=f"voice clone {f['version']}")

        return self._submit_once(create, created)

    def _clone_done(self, row: TaskRow) -> None:
        """From the row's thread: the status line says how the clone ended (never "sent"
        next to a finished bar) and the saved voice is shown."""
        if row.task_id != self.task_id:
            return
        task = row.task
        vocal_id = getattr(task, "vocal_id", None)
        if row.state.status != "completed" or not vocal_id:
            if row.state.status == "completed":
                self.sink.error("the clone completed without a vocal_id in metadata_json")
            else:
                self.sink.info(f"clone {row.state.status}: no voice saved", "error")
            return
        self.vocal_id = vocal_id
        self.sink.info("clone completed: the voice is saved", "ok")
        self.result.value = status_html(f"saved voice: vocal_id = {vocal_id}", "ok")
        self.song_button.disabled = False
        self.song_button.layout.display = ""

    @property
    def song_form(self) -> GenerationForm | None:
        """The song form :meth:`start_song` opened (None before)."""
        return self._form

    def start_song(self, prompt: str | None = None) -> GenerationForm | None:
        """Open the generation form for a song sung with the saved voice: the voice filled
        in, ``prompt`` if given (else the person's own, with a suggestion as placeholder),
        the price shown. Nothing is sent: the form's *Generate* does that."""
        if not self.vocal_id:
            self.sink.info("no saved voice yet", "warn")
            return None
        if self._form is None:
            songs = ProgressPanel(self.client, title="Songs with this voice")
            self._form = GenerationForm(self.client, progress=songs)
        if self._form not in self._form_box.children:
            self._form_box.children = (self._form,)
        form = self._form
        form.operation.value = "generate_song"
        form.vocal_id.value = self.vocal_id
        voice = self.name.value.strip() or "my voice"
        form.prompt.placeholder = f"describe the song, e.g. a warm pop song sung by {voice}"
        if prompt is not None:
            form.prompt.value = prompt
        self.sink.info(
            "song form below: the voice is set; write the prompt, check the price and press "
            "Generate (nothing is sent before)",
            "info",
        )
        return form
