"""The voice-clone panel headless, on a scripted client: the consent gate and its flow."""

from __future__ import annotations

import hashlib
import os
from datetime import UTC, datetime
from decimal import Decimal as D

import numpy as np

from songlab import audio
from songlab.spec import MIB
from songlab.widgets import _gate
from songlab.widgets.clone import ClonePanel

ATTEST = "I am the speaker of this recording and I own its rights."


def filled(fake, voice_mp3: bytes, *, consent: bool) -> ClonePanel:
    panel = ClonePanel(fake)
    panel.load_reference(voice_mp3, filename="me.mp3")
    panel.name.value = "me"
    panel.attestation.value = ATTEST
    panel.consent.value = consent
    return panel


def test_consent_gate(fake, voice_mp3) -> None:
    panel = filled(fake, voice_mp3, consent=False)
    assert panel.submit.disabled
    assert "consent: tick the box" in panel.reason.value
    panel.submit.click()  # refused by the panel itself, not only by `disabled`
    assert fake.backend.creates == [] and fake.backend.uploads == []
    assert "Not sent: consent" in panel.status_line.value
    panel.consent.value = True
    assert not panel.submit.disabled
    assert "Consent given for me.mp3" in panel.status_line.value
    panel.attestation.value = "  "
    # the message names the box as the screen labels it ("rights"), not the API field
    assert panel.submit.disabled and "rights: required" in panel.reason.value
    assert "rights_attestation" not in panel.reason.value
    # the statement changed: the consent given for the old one is gone, and said so
    assert panel.consent.value is False and "Consent cleared" in panel.status_line.value


def test_a_new_reference_after_consent_clears_it(fake, voice_mp3) -> None:
    panel = filled(fake, voice_mp3, consent=True)
    assert not panel.submit.disabled
    other = audio.encode(
        (0.3 * np.sin(2 * np.pi * 330 * np.arange(44100 * 2) / 44100)).astype(np.float32)[None],
        sr=44100,
        format="mp3",
    )
    panel.load_reference(other, filename="voice_male.mp3")
    assert panel.consent.value is False and panel.submit.disabled
    assert "Consent cleared: voice_male.mp3 is another recording" in panel.status_line.value
    panel.submit.click()
    assert fake.backend.creates == [] and fake.backend.uploads == []
    panel.consent.value = True  # consent for the new bytes
    panel.submit.click()
    (sent,) = fake.backend.creates
    assert sent["rights_attestation"].endswith(hashlib.sha256(other).hexdigest())
    panel.progress.wait(5)


def test_the_rights_statement_has_a_minimum(fake, voice_mp3) -> None:
    panel = filled(fake, voice_mp3, consent=False)
    for too_little in ("ok", "I own it", "yes yes yes yes yes yes yes yes"):
        panel.attestation.value = too_little
        assert panel.consent.disabled and panel.submit.disabled
        assert "rights: a statement of at least 6 words" in panel.reason.value
        panel.consent.value = True  # a stale view's tick: not recorded
        assert panel.consent.value is False and "Not recorded" in panel.status_line.value
    panel.attestation.value = ATTEST
    assert not panel.consent.disabled


def test_words_on_screen_are_whole_and_the_upload_count_is_true(fake, voice_mp3) -> None:
    from songlab.widgets.clone import ATTESTATION_HINT, CONSENT_TEXT

    panel = ClonePanel(fake)
    assert panel.upload.description == "reference" and len(panel.upload.value) == 0
    panel.load_reference(voice_mp3, filename="voice_female.mp3")
    # the button reads "reference (N)" from its value: a reference loaded from code counts
    assert len(panel.upload.value) == 1 and panel.upload.value[0]["name"] == "voice_female.mp3"
    assert "voice_female.mp3" in panel.reference_info.value
    # the consent statement and the attestation example are shown whole, in wrapping text
    assert panel.consent.description == "" and CONSENT_TEXT in panel.consent_label.value
    assert "white-space:normal" in panel.consent_label.value
    assert ATTESTATION_HINT in panel.attestation_hint.value


def test_the_formats_stated_are_the_ones_accepted(fake) -> None:
    panel = ClonePanel(fake)
    assert _gate.CLONE_FORMATS == ("mp3", "m4a")
    assert "(mp3 or m4a, at most 15.0 MiB)" in panel.reference_info.value
    assert panel.upload.accept == ".mp3,.m4a,audio/mpeg,audio/mp4"


def test_size_is_shown_and_oversize_refused(fake, voice_mp3) -> None:
    panel = filled(fake, voice_mp3, consent=True)
    size_kib = f"{len(voice_mp3) / 1024:.0f} KiB"
    assert f"me.mp3: {size_kib}, 3.0 s mp3" in panel.reference_info.value
    panel.load_reference(b"ID3" + bytes(15 * MIB), filename="big.mp3")
    assert "15.0 MiB - refused: 15.0 MiB is over the 15.0 MiB limit" in panel.reference_info.value
    assert panel.submit.disabled
    panel.load_reference(b"RIFF" + bytes(4) + b"WAVE" + bytes(100), filename="me.wav")
    assert "a wav file: the service takes mp3 or m4a" in panel.reference_info.value
    assert panel.submit.disabled


def test_random_bytes_named_mp3_are_not_ready(fake) -> None:
    panel = ClonePanel(fake)
    junk = os.urandom(293 * 1024)
    panel.load_reference(junk, filename="junk.mp3")
    assert "refused" in panel.reference_info.value
    assert "ready" not in panel.reason.value and panel.submit.disabled
    assert panel.consent.disabled
    assert "junk.mp3 cannot be used" in panel.status_line.value
    # an mp3 frame header over noise: named and sniffed mp3, still not a recording
    panel.load_reference(b"ID3\x04" + bytes(6) + junk, filename="junk.mp3")
    assert "could not be decoded" in panel.reference_info.value or "no audio" in (
        panel.reference_info.value
    )


def test_file_upload_widget_feeds_the_reference(fake, voice_mp3) -> None:
    panel = filled(fake, voice_mp3, consent=True)
    m4a = audio.encode(
        (0.2 * np.sin(2 * np.pi * 220 * np.arange(44100) / 44100)).astype(np.float32)[None],
        sr=44100,
        format="m4a",
    )
    panel.upload.value = (
        {
            "name": "take2.m4a",
            "type": "audio/mp4",
            "size": len(m4a),
            "content": memoryview(m4a),
            "last_modified": datetime(2026, 11, 1, tzinfo=UTC),
        },
    )
    assert "take2.m4a" in panel.reference_info.value and " m4a" in panel.reference_info.value
    assert panel.consent.value is False  # other bytes than those consented to
    panel.consent.value = True
    assert not panel.submit.disabled


def test_clone_flow_shows_consent_price_progress_and_vocal_id(fake, voice_mp3) -> None:
    panel = filled(fake, voice_mp3, consent=True)
    panel.license.value = "master"
    assert panel.gate.price == D("12.00") and "$12.00" in panel.price_label.value
    panel.submit.click()
    panel.submit.click()  # a double click: one upload, one create
    assert len(fake.backend.uploads) == 1 and len(fake.backend.creates) == 1
    sent = fake.backend.creates[0]
    digest = hashlib.sha256(voice_mp3).hexdigest()
    assert sent["consent"] is True
    assert sent["rights_attestation"] == f"{ATTEST}\n\nReference recording SHA-256: {digest}"
    assert sent["reference_file_id"] == "file-1" and sent["license"] == "master"
    assert panel.consent_id == "consent-task-1"
    assert "consent record consent-task-1" in panel.consent_info.value
    assert "$12.00" in panel.consent_info.value
    panel.progress.wait(5)
    assert panel.vocal_id == "voice-task-1"
    assert "vocal_id = voice-task-1" in panel.result.value
    assert not panel.song_button.disabled and panel.song_button.layout.display == ""
    # not "sent" beside a finished bar (the repeat click said "Already ...", then or before)
    assert "voice is saved" in panel.status_line.value
    assert "completed (100%)" in panel.progress.rows[panel.task_id].status.value
    creates = len(fake.backend.creates)
    panel.song_button.click()
    # the button opens the song form with the voice; it buys nothing
    assert len(fake.backend.creates) == creates
    form = panel.song_form
    assert form is not None and form in panel._form_box.children
    assert form.vocal_id.value == "voice-task-1" and form.operation.value == "generate_song"
    assert form.prompt.value == "" and "sung by me" in form.prompt.placeholder
    assert form.submit.disabled and "prompt: required" in form.reason.value
    assert "Price: $" in form.price_label.value
    assert "press Generate" in panel.status_line.value
    form.prompt.value = "a slow waltz"  # the person writes it, sees the price, presses Generate
    form.submit.click()
    song = fake.backend.creates[-1]
    assert song["kind"] == "generation" and song["payload"]["vocal_id"] == "voice-task-1"
    assert song["payload"]["prompt"] == "a slow waltz"
    assert song["tool_id"].startswith("tool-generate_song")
    form.progress.wait(5)  # the songs have a panel of their own under the form
    assert form.progress is not panel.progress and not panel.progress.rows.keys() & set(
        form.task_ids
    )
    assert panel.errors == []


def test_an_older_error_does_not_stay_above_the_saved_voice(fake, voice_mp3) -> None:
    fake.backend.fail_creates.append(RuntimeError("DependencyUnavailable [503]: later"))
    panel = filled(fake, voice_mp3, consent=True)
    panel.submit.click()
    assert "Something went wrong" in panel.status_line.value and not panel.submit.disabled
    panel.submit.click()  # the retry succeeds
    panel.progress.wait(5)
    assert "The voice is saved" in panel.status_line.value
    assert "went wrong" not in panel.status_line.value and "503" not in panel.status_line.value


def test_song_button_before_a_voice_exists_says_so(fake) -> None:
    panel = ClonePanel(fake)
    assert panel.start_song() is None
    assert "No saved voice yet" in panel.status_line.value
