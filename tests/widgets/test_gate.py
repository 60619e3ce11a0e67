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


GOOD_CLONE = dict(
    filename="me.mp3",
    size=200_000,
    content=b"ID3\x04" + bytes(20),
    name="me",
    attestation="I recorded this myself and own the rights.",
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
        ({"attestation": "   "}, "rights:"),
        ({"attestation": "x" * 2049}, "rights:"),
        ({"filename": None, "size": None}, "reference:"),
        ({"filename": "me.wav"}, "reference: must be mp3 or m4a"),
        ({"filename": "me.m4a"}, "reference: 'me.m4a' is not m4a"),
        ({"size": 15 * MIB + 1}, "reference: 15.0 MiB is over"),
        ({"size": 0}, "reference: the file is empty"),
        ({"name": "n" * 256}, "name:"),
        ({"description": "d" * 1025}, "description:"),
        ({"version": "v4"}, "version:"),
        ({"license": "gold"}, "license:"),
    ],
    ids=lambda v: str(v),
)
def test_clone_gate_names_the_failed_rule(change: dict, field: str) -> None:
    gate = _gate.validate_clone(**{**GOOD_CLONE, **change})
    assert not gate.valid
    assert any(r.startswith(field) for r in gate.reasons), gate.reasons


def test_exactly_15_mib_is_allowed() -> None:
    assert _gate.validate_clone(**{**GOOD_CLONE, "size": 15 * MIB}).valid


def test_m4a_is_sniffed() -> None:
    head = b"\x00\x00\x00\x20ftypM4A " + bytes(8)
    assert _gate.sniff_audio(head) == "m4a"
    assert _gate.validate_clone(**{**GOOD_CLONE, "filename": "me.M4A", "content": head}).valid


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
