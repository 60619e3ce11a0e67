"""Payload rules of a generation (native, compat, Agent sub-tasks), from the spec registry.

One generic pass checks every field of the operation as the registry describes it
(type, range, length, choices, file kinds and size; a saved voice resolved); only
what truly differs stays code: the inpainting range inside the song, voice clones'
consent record, Agent One's studio fields and the internal tools' track inputs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import songlab.sandbox.errors as errors
from songlab.sandbox.storage.file_store import UPLOAD_MAX_BYTES
from songlab.sandbox.tasks.validation import (
    UUID_RE,
    Resolved,
    Resolver,
    boolean,
    choice,
    integer,
    number,
    string,
)
from songlab.spec import AUDIO_FORMATS, REGISTRY, STUDIO_FIELDS, Field, Operation

# a payload as the caller sent it (a decoded JSON object): checked here, never trusted
Payload = Mapping[str, object]
Validator = Callable[[Payload, Resolver, str], Resolved]


def _field(p: Payload, r: Resolver, out: Resolved, f: Field) -> None:
    """One registry field: checked (and a file input or saved voice resolved) or 422."""
    if f.type == "file":
        if p.get(f.name) is None:
            if f.required:
                raise errors.invalid(f.name, "is required (a file input)")
            return
        fid, info = r.file_input(
            f.name,
            p[f.name],
            max_bytes=int(f.max_bytes or UPLOAD_MAX_BYTES),
            formats=f.formats,
            limit_label=f.size_label,
        )
        out.inputs[f.name] = fid
        out.durations[f.name] = info.duration_s
    elif f.type == "voice":
        out.vocal_id = r.voice(f.name, p.get(f.name))
    elif f.type == "string":
        string(p, f.name, required=f.required, max_len=f.max_len)
    elif f.type == "choice" and f.late:
        string(p, f.name, required=f.required)  # another value fails during generation
    elif f.type == "choice":
        choice(p, f.name, f.choices, required=f.required)
    elif f.type == "integer" and f.clamp:
        integer(p, f.name, required=f.required)  # the range is clamped at generation time
    elif f.type == "integer":
        integer(
            p,
            f.name,
            required=f.required,
            lo=None if f.min is None else int(f.min),
            hi=None if f.max is None else int(f.max),
        )
    elif f.type == "number":
        number(p, f.name, lo=float(f.min or 0.0), hi=float(f.max or 0.0))
    elif f.type == "boolean":
        boolean(p, f.name, required=f.required)
    else:  # pragma: no cover - the registry's payloads use the types above
        raise AssertionError(f"payload field {f.name}: type {f.type}")


def check_fields(op: Operation, p: Payload, r: Resolver) -> Resolved:
    """Every field of ``op`` in the registry's order; its forbidden fields refused."""
    out = Resolved()
    for f in op.fields:
        _field(p, r, out, f)
    for name, rule in op.forbidden:
        if p.get(name) is not None:
            raise errors.invalid(name, rule)
    return out


def _generic(p: Payload, r: Resolver, operation: str) -> Resolved:
    return check_fields(REGISTRY[operation], p, r)


def _inpaint(p: Payload, r: Resolver, operation: str) -> Resolved:
    out = check_fields(REGISTRY[operation], p, r)
    # their fields were checked above: integer() gives each as an int (245.0 is 245)
    start = integer(p, "start_ms", required=True)
    end = integer(p, "end_ms", required=True)
    assert start is not None and end is not None
    check_inside(start, end, out.durations["song"])
    return out


def check_inside(start: int, end: int, duration_s: float) -> None:
    """An inpainting range (its bounds already checked): end after start, inside the song."""
    if end <= start:
        raise errors.invalid("end_ms", f"must be greater than start_ms ({start}), got {end}")
    song_ms = int(duration_s * 1000)
    if song_ms and end > song_ms:
        raise errors.invalid("end_ms", f"must be inside the song ({song_ms} ms), got {end}")


def _vocal_clone(p: Payload, r: Resolver, operation: str) -> Resolved:
    """Native vocal_clone: only with a consent_id issued by POST /v1/voice-clones."""
    consent_id = p.get("consent_id")
    if not isinstance(consent_id, str) or not UUID_RE.match(consent_id):
        raise errors.invalid(
            "consent_id", "is required: a consent id issued by POST /v1/voice-clones"
        )
    row = r.store.one(
        "SELECT account_id, reference_file_id, active FROM consents WHERE id = ?", (consent_id,)
    )
    if row is None or row[0] != r.account_id or not row[2]:
        raise errors.invalid("consent_id", "is not an active consent record of this account")
    out = Resolved()
    ref = p.get("reference_file_id", row[1])
    f = REGISTRY["vocal_clone"].field("reference_file_id")
    fid, info = r.owned_file(
        f.name, ref, max_bytes=int(f.max_bytes or 0), formats=f.formats, limit_label=f.size_label
    )
    out.inputs["reference"] = fid
    return out


def _agent(p: Payload, r: Resolver, operation: str) -> Resolved:
    for key in p:
        if key.startswith(STUDIO_FIELDS):
            raise errors.invalid(
                key, "belongs to the studio editing surface and must be left unset"
            )
    return check_fields(REGISTRY[operation], p, r)


def _internal(p: Payload, r: Resolver, operation: str) -> Resolved:
    out = Resolved()
    for name, value in p.items():
        if name in ("audio", "song", "music") or name.startswith("track"):
            fid, info = r.file_input(name, value, max_bytes=UPLOAD_MAX_BYTES, formats=AUDIO_FORMATS)
            out.inputs[name] = fid
    return out


# The operations whose payload is more than its registry fields; every other one: _generic.
SPECIAL: dict[str, Validator] = {
    "inpaint": _inpaint,
    "vocal_clone": _vocal_clone,
    "agent": _agent,
    "web_search": _internal,
    "mix": _internal,
    "translate_lyrics": _internal,
}
VALIDATORS: dict[str, Validator] = {name: SPECIAL.get(name, _generic) for name in REGISTRY}


def resolve(operation: str, payload: Payload, r: Resolver) -> Resolved:
    """A payload whose fields its body model (built from the registry) already checked, the
    compat routes': only its file inputs and saved voice resolved, in the registry's order.

    One rule is left here: a required string must not be blank to Python
    (``str.strip``). The model's ``\\S`` pattern (Unicode White_Space) lets
    U+001C-U+001F through, which Python strips; the answer ("must not be empty", after
    the price check) stays the one the payload rules always gave."""
    assert operation not in SPECIAL, operation
    out = Resolved()
    for f in REGISTRY[operation].fields:
        if f.type in ("file", "voice"):
            _field(payload, r, out, f)
        elif f.type == "string" and f.required:
            string(payload, f.name, required=True)
    out.new_files = list(r.new_files)
    return out


def validate(operation: str, payload: object, r: Resolver) -> Resolved:
    if not isinstance(payload, dict):
        raise errors.invalid("payload_json", "must encode a JSON object")
    out = VALIDATORS[operation](payload, r, operation)
    out.new_files = list(r.new_files)
    return out
