"""The spec's price list as data, and cost estimation before a create is sent.

One source for the sandbox (which bills from it) and the client (which estimates
from it). Every amount is a :class:`~decimal.Decimal` in USD; nothing here is a
float. 1 token = $0.01.

Where the spec gives no price (the fixed pipelines of the workflow routes, the
steps of song translation, the internal-only tools), songlab prices each step at
the catalog tool it uses; ``docs/sandbox.md`` lists these choices.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import ROUND_FLOOR, Decimal
from typing import Final

from songlab.spec import (
    AGENT_TIERS,
    LICENSE_BY_NAME,
    SONG_VERSIONS,
    STEM_MODELS,
    TRANSCRIBE_MODEL,
    effective_license,
)

__all__ = [
    "AGENT_RATES",
    "AgentRates",
    "PRICES",
    "PricingError",
    "Step",
    "TRANSLATION_PIPELINE",
    "WORKFLOW_PIPELINES",
    "estimate_agent",
    "estimate_translation",
    "estimate_workflow",
    "license_number",
    "price",
    "tokens_to_usd",
    "usd_to_tokens",
]

D = Decimal
TOKEN_USD: Final[Decimal] = D("0.01")


class PricingError(LookupError):
    """No price for that (operation, model, license)."""


def _tiers(*values: str) -> tuple[Decimal, ...]:
    assert len(values) == 5
    return tuple(D(v) for v in values)


def _flat(value: str) -> tuple[Decimal, ...]:
    return (D(value),) * 5


_SONG = {
    "v5": _tiers("0.07", "0.11", "0.14", "0.28", "0.70"),
    "v6": _tiers("0.10", "0.15", "0.20", "0.39", "0.98"),
    "v7": _tiers("0.12", "0.25", "0.27", "0.67", "1.67"),
}
_MUSIC = _tiers("0.07", "0.11", "0.14", "0.28", "0.70")
_SINGING = _tiers("0.09", "0.14", "0.18", "0.36", "0.90")

# (operation, model) -> prices for license 1..5 (royalty_free .. master).
PRICES: Final[dict[tuple[str, str], tuple[Decimal, ...]]] = {}
for _v in SONG_VERSIONS:
    for _op in ("generate_song", "similar_song", "melody_to_song", "midi_to_song"):
        PRICES[(_op, _v)] = _SONG[_v]
    for _op in ("generate_music", "similar_music"):
        PRICES[(_op, _v)] = _MUSIC
    PRICES[("generate_singing", _v)] = _SINGING
    PRICES[("extend_song", _v)] = _flat("0.07")
    PRICES[("remix_song", _v)] = _flat("0.30")
    PRICES[("vocal_clone", _v)] = _flat("12.00")
PRICES[("extend_music", "v5")] = _flat("0.07")
for _m in STEM_MODELS:
    PRICES[("separate_stems", _m)] = _flat("0.10")
PRICES[("write_lyrics", "v5")] = _flat("0.02")
PRICES[("transcribe", TRANSCRIBE_MODEL)] = _flat("0.03")
PRICES[("audio_effect", "v5")] = _flat("0.03")
PRICES[("inpaint", "v5")] = _flat("1.00")
PRICES[("copyright", "v5")] = _flat("0.03")
PRICES[("sfx_gen", "v5")] = _flat("0.54")
# Internal-only tools (Agent One and the fixed pipelines). web_search is the
# spec's 0.01 flat; mix and translate_lyrics are songlab's, priced like the
# catalog tools they resemble (audio_effect, write_lyrics).
PRICES[("web_search", "internal")] = _flat("0.01")
PRICES[("mix", "v5")] = _flat("0.03")
PRICES[("translate_lyrics", "v5")] = _flat("0.02")


@dataclass(frozen=True, slots=True)
class AgentRates:
    input_token: Decimal
    output_token: Decimal
    sub_tool_call: Decimal
    reserve_floor: Decimal


AGENT_RATES: Final[dict[str, AgentRates]] = {
    "flash": AgentRates(D("0.00000067"), D("0.00000213"), D("0.001"), D("0.01")),
    "standard": AgentRates(D("0.00000122"), D("0.00001355"), D("0.001"), D("0.02")),
    "pro": AgentRates(D("0.000006"), D("0.00003"), D("0.001"), D("0.05")),
}
assert tuple(AGENT_RATES) == AGENT_TIERS


def license_number(license: int | str | None) -> int:
    """Accept 0-5, a tier name (``"master"``) or None; return 1-5.

    Raises ValueError naming the rule for anything else.
    """
    if license is None:
        return 1
    if isinstance(license, bool):
        raise ValueError("license: must be an integer 0-5 or a tier name, not a bool")
    if isinstance(license, int):
        if not 0 <= license <= 5:
            raise ValueError(f"license: must be 0-5 (0 = unset = royalty_free), got {license}")
        return effective_license(license)
    if isinstance(license, str):
        try:
            return LICENSE_BY_NAME[license]
        except KeyError:
            raise ValueError(
                f"license: must be one of {', '.join(LICENSE_BY_NAME)}, got {license!r}"
            ) from None
    raise ValueError(f"license: must be an integer 0-5 or a tier name, got {type(license).__name__}")


def price(operation: str, model: str, license: int | str | None = 1) -> Decimal:
    """The price of one task of ``operation`` on ``model`` in the given license tier."""
    tier = license_number(license)
    try:
        return PRICES[(operation, model)][tier - 1]
    except KeyError:
        raise PricingError(f"no price for operation {operation!r} on model {model!r}") from None


@dataclass(frozen=True, slots=True)
class Step:
    """One billed step of a fixed pipeline: its name and the tool it runs."""

    name: str
    operation: str
    model: str


# Song translation: six steps, each billed at the catalog tool it uses.
TRANSLATION_PIPELINE: Final[tuple[Step, ...]] = (
    Step("transcribe", "transcribe", TRANSCRIBE_MODEL),
    Step("translate", "translate_lyrics", "v5"),
    Step("separate", "separate_stems", "2stem"),
    Step("revoice", "generate_singing", "v5"),
    Step("layer", "mix", "v5"),
    Step("render", "audio_effect", "v5"),
)

# The twelve workflow routes (path after /v1/) and their fixed pipelines.
WORKFLOW_PIPELINES: Final[dict[str, tuple[Step, ...]]] = {
    "beat-swaps": (
        Step("separate", "separate_stems", "2stem"),
        Step("beat", "generate_music", "v5"),
        Step("mix", "mix", "v5"),
    ),
    "karaoke-tracks": (
        Step("separate", "separate_stems", "2stem"),
        Step("render", "audio_effect", "v5"),
    ),
    "drumless-mixes": (
        Step("separate", "separate_stems", "6-stem"),
        Step("mix", "mix", "v5"),
    ),
    "revoicings": (
        Step("separate", "separate_stems", "2stem"),
        Step("sing", "generate_singing", "v5"),
        Step("mix", "mix", "v5"),
    ),
    "instrument-layers": (
        Step("part", "generate_music", "v5"),
        Step("mix", "mix", "v5"),
    ),
    "hummed-songs": (
        Step("song", "melody_to_song", "v5"),
        Step("render", "audio_effect", "v5"),
    ),
    "trending-songs": (
        Step("search", "web_search", "internal"),
        Step("lyrics", "write_lyrics", "v5"),
        Step("song", "generate_song", "v5"),
    ),
    "voice-songs": (
        Step("song", "similar_song", "v5"),
        Step("render", "audio_effect", "v5"),
    ),
    "genre-remixes": (Step("remix", "remix_song", "v5"),),
    "midi-songs": (
        Step("song", "midi_to_song", "v5"),
        Step("render", "audio_effect", "v5"),
    ),
    "vocal-layers": (
        Step("sing", "generate_singing", "v5"),
        Step("mix", "mix", "v5"),
    ),
    "audio-inpainting": (Step("inpaint", "inpaint", "v5"),),
}


def estimate_workflow(route: str, license: int | str | None = "royalty_free") -> Decimal:
    """Total price of a workflow route (``"karaoke-tracks"`` or ``"/v1/karaoke-tracks"``)."""
    key = route.rsplit("/", 1)[-1]
    try:
        steps = WORKFLOW_PIPELINES[key]
    except KeyError:
        raise PricingError(f"no workflow route {route!r}") from None
    return sum((price(s.operation, s.model, license) for s in steps), D(0))


def estimate_translation(
    license: int | str | None = "royalty_free", *, transcription_cached: bool = False
) -> Decimal:
    """Total of the six song-translation steps; the transcription step is free on a cache hit."""
    total = D(0)
    for step in TRANSLATION_PIPELINE:
        if step.name == "transcribe" and transcription_cached:
            continue
        total += price(step.operation, step.model, license)
    return total


def estimate_agent(
    tier: str,
    *,
    input_tokens: int = 0,
    output_tokens: int = 0,
    sub_tool_calls: int = 0,
    sub_tool_cost: Decimal = D(0),
) -> Decimal:
    """Agent One's own fee from token counts and calls, plus what the sub-tools bill.

    The reserve floor (``AGENT_RATES[tier].reserve_floor``) is the hold checked
    before a run starts, not a minimum charge.
    """
    try:
        r = AGENT_RATES[tier]
    except KeyError:
        raise PricingError(f"no Agent One tier {tier!r}; one of {', '.join(AGENT_TIERS)}") from None
    fee = (
        r.input_token * input_tokens
        + r.output_token * output_tokens
        + r.sub_tool_call * sub_tool_calls
    )
    return fee + sub_tool_cost


def usd_to_tokens(amount: Decimal) -> int:
    """Whole tokens covered by ``amount`` (rounded down)."""
    return int((amount / TOKEN_USD).to_integral_value(rounding=ROUND_FLOOR))


def tokens_to_usd(tokens: int) -> Decimal:
    return D(tokens) * TOKEN_USD
