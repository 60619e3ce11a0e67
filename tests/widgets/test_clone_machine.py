"""The voice-clone panel as a state machine: random sequences of references (two voices, an
m4a, a wav, random bytes named ``.mp3``), rights statements (good ones and "ok"), consent
ticked and unticked, edits, clicks, double clicks, refusals and transient failures, driven
through the widgets on the scripted client, with the panel's promises checked after each:

- nothing spends without its price shown and consent for exactly these bytes: every clone
  created was ticked by the person after the reference it names was loaded and the
  statement it carries was written (the machine keeps that consent itself and clears it
  as a person would expect: a new reference, another statement), and its attestation
  names the SHA-256 of those bytes;
- the box shows consent only when that consent holds; no enabled button would be refused
  (an enabled *Clone voice* creates, never for a clone the service refused as it stands);
- the status line shows the last action only: after an edit, no older error stays.

It fails on the panel before the state model: consent stays ticked after a new reference.
"""

from __future__ import annotations

import hashlib
import os

import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import HealthCheck, settings
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from songlab import audio
from songlab.client import DependencyUnavailable, InvalidGenerationInput
from songlab.widgets.clone import ClonePanel
from tests.widgets.conftest import FakeBackend, FakeClient

ERROR_COLOR = "#b42318"
GOOD = (
    "I am the speaker of this recording and I own its rights.",
    "We hold written permission from the singer to clone this voice.",
)
WEAK = ("", "ok", "I own it")
REFUSED_NAME = "refuse-me"  # the scripted service refuses a clone with this name (422)


def _tone(hz: float, seconds: float, fmt: str) -> bytes:
    t = np.arange(int(44100 * seconds)) / 44100
    x = (0.3 * np.sin(2 * np.pi * hz * t)).astype(np.float32)[None]
    return audio.encode(x, sr=44100, format=fmt)


@pytest.fixture(scope="module", autouse=True)
def _references() -> None:
    RECORDINGS.update(
        {
            "voice_female.mp3": (_tone(220, 2.0, "mp3"), True),
            "voice_male.mp3": (_tone(110, 2.0, "mp3"), True),
            "take.m4a": (_tone(330, 1.5, "m4a"), True),
            "take.wav": (_tone(330, 1.5, "wav"), False),
            "junk.mp3": (os.urandom(293 * 1024), False),
        }
    )


RECORDINGS: dict[str, tuple[bytes, bool]] = {}  # name -> (bytes, usable for a clone)


def status_of(panel: object) -> str:
    line = getattr(panel, "status_line", None) or panel.sink.line  # type: ignore[attr-defined]
    return str(line.value)


class CloneMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        refusal = InvalidGenerationInput("name: refused by the service", status_code=422)
        self.fake = FakeClient(FakeBackend(refusals={REFUSED_NAME: refusal}))
        self.panel = ClonePanel(self.fake)
        self.loaded: tuple[str, bytes] | None = None
        self.consent: tuple[str, str] | None = None  # (sha256, statement) the person ticked for
        self.refused: set[str] = set()
        self.made: set[str] = set()

    def sha(self) -> str | None:
        return hashlib.sha256(self.loaded[1]).hexdigest() if self.loaded else None

    def consent_holds(self) -> bool:
        return self.consent is not None and self.consent == (
            self.sha(),
            self.panel.attestation.value,
        )

    def submission(self) -> str:
        p = self.panel
        return repr(
            (self.sha(), p.name.value, p.version.value, p.license.value, p.attestation.value)
        )

    def _set(self, widget: object, value: object) -> None:
        """Set a field as a person types it; an edit that changes nothing is no action."""
        if widget.value == value:  # type: ignore[attr-defined]
            return
        widget.value = value  # type: ignore[attr-defined]
        # the last action is this edit: no older error stays on screen
        assert ERROR_COLOR not in status_of(self.panel), status_of(self.panel)

    # -- a person's actions ------------------------------------------------------------------

    @rule(
        name=st.sampled_from(
            sorted(["voice_female.mp3", "voice_male.mp3", "take.m4a", "take.wav", "junk.mp3"])
        )
    )
    def load_a_reference(self, name: str) -> None:
        content, _ = RECORDINGS[name]
        if self.loaded is None or self.loaded[1] != content:
            self.consent = None  # consent was for other bytes (or none)
        self.loaded = (name, content)
        self.panel.load_reference(content, filename=name)

    @rule(text=st.sampled_from(GOOD + WEAK))
    def write_rights(self, text: str) -> None:
        if self.consent is not None and self.consent[1] != text:
            self.consent = None  # consent was for another statement
        self._set(self.panel.attestation, text)

    @rule(name=st.sampled_from(["", "Ana", REFUSED_NAME]))
    def type_name(self, name: str) -> None:
        self._set(self.panel.name, name)

    @rule(
        version=st.sampled_from(["v5", "v6", "v7"]),
        tier=st.sampled_from(["royalty_free", "master"]),
    )
    def choose_version_and_tier(self, version: str, tier: str) -> None:
        self._set(self.panel.version, version)
        self._set(self.panel.license, tier)

    @rule()
    def tick_consent(self) -> None:
        enabled = not self.panel.consent.disabled
        self.panel.consent.value = True
        if enabled and self.sha() is not None:
            self.consent = (self.sha(), self.panel.attestation.value)  # type: ignore[assignment]

    @rule()
    def untick_consent(self) -> None:
        self.panel.consent.value = False
        self.consent = None

    @rule()
    def the_next_create_meets_a_busy_service(self) -> None:
        self.fake.backend.fail_creates.append(
            DependencyUnavailable("try later", status_code=503, retryable=True)
        )

    def _clone_once(self) -> None:
        p, backend = self.panel, self.fake.backend
        enabled, price_shown = not p.submit.disabled, p.price_label.value
        submission, holds, sha = self.submission(), self.consent_holds(), self.sha()
        transient = bool(backend.fail_creates)
        before = len(backend.creates)
        p.submit.click()
        sent = backend.creates[before:]
        if not enabled:
            assert sent == [], "a disabled Clone voice sent a clone"
            return
        assert len(sent) == 1, "an enabled Clone voice sent nothing"
        assert submission not in self.refused and submission not in self.made
        # nothing spends without its price shown and consent for exactly these bytes
        (clone,) = sent
        assert holds, "a clone was sent without consent for these bytes and this statement"
        assert "$12.00" in price_shown
        assert clone["rights_attestation"].endswith(f"SHA-256: {sha}")
        assert clone["rights_attestation"].startswith(p.attestation.value.strip())
        if transient:
            return
        (self.refused if REFUSED_NAME in repr(clone) else self.made).add(submission)

    @rule()
    def click_clone(self) -> None:
        self._clone_once()

    @rule()
    def double_click_clone(self) -> None:
        self._clone_once()
        self._clone_once()

    @precondition(lambda self: self.panel.progress.rows)
    @rule()
    def let_the_clone_finish(self) -> None:
        self.panel.progress.wait(10)

    # -- always ------------------------------------------------------------------------------

    @invariant()
    def the_box_shows_consent_only_while_it_holds(self) -> None:
        if self.panel.consent.value:
            assert self.consent_holds(), "the box shows consent the person did not give here"

    @invariant()
    def clone_is_enabled_only_when_it_would_be_accepted_by_the_panel_and_the_person(self) -> None:
        p = self.panel
        if p.submit.disabled:
            return
        assert self.loaded is not None and RECORDINGS[self.loaded[0]][1], "unusable reference"
        assert self.consent_holds()
        assert self.submission() not in self.refused | self.made

    def teardown(self) -> None:
        self.panel.progress.wait(10)


CloneMachine.TestCase.settings = settings(
    max_examples=30,
    stateful_step_count=18,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


class TestCloneMachine(CloneMachine.TestCase):
    pytestmark = pytest.mark.slow  # a few seconds of widget sequences


def test_the_issues_sequence_a_new_reference_after_consent() -> None:
    """The machine's steps as the issue saw them: consent ticked for voice_female.mp3, then
    voice_male.mp3 loaded, then Clone voice (it charged $12.00 and saved the male voice)."""
    machine = CloneMachine()
    try:
        machine.load_a_reference(name="voice_female.mp3")
        machine.write_rights(text=GOOD[0])
        machine.tick_consent()
        machine.click_clone()
        machine.let_the_clone_finish()
        machine.load_a_reference(name="voice_male.mp3")
        machine.the_box_shows_consent_only_while_it_holds()
        machine.clone_is_enabled_only_when_it_would_be_accepted_by_the_panel_and_the_person()
        machine.click_clone()
    finally:
        machine.teardown()
    assert len(machine.fake.backend.creates) == 1  # the male voice was not cloned
