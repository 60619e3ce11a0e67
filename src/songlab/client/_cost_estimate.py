"""Cost estimates of every create the client can send, from ``songlab.pricing``.

An :class:`Estimate` is what the create would bill if it completes. For Agent
One the own fee is usage-based: with ``max_budget`` the estimate is that cap
(the service checks it after each turn settles, so a last turn can overshoot);
without it the run is unbounded and the budget guard refuses it.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

import songlab.pricing as pricing
from songlab.client._validate import ValidationError, license_number
from songlab.client.choices import check_name
from songlab.spec import (
    AGENT_TIERS,
    COMPAT_ROUTES,
    LICENSE_NAMES,
    OPERATIONS,
    REGISTRY,
    ROUTES,
    SONG_VERSIONS,
)

__all__ = ["Estimate", "estimate_agent", "estimate_operation", "estimate_route"]


@dataclass(frozen=True, slots=True)
class Estimate:
    usd: Decimal
    bounded: bool  # False: the real cost has no known upper bound
    what: str  # operation, route or tier
    model: str | None = None
    license: int = 1
    note: str = ""

    def describe(self) -> str:
        model = f" {self.model}" if self.model else ""
        return f"{self.what}{model} ({LICENSE_NAMES[self.license]})"


def _lic(license: object) -> int:
    return 1 if license is None else (license_number(license) or 1)


# the create routes a route estimate names: dedicated and workflow, then the compat paths
CREATE_ROUTES: tuple[str, ...] = (*(f"/v1/{path}" for path in ROUTES), *COMPAT_ROUTES)


def estimate_operation(operation: str, model: str, license: object = None) -> Estimate:
    """The list price of ``operation`` on ``model``: each name checked against the catalog
    (the field named, the allowed values listed, the nearest offered) before it is priced."""
    if operation not in REGISTRY:  # an internal tool's price is known too (Agent One bills it)
        check_name(operation, "operation", OPERATIONS, of="the operations of the catalog")
    check_name(model, "model", REGISTRY[operation].models, of=f"the models of {operation}")
    lic = _lic(license)
    try:
        usd = pricing.task_price(operation, model, lic).usd
    except pricing.PricingError as e:
        raise ValidationError("operation", str(e)) from None
    return Estimate(usd, True, operation, model, lic)


def estimate_agent(tier: str, max_budget: int | None = None, license: object = None) -> Estimate:
    check_name(tier, "tier", AGENT_TIERS, of="Agent One's tiers")
    floor = pricing.AGENT_RATES[tier].reserve_floor
    if max_budget is None:
        return Estimate(
            floor,
            False,
            "agent",
            tier,
            _lic(license),
            note=f"pass max_budget= (cents) to cap it; the reserve floor is ${floor}",
        )
    cap = Decimal(max_budget) / 100
    return Estimate(
        max(cap, floor),
        True,
        "agent",
        tier,
        _lic(license),
        note="max_budget is checked after each turn settles; a turn can overshoot",
    )


def estimate_route(route: str, license: object = None, *, version: str = "v5") -> Estimate:
    """A dedicated, workflow or compat route: ``"/v1/karaoke-tracks"``, ``"voice-clones"``,
    ``"/v7/generate/song"``, ``"/v1/generate/extend"`` ... (priced by ``pricing.task_price``)."""
    lic = _lic(license)
    path = str(route).strip("/")
    named = f"/{path}" if "/" in path else f"/v1/{path}"
    check_name(named, "route", CREATE_ROUTES, of="the create routes")
    if named == "/v1/voice-clones":
        check_name(version, "version", SONG_VERSIONS, of="the voice-clone versions")
    try:
        p = pricing.task_price(route, version, lic, route=True)
    except pricing.PricingError:
        raise ValidationError("route", f"no create route {route!r} to estimate") from None
    note = ""
    if p.what == "song-translations":
        note = "pass-through; less when the transcription is cached"
    return Estimate(p.usd, True, p.what, p.model, lic, note=note)
