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
from typing import TYPE_CHECKING, Final, TypedDict

from songlab.client._exceptions import ValidationError
from songlab.client.choices import check_keys, did_you_mean, one_of
from songlab.codec import MIME
from songlab.spec import (
    LICENSE_BY_NAME,
    LICENSE_NAMES_WITH_UNSET,
    LIMITS,
    REGISTRY,
    ROUTES,
    STUDIO_FIELDS,
    WORKFLOWS,
    Field,
    LicenseError,
    parse_license,
)

if TYPE_CHECKING:
    from songlab.client._models import UploadedFile

__all__ = ["ClampWarning", "ValidationError"]

_KEY_RE = re.compile(r"[A-Za-z0-9_.:\-]{1,200}")
# media type -> format: the codec's own names, and the other names the same formats go by
AUDIO_MIME: dict[str, str] = {
    **{mime: fmt for fmt, mime in MIME.items()},
    "audio/mp3": "mp3",
    "audio/x-m4a": "m4a",
    "audio/m4a": "m4a",
    "audio/aac": "m4a",
    "audio/x-wav": "wav",
    "audio/wave": "wav",
    "audio/x-flac": "flac",
    "audio/x-midi": "mid",
}
KnownFiles = Mapping[str, "UploadedFile"]  # file id -> what the client knows of it


class ClampWarning(UserWarning):
    """A value the service will clamp rather than reject; the message says what applies."""


def require(cond: bool, field: str, rule: str) -> None:
    if not cond:
        raise ValidationError(field, rule)


def idempotency_key(key: object) -> str:
    if not isinstance(key, str):
        raise ValidationError("idempotency_key", "must be a string")
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
    return key


def license_number(value: object, field: str = "license") -> int:
    """Native routes: 0-5 (0 = unset = royalty-free) or a tier name -> the integer sent."""
    try:
        return parse_license(value, field=field)
    except LicenseError as exc:
        raise ValidationError(exc.field, exc.rule + did_you_mean(value, LICENSE_BY_NAME)) from None


def license_name(value: object, field: str = "license") -> str:
    """Dedicated and workflow routes: a tier name (an integer 0-5 is converted)."""
    return LICENSE_NAMES_WITH_UNSET[license_number(value, field)]


def text(
    value: object,
    field: str,
    *,
    max_chars: int | None = None,
    required: bool = False,
    nonempty: bool = False,
) -> None:
    if value is None:
        require(not required, field, "required")
        return
    if not isinstance(value, str):
        raise ValidationError(field, f"must be a string, got {type(value).__name__}")
    if nonempty or required:
        require(bool(value.strip()), field, "must not be empty")
    if max_chars is not None:
        require(
            len(value) <= max_chars, field, f"at most {max_chars} characters (got {len(value)})"
        )


def integer(value: object, field: str, lo: int | None = None, hi: int | None = None) -> int:
    """``value`` as the integer the service reads (JSON has one number type: 245.0 is the
    integer 245, as the service takes it), checked against ``lo``..``hi``."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**63:
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool):
        raise ValidationError(field, f"must be an integer, got {type(value).__name__}")
    if lo is not None and hi is not None:
        require(lo <= value <= hi, field, f"must be in {lo}-{hi}, got {value}")
    elif lo is not None:
        require(value >= lo, field, f"must be >= {lo}, got {value}")
    return value


def number(value: object, field: str, lo: float, hi: float) -> None:
    if not isinstance(value, int | float) or isinstance(value, bool):
        raise ValidationError(field, f"must be a number, got {type(value).__name__}")
    require(
        math.isfinite(value) and lo <= value <= hi, field, f"must be in {lo:g}-{hi:g}, got {value}"
    )


def choice(value: object, field: str, options: tuple[str, ...]) -> None:
    require(value in options, field, one_of(value, options))


def file_input(value: object, field: str, *, required: bool = True) -> None:
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


def canonical_json(value: object, field: str = "payload") -> str:
    """``value`` as canonical JSON text: sorted keys, no spaces, UTF-8 as is, strict JSON
    (NaN, Infinity and values JSON cannot hold are refused, naming ``field``). The one
    canonical form of the client: a native payload is sent in it, a request is recorded,
    hashed and keyed by it."""
    try:
        text = json.dumps(
            value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
        )
    except (TypeError, ValueError, RecursionError) as e:
        raise ValidationError(field, f"must be JSON-serialisable ({e})") from None
    if SURROGATE.search(text):
        where, at, char = _lone_surrogate(value, field)
        raise ValidationError(
            where,
            f"must be valid Unicode text: it holds a lone surrogate U+{ord(char):04X} at "
            f"character {at} (half of a character, often an emoji cut in two)",
        )
    return text


# half of a UTF-16 pair, which no UTF-8 text can hold (escaped: the source holds no surrogate)
SURROGATE: Final = re.compile(r"[\ud800-\udfff]")


def _lone_surrogate(value: object, path: str) -> tuple[str, int, str]:
    """(field path, index, character) of the first lone surrogate in ``value``."""
    if isinstance(value, str):
        m = SURROGATE.search(value)
        if m:
            return path, m.start(), m.group()
    elif isinstance(value, Mapping):
        for k in sorted(value, key=str):
            if isinstance(k, str) and SURROGATE.search(k):
                return _lone_surrogate(k, f"{path} (a key)")
            found = _lone_surrogate(value[k], f"{path}.{k}")
            if found[0]:
                return found
    elif isinstance(value, list | tuple):
        for i, item in enumerate(value):
            found = _lone_surrogate(item, f"{path}[{i}]")
            if found[0]:
                return found
    return "", -1, ""


def payload_object(payload: object, field: str = "payload") -> Mapping[str, object]:
    """A native payload as the object it is: a mapping, or JSON text of an object (parsed
    once, strict: NaN and Infinity are not JSON)."""
    if isinstance(payload, str):
        try:
            obj = json.loads(payload, parse_constant=_no_constant)
        except (ValueError, RecursionError) as e:
            raise ValidationError(field, f"a JSON object or its text; not JSON ({e})") from None
        if not isinstance(obj, dict):
            raise ValidationError(field, "must encode a JSON object")
        return obj
    if not isinstance(payload, Mapping):
        raise ValidationError(field, f"a dict (JSON object), got {type(payload).__name__}")
    return payload


def payload_json(payload: object, field: str = "payload") -> str:
    """The ``payload_json`` text sent for ``payload``: JSON text of an object as it is
    (checked), a mapping as its canonical JSON; always a string."""
    obj = payload_object(payload, field)
    return payload if isinstance(payload, str) else canonical_json(obj, field)


def extend_at_ms(
    value: object,
    name: str = "payload.extend_at_ms",
    rule: Field = REGISTRY["extend_song"].field("extend_at_ms"),
    stacklevel: int = 4,
) -> None:
    value = integer(value, name)
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


def no_studio_fields(payload: Mapping[str, object], field: str = "payload") -> None:
    for key in payload:
        require(
            not str(key).startswith(STUDIO_FIELDS),
            f"{field}.{key}",
            "studio and visualizer_* fields belong to the studio surface; leave them unset",
        )


def agent_payload(p: Mapping[str, object]) -> None:
    no_studio_fields(p)
    known_keys("agent", p)
    check_fields(REGISTRY["agent"].fields, p)


# Payload keys every operation takes beyond its registry fields: ``seed``, which the sandbox
# reads from every task's payload (its renders are deterministic from it) while the
# registry names it for the song-like operations only.
EVERY_OPERATION_KEYS: Final[tuple[str, ...]] = ("seed",)


def known_keys(operation: str, p: Mapping[str, object]) -> None:
    """Every key of a native payload is a field of ``operation`` (or one it forbids, refused
    by its own rule before): an unknown key is refused naming the fields and the nearest,
    never sent for the service to ignore (``{"promt": ...}`` is not a prompt)."""
    op = REGISTRY[operation]
    allowed = [f.name for f in op.fields] + [name for name, _ in op.forbidden]
    allowed += [k for k in EVERY_OPERATION_KEYS if k not in allowed]
    check_keys(p, allowed, prefix="payload.", of=operation)
    if "seed" in p and all(f.name != "seed" for f in op.fields):
        integer(p["seed"], "payload.seed", 0, int(LIMITS["seed_max"]))


def field_rule(f: Field, value: object, name: str) -> None:
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


def check_fields(
    rules: tuple[Field, ...], p: Mapping[str, object], prefix: str = "payload."
) -> None:
    for f in rules:
        field_rule(f, p.get(f.name), prefix + f.name)


def _payload_rules(operation: str, p: Mapping[str, object]) -> None:
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
    known_keys(operation, p)
    check_fields(op.fields, p)
    if operation == "inpaint":
        time_range(p.get("start_ms"), p.get("end_ms"), "payload.start_ms", "payload.end_ms")


def referenced_file_id(value: object) -> str | None:
    """The file id of a ``file_id:<id>`` file input (string or ``{"url": ...}``), else None."""
    url = value.get("url") if isinstance(value, Mapping) else value
    if isinstance(url, str) and url.startswith("file_id:"):
        return url[len("file_id:") :]
    return None


def payload_for(
    operation: str | None, payload: Mapping[str, object], known_files: KnownFiles | None = None
) -> None:
    """Check a native payload against the rules of its operation (when known).

    ``known_files`` (file id -> UploadedFile) lets size and format limits be
    checked for ``file_id:<id>`` inputs of files this client uploaded.
    """
    if operation is None:
        return
    _payload_rules(operation, payload)
    op = REGISTRY.get(operation)
    for f in op.fields if op is not None and not op.internal else ():
        if f.type == "file" and f.max_bytes:
            known_file_input(payload.get(f.name), "payload." + f.name, known_files or {}, f)


class FileLimits(TypedDict):
    """A file field's limits, as :func:`check_file` takes them."""

    max_bytes: int
    formats: tuple[str, ...]
    limit_text: str
    strict: bool


def file_limits(f: Field) -> FileLimits:
    """A registry file field's limits (its own size limit, as the spec writes it, makes the
    format check strict)."""
    return {
        "max_bytes": int(f.max_bytes or 0),
        "formats": f.formats,
        "limit_text": f.size_label or f"{f.max_bytes} bytes",
        "strict": f.size_label is not None,
    }


def check_known(name: str, info: UploadedFile | None, f: Field) -> None:
    """What the client knows of a file (its size and type) against the field ``f``'s limits."""
    if info is not None:
        check_file(
            name, size=info.size_bytes, mime_type=info.mime_type, filename=None, **file_limits(f)
        )


def known_file_input(value: object, name: str, known_files: KnownFiles, f: Field) -> None:
    """A file input (``file_id:<id>``) of a file the client knows, against ``f``'s limits."""
    fid = referenced_file_id(value)
    check_known(name, known_files.get(fid) if fid else None, f)


def route_body(path: str, body: Mapping[str, object], known_files: KnownFiles) -> None:
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
    for f in r.fields:
        fid = body.get(f.name)
        if f.type == "file_id" and isinstance(fid, str):
            check_known(f.name, known_files.get(fid), f)


def time_range(start: object, end: object, start_field: str, end_field: str) -> None:
    lo = integer(start, start_field, lo=0)
    hi = integer(end, end_field, lo=0)
    require(
        hi > lo,
        end_field,
        f"must be greater than {start_field.rsplit('.', 1)[-1]} ({hi} <= {lo})",
    )


def list_limit(value: object) -> None:
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


def workflow_body(route: str, fields: Mapping[str, object], known_files: KnownFiles) -> None:
    """A workflow route's fields against the registry (``license`` aside: sent by the caller),
    and what the client knows of its files."""
    r = WORKFLOWS[route]
    required, optional = WORKFLOW_FIELDS[route]
    for name, rule in r.forbidden:
        require(name not in fields, name, rule)
    check_keys(fields, required + optional, of=f"/v1/{route}")
    for name in required:
        require(fields.get(name) is not None, name, f"required by /v1/{route}")
    for f in r.fields:
        value = fields.get(f.name)
        if value is None or f.name == "license":
            continue
        if f.type == "integer":
            integer(value, f.name, int(f.min or 0), None if f.max is None else int(f.max))
        elif f.type in ("string", "voice"):
            text(value, f.name, nonempty=f.required, max_chars=f.max_len)
        elif f.type != "file_id":
            field_rule(f, value, f.name)  # any other type the registry states, by its rule
    if route == "audio-inpainting":
        time_range(fields.get("start_ms"), fields.get("end_ms"), "start_ms", "end_ms")
    for f in r.fields:
        fid = fields.get(f.name)
        if f.type == "file_id" and isinstance(fid, str):
            check_known(f.name, known_files.get(fid), f)
