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
    REGISTRY,
    ROUTES,
    WORKFLOWS,
    Step,
    effective_license,
    parse_license,
)

__all__ = [
    "AGENT_RATES",
    "AgentRates",
    "PRICES",
    "PRICE_LIST",
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


# The price list: pricing key (``spec.Operation.pricing_key``) -> model -> prices for
# license 1..5 (royalty_free .. master); "*" prices every model of the operation.
_SONG_MUSIC = _tiers("0.07", "0.11", "0.14", "0.28", "0.70")
PRICE_LIST: Final[dict[str, dict[str, tuple[Decimal, ...]]]] = {
    "song": {
        "v5": _tiers("0.07", "0.11", "0.14", "0.28", "0.70"),
        "v6": _tiers("0.10", "0.15", "0.20", "0.39", "0.98"),
        "v7": _tiers("0.12", "0.25", "0.27", "0.67", "1.67"),
    },
    "music": {"*": _SONG_MUSIC},
    "singing": {"*": _tiers("0.09", "0.14", "0.18", "0.36", "0.90")},
    "extend": {"*": _flat("0.07")},
    "remix": {"*": _flat("0.30")},
    "clone": {"*": _flat("12.00")},
    "stems": {"*": _flat("0.10")},
    "lyrics": {"*": _flat("0.02")},
    "transcribe": {"*": _flat("0.03")},
    "effect": {"*": _flat("0.03")},
    "inpaint": {"*": _flat("1.00")},
    "copyright": {"*": _flat("0.03")},
    "sfx": {"*": _flat("0.54")},
    # Internal-only tools (Agent One and the fixed pipelines). web_search is the
    # spec's 0.01 flat; mix and translate_lyrics are songlab's, priced like the
    # catalog tools they resemble (audio_effect, write_lyrics).
    "web_search": {"*": _flat("0.01")},
    "mix": {"*": _flat("0.03")},
    "translate": {"*": _flat("0.02")},
}


def _prices() -> dict[tuple[str, str], tuple[Decimal, ...]]:
    out: dict[tuple[str, str], tuple[Decimal, ...]] = {}
    for op in REGISTRY.values():
        if op.pricing_key is None:
            continue  # Agent One: billed from tokens (AGENT_RATES)
        row = PRICE_LIST[op.pricing_key]
        for model in op.models:
            out[(op.name, model)] = row[model] if model in row else row["*"]
    return out


# (operation, model) -> prices for license 1..5: the registry's operations x models.
PRICES: Final[dict[tuple[str, str], tuple[Decimal, ...]]] = _prices()


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

    Raises ValueError (``spec.LicenseError``) naming the rule for anything else.
    """
    return effective_license(None if license is None else parse_license(license))


def price(operation: str, model: str, license: int | str | None = 1) -> Decimal:
    """The price of one task of ``operation`` on ``model`` in the given license tier."""
    tier = license_number(license)
    try:
        return PRICES[(operation, model)][tier - 1]
    except KeyError:
        raise PricingError(f"no price for operation {operation!r} on model {model!r}") from None


# Song translation's six steps and the twelve workflow routes' fixed pipelines (path
# after /v1/), from the registry's routes; each step is billed at the catalog tool it uses.
TRANSLATION_PIPELINE: Final[tuple[Step, ...]] = ROUTES["song-translations"].steps
WORKFLOW_PIPELINES: Final[dict[str, tuple[Step, ...]]] = {
    path: r.steps for path, r in WORKFLOWS.items()
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
