"""The voice-clone panel's state and its transitions: pure, no widgets, no I/O.

:class:`CloneState` is everything the panel shows: the reference as checked (its bytes'
SHA-256, size, format and decoded length: :class:`~songlab.widgets._gate.Reference`), the
fields as typed, the consent given, the submissions made or refused, whether one is in
flight, the saved voice, and the status of the last action.

**Consent is bound to what it was given for.** Ticking the box records a
:class:`Consent` of this reference's SHA-256 and this rights statement; it counts only
while both are unchanged. A new reference or an edited statement clears it (the box
unticks, and the status says why), so *Clone voice* can never send a consent given for
other bytes or other words. The attestation sent ends with the SHA-256 it was given for
(:func:`~songlab.widgets._gate.attestation_text`).

*Clone voice* is enabled exactly when a click would create a clone: the gate holds
(reference decoded, fields within the spec's limits, a rights statement, consent for
these bytes and words), this submission was not made already, the service did not refuse
it, and nothing is in flight. The consent box is enabled once there is a usable reference
and a statement to consent to.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace

import songlab.widgets._gate as _gate
from songlab.widgets._status import Button, Status, from_error

__all__ = ["CloneInputs", "CloneState", "Consent", "Sent"]


@dataclass(frozen=True, slots=True)
class CloneInputs:
    """The panel's fields as typed (``rights``: the rights statement)."""

    name: str = ""
    description: str = ""
    version: str = "v5"
    license: str = "royalty_free"
    rights: str = ""


@dataclass(frozen=True, slots=True)
class Consent:
    """Consent as ticked: for the reference with this SHA-256 and this statement."""

    sha256: str
    rights: str


@dataclass(frozen=True, slots=True)
class Sent:
    """A clone the service accepted: its task and consent record."""

    task_id: str
    consent_id: str | None
    sha256: str


@dataclass(frozen=True)
class CloneState:
    """Everything the voice-clone panel shows (see the module docstring)."""

    reference: _gate.Reference | None = None
    inputs: CloneInputs = CloneInputs()
    consent: Consent | None = None
    made: Mapping[str, Sent] = field(default_factory=dict)  # submission -> its clone
    refused: Mapping[str, Status] = field(default_factory=dict)
    busy: bool = False
    task_id: str | None = None  # the clone being followed
    vocal_id: str | None = None  # the saved voice, once the clone completed
    status: Status = Status("")

    # -- derived -----------------------------------------------------------------------

    @property
    def consented(self) -> bool:
        """Consent was given for exactly this reference and this statement."""
        ref = self.reference
        return (
            self.consent is not None
            and ref is not None
            and self.consent == Consent(ref.sha256, self.inputs.rights)
        )

    def gate(self) -> _gate.Gate:
        i = self.inputs
        return _gate.validate_clone(
            reference=self.reference,
            name=i.name,
            description=i.description,
            version=i.version,
            license=i.license,
            rights=i.rights,
            consent=self.consented,
        )

    def submission(self) -> str:
        """The clone as the panel stands: these bytes, these fields, this consent."""
        ref = self.reference
        return json.dumps(
            {
                "sha256": ref.sha256 if ref is not None else None,
                "consented": self.consented,
                **asdict(self.inputs),
            },
            sort_keys=True,
        )

    def consent_box(self) -> Button:
        """The consent box: enabled once there is a usable reference and a statement."""
        ref = self.reference
        if ref is None or not ref.ready:
            return Button(False, "load a usable reference recording first")
        problem = _gate.rights_problem(self.inputs.rights)
        if problem:
            return Button(False, f"write the rights statement first ({problem})")
        return Button(True, f"consent to cloning {ref.filename} (SHA-256 {ref.sha256[:12]}...)")

    def clone_button(self) -> Button:
        gate = self.gate()
        if not gate.valid:
            return Button(False, gate.reason)
        if self.busy:
            return Button(False, "a clone is being sent")
        sent = self.made.get(self.submission())
        if sent is not None:
            return Button(
                False, f"sent as task {sent.task_id[:8]}...; change a value to clone again"
            )
        if self.submission() in self.refused:
            return Button(False, "the service refused this clone: change a value to try again")
        price = _gate.format_price(gate.price)
        return Button(True, f"ready: Clone voice uploads the reference and clones it for {price}")

    def song_button(self) -> Button:
        if self.vocal_id is None:
            return Button(False, "no saved voice yet")
        return Button(True, "opens a song form with this voice; nothing is sent before Generate")

    # -- transitions -------------------------------------------------------------------

    def reference_loaded(self, reference: _gate.Reference | None) -> CloneState:
        """A new reference (or none): consent for other bytes is cleared, and said so."""
        cleared = self.consent is not None and (
            reference is None or reference.sha256 != self.consent.sha256
        )
        consent = None if cleared else self.consent
        if reference is None:
            status = Status("reference", "No reference recording.")
        elif reference.problem:
            status = Status(
                "reference",
                f"{reference.filename} cannot be used: {reference.problem}. Choose a "
                f"recording of one speaker ({_gate.formats_text()}).",
                "error",
            )
        elif cleared:
            status = Status(
                "reference",
                f"Consent cleared: {reference.filename} is another recording. Tick the box "
                "again if its speaker consents to this one.",
                "warn",
            )
        else:
            status = Status(
                "reference",
                f"{reference.filename}: {reference.seconds:.1f} s of {reference.kind} audio, "
                f"{_gate.format_size(reference.size)}.",
                "ok",
            )
        return replace(self, reference=reference, consent=consent, status=status)

    def edited(self, inputs: CloneInputs) -> CloneState:
        """A field changed; a new rights statement clears the consent given for the old."""
        if self.consent is not None and inputs.rights != self.consent.rights:
            return replace(
                self,
                inputs=inputs,
                consent=None,
                status=Status(
                    "edit",
                    "Consent cleared: the rights statement changed. Tick the box again to "
                    "consent with the new statement.",
                    "warn",
                ),
            )
        return replace(self, inputs=inputs, status=Status("edit"))

    def consent_ticked(self, ticked: bool) -> CloneState:
        """The box ticked (consent for this reference and statement) or unticked."""
        if not ticked:
            return replace(self, consent=None, status=Status("consent", "Consent withdrawn."))
        box = self.consent_box()
        if not box.enabled:
            return replace(
                self, consent=None, status=Status("consent", f"Not recorded: {box.does}.", "warn")
            )
        ref = self.reference
        assert ref is not None  # the box is enabled only with a usable reference
        return replace(
            self,
            consent=Consent(ref.sha256, self.inputs.rights),
            status=Status(
                "consent",
                f"Consent given for {ref.filename} (SHA-256 {ref.sha256[:12]}...) and the "
                "statement above.",
                "ok",
            ),
        )

    def clone_pressed(self) -> tuple[CloneState, bool]:
        """*Clone voice* pressed: (the next state, whether to send)."""
        button = self.clone_button()
        if not button.enabled:
            sent = self.made.get(self.submission())
            if sent is None:
                text = f"Not sent: {button.does}"
            elif self.vocal_id is not None and self.task_id == sent.task_id:
                text = f"Already cloned: the voice is saved as vocal_id {self.vocal_id}; nothing new was sent"
            else:
                text = (
                    f"Already sent: task {sent.task_id[:8]}... (the voice is saved when it "
                    "completes); nothing new was sent"
                )
            return replace(self, status=Status("clone", text, "info" if sent else "warn")), False
        ref = self.reference
        assert ref is not None
        text = f"uploading {ref.filename} ({_gate.format_size(ref.size)}) and cloning"
        return replace(self, busy=True, status=Status("clone", text)), True

    def sent(self, sent: Sent, submission: str) -> CloneState:
        made = {**self.made, submission: sent}
        text = f"Clone sent as task {sent.task_id[:8]}...; the voice is saved when it completes."
        return replace(
            self,
            made=made,
            busy=False,
            task_id=sent.task_id,
            vocal_id=None,
            status=Status("clone", text, "ok"),
        )

    def failed(self, exc: BaseException, submission: str) -> CloneState:
        status = from_error("clone", exc)
        refused = dict(self.refused)
        if not status.retry:
            refused[submission] = status
        return replace(self, refused=refused, busy=False, status=status)

    def finished(self, task_id: str, vocal_id: str | None, outcome: str) -> CloneState:
        """The clone task ``task_id`` ended (``outcome``: completed or failed). The status
        says so only while the clone is still the last action."""
        if task_id != self.task_id:
            return self
        saved = vocal_id if outcome == "completed" else None
        if self.status.action != "clone":
            return replace(self, vocal_id=saved)
        if saved:
            status = Status(
                "clone", f"The voice is saved: vocal_id {saved}. Start a song with it below.", "ok"
            )
        elif outcome == "completed":
            status = Status(
                "clone",
                "The clone completed without a saved voice (no vocal_id in its result).",
                "error",
            )
        else:
            status = Status("clone", f"The clone {outcome}: no voice was saved.", "error")
        return replace(self, vocal_id=saved, status=status)

    def song_opened(self) -> CloneState:
        button = self.song_button()
        if not button.enabled:
            return replace(
                self, status=Status("song", "No saved voice yet: clone one first.", "warn")
            )
        return replace(
            self,
            status=Status(
                "song",
                "The song form is below: the voice is set. Write the prompt, check the price "
                "and press Generate (nothing is sent before).",
            ),
        )
