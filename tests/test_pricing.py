"""The price list is the spec's, exactly, and estimates add up in Decimal."""

from __future__ import annotations

from decimal import Decimal

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
    assert pricing.price(operation, model, license) == Decimal(expected)


def test_license_zero_and_none_are_royalty_free() -> None:
    assert pricing.price("generate_song", "v7", 0) == pricing.price("generate_song", "v7", 1)
    assert pricing.price("generate_song", "v7", None) == Decimal("0.12")


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
            assert isinstance(p, Decimal)
            assert p == p.quantize(Decimal("0.00000001"))


def test_workflow_and_translation_totals() -> None:
    assert pricing.estimate_workflow("audio-inpainting", "master") == Decimal("1.00")
    assert pricing.estimate_workflow("/v1/karaoke-tracks") == Decimal("0.13")
    # 0.03 + 0.02 + 0.10 + singing(sync)=0.36 + 0.03 + 0.03
    assert pricing.estimate_translation("sync") == Decimal("0.57")
    assert pricing.estimate_translation("sync", transcription_cached=True) == Decimal("0.54")
    with pytest.raises(pricing.PricingError):
        pricing.estimate_workflow("no-such-route")


def test_agent_estimate_is_exact() -> None:
    fee = pricing.estimate_agent("standard", input_tokens=1000, output_tokens=500, sub_tool_calls=3)
    assert fee == Decimal("0.00122") + Decimal("0.006775") + Decimal("0.003")
    assert pricing.AGENT_RATES["pro"].reserve_floor == Decimal("0.05")
    with pytest.raises(pricing.PricingError, match="tier"):
        pricing.estimate_agent("turbo")


def test_tokens() -> None:
    assert pricing.usd_to_tokens(Decimal("1000")) == 100000
    assert pricing.usd_to_tokens(Decimal("0.079")) == 7
    assert pricing.tokens_to_usd(7) == Decimal("0.07")


# --- task_price: the one place a task is priced, by operation or by route ------------------


@pytest.mark.parametrize(
    ("what", "model", "license", "usd", "priced_as"),
    [
        ("generate_song", "v7", "standard", "0.25", ("generate_song", "v7")),
        ("/v7/generate/song", None, 2, "0.25", ("generate_song", "v7")),
        ("v6/generate/singing", None, 4, "0.36", ("generate_singing", "v6")),
        ("/v5/extend/music", None, 1, "0.07", ("extend_music", "v5")),
        ("/v1/generate/extend", None, 5, "0.07", ("extend_music", "v5")),
        ("/v1/voice-clones", None, 1, "12.00", ("vocal_clone", "v5")),
        ("voice-clones", "v7", 3, "12.00", ("vocal_clone", "v7")),
        ("/v1/karaoke-tracks", None, 1, "0.13", ("karaoke-tracks", None)),
        ("workflow:karaoke_tracks", None, 1, "0.13", ("karaoke-tracks", None)),
        ("audio-inpainting", None, "master", "1.00", ("audio-inpainting", None)),
        ("/v1/song-translations", None, "sync", "0.57", ("song-translations", None)),
        ("song_translation", None, 4, "0.57", ("song-translations", None)),
        ("translate_song", None, 4, "0.57", ("song-translations", None)),
    ],
    ids=lambda v: str(v),
)
def test_task_price_by_operation_or_route(
    what: str, model: str | None, license: int | str, usd: str, priced_as: tuple[str, str | None]
) -> None:
    p = pricing.task_price(what, model, license)
    assert p.usd == Decimal(usd)
    assert (p.what, p.model) == priced_as
    assert p.license == pricing.license_number(license)


def test_a_pipeline_is_the_sum_of_its_steps_in_the_tier() -> None:
    for name, steps in pricing.WORKFLOW_PIPELINES.items():
        for tier in range(1, 6):
            p = pricing.task_price(f"/v1/{name}", None, tier)
            assert p.steps == steps
            assert p.usd == sum(
                (pricing.price(s.operation, s.model, tier) for s in steps), Decimal(0)
            )


@pytest.mark.parametrize(
    ("what", "model", "match"),
    [
        ("/v1/nothing", None, "nothing"),
        ("generate_song", None, "without a model"),
        ("generate_song", "v9", "v9"),
        ("agent", "pro", "usage"),
        ("/v8/generate/song", None, "v8"),
    ],
    ids=lambda v: str(v),
)
def test_task_price_refuses_what_has_no_list_price(
    what: str, model: str | None, match: str
) -> None:
    with pytest.raises(pricing.PricingError, match=match):
        pricing.task_price(what, model)


def test_route_only_refuses_operation_names_and_record_spellings() -> None:
    assert pricing.task_price("/v1/karaoke-tracks", route=True).usd == Decimal("0.13")
    for what in ("generate_song", "workflow:karaoke_tracks", "karaoke_tracks", "translation"):
        with pytest.raises(pricing.PricingError, match="create route"):
            pricing.task_price(what, "v5", route=True)


def test_client_and_ledger_estimates_are_task_price() -> None:
    """Both estimate modules answer what task_price answers, for every operation and route."""
    from songlab.client import _cost_estimate as client_estimate
    from songlab.ledger import _estimate as ledger_estimate
    from songlab.spec import COMPAT_ROUTES, ROUTES

    for (operation, model), _ in pricing.PRICES.items():
        for tier in range(1, 6):
            want = pricing.task_price(operation, model, tier).usd
            assert client_estimate.estimate_operation(operation, model, tier).usd == want
            assert ledger_estimate.estimate(operation, model, tier) == want
    for path in [*COMPAT_ROUTES, *(f"/v1/{p}" for p in ROUTES)]:
        for tier in range(1, 6):
            want = pricing.task_price(path, "v5", tier, route=True)
            got = client_estimate.estimate_route(path, tier)
            assert (got.usd, got.what, got.model) == (want.usd, want.what, want.model)
            name = path.rsplit("/", 1)[-1]
            if name in pricing.WORKFLOW_PIPELINES or name == "song-translations":
                assert ledger_estimate.estimate(name, None, tier) == want.usd
