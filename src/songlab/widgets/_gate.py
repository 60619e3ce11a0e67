"""Pure validity rules of the generation form and the voice-clone panel.

No widgets and no I/O here: each rule takes plain values and answers a
:class:`Gate` (valid or not, the reasons naming the field and the rule, and the
price of that exact request as a ``Decimal``). The panels call these on every
change and enable their submit buttons from the answer; the same functions are
unit-tested without a kernel.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Final

import songlab.pricing as pricing
from songlab.client.choices import check_name, one_of
from songlab.codec import MIME
from songlab.spec import (
    LICENSE_NAMES,
    MIB,
    REGISTRY,
    ROUTES,
    LicenseError,
    parse_license,
)

__all__ = [
    "CLONE_ACCEPT",
    "CLONE_FORMATS",
    "CLONE_MAX_BYTES",
    "FORM_OPERATIONS",
    "Gate",
    "RIGHTS_MIN_CHARS",
    "RIGHTS_MIN_DISTINCT",
    "RIGHTS_MIN_WORDS",
    "Reference",
    "attestation_text",
    "build_payload",
    "form_choice",
    "format_price",
    "format_size",
    "formats_text",
    "inspect_reference",
    "license_options",
    "rights_problem",
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


def form_choice(
    operation: str,
    model: str | None,
    tools: Mapping[tuple[str, str], str],
    operations: Sequence[str],
) -> tuple[str | None, str | None]:
    """The (operation, model) a form opens with: as given, or refused (a ValidationError
    naming the field, the allowed values and the nearest), never another in its place.
    ``model`` None: the operation's newest model in ``tools``; no usable tool at all: (None,
    None), and the form says why."""
    if not operations:
        return None, None
    check_name(operation, "operation", operations, of="the operations the form offers")
    models = sorted(m for (o, m) in tools if o == operation)
    if model is None:
        return operation, models[-1]
    return operation, check_name(model, "model", models, of=f"the models of {operation}")


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


# The voice-clone reference: the registry's route field (its formats, its size limit).
_REFERENCE = ROUTES["voice-clones"].field("reference_file_id")
CLONE_FORMATS: Final[tuple[str, ...]] = _REFERENCE.formats
CLONE_MAX_BYTES: Final[int] = int(_REFERENCE.max_bytes or 0)
# what the upload button offers: the formats' suffixes and media types (codec.MIME's)
CLONE_ACCEPT: Final[str] = ",".join(
    [*(f".{kind}" for kind in CLONE_FORMATS), *(MIME[kind] for kind in CLONE_FORMATS)]
)
# The rights statement a person would accept as one (songlab's rule; docs/widgets.md): at
# least this many words, this many different ones, and this many characters.
RIGHTS_MIN_WORDS: Final[int] = 6
RIGHTS_MIN_DISTINCT: Final[int] = 4
RIGHTS_MIN_CHARS: Final[int] = 30
_WORD = re.compile(r"[^\W\d_]+")


def formats_text() -> str:
    """``"mp3 or m4a"``: the accepted reference formats, as every line of the panel says."""
    kinds = list(CLONE_FORMATS)
    return kinds[0] if len(kinds) == 1 else f"{', '.join(kinds[:-1])} or {kinds[-1]}"


@dataclass(frozen=True, slots=True)
class Reference:
    """A reference recording as checked: its name, the SHA-256 and size of its bytes, the
    kind its bytes are (:func:`songlab.codec.sniff`), its length once decoded (None when
    it did not decode), and ``problem``: why it cannot be used ("" when it can)."""

    filename: str
    sha256: str
    size: int
    kind: str | None
    seconds: float | None
    problem: str = ""

    @property
    def ready(self) -> bool:
        return not self.problem


def inspect_reference(filename: str, content: bytes) -> Reference:
    """Check a reference recording as the service would take it: not empty, within the
    size limit, of an accepted format by its bytes (not its name), and decoded as audio
    (a file of random bytes named ``.mp3`` is not a recording)."""
    from songlab.codec import decode, sniff

    digest = hashlib.sha256(content).hexdigest()
    size, kind = len(content), sniff(content)

    def refused(problem: str, seconds: float | None = None) -> Reference:
        return Reference(filename, digest, size, kind, seconds, problem)

    if size == 0:
        return refused("the file is empty")
    if size > CLONE_MAX_BYTES:
        return refused(f"{format_size(size)} is over the {format_size(CLONE_MAX_BYTES)} limit")
    if kind not in CLONE_FORMATS:
        what = f"a {kind} file" if kind else "not a recognised audio file"
        return refused(f"{what}: the service takes {formats_text()}")
    try:
        samples, rate = decode(content)
    except Exception:  # noqa: BLE001 - any decoder error means the same: not a usable recording
        return refused(f"it could not be decoded: not a playable {kind} recording")
    seconds = samples.shape[-1] / rate if rate else 0.0
    if seconds <= 0:
        return refused("it holds no audio (0 s once decoded)", seconds)
    return Reference(filename, digest, size, kind, seconds)


def rights_problem(text: str) -> str | None:
    """Why ``text`` is not a rights statement a person would accept, or None."""
    words = _WORD.findall(text)
    if not text.strip():
        return "required: state your rights to this voice"
    if (
        len(words) < RIGHTS_MIN_WORDS
        or len({w.casefold() for w in words}) < RIGHTS_MIN_DISTINCT
        or len(text.strip()) < RIGHTS_MIN_CHARS
    ):
        return (
            f"a statement of at least {RIGHTS_MIN_WORDS} words and {RIGHTS_MIN_CHARS} "
            "characters: who speaks in the recording, and that you hold the rights to it"
        )
    return None


def attestation_text(rights: str, sha256: str) -> str:
    """The ``rights_attestation`` sent: the statement as typed, then the recording it was
    made for, by the SHA-256 of its bytes (the spec's voice-clone body has no field for it;
    the consent record keeps the attestation, so the record names the bytes consented to)."""
    return f"{rights.strip()}\n\nReference recording SHA-256: {sha256}"


def validate_clone(
    *,
    reference: Reference | None,
    name: str = "",
    description: str = "",
    version: str = "v5",
    license: int | str | None = "royalty_free",
    rights: str = "",
    consent: bool = False,
) -> Gate:
    """Can this voice clone be requested? (the spec's voice-clone field rules, the
    reference checked as audio, the rights statement's minimum, the consent given for
    exactly this reference and statement: ``consent``)."""
    reasons: list[str] = []
    if reference is None:
        reasons.append(f"reference: upload a recording ({formats_text()})")
    elif reference.problem:
        reasons.append(f"reference: {reference.problem}")
    clone = ROUTES["voice-clones"]
    for field, value in (("name", name), ("description", description)):
        limit = int(clone.field(field).max_len or 0)
        if len(value) > limit:
            reasons.append(f"{field}: at most {limit} characters, got {len(value)}")
    versions = clone.field("version").choices
    if version not in versions:
        reasons.append(f"version: {one_of(version, versions)}")
    tier_reason = _tier_reason(license)
    if tier_reason:
        reasons.append(tier_reason)
    problem = rights_problem(rights)
    limit = int(clone.field("rights_attestation").max_len or 0)
    sent = len(attestation_text(rights, "0" * 64))
    if problem:
        reasons.append(f"rights: {problem}")
    elif sent > limit:
        reasons.append(
            f"rights: at most {limit - (sent - len(rights.strip()))} characters (the recording's "
            f"SHA-256 is added to it), got {len(rights.strip())}"
        )
    if consent is not True:
        reasons.append('consent: tick the box "I consent ..." for this recording')
    amount = None
    if version in versions and tier_reason is None:
        amount = pricing.price("vocal_clone", version, license)
    return Gate(not reasons, tuple(reasons), amount)


def license_options() -> list[tuple[str, int]]:
    """Dropdown options for the tiers: ``[("royalty_free", 1), ...]``."""
    return [(name, number) for number, name in LICENSE_NAMES.items()]
