"""Client-side validation: every rule of the spec the client can check before sending.

Each check raises :class:`ValidationError` (a ``ValueError``) naming the field and
the rule, before any request is built. The one thing the service clamps rather
than rejects (``extend_at_ms``) is a :class:`ClampWarning` saying what will be
applied. The rules are derived from the spec registry (``songlab.spec``): its
limits table, each operation's payload fields and each route's body fields, the
very descriptions the sandbox validates with; only the client's own messages and
the few cross-field rules are code here.
"""

from __future__ import annotations

import json
import math
import re
import warnings
from collections.abc import Mapping
from typing import Any

from songlab.client._errors import ValidationError
from songlab.spec import (
    AGENT_TIERS,
    LICENSE_NAMES_WITH_UNSET,
    LIMITS,
    REGISTRY,
    ROUTES,
    SONG_VERSIONS,
    STUDIO_FIELDS,
    WORKFLOWS,
    Field,
    LicenseError,
    parse_license,
)

__all__ = ["ClampWarning", "ValidationError"]

_KEY_RE = re.compile(r"[A-Za-z0-9_.:\-]{1,200}")
AUDIO_MIME = {
    "audio/mpeg": "mp3",
    "audio/mp3": "mp3",
    "audio/mp4": "m4a",
    "audio/x-m4a": "m4a",
    "audio/m4a": "m4a",
    "audio/aac": "m4a",
    "audio/wav": "wav",
    "audio/x-wav": "wav",
    "audio/wave": "wav",
    "audio/flac": "flac",
    "audio/x-flac": "flac",
    "audio/ogg": "ogg",
    "audio/midi": "mid",
    "audio/x-midi": "mid",
}


class ClampWarning(UserWarning):
    """A value the service will clamp rather than reject; the message says what applies."""


def require(cond: bool, field: str, rule: str) -> None:
    if not cond:
        raise ValidationError(field, rule)


def idempotency_key(key: Any) -> str:
    require(isinstance(key, str), "idempotency_key", "must be a string")
    require(
        len(key) <= LIMITS["idempotency_key_max"],
        "idempotency_key",
        f"at most 200 characters (got {len(key)})",
    )
    require(
        bool(_KEY_RE.fullmatch(key)),
        "idempotency_key",
        "only characters A-Z a-z 0-9 _ . : - (and not empty)",
    )
    return str(key)


def license_number(value: Any, field: str = "license") -> int:
    """Native routes: 0-5 (0 = unset = royalty-free) or a tier name -> the integer sent."""
    try:
        return parse_license(value, field=field)
    except LicenseError as exc:
        raise ValidationError(exc.field, exc.rule) from None


def license_name(value: Any, field: str = "license") -> str:
    """Dedicated and workflow routes: a tier name (an integer 0-5 is converted)."""
    return LICENSE_NAMES_WITH_UNSET[license_number(value, field)]


def text(
    value: Any,
    field: str,
    *,
    max_chars: int | None = None,
    required: bool = False,
    nonempty: bool = False,
) -> None:
    if value is None:
        require(not required, field, "required")
        return
    require(isinstance(value, str), field, f"must be a string, got {type(value).__name__}")
    if nonempty or required:
        require(bool(value.strip()), field, "must not be empty")
    if max_chars is not None:
        require(
            len(value) <= max_chars, field, f"at most {max_chars} characters (got {len(value)})"
        )


def integer(value: Any, field: str, lo: int | None = None, hi: int | None = None) -> None:
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**63:
        value = int(value)  # JSON has one number type: 245.0 is the integer 245 (as the service)
    require(
        isinstance(value, int) and not isinstance(value, bool),
        field,
        f"must be an integer, got {type(value).__name__}",
    )
    if lo is not None and hi is not None:
        require(lo <= value <= hi, field, f"must be in {lo}-{hi}, got {value}")
    elif lo is not None:
        require(value >= lo, field, f"must be >= {lo}, got {value}")


def number(value: Any, field: str, lo: float, hi: float) -> None:
    require(
        isinstance(value, int | float) and not isinstance(value, bool),
        field,
        f"must be a number, got {type(value).__name__}",
    )
    require(
        math.isfinite(value) and lo <= value <= hi, field, f"must be in {lo:g}-{hi:g}, got {value}"
    )


def choice(value: Any, field: str, options: tuple[str, ...]) -> None:
    require(value in options, field, f"one of {', '.join(options)}, got {value!r}")


def file_input(value: Any, field: str, *, required: bool = True) -> None:
    """A file input: ``{"url": ...}``, a bare URL string, or ``{"base64": ...}``."""
    if value is None:
        require(not required, field, "required (a {'url': ...} object, a URL string or base64)")
        return
    if isinstance(value, str):
        require(bool(value), field, "must not be empty")
        return
    require(
        isinstance(value, Mapping) and ("url" in value or "base64" in value),
        field,
        "a {'url': ...} object, a URL string or {'base64': ...}",
    )


def check_file(
    field: str,
    *,
    size: int | None,
    mime_type: str | None,
    filename: str | None,
    max_bytes: int,
    limit_text: str,
    formats: tuple[str, ...] | None = None,
    strict: bool = True,
) -> None:
    """Size and (optionally) format of a file the client knows about.

    ``strict``: a type the client cannot name is refused too (else only a known wrong kind)."""
    if size is not None:
        require(size <= max_bytes, field, f"at most {limit_text} ({max_bytes} bytes), got {size}")
    if formats:
        fmt = AUDIO_MIME.get((mime_type or "").split(";")[0].strip().lower())
        if fmt is None and filename and "." in filename:
            fmt = filename.rsplit(".", 1)[1].lower()
        if fmt is not None or (mime_type and strict):
            require(
                fmt in formats,
                field,
                f"must be {' or '.join(formats)}, got {mime_type or filename}",
            )


def _no_constant(name: str) -> None:
    raise ValueError(f"{name} is not JSON")


def payload_json(payload: Any, field: str = "payload") -> str:
    """The payload as JSON text: ``payload_json`` is always sent as a string.

    Strict JSON only: NaN and Infinity (which Python's json would write) are refused.
    """
    if isinstance(payload, str):
        try:
            obj = json.loads(payload, parse_constant=_no_constant)
        except (ValueError, RecursionError) as e:
            raise ValidationError(field, f"a JSON object or its text; not JSON ({e})") from None
        require(isinstance(obj, dict), field, "must encode a JSON object")
        return payload
    require(
        isinstance(payload, Mapping), field, f"a dict (JSON object), got {type(payload).__name__}"
    )
    try:
        return json.dumps(dict(payload), separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError, RecursionError) as e:
        raise ValidationError(field, f"must be JSON-serialisable ({e})") from None


def extend_at_ms(
    value: Any,
    name: str = "payload.extend_at_ms",
    rule: Field = REGISTRY["extend_song"].field("extend_at_ms"),
    stacklevel: int = 4,
) -> None:
    integer(value, name)
    lo, hi = int(rule.min or 0), int(rule.max or 0)
    if value == 0 or lo <= value <= hi:
        return
    applied = lo if value < lo else hi
    warnings.warn(
        ClampWarning(
            f"{name}={value} is outside 0 or {lo}-{hi}; "
            f"the service clamps it and will apply {applied}"
        ),
        stacklevel=stacklevel,
    )


def no_studio_fields(payload: Mapping[str, Any], field: str = "payload") -> None:
    for key in payload:
        require(
            not str(key).startswith(STUDIO_FIELDS),
            f"{field}.{key}",
            "studio and visualizer_* fields belong to the studio surface; leave them unset",
        )


def agent_payload(p: Mapping[str, Any]) -> None:
    check_fields(REGISTRY["agent"].fields, p)
    no_studio_fields(p)


def field_rule(f: Field, value: Any, name: str) -> None:
    """One registry field's rules, in the client's words (``name`` as reported)."""
    if value is None:
        if f.type == "file":
            file_input(value, name, required=f.required)
        else:
            require(not f.required, name, "required")
        return
    if f.type in ("string", "voice"):
        text(value, name, max_chars=f.max_len, required=f.required)
    elif f.type == "integer" and f.clamp:
        extend_at_ms(value, name, f, stacklevel=6)  # the caller of payload_for's caller
    elif f.type == "integer":
        integer(
            value,
            name,
            None if f.min is None else int(f.min),
            None if f.max is None else int(f.max),
        )
    elif f.type == "number":
        number(value, name, float(f.min or 0.0), float(f.max or math.inf))
    elif f.type == "boolean":
        require(isinstance(value, bool), name, "must be a boolean")
    elif f.type in ("choice", "tier"):
        choice(value, name, f.choices)  # a late choice too: refused before it can fail
    elif f.type == "file":
        file_input(value, name, required=f.required)


def check_fields(rules: tuple[Field, ...], p: Mapping[str, Any], prefix: str = "payload.") -> None:
    for f in rules:
        field_rule(f, p.get(f.name), prefix + f.name)


def _payload_rules(operation: str, p: Mapping[str, Any]) -> None:
    if operation == "vocal_clone":
        raise ValidationError(
            "tool_id",
            "voice clones are created with client.voice_clones.create "
            "(POST /v1/voice-clones), which records consent first",
        )
    op = REGISTRY.get(operation)
    if op is None or op.internal:
        return
    if operation == "agent":
        agent_payload(p)
        return
    for name, rule in op.forbidden:
        require(
            p.get(name) is None, "payload." + name, rule
        )  # null is absent, as the service reads it
    check_fields(op.fields, p)
    if operation == "generate_song":
        require(
            "melody_url" not in p or "vocal_id" not in p,
            "payload.vocal_id",
            "a saved voice does not work with melody_url",
        )
    if operation == "inpaint":
        time_range(p.get("start_ms"), p.get("end_ms"), "payload.start_ms", "payload.end_ms")


# Native file fields with a size/format limit of their own (the registry's size_label):
# operation -> (field, bytes, text, formats).
FILE_LIMITS: dict[str, tuple[str, int, str, tuple[str, ...]]] = {
    op.name: (f.name, int(f.max_bytes or 0), f.size_label, f.formats)
    for op in REGISTRY.values()
    for f in op.fields
    if f.type == "file" and f.size_label is not None
}


def referenced_file_id(value: Any) -> str | None:
    """The file id of a ``file_id:<id>`` file input (string or ``{"url": ...}``), else None."""
    url = value.get("url") if isinstance(value, Mapping) else value
    if isinstance(url, str) and url.startswith("file_id:"):
        return url[len("file_id:") :]
    return None


def payload_for(
    operation: str | None, payload: Any, known_files: Mapping[str, Any] | None = None
) -> None:
    """Check a native payload against the rules of its operation (when known).

    ``known_files`` (file id -> UploadedFile) lets size and format limits be
    checked for ``file_id:<id>`` inputs of files this client uploaded.
    """
    if operation is None or not isinstance(payload, Mapping):
        return
    _payload_rules(operation, payload)
    op = REGISTRY.get(operation)
    for f in op.fields if op is not None and not op.internal else ():
        if f.type == "file" and f.max_bytes:
            known_file_input(
                payload.get(f.name), "payload." + f.name, known_files or {}, **file_limits(f)
            )


def file_limits(f: Field) -> dict[str, Any]:
    """A registry file field's limits as ``check_file`` takes them (its own size limit, as the
    spec writes it, makes the format check strict)."""
    return {
        "max_bytes": int(f.max_bytes or 0),
        "formats": f.formats,
        "limit_text": f.size_label or f"{f.max_bytes} bytes",
        "strict": f.size_label is not None,
    }


def known_file_input(
    value: Any,
    field: str,
    known_files: Mapping[str, Any],
    *,
    max_bytes: int,
    limit_text: str,
    formats: tuple[str, ...],
    strict: bool = True,
) -> None:
    fid = referenced_file_id(value)
    info = known_files.get(fid) if fid else None
    if info is not None:
        check_file(
            field,
            size=info.size_bytes,
            mime_type=info.mime_type,
            filename=None,
            max_bytes=max_bytes,
            limit_text=limit_text,
            formats=formats,
            strict=strict,
        )


def route_body(
    path: str, body: Mapping[str, Any], known_files: Mapping[str, Any] | None = None
) -> None:
    """A dedicated route's body (voice clones, song translations) against the registry:
    its fields' rules, then what the client knows of its files (size, kind)."""
    r = ROUTES[path]
    for f in r.fields:
        value = body.get(f.name)
        if f.type in ("file_id", "tier") or (value is None and not f.required):
            continue
        if f.type == "boolean" and f.choices:
            require(value in f.choices, f.name, f"must be {f.choices[0]}")
        else:
            field_rule(f, value, f.name)
    known_files = known_files or {}
    for f in r.fields:
        if f.type == "file_id" and isinstance(body.get(f.name), str):
            info = known_files.get(body[f.name])
            if info is not None:
                check_file(
                    f.name,
                    size=info.size_bytes,
                    mime_type=info.mime_type,
                    filename=None,
                    **file_limits(f),
                )


def time_range(start: Any, end: Any, start_field: str, end_field: str) -> None:
    integer(start, start_field, lo=0)
    integer(end, end_field, lo=0)
    require(
        end > start,
        end_field,
        f"must be greater than {start_field.rsplit('.', 1)[-1]} ({end} <= {start})",
    )


def version(value: Any, field: str = "version") -> None:
    choice(value, field, SONG_VERSIONS)


def tier(value: Any) -> None:
    choice(value, "tier", AGENT_TIERS)


def list_limit(value: Any) -> None:
    integer(value, "limit", int(LIMITS["list_limit_min"]), int(LIMITS["list_limit_max"]))


# Workflow routes: (required fields, optional fields) of the registry's route bodies
# (``license`` aside: the workflow methods send it).
WORKFLOW_FIELDS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    path: (
        tuple(f.name for f in r.fields if f.required and f.name != "license"),
        tuple(f.name for f in r.fields if not f.required and f.name != "license"),
    )
    for path, r in WORKFLOWS.items()
}


def workflow_body(
    route: str, fields: Mapping[str, Any], known_files: Mapping[str, Any] | None = None
) -> None:
    """A workflow route's fields against the registry (``license`` aside: sent by the caller),
    and what the client knows of its files."""
    r = WORKFLOWS[route]
    required, optional = WORKFLOW_FIELDS[route]
    for name, rule in r.forbidden:
        require(name not in fields, name, rule)
    for name in fields:
        require(
            name in required or name in optional,
            name,
            f"not a field of /v1/{route} (fields: {', '.join(required + optional)})",
        )
    for name in required:
        require(fields.get(name) is not None, name, f"required by /v1/{route}")
    for f in r.fields:
        value = fields.get(f.name)
        if value is None or f.name == "license":
            continue
        if f.type == "integer":
            integer(value, f.name, int(f.min or 0), None if f.max is None else int(f.max))
        else:
            text(value, f.name, nonempty=f.required, max_chars=f.max_len)
    if route == "audio-inpainting":
        time_range(fields.get("start_ms"), fields.get("end_ms"), "start_ms", "end_ms")
    for f in r.fields:
        fid = fields.get(f.name)
        info = (
            (known_files or {}).get(fid) if f.type == "file_id" and isinstance(fid, str) else None
        )
        if info is not None:
            check_file(
                f.name,
                size=info.size_bytes,
                mime_type=info.mime_type,
                filename=None,
                **file_limits(f),
            )
