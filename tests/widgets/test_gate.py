"""The pure validity rules: each gate opens only on a valid request, reasons name the field."""

from __future__ import annotations

from decimal import Decimal as D

import pytest

from songlab.spec import MIB
from songlab.widgets import _gate

GOOD_SONG = dict(
    operation="generate_song", model="v7", tool_id="t1", prompt="a song", lyrics="", duration=30.0
)


def test_valid_song_has_the_price_list_price() -> None:
    gate = _gate.validate_generation(**GOOD_SONG, license=2)
    assert gate.valid and gate.reason == ""
    assert gate.price == D("0.25")


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"prompt": "  "}, "prompt:"),
        ({"operation": None}, "operation:"),
        ({"operation": "remix_song"}, "operation:"),
        ({"model": None}, "model:"),
        ({"tool_id": None}, "model: no tool"),
        ({"duration": 2.0}, "duration:"),
        ({"duration": 241.0}, "duration:"),
        ({"license": 6}, "license:"),
        ({"operation": "generate_singing", "lyrics": ""}, "lyrics:"),
        ({"operation": "sfx_gen", "model": "v5", "duration": 31.0}, "duration:"),
        ({"model": "v9"}, "price:"),
    ],
    ids=lambda v: str(v),
)
def test_invalid_generation_names_the_field(change: dict, field: str) -> None:
    gate = _gate.validate_generation(**{**GOOD_SONG, **change})
    assert not gate.valid
    assert any(r.startswith(field) for r in gate.reasons), gate.reasons


def test_singing_needs_no_prompt_and_no_duration() -> None:
    gate = _gate.validate_generation(
        operation="generate_singing", model="v6", tool_id="t", lyrics="la la", license="sync"
    )
    assert gate.valid, gate.reasons
    assert gate.price == D("0.36")


def test_payload_holds_only_the_fields_of_the_operation() -> None:
    song = _gate.build_payload(
        operation="generate_song", prompt="p", lyrics="l", duration=12, vocal_id=" v1 "
    )
    assert song == {"prompt": "p", "lyrics": "l", "duration_seconds": 12.0, "vocal_id": "v1"}
    music = _gate.build_payload(operation="generate_music", prompt="p", lyrics="l", vocal_id="v")
    assert music == {"prompt": "p"}


REF = _gate.Reference("me.mp3", "ab" * 32, 200_000, "mp3", 20.0)
GOOD_CLONE = dict(
    reference=REF,
    name="me",
    rights="I recorded this myself and I own the rights to it.",
    consent=True,
)


def test_clone_valid_and_flat_price() -> None:
    for license in ("royalty_free", "master"):
        gate = _gate.validate_clone(**GOOD_CLONE, version="v7", license=license)
        assert gate.valid, gate.reasons
        assert gate.price == D("12.00")


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"consent": False}, "consent:"),
        ({"rights": "   "}, "rights: required"),
        ({"rights": "ok"}, "rights: a statement of at least 6 words"),
        ({"rights": "I own it."}, "rights: a statement"),
        ({"rights": "mine mine mine mine mine mine mine"}, "rights: a statement"),
        ({"rights": "I am the speaker and own it " + "x" * 2049}, "rights: at most"),
        ({"reference": None}, "reference: upload a recording (mp3 or m4a)"),
        (
            {"reference": _gate.Reference("x.mp3", "00" * 32, 9, None, None, "not audio")},
            "reference: not audio",
        ),
        ({"name": "n" * 256}, "name:"),
        ({"description": "d" * 1025}, "description:"),
        ({"version": "v4"}, "version: one of v5, v6, v7, got 'v4'"),
        ({"license": "gold"}, "license:"),
    ],
    ids=lambda v: str(v),
)
def test_clone_gate_names_the_failed_rule(change: dict, field: str) -> None:
    gate = _gate.validate_clone(**{**GOOD_CLONE, **change})
    assert not gate.valid
    assert any(r.startswith(field) for r in gate.reasons), gate.reasons


def test_the_attestation_sent_fits_the_spec_limit_with_the_hash() -> None:
    longest = "I am the speaker and I own it. " + "y" * 3000
    for n in range(1900, 2100, 7):
        rights = longest[:n]
        gate = _gate.validate_clone(**{**GOOD_CLONE, "rights": rights})
        sent = _gate.attestation_text(rights, REF.sha256)
        assert gate.valid == (len(sent) <= 2048), (n, gate.reasons)


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (b"", "the file is empty"),
        (b"ID3" + bytes(15 * 1024 * 1024), "over the 15.0 MiB limit"),
        (b"RIFF\0\0\0\0WAVE" + bytes(64), "a wav file: the service takes mp3 or m4a"),
        (bytes(range(256)) * 40, "not a recognised audio file"),
        (b"\x00\x00\x00\x20ftypM4A " + bytes(64), "could not be decoded"),
    ],
    ids=["empty", "oversize", "wav", "noise", "m4a-header-only"],
)
def test_a_reference_is_checked_by_its_bytes_and_decoded(content: bytes, problem: str) -> None:
    ref = _gate.inspect_reference("x.mp3", content)
    assert problem in ref.problem and not ref.ready


def test_a_real_recording_is_ready_whatever_its_name(voice_mp3: bytes) -> None:
    ref = _gate.inspect_reference("recording", voice_mp3)
    assert ref.ready and ref.kind == "mp3" and abs((ref.seconds or 0) - 3.0) < 0.1


@pytest.mark.parametrize(
    ("amount", "text"),
    [
        (D("0.25"), "$0.25"),
        (D("12.00"), "$12.00"),
        (D("0.001"), "$0.001"),
        (D("1"), "$1.00"),
        (None, "-"),
    ],
)
def test_format_price(amount: D | None, text: str) -> None:
    assert _gate.format_price(amount) == text


@pytest.mark.parametrize(
    ("size", "text"), [(90, "90 B"), (2048, "2 KiB"), (int(1.5 * MIB), "1.5 MiB")]
)
def test_format_size(size: int, text: str) -> None:
    assert _gate.format_size(size) == text
