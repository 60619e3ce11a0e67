"""The price list is the spec's, exactly, and estimates add up in Decimal."""

from __future__ import annotations

from decimal import Decimal as D

import pytest

from songlab import pricing
from songlab.spec import INTERNAL_OPERATIONS, OPERATIONS


@pytest.mark.parametrize(
    ("operation", "model", "license", "expected"),
    [
        ("generate_song", "v5", 1, "0.07"),
        ("generate_song", "v5", "master", "0.70"),
        ("similar_song", "v6", "sync", "0.39"),
        ("midi_to_song", "v7", 2, "0.25"),
        ("melody_to_song", "v7", 5, "1.67"),
        ("generate_music", "v7", "distribution", "0.14"),
        ("generate_singing", "v6", 4, "0.36"),
        ("extend_song", "v7", 5, "0.07"),
        ("extend_music", "v5", 3, "0.07"),
        ("remix_song", "v6", 1, "0.30"),
        ("separate_stems", "6-stem", 5, "0.10"),
        ("write_lyrics", "v5", 3, "0.02"),
        ("transcribe", "whisper-transcribe-v1", 1, "0.03"),
        ("audio_effect", "v5", 5, "0.03"),
        ("vocal_clone", "v7", 1, "12.00"),
        ("inpaint", "v5", 4, "1.00"),
        ("copyright", "v5", 2, "0.03"),
        ("sfx_gen", "v5", 5, "0.54"),
        ("web_search", "internal", 1, "0.01"),
    ],
    ids=lambda v: str(v),
)
def test_price_matches_spec(operation: str, model: str, license: int | str, expected: str) -> None:
    assert pricing.price(operation, model, license) == D(expected)


def test_license_zero_and_none_are_royalty_free() -> None:
    assert pricing.price("generate_song", "v7", 0) == pricing.price("generate_song", "v7", 1)
    assert pricing.price("generate_song", "v7", None) == D("0.12")


@pytest.mark.parametrize("bad", [6, -1, "gold", True, 1.5], ids=repr)
def test_bad_license_names_the_field_and_rule(bad: object) -> None:
    with pytest.raises(ValueError, match="license"):
        pricing.license_number(bad)  # type: ignore[arg-type]


def test_unknown_tool_has_no_price() -> None:
    with pytest.raises(pricing.PricingError, match="extend_music"):
        pricing.price("extend_music", "v7")


def test_every_catalog_operation_but_agent_is_priced() -> None:
    priced = {op for op, _ in pricing.PRICES}
    assert set(OPERATIONS) - {"agent"} <= priced
    assert set(INTERNAL_OPERATIONS) <= priced


def test_prices_are_decimal_with_at_most_8_places() -> None:
    for prices in pricing.PRICES.values():
        for p in prices:
            assert isinstance(p, D)
            assert p == p.quantize(D("0.00000001"))


def test_workflow_and_translation_totals() -> None:
    assert pricing.estimate_workflow("audio-inpainting", "master") == D("1.00")
    assert pricing.estimate_workflow("/v1/karaoke-tracks") == D("0.13")
    # 0.03 + 0.02 + 0.10 + singing(sync)=0.36 + 0.03 + 0.03
    assert pricing.estimate_translation("sync") == D("0.57")
    assert pricing.estimate_translation("sync", transcription_cached=True) == D("0.54")
    with pytest.raises(pricing.PricingError):
        pricing.estimate_workflow("no-such-route")


def test_agent_estimate_is_exact() -> None:
    fee = pricing.estimate_agent("standard", input_tokens=1000, output_tokens=500, sub_tool_calls=3)
    assert fee == D("0.00122") + D("0.006775") + D("0.003")
    assert pricing.AGENT_RATES["pro"].reserve_floor == D("0.05")
    with pytest.raises(pricing.PricingError, match="tier"):
        pricing.estimate_agent("turbo")


def test_tokens() -> None:
    assert pricing.usd_to_tokens(D("1000")) == 100000
    assert pricing.usd_to_tokens(D("0.079")) == 7
    assert pricing.tokens_to_usd(7) == D("0.07")
