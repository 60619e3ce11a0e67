"""Pure validity rules of the generation form and the voice-clone panel.

No widgets and no I/O here: each rule takes plain values and answers a
:class:`Gate` (valid or not, the reasons naming the field and the rule, and the
price of that exact request as a ``Decimal``). The panels call these on every
change and enable their submit buttons from the answer; the same functions are
unit-tested without a kernel.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Final

import songlab.pricing as pricing
from songlab.spec import (
    LICENSE_NAMES,
    MIB,
    REGISTRY,
    ROUTES,
    LicenseError,
    parse_license,
)

__all__ = [
    "CLONE_SUFFIXES",
    "FORM_OPERATIONS",
    "Gate",
    "build_payload",
    "format_price",
    "format_size",
    "license_options",
    "sniff_audio",
    "validate_clone",
    "validate_generation",
]


@dataclass(frozen=True, slots=True)
class Gate:
    """The answer of a rule: ``valid``, every failed rule (``reasons``) and the price."""

    valid: bool
    reasons: tuple[str, ...] = ()
    price: Decimal | None = None

    @property
    def reason(self) -> str:
        """The first failed rule, or ``""`` when valid."""
        return self.reasons[0] if self.reasons else ""


@dataclass(frozen=True, slots=True)
class _OpRule:
    prompt_required: bool
    lyrics: str  # "required", "optional" or "none"
    duration: tuple[float, float, float] | None  # (min, max, default) or no duration
    vocal_id: bool


def _form_rule(name: str) -> _OpRule:
    op = REGISTRY[name]
    form = op.form
    assert form is not None
    duration = None
    if form.duration:
        f = op.field("duration_seconds")
        duration = (float(f.min or 0.0), float(f.max or 0.0), float(f.default or 0.0))
    return _OpRule(form.prompt, form.lyrics, duration, form.vocal_id)


# The operations the form can express with prompt / lyrics / duration alone (the
# others need a file input: use the client): the registry's operations with a form rule.
FORM_OPERATIONS: Final[dict[str, _OpRule]] = {
    name: _form_rule(name) for name, op in REGISTRY.items() if op.form is not None
}

# The voice-clone reference's file kinds (the registry's route field), by file suffix.
CLONE_SUFFIXES: Final[dict[str, str]] = {
    "." + kind: kind for kind in ROUTES["voice-clones"].field("reference_file_id").formats
}


def format_price(amount: Decimal | None) -> str:
    """``Decimal("0.25")`` -> ``"$0.25"``; at least two decimals, never rounded away."""
    if amount is None:
        return "-"
    text = format(amount.normalize(), "f")
    whole, _, frac = text.partition(".")
    return f"${whole}.{frac.ljust(2, '0')}"


def format_size(size: int) -> str:
    """Bytes as a short human string (``"1.5 MiB"``, ``"812 KiB"``, ``"90 B"``)."""
    if size < 1024:
        return f"{size} B"
    if size < MIB:
        return f"{size / 1024:.0f} KiB"
    return f"{size / MIB:.1f} MiB"


def _tier_reason(license: Any) -> str | None:
    if license is None:
        return None  # unset: royalty-free
    try:
        parse_license(license)
    except LicenseError as exc:
        return str(exc)
    return None


def validate_generation(
    *,
    operation: str | None,
    model: str | None,
    tool_id: str | None,
    prompt: str = "",
    lyrics: str = "",
    duration: float | None = None,
    license: int | str | None = 1,
) -> Gate:
    """Can this generation request be sent? Reasons name the field and the rule."""
    reasons: list[str] = []
    rule = FORM_OPERATIONS.get(operation or "")
    if not operation:
        reasons.append("operation: choose one")
    elif rule is None:
        reasons.append(
            f"operation: {operation!r} needs a file input; the form handles "
            f"{', '.join(FORM_OPERATIONS)}"
        )
    if not model:
        reasons.append("model: choose one")
    elif operation and not tool_id:
        reasons.append(f"model: no tool for {operation} on {model} in /v1/tools")
    if rule is not None:
        if rule.prompt_required and not prompt.strip():
            reasons.append(f"prompt: required for {operation}")
        if rule.lyrics == "required" and not lyrics.strip():
            reasons.append(f"lyrics: required for {operation}")
        if rule.duration is not None:
            low, high, _ = rule.duration
            if duration is None or not low <= float(duration) <= high:
                reasons.append(f"duration: must be {low:g}-{high:g} s for {operation}")
    tier_reason = _tier_reason(license)
    if tier_reason:
        reasons.append(tier_reason)
    amount: Decimal | None = None
    if operation and model and tier_reason is None:
        try:
            amount = pricing.price(operation, model, license)
        except pricing.PricingError as exc:
            reasons.append(f"price: {exc}")
    return Gate(not reasons, tuple(reasons), amount)


def build_payload(
    *,
    operation: str,
    prompt: str = "",
    lyrics: str = "",
    duration: float | None = None,
    vocal_id: str = "",
) -> dict[str, Any]:
    """The ``payload_json`` object of a form request (only the fields the operation takes)."""
    rule = FORM_OPERATIONS[operation]
    payload: dict[str, Any] = {}
    if prompt.strip():
        payload["prompt"] = prompt
    if rule.lyrics != "none" and lyrics.strip():
        payload["lyrics"] = lyrics
    if rule.duration is not None and duration is not None:
        payload["duration_seconds"] = float(duration)
    if rule.vocal_id and vocal_id.strip():
        payload["vocal_id"] = vocal_id.strip()
    return payload


def sniff_audio(content: bytes) -> str | None:
    """``"mp3"``, ``"m4a"`` or None from the first bytes of a file (:func:`songlab.codec.sniff`)."""
    from songlab.codec import sniff

    kind = sniff(content)
    return kind if kind in ("mp3", "m4a") else None


def validate_clone(
    *,
    filename: str | None,
    size: int | None,
    content: bytes | None = None,
    name: str = "",
    description: str = "",
    version: str = "v5",
    license: int | str | None = "royalty_free",
    attestation: str = "",
    consent: bool = False,
) -> Gate:
    """Can this voice clone be requested? (the spec's voice-clone field rules)."""
    reasons: list[str] = []
    max_bytes = int(ROUTES["voice-clones"].field("reference_file_id").max_bytes or 0)
    if not filename or size is None:
        reasons.append("reference: upload an mp3 or m4a recording")
    else:
        suffix = "." + filename.rsplit(".", 1)[-1].lower() if "." in filename else ""
        kind = CLONE_SUFFIXES.get(suffix)
        if kind is None:
            reasons.append(f"reference: must be mp3 or m4a, got {filename!r}")
        elif content is not None and sniff_audio(content) not in (kind, None):
            reasons.append(f"reference: {filename!r} is not {kind} audio")
        if size > max_bytes:
            reasons.append(
                f"reference: {format_size(size)} is over the {format_size(max_bytes)} limit"
            )
        elif size == 0:
            reasons.append("reference: the file is empty")
    clone = ROUTES["voice-clones"]
    for field, value in (("name", name), ("description", description)):
        limit = int(clone.field(field).max_len or 0)
        if len(value) > limit:
            reasons.append(f"{field}: at most {limit} characters, got {len(value)}")
    versions = clone.field("version").choices
    if version not in versions:
        reasons.append(f"version: must be one of {', '.join(versions)}, got {version!r}")
    tier_reason = _tier_reason(license)
    if tier_reason:
        reasons.append(tier_reason)
    limit = int(clone.field("rights_attestation").max_len or 0)
    if not attestation.strip():
        reasons.append("rights: required (state your rights to the voice)")
    elif len(attestation) > limit:
        reasons.append(f"rights: at most {limit} characters, got {len(attestation)}")
    if consent is not True:
        reasons.append('consent: tick the box "I consent ..."')
    amount = None
    if version in versions and tier_reason is None:
        amount = pricing.price("vocal_clone", version, license)
    return Gate(not reasons, tuple(reasons), amount)


def license_options() -> list[tuple[str, int]]:
    """Dropdown options for the tiers: ``[("royalty_free", 1), ...]``."""
    return [(name, number) for number, name in LICENSE_NAMES.items()]
