"""The spec's price list as data, and cost estimation before a create is sent.

One source for the sandbox (which bills from it), the client (which estimates
from it) and the ledger (which prices what the service shows no cost for): the
price of one task, named by its operation or its route, is :func:`task_price`. Every amount is a :class:`~decimal.Decimal` in USD; nothing here is a
float. 1 token = $0.01.

Where the spec gives no price (the fixed pipelines of the workflow routes, the
steps of song translation, the internal-only tools), songlab prices each step at
the catalog tool it uses; ``docs/sandbox.md`` lists these choices.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import ROUND_FLOOR, ROUND_HALF_EVEN, Decimal
from typing import Final

from songlab.spec import (
    AGENT_TIERS,
    COMPAT_ROUTES,
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
    "TRANSLATION_NAMES",
    "TRANSLATION_PIPELINE",
    "TaskPrice",
    "WORKFLOW_PIPELINES",
    "cents",
    "estimate_agent",
    "estimate_translation",
    "estimate_workflow",
    "license_number",
    "price",
    "task_price",
    "tokens_to_usd",
    "usd_to_tokens",
]

D = Decimal
TOKEN_USD: Final[Decimal] = D("0.01")


def cents(value: Decimal) -> str:
    """An amount as a person reads it: to the cent (half-even), thousands separated,
    ``1,234.50``. The one formatter of printed money (client summaries, the ledger's
    tables, notebooks); frames and exports keep the exact decimals."""
    return f"{value.quantize(TOKEN_USD, ROUND_HALF_EVEN):,.2f}"


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


# Song translation's six steps and each workflow route's fixed pipeline (path
# after /v1/), from the registry's routes; each step is billed at the catalog tool it uses.
TRANSLATION_PIPELINE: Final[tuple[Step, ...]] = ROUTES["song-translations"].steps
WORKFLOW_PIPELINES: Final[dict[str, tuple[Step, ...]]] = {
    path: r.steps for path, r in WORKFLOWS.items()
}


def estimate_workflow(route: str, license: int | str | None = "royalty_free") -> Decimal:
    """Total price of a workflow route (``"karaoke-tracks"`` or ``"/v1/karaoke-tracks"``)."""
    if route.rsplit("/", 1)[-1] not in WORKFLOW_PIPELINES:
        raise PricingError(f"no workflow route {route!r}")
    return task_price(route, None, license, route=True).usd


def estimate_translation(
    license: int | str | None = "royalty_free", *, transcription_cached: bool = False
) -> Decimal:
    """Total of the six song-translation steps; the transcription step is free on a cache hit."""
    full = task_price("song-translations", None, license, route=True)
    if not transcription_cached:
        return full.usd
    cached = (s for s in full.steps if s.name == "transcribe")
    return full.usd - sum((price(s.operation, s.model, license) for s in cached), D(0))


# How a song translation may be named: its route, and the names a task record may carry
# (``_`` read as ``-``). It has no generic tool id, so a task shows one of these.
TRANSLATION_NAMES: Final[frozenset[str]] = frozenset(
    {"song-translations", "song-translation", "translation", "translate-song"}
)
# A dedicated route that runs one catalog operation (its model: the body's ``version``).
_DEDICATED_OPERATIONS: Final[dict[str, str]] = {"voice-clones": "vocal_clone"}
_VOICE_CLONE_DEFAULT_VERSION: Final[str] = "v5"  # the spec's default ``version``


@dataclass(frozen=True, slots=True)
class TaskPrice:
    """The list price of one task and what it was priced as.

    ``what``: the operation priced, or the route name of a fixed pipeline (a workflow
    route or ``"song-translations"``); ``model``: the model priced (None for a
    pipeline); ``steps``: a pipeline's billed steps, each at its catalog tool's price.
    """

    usd: Decimal
    what: str
    model: str | None
    license: int
    steps: tuple[Step, ...] = ()


def task_price(
    what: str, model: str | None = None, license: int | str | None = 1, *, route: bool = False
) -> TaskPrice:
    """The list price of one task, the one place a task is priced (client, ledger, sandbox).

    ``what`` is an operation (``"generate_song"``, with its ``model``), or a create route:
    a compat path (``"/v7/generate/song"``: the model is the path's), a dedicated route
    (``"/v1/voice-clones"``: ``model`` is the body's ``version``, default v5), a workflow
    route (``"/v1/karaoke-tracks"``, ``"karaoke-tracks"``, or as a task record names it,
    ``"workflow:karaoke_tracks"``) or song translation (``"/v1/song-translations"``,
    ``"song_translation"``): a pipeline costs the sum of its steps. ``route=True``: ``what``
    must be a route (an operation name is refused). Agent One is usage-based
    (:func:`estimate_agent`), so it has no list price here.

    Raises :class:`PricingError` naming what has no price, ValueError for a bad license.
    """
    tier = license_number(license)
    if what in REGISTRY and not route:
        if REGISTRY[what].pricing_key is None:
            raise PricingError(f"{what!r} is billed from its usage, not from the price list")
        if model is None:
            raise PricingError(f"no price for operation {what!r} without a model")
        return TaskPrice(price(what, model, tier), what, model, tier)
    path = what.strip("/")
    compat = COMPAT_ROUTES.get(f"/{path}")
    if compat is not None:
        operation, version = compat[0].operation, compat[1]
        return TaskPrice(price(operation, version, tier), operation, version, tier)
    name = path.rsplit("/", 1)[-1]
    if not route:  # as a task record may name it
        name = name.removeprefix("workflow:").replace("_", "-")
    if name in _DEDICATED_OPERATIONS:
        operation, version = _DEDICATED_OPERATIONS[name], model or _VOICE_CLONE_DEFAULT_VERSION
        return TaskPrice(price(operation, version, tier), operation, version, tier)
    if name == "song-translations" or (name in TRANSLATION_NAMES and not route):
        steps = TRANSLATION_PIPELINE
        name = "song-translations"
    elif name in WORKFLOW_PIPELINES:
        steps = WORKFLOW_PIPELINES[name]
    else:
        kind = "create route" if route else "operation or create route"
        raise PricingError(f"no price for {what!r}: not a priced {kind}")
    usd = sum((price(s.operation, s.model, tier) for s in steps), D(0))
    return TaskPrice(usd, name, None, tier, steps)


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
