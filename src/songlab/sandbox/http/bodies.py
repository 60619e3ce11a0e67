"""The request bodies of the vendor routes as pydantic models: one source for rules and document.

The dedicated and workflow bodies are built from the spec registry's route fields
(:func:`route_model`), the compat bodies from its compat fields (:func:`compat_model`);
each route checks its body once, with :func:`check_route` (its model plus the route's
forbidden fields) or :func:`check_compat` (MISSING_FIELD, then its model).

Each create route checks its parsed JSON body with :func:`check` before its
own rules (ownership of files, saved voices, consent records, prices), and
``openapi.py`` declares the very same models' JSON Schemas, so the document
and the validation cannot disagree: a string the server refuses when empty has
``minLength: 1`` and a ``\\S`` pattern, a file id ``format: uuid`` and its
pattern, every integer its bounds, every choice its enum. A model's failure is
422 InvalidGenerationInput whose message names the field and the rule
(``"song_file_id: should match pattern ..."``). Unknown fields are ignored, as
before (compat bodies pass them on to the payload, which checks no field again).

The models are strict (no "5" for 5, no true for 1). ``payload_json`` sent as a
raw JSON value raises :class:`errors.UnhandledPayloadError`: the spec's
documented 500, kept on purpose.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Annotated, Any, Literal, TypeAlias, TypeVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    JsonValue,
    StringConstraints,
    ValidationError,
    create_model,
    field_validator,
)

import songlab.sandbox.errors as errors
from songlab.sandbox.storage.clock import MAX_ADVANCE_SECONDS
from songlab.sandbox.tasks.faults import MAX_COUNT, MAX_LATENCY_MS, MAX_SEED
from songlab.spec import COMPAT, LIMITS, REGISTRY, ROUTES, SONG_VERSIONS, Compat, Route
from songlab.spec import Field as Rule

UUID_PATTERN = r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"
INT64 = 2**63 - 1
M = TypeVar("M", bound=BaseModel)
MAX_TOKENS = 10**9  # per admin call: an account's balance, a top-up
ID = int(LIMITS["id_chars"])


def _integral(value: object) -> object:
    """JSON has one number type: 245.0 is the integer 245 (as JSON Schema says); 245.5 is not."""
    if isinstance(value, float) and value.is_integer() and abs(value) <= INT64:
        return int(value)
    return value


Int = int  # integral floats become ints in Body._integral (constraints stay minimum/maximum)
Version = Literal[SONG_VERSIONS]  # type: ignore[valid-type]


def text(max_len: int | None = None, *, required: bool = False) -> Any:
    """A string; ``required`` ones must hold a non-space character (the server refuses blank)."""
    if required:
        return Annotated[str, StringConstraints(min_length=1, max_length=max_len, pattern=r"\S")]
    return Annotated[str, StringConstraints(max_length=max_len)]


# The bodies' strings as type aliases (what text() builds; mypy reads an alias, not a call).
_NONBLANK = r"\S"
Filled: TypeAlias = Annotated[str, StringConstraints(min_length=1, pattern=_NONBLANK)]
IdText: TypeAlias = Annotated[
    str, StringConstraints(min_length=1, max_length=ID, pattern=_NONBLANK)
]
SourceText: TypeAlias = Annotated[
    str, StringConstraints(min_length=1, max_length=4096, pattern=_NONBLANK)
]

FileId = Annotated[
    str,
    StringConstraints(pattern=UUID_PATTERN),
    Field(
        json_schema_extra={"format": "uuid"},
        description="a file id of the caller (from POST /v1/files or a task output)",
    ),
]
NativeLicense = Annotated[
    Int,
    Field(
        ge=int(LIMITS["license_min"]),
        le=int(LIMITS["license_max"]),
        description="license tier 0-5; 0 or absent = royalty-free",
    ),
]


class FileInputUrl(BaseModel):
    model_config = ConfigDict(strict=True, extra="allow", title="FileInputUrl")
    url: Filled


class FileInputInline(BaseModel):
    model_config = ConfigDict(strict=True, extra="allow", title="FileInputInline")
    base64: Filled
    filename: str | None = None


FileInput = Annotated[
    Filled | FileInputUrl | FileInputInline,
    Field(
        description='a file input: one of this sandbox\'s signed URLs, "file_id:<id>", '
        '{"url": ...} or {"base64": ..., "filename"?: ...}'
    ),
]


class Body(BaseModel):
    model_config = ConfigDict(strict=True, extra="allow")

    @field_validator("*", mode="before")
    @classmethod
    def _integral(cls, value: object) -> object:
        return _integral(value)


def payload_schema_name(operation: str) -> str:
    """The document's component schema of an operation's payload (``openapi.payload_schema``)."""
    return f"Payload_{operation}"


PAYLOAD_SCHEMAS: list[JsonValue] = [
    payload_schema_name(n) for n, op in REGISTRY.items() if not op.internal
]


class NativeCreate(Body):
    """``POST /v1/generations``."""

    tool_id: IdText = Field(description="an id from GET /v1/tools")
    license: NativeLicense | None = None
    payload_json: Filled = Field(
        description="the tool's input as a STRING of JSON text holding an object; a raw JSON "
        "object here is the spec's documented unhandled error (500)",
        json_schema_extra={
            "contentMediaType": "application/json",
            # the components holding each operation's payload fields
            "x-payload-schemas": PAYLOAD_SCHEMAS,
        },
    )

    @field_validator("payload_json", mode="before")
    @classmethod
    def _raw_object(cls, value: object) -> object:
        if isinstance(value, dict | list):
            raise errors.UnhandledPayloadError("payload_json is not a string")
        return value


class SourceUrl(Body):
    """``POST /v1/files`` as JSON: copy one of this sandbox's signed files."""

    source_url: SourceText = Field(
        description="one of this sandbox's signed file URLs (GET /v1/files/{id}/url); nothing "
        "else is fetched"
    )


# --- the /_sandbox admin bodies (their refusals use the admin shape: InvalidRequest) ---------

Tokens = Annotated[Int, Field(ge=0, le=MAX_TOKENS)]
Probability = Annotated[float, Field(ge=0.0, le=1.0)]


class AdminAccount(Body):
    """``POST /_sandbox/accounts``."""

    name: str | None = None
    balance_tokens: Tokens | None = 100_000
    extra_tokens: Tokens | None = 0


class AdminTopup(Body):
    """``POST /_sandbox/accounts/{account_id}/topup``."""

    tokens: Annotated[Int, Field(ge=1, le=MAX_TOKENS)]


class AdminFaults(Body):
    """``PUT /_sandbox/faults``: each fault a probability or a count; nothing else."""

    model_config = ConfigDict(strict=True, extra="forbid", title="Faults")
    rate_limited: Probability | None = 0.0
    dependency_unavailable: Probability | None = 0.0
    fail_tasks: Probability | None = 0.0
    drop_stream_after: Annotated[Int, Field(ge=0, le=MAX_COUNT)] | None = None
    latency_ms: Annotated[Int, Field(ge=0, le=MAX_LATENCY_MS)] | None = 0
    seed: Annotated[Int, Field(ge=-MAX_SEED, le=MAX_SEED)] | None = None


class AdminClock(Body):
    """``POST /_sandbox/clock``."""

    advance_seconds: Annotated[float, Field(ge=0.0, le=MAX_ADVANCE_SECONDS)]


class AdminToolSwitch(Body):
    """``PUT /_sandbox/tools/{tool_id}``."""

    active: bool | None = None
    priced_licenses: list[Annotated[Int, Field(ge=1, le=5)]] | None = None


def _annotation(f: Rule) -> tuple[Any, Any]:
    """A registry field as (pydantic type, default): ``...`` when required.

    A compat body's types too: a payload file input (``file``), its ``license`` (0-5 or
    a tier name), a clamped integer (any 64-bit integer: it is clamped at generation), a
    choice decided at generation (``late``: a string). Their descriptions, and those of
    strings, are the field's."""
    t: Any
    described = f.type in ("file", "string", "voice") or f.clamp or f.late
    if f.type == "file_id":
        t = Annotated[
            str,
            StringConstraints(pattern=UUID_PATTERN),
            Field(
                description="a file id of the caller (from POST /v1/files or a task output)",
                json_schema_extra={
                    "format": "uuid",
                    "x-file-kinds": list(f.formats),
                    "x-max-bytes": f.max_bytes,
                },
            ),
        ]
    elif f.type == "file":
        t = FileInput
    elif f.type == "license":  # the native integer or a tier name
        t = Annotated[NativeLicense | Literal[f.choices], Field(description=f.description or None)]
    elif f.type in ("string", "voice") or f.late:
        t = text(f.max_len, required=f.required or f.filled)
    elif f.type == "integer" and f.clamp:
        t = Annotated[Int, Field(ge=-INT64, le=INT64)]
    elif f.type == "integer":
        t = Annotated[Int, Field(ge=f.min, le=f.max, description=f.description or None)]
    elif f.type == "number":
        t = Annotated[float, Field(ge=f.min, le=f.max, description=f.description or None)]
    elif f.type == "boolean" and f.choices:
        t = Annotated[Literal[f.choices], Field(description=f.description or None)]
    elif f.type == "boolean":
        t = bool
    else:  # choice, tier
        t = Literal[f.choices]
    if described and f.description:
        return (
            (t, Field(description=f.description))
            if f.required
            else (t | None, Field(f.default, description=f.description))
        )
    if f.required:
        return t, ...
    return t | None, f.default


def route_model(r: Route) -> type[Body]:
    """The body model of a dedicated or workflow route, from the registry's route fields.

    A forbidden field is typed null (the document says so; :func:`check_route` names
    its rule)."""
    fields: dict[str, Any] = {f.name: _annotation(f) for f in r.fields}
    for name, rule in r.forbidden:
        fields[name] = (None, Field(None, description=rule))
    title = {"voice-clones": "VoiceClone", "song-translations": "SongTranslation"}.get(r.path)
    name = title or "Workflow" + "".join(w.capitalize() for w in r.path.split("-"))
    return create_model(name, __base__=Body, __doc__=f"``POST /v1/{r.path}``.", **fields)


ROUTE_MODELS: dict[str, type[Body]] = {path: route_model(r) for path, r in ROUTES.items()}
VoiceClone = ROUTE_MODELS["voice-clones"]
SongTranslation = ROUTE_MODELS["song-translations"]


def compat_model(c: Compat) -> type[Body]:
    """The body model of a compat route, from the registry's compat fields (the body's
    names, the operation's rules plus the compat body's own)."""
    fields: dict[str, Any] = {f.name: _annotation(f) for f in c.fields}
    return create_model(c.title, __base__=Body, __doc__=c.doc, **fields)


COMPAT_MODELS: dict[str, type[Body]] = {op: compat_model(c) for op, c in COMPAT.items()}
CompatSong = COMPAT_MODELS["generate_song"]
CompatSinging = COMPAT_MODELS["generate_singing"]
CompatExtendSong = COMPAT_MODELS["extend_song"]
CompatExtendMusic = COMPAT_MODELS["extend_music"]


def check_compat(c: Compat, body: Mapping[str, object]) -> dict[str, Any]:
    """A compat body checked once against the registry: its ``missing_field`` (absent or
    empty: 400 MISSING_FIELD), then its model; the fields set and its unknown ones."""
    if c.missing_field is not None and not body.get(c.missing_field):
        raise errors.MISSING_FIELD
    return check(COMPAT_MODELS[c.operation], body)


def check_route(path: str, body: Mapping[str, object]) -> dict[str, Any]:
    """A dedicated or workflow body checked once against the registry: the route's
    forbidden fields, then its model; the fields set (defaults of unset ones applied)."""
    r = ROUTES[path]
    for name, rule in r.forbidden:
        if body.get(name) is not None:
            raise errors.invalid(name, rule)
    got = check(ROUTE_MODELS[path], body)
    for f in r.fields:
        if got.get(f.name) is None and f.default is not None:
            got[f.name] = f.default
    return got


def check(
    model: type[M],
    body: Mapping[str, object],
    refuse: Callable[[str, str], errors.ApiError] = errors.invalid,
) -> dict[str, Any]:
    """``body`` checked against ``model`` and normalised (245.0 -> 245), the fields it set
    and its unknown ones; or ``refuse(field, rule)`` (by default 422 InvalidGenerationInput)
    naming the first field."""
    try:
        return model.model_validate(body).model_dump(exclude_unset=True)
    except ValidationError as exc:
        raise _refusal(exc, refuse) from None


def _refusal(
    exc: ValidationError, refuse: Callable[[str, str], errors.ApiError]
) -> errors.ApiError:
    """The first field's refusal; a union's branches are joined ("...; or ...")."""
    errs = exc.errors(include_url=False)
    top = errs[0]["loc"][0] if errs[0]["loc"] else None
    field = "body" if top is None else str(top)
    mine = [e for e in errs if (e["loc"][0] if e["loc"] else None) == top]
    if any(e["type"] == "missing" for e in mine):
        return refuse(field, "is required")
    rules = list(dict.fromkeys(e["msg"][:1].lower() + e["msg"][1:] for e in mine))
    return refuse(field, "; or ".join(rules))


def schema_of(model: type[BaseModel]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The model's JSON Schema for the document, and the component schemas it refers to."""
    schema = model.model_json_schema(ref_template="#/components/schemas/{model}")
    defs = schema.pop("$defs", {})
    return schema, defs
