"""The sandbox's OpenAPI document, made complete: bodies, parameters, security, responses.

Routes read their bodies themselves (so that bad input gets the spec's exact
error bodies, after auth, faults and the idempotency look-up) and check them
with the pydantic models of ``bodies.py``; this module declares those same
models' schemas as the request bodies, so the document and the validation are
one thing. It is the one table that declares, per operation, what the handlers
really accept and answer: the bodies, the multipart upload, the query and
header parameters, the security scheme (bearer key; the admin header for
``/_sandbox``) and the documented answers, typed, with the spec's error bodies.
:func:`install` merges it into ``app.openapi()``; a route missing from the
table fails the document (and a test) instead of being served undeclared.
Field rules come from ``spec``, ``pricing`` and the route modules' own tables.
No example holds a key or token.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

from songlab.sandbox.errors import INTERNAL_CODE, METHOD_NOT_ALLOWED_CODE
from songlab.sandbox.http import bodies
from songlab.sandbox.http.routes.dedicated import WORKFLOW_MODELS
from songlab.sandbox.http.routes.native import EVENT_PAGE, MAX_SEQ
from songlab.sandbox.storage.file_store import UPLOAD_MAX_BYTES
from songlab.sandbox.tasks.events import REPLAYED
from songlab.sandbox.tasks.faults import MAX_COUNT, MAX_LATENCY_MS, MAX_SEED
from songlab.sandbox.tasks.rows import CURSOR_PATTERN
from songlab.spec import (
    COMPAT_ROUTES,
    IDEMPOTENCY_KEY_PATTERN,
    LIMITS,
    OTHER_ERRORS,
    PIPELINE_ERRORS,
    REGISTRY,
    STUDIO_FIELDS,
    WORKFLOWS,
    ErrorCode,
    Field,
    Operation,
    Status,
)

Schema = dict[str, Any]
STRING: Schema = {"type": "string"}
INTEGER: Schema = {"type": "integer"}
NUMBER: Schema = {"type": "number"}
BOOLEAN: Schema = {"type": "boolean"}
NULL_S: Schema = {"type": ["string", "null"]}
ADMIN_TAG = "sandbox-admin"


def ref(name: str) -> Schema:
    return {"$ref": f"#/components/schemas/{name}"}


def object_schema(props: dict[str, Schema], *required: str, extra: bool = True) -> Schema:
    out: Schema = {"type": "object", "properties": props}
    if required:
        out["required"] = list(required)
    if not extra:
        out["additionalProperties"] = False
    return out


def string_schema(max_len: int | None = None, **more: Any) -> Schema:
    return {"type": "string", **({"maxLength": max_len} if max_len else {}), **more}


LIMIT_MAX, LIMIT_DEFAULT = int(LIMITS["list_limit_max"]), int(LIMITS["list_limit_default"])

SCHEMAS: dict[str, Schema] = {
    "PipelineError": object_schema(
        {
            "error": {"type": "string", "enum": [c.value for c in PIPELINE_ERRORS]},
            "message": STRING,
            "retryable": BOOLEAN,
        },
        "error",
        "message",
        "retryable",
    ),
    "Error": object_schema(
        {
            "error": {
                "type": "string",
                "enum": [c.value for c in OTHER_ERRORS] + [METHOD_NOT_ALLOWED_CODE],
            }
        },
        "error",
    ),
    "InternalError": object_schema(
        {"error": {"type": "string", "const": INTERNAL_CODE}, "message": STRING}, "error", "message"
    ),
    "Asset": object_schema(
        {
            "file_id": string_schema(
                description="durable file id: GET /v1/files/{file_id}/url for a link", format="uuid"
            ),
            "blob_hash": string_schema(
                description="SHA-256 of the file's bytes (hex)", pattern="^[0-9a-f]{64}$"
            ),
            "url": string_schema(
                description="private storage locator: answers 404 ResourceNotFound (XML); "
                "never use it"
            ),
            "name": string_schema(description="what the file is: mix, vocals, drums, ..."),
            "mime_type": STRING,
            "duration_s": {"type": "number", "minimum": 0},
        },
        "file_id",
        "blob_hash",
        "url",
    ),
    "Event": object_schema(
        {
            "seq": {"type": "integer", "minimum": 1, "maximum": MAX_SEQ},
            "kind": {"type": "string", "enum": [*REPLAYED, "timeout", "error"]},
            "task_id": STRING,
            "status": {"type": "string", "enum": [st.value for st in Status]},
            "progress": {"type": "number", "minimum": 0, "maximum": 1},
            "step": string_schema(
                description="song translation: transcribe ... render; Agent One: the "
                "operation called (or plan)"
            ),
            "phase": {"type": "string", "enum": ["started", "finished"]},
            "index": {"type": "integer", "minimum": 0},
            "message": STRING,
            "url": STRING,
            "cursor": {
                "type": "integer",
                "minimum": 0,
                "maximum": MAX_SEQ,
                "description": "timeout and error: resume with after=cursor",
            },
        },
        "seq",
        "kind",
        "task_id",
    ),
    "EventPage": object_schema(
        {
            "data": {"type": "array", "items": ref("Event"), "maxItems": EVENT_PAGE},
            "next_after": {"type": "integer", "minimum": 0, "maximum": MAX_SEQ},
            "done": {"type": "boolean", "description": "the task finished and nothing follows"},
        },
        "data",
        "next_after",
        "done",
    ),
    "AdminError": object_schema(
        {
            "error": string_schema(description="UNAUTHENTICATED, NOT_FOUND or InvalidRequest"),
            "message": STRING,
        },
        "error",
        "message",
    ),
    "TaskCreated": object_schema(
        {
            "task_id": STRING,
            "status": {"type": "string", "const": Status.QUEUED.value},
            "consent_id": string_schema(description="voice clones only"),
        },
        "task_id",
        "status",
    ),
    "Task": object_schema(
        {
            "task_id": STRING,
            "tool_id": NULL_S,
            "model": STRING,
            "operation": STRING,
            "license": INTEGER,
            "status": {"type": "string", "enum": [st.value for st in Status]},
            "created_at": STRING,
            "updated_at": STRING,
            "cost_usd": {
                "type": ["string", "null"],
                "pattern": r"^[0-9]+\.[0-9]{8}$",
                "description": "decimal USD with 8 decimals: null while queued or "
                'processing, the charge once completed, "0.00000000" '
                "once failed (the reservation was released)",
            },
            "parent_task_id": STRING,
            "progress": {"type": "number", "minimum": 0, "maximum": 1},
            "failure": object_schema({"error": STRING, "message": STRING}, "error"),
            "output": object_schema(
                {
                    "text": STRING,
                    "metadata_json": string_schema(contentMediaType="application/json"),
                    "assets": {"type": "array", "items": ref("Asset")},
                }
            ),
        },
        "task_id",
        "tool_id",
        "model",
        "operation",
        "license",
        "status",
        "created_at",
        "updated_at",
        "cost_usd",
        "output",
    ),
    "TaskList": object_schema(
        {"data": {"type": "array", "items": ref("Task")}, "next_cursor": NULL_S},
        "data",
        "next_cursor",
    ),
    "Balance": object_schema(
        {
            "total_effective": INTEGER,
            "base_effective": INTEGER,
            "extra_tokens": INTEGER,
            "base_expires_at": STRING,
        },
        "total_effective",
        "base_effective",
        "extra_tokens",
        "base_expires_at",
    ),
    "ToolList": object_schema(
        {
            "data": {
                "type": "array",
                "items": object_schema(
                    {"id": STRING, "model": STRING, "operation": STRING, "name": STRING},
                    "id",
                    "model",
                    "operation",
                    "name",
                ),
            }
        },
        "data",
    ),
    "StoredFile": object_schema(
        {"file_id": STRING, "mime_type": STRING, "size_bytes": INTEGER, "sha256": STRING},
        "file_id",
        "mime_type",
        "size_bytes",
        "sha256",
    ),
    "FileLink": object_schema(
        {"file_id": STRING, "url": STRING, "mime_type": STRING, "expires_at": STRING},
        "file_id",
        "url",
        "mime_type",
        "expires_at",
    ),
    "FileDownload": object_schema(
        {"file_id": STRING, "url": STRING, "expires_at": STRING}, "file_id", "url", "expires_at"
    ),
    "AccountCreated": object_schema(
        {"account_id": STRING, "api_key": STRING}, "account_id", "api_key"
    ),
    "ApiKey": object_schema({"api_key": STRING}, "api_key"),
    "Ledger": object_schema(
        {
            "entries": {
                "type": "array",
                "items": object_schema(
                    {
                        "task_id": STRING,
                        "parent_task_id": NULL_S,
                        "tool_id": NULL_S,
                        "operation": STRING,
                        "model": STRING,
                        "license": INTEGER,
                        "kind": STRING,
                        "amount_usd": STRING,
                        "created_at": STRING,
                    }
                ),
            }
        },
        "entries",
    ),
    "Faults": object_schema(
        {
            "rate_limited": {"type": "number", "minimum": 0, "maximum": 1},
            "dependency_unavailable": {"type": "number", "minimum": 0, "maximum": 1},
            "fail_tasks": {"type": "number", "minimum": 0, "maximum": 1},
            "drop_stream_after": {"type": ["integer", "null"], "minimum": 0, "maximum": MAX_COUNT},
            "latency_ms": {"type": ["integer", "null"], "minimum": 0, "maximum": MAX_LATENCY_MS},
            "seed": {"type": ["integer", "null"], "minimum": -MAX_SEED, "maximum": MAX_SEED},
        },
        extra=False,
    ),
    "Clock": object_schema({"now": STRING}, "now"),
    "ToolState": object_schema(
        {
            "id": STRING,
            "model": STRING,
            "operation": STRING,
            "name": STRING,
            "active": BOOLEAN,
            "priced_licenses": {"type": "array", "items": INTEGER},
        },
        "id",
        "active",
        "priced_licenses",
    ),
}
SECURITY_SCHEMES: dict[str, Schema] = {
    "ApiKey": {
        "type": "http",
        "scheme": "bearer",
        "description": "the account's API key: Authorization: Bearer <key>",
    },
    "SandboxAdmin": {
        "type": "apiKey",
        "in": "header",
        "name": "X-Sandbox-Admin-Token",
        "description": "the sandbox's admin token (--admin-token)",
    },
}

# --- responses -------------------------------------------------------------------------


def _json(schema: Schema, description: str) -> Schema:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _status(code: ErrorCode) -> int:
    return PIPELINE_ERRORS[code][0] if code in PIPELINE_ERRORS else OTHER_ERRORS[code]


def errors_of(*codes: ErrorCode) -> dict[str, Schema]:
    """One response per status: the spec's error bodies (pipeline or other) with their codes."""
    by_status: dict[int, list[ErrorCode]] = {}
    for c in codes:
        by_status.setdefault(_status(c), []).append(c)
    out = {}
    for status, cs in sorted(by_status.items()):
        kinds = [ref("PipelineError") if c in PIPELINE_ERRORS else ref("Error") for c in cs]
        unique = [k for i, k in enumerate(kinds) if k not in kinds[:i]]
        schema = unique[0] if len(unique) == 1 else {"anyOf": unique}
        out[str(status)] = _json(schema, " or ".join(c.value for c in cs))
    return out


AUTH = (ErrorCode.UNAUTHENTICATED, ErrorCode.INVALID_API_KEY)
CREATE_ERRORS = (
    *AUTH,
    ErrorCode.UNKNOWN_TOOL,
    ErrorCode.INSUFFICIENT_FUNDS,
    ErrorCode.TOOL_NOT_PRICED,
    ErrorCode.INVALID_GENERATION_INPUT,
    ErrorCode.RATE_LIMITED,
    ErrorCode.DEPENDENCY_UNAVAILABLE,
)
CREATED = {"201": _json(ref("TaskCreated"), "the task, queued")}
RAW_PAYLOAD_500 = {
    "500": {
        "description": "payload_json sent as a raw JSON value instead of a string: the spec's "
        "documented unhandled error, answered whole as JSON",
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/InternalError"}}},
    }
}

# --- parameters ------------------------------------------------------------------------

IDEMPOTENCY = {
    "name": "Idempotency-Key",
    "in": "header",
    "required": False,
    "schema": {"type": "string"},
    "description": "same key (per account) -> same task, billed once. A key is at "
    f"most {int(LIMITS['idempotency_key_max'])} characters of "
    f"{IDEMPOTENCY_KEY_PATTERN}; any other value is accepted and means "
    "no dedup (the spec: a malformed key is not an error)",
}
LIST_QUERY = [
    {
        "name": "limit",
        "in": "query",
        "required": False,
        "schema": {
            "type": "integer",
            "minimum": int(LIMITS["list_limit_min"]),
            "maximum": LIMIT_MAX,
            "default": LIMIT_DEFAULT,
        },
    },
    {
        "name": "cursor",
        "in": "query",
        "required": False,
        "schema": string_schema(
            pattern=CURSOR_PATTERN, description="next_cursor of the previous page"
        ),
    },
]
AFTER = {
    "name": "after",
    "in": "query",
    "required": False,
    "schema": {"type": "integer", "minimum": 0, "maximum": MAX_SEQ, "default": 0},
    "description": "replay the events after this seq",
}

# --- request bodies --------------------------------------------------------------------

MODEL_DEFS: dict[str, Schema] = {}  # component schemas the body models refer to


def model_body(model: type) -> Schema:
    """The JSON Schema of a ``bodies`` model (its nested models go to components)."""
    schema, defs = bodies.schema_of(model)
    MODEL_DEFS.update(defs)
    return schema


NATIVE_BODY = model_body(bodies.NativeCreate)
COMPAT_BODIES = {op: model_body(model) for op, model in bodies.COMPAT_MODELS.items()}
VOICE_CLONE = model_body(bodies.VoiceClone)
TRANSLATION = model_body(bodies.SongTranslation)
# One content type: generators mishandle a required body with two (openapi-python-client
# emits an unimported ``Unset``). The JSON form ``{"source_url"}`` of the spec is still
# accepted; the operation's description says so.
UPLOAD = {
    "required": True,
    "content": {
        "multipart/form-data": {
            "schema": object_schema(
                {
                    "file": {
                        "type": "string",
                        "format": "binary",
                        "x-max-bytes": UPLOAD_MAX_BYTES,
                        "description": f"the audio or MIDI file, at most {UPLOAD_MAX_BYTES} bytes",
                    }
                },
                "file",
            )
        },
    },
}
UPLOAD_NOTE = (
    "Upload a file as multipart/form-data (part `file`). The spec's other form, a "
    'JSON body `{"source_url": <one of this sandbox\'s signed URLs>}`, is accepted '
    "too and copies that file (nothing else is fetched); it is left out of this "
    "document so that generated clients get one request body."
)


def field_schema(f: Field) -> Schema:
    """The JSON Schema of one registry field of a payload (what the sandbox checks)."""
    out: Schema
    if f.type == "string":
        out = string_schema(f.max_len, **({"minLength": 1, "pattern": r"\S"} if f.required else {}))
    elif f.type == "voice":
        out = string_schema(f.max_len, description="a vocal_id: a saved voice of the caller")
    elif f.type in ("integer", "number"):
        out = {"type": f.type}
        bounds = {"minimum": f.min, "maximum": f.max}
        if f.clamp:
            out["x-clamped-to"] = {k: v for k, v in bounds.items() if v is not None}
        else:
            out.update({k: v for k, v in bounds.items() if v is not None})
    elif f.type == "boolean":
        out = dict(BOOLEAN)
    elif f.type in ("choice", "tier"):
        out = {"type": "string", "enum": list(f.choices)}
    elif f.type == "file_id":
        out = string_schema(format="uuid", description="a file id of the caller")
    else:  # file
        out = {
            "anyOf": [string_schema(), ref("FileInputUrl"), ref("FileInputInline")],
            "description": "a file input: one of this sandbox's signed URLs, "
            '"file_id:<id>", {"url": ...} or {"base64": ...}',
        }
    if f.type in ("file", "file_id"):
        out["x-file-kinds"] = list(f.formats)
        if f.max_bytes:
            out["x-max-bytes"] = f.max_bytes
    if f.default is not None:
        out["default"] = f.default
    if f.description:
        out["description"] = f.description + (
            " (another value fails during generation)" if f.late else ""
        )
    return out


def payload_schema(op: Operation) -> Schema:
    """An operation's ``payload_json`` object, from the registry's payload fields."""
    props = {f.name: field_schema(f) for f in op.fields}
    for name, rule in op.forbidden:
        props[name] = {"not": {}, "description": rule}
    out = object_schema(props, *(f.name for f in op.fields if f.required))
    if op.name == "agent":
        out["patternProperties"] = {f"^{p}": {"not": {}} for p in STUDIO_FIELDS}
    return out


PAYLOADS: dict[str, Schema] = {
    bodies.payload_schema_name(name): payload_schema(op)
    for name, op in REGISTRY.items()
    if not op.internal
}
assert set(PAYLOADS) == set(bodies.PAYLOAD_SCHEMAS)  # NativeCreate's payload_json refers to them


def workflow_body(route: str) -> Schema:
    """The workflow route's body model (from design.md's workflow table)."""
    return model_body(WORKFLOW_MODELS[route])


def _body(schema: Schema, required: bool = True) -> Schema:
    return {"required": required, "content": {"application/json": {"schema": schema}}}


# --- the table -------------------------------------------------------------------------


def _vendor(
    ok: dict[str, Schema],
    *codes: ErrorCode,
    body: Schema | None = None,
    params: list[Schema] | None = None,
    tag: str = "vendor",
) -> Schema:
    out: Schema = {
        "tags": [tag],
        "security": [{"ApiKey": []}],
        "parameters": params or [],
        "responses": {**ok, **errors_of(*codes)},
    }
    if body is not None:
        out["requestBody"] = body
    return out


def _create(body: Schema, *extra: ErrorCode, tag: str) -> Schema:
    return _vendor(CREATED, *CREATE_ERRORS, *extra, body=_body(body), params=[IDEMPOTENCY], tag=tag)


def _admin(
    ok: dict[str, Schema],
    body: Schema | None = None,
    *,
    body_required: bool = True,
    found: bool = False,
) -> Schema:
    responses = {
        **ok,
        "401": _json(ref("AdminError"), "UNAUTHENTICATED: admin token missing or wrong"),
    }
    if found:
        responses["404"] = _json(ref("AdminError"), "NOT_FOUND: no such account, key or tool")
    if body is not None:
        responses["422"] = _json(ref("AdminError"), "InvalidRequest naming the field")
    out: Schema = {
        "tags": [ADMIN_TAG],
        "security": [{"SandboxAdmin": []}],
        "parameters": [],
        "responses": responses,
    }
    if body is not None:
        out["requestBody"] = _body(body, body_required)
    return out


def _ok(name: str, description: str = "OK", status: int = 200) -> dict[str, Schema]:
    return {str(status): _json(ref(name), description)}


NO_CONTENT = {"204": {"description": "done"}}
SSE_EVENT = object_schema(
    {
        "id": string_schema(pattern="^[0-9]+$", description="the event's seq"),
        "event": {"type": "string", "enum": [*REPLAYED, "timeout", "error"]},
        "data": string_schema(contentMediaType="application/json", contentSchema=ref("Event")),
    },
    "id",
    "event",
    "data",
)
STREAM_OK = {
    "200": {
        "description": "server-sent events, one Event per frame (id / event / "
        "data: the Event as JSON). A client that cannot read a "
        "stream polls GET /v1/generations/{task_id}/events instead",
        "content": {"text/event-stream": {"schema": SSE_EVENT}},
    }
}


def _vendor_table() -> dict[tuple[str, str], Schema]:
    """The native, file, account and dedicated routes of the vendor API, and /health."""
    return {
        ("get", "/health"): {
            "tags": ["sandbox"],
            "security": [],
            "parameters": [],
            "responses": {"200": _json(object_schema({"status": STRING}, "status"), "up")},
        },
        ("get", "/v1/account/balance"): _vendor(_ok("Balance"), *AUTH),
        ("get", "/v1/tools"): _vendor(_ok("ToolList"), *AUTH),
        ("post", "/v1/generations"): _vendor(
            {**CREATED, **RAW_PAYLOAD_500},
            *CREATE_ERRORS,
            body=_body(NATIVE_BODY),
            params=[IDEMPOTENCY],
            tag="native",
        ),
        ("get", "/v1/generations"): _vendor(
            _ok("TaskList"),
            *AUTH,
            ErrorCode.INVALID_GENERATION_INPUT,
            params=LIST_QUERY,
            tag="native",
        ),
        ("get", "/v1/generations/{task_id}"): _vendor(
            _ok("Task"), *AUTH, ErrorCode.FORBIDDEN, ErrorCode.NOT_FOUND, tag="native"
        ),
        ("get", "/v1/generations/{task_id}/stream"): _vendor(
            STREAM_OK,
            *AUTH,
            ErrorCode.FORBIDDEN,
            ErrorCode.NOT_FOUND,
            ErrorCode.INVALID_GENERATION_INPUT,
            params=[AFTER],
            tag="native",
        ),
        ("get", "/v1/generations/{task_id}/events"): _vendor(
            _ok("EventPage", "the stored events after `after`, at once"),
            *AUTH,
            ErrorCode.FORBIDDEN,
            ErrorCode.NOT_FOUND,
            ErrorCode.INVALID_GENERATION_INPUT,
            params=[AFTER],
            tag="native",
        ),
        ("post", "/v1/files"): _vendor(
            _ok("StoredFile", "stored", 201),
            *AUTH,
            ErrorCode.INVALID_GENERATION_INPUT,
            body=UPLOAD,
            tag="files",
        )
        | {"description": UPLOAD_NOTE},
        ("get", "/v1/files/{file_id}/url"): _vendor(
            _ok("FileLink"), *AUTH, ErrorCode.RESOURCE_NOT_FOUND, tag="files"
        ),
        ("get", "/v1/files/{file_id}/download"): _vendor(
            _ok("FileDownload"), *AUTH, ErrorCode.RESOURCE_NOT_FOUND, tag="files"
        ),
        ("post", "/v1/voice-clones"): _create(VOICE_CLONE, tag="dedicated"),
        ("post", "/v1/song-translations"): _create(TRANSLATION, tag="dedicated"),
    }


def _created_by_route_table() -> dict[tuple[str, str], Schema]:
    """The compat and workflow creates, one per route of the registry."""
    t: dict[tuple[str, str], Schema] = {}
    for path, (c, _) in COMPAT_ROUTES.items():
        missing = (ErrorCode.MISSING_FIELD,) if c.missing_field else ()
        t[("post", path)] = _create(COMPAT_BODIES[c.operation], *missing, tag="compat")
    for route in WORKFLOWS:
        t[("post", f"/v1/{route}")] = _create(workflow_body(route), tag="workflow")
    return t


def _admin_table() -> dict[tuple[str, str], Schema]:
    """The sandbox's admin routes under ``/_sandbox`` (not the vendor's)."""
    a = "/_sandbox"
    return {
        ("post", f"{a}/accounts"): _admin(
            _ok("AccountCreated", "created", 201),
            model_body(bodies.AdminAccount),
            body_required=False,
        ),
        ("post", f"{a}/accounts/{{account_id}}/keys"): _admin(
            _ok("ApiKey", "created", 201), found=True
        ),
        ("delete", f"{a}/keys/{{api_key}}"): _admin(NO_CONTENT, found=True),
        ("post", f"{a}/accounts/{{account_id}}/topup"): _admin(
            _ok("Balance"), model_body(bodies.AdminTopup), found=True
        ),
        ("get", f"{a}/accounts/{{account_id}}/balance"): _admin(_ok("Balance"), found=True),
        ("get", f"{a}/accounts/{{account_id}}/ledger"): _admin(_ok("Ledger"), found=True),
        ("put", f"{a}/faults"): _admin(
            _ok("Faults"), model_body(bodies.AdminFaults), body_required=False
        ),
        ("get", f"{a}/faults"): _admin(_ok("Faults")),
        ("delete", f"{a}/faults"): _admin(NO_CONTENT),
        ("post", f"{a}/clock"): _admin(_ok("Clock"), model_body(bodies.AdminClock)),
        ("get", f"{a}/clock"): _admin(_ok("Clock")),
        ("put", f"{a}/tools/{{tool_id}}"): _admin(
            _ok("ToolState"),
            model_body(bodies.AdminToolSwitch),
            body_required=False,
            found=True,
        ),
    }


def table() -> dict[tuple[str, str], Schema]:
    """(method, path) -> the operation's declarations (merged over FastAPI's)."""
    return {**_vendor_table(), **_created_by_route_table(), **_admin_table()}


BODY_LIMIT_NOTE = (
    "Any JSON body over the sandbox's body limit is refused with 422 "
    "InvalidGenerationInput naming `body`."
)


def complete(doc: dict[str, Any]) -> dict[str, Any]:
    """Merge :func:`table` into FastAPI's document; every operation must have an entry."""
    decl = table()
    missing = [(m, p) for p, ops in doc["paths"].items() for m in ops if (m, p) not in decl]
    if missing:
        raise KeyError(f"OpenAPI: no declaration for {missing}")
    for path, ops in doc["paths"].items():
        for method, op in ops.items():
            d = decl[(method, path)]
            described = {p["name"]: p for p in op.get("parameters", [])}  # path parameters
            op["parameters"] = [*described.values(), *d["parameters"]]
            op["responses"] = d["responses"]  # replaces FastAPI's unused 422 ValidationError
            op["security"], op["tags"] = d["security"], d["tags"]
            if "requestBody" in d:
                op["requestBody"] = d["requestBody"]
                op["description"] = " ".join(filter(None, (d.get("description"), BODY_LIMIT_NOTE)))
    components = doc.setdefault("components", {})
    components["schemas"] = {
        **SCHEMAS,
        **MODEL_DEFS,
        **PAYLOADS,
    }  # FastAPI's ValidationError ones are unused
    components["securitySchemes"] = SECURITY_SCHEMES
    # answers of no declared operation: an unknown path, or a method a path does not have
    components["responses"] = {
        "UnknownRoute": _json(
            ref("Error"),
            'any path the API does not have: 404 {"error": '
            '"NOT_FOUND"} (under /v1/files/: "ResourceNotFound")',
        ),
        "MethodNotAllowed": {
            **_json(
                ref("Error"),
                "a method the path does not have: 405 "
                '{"error": "METHOD_NOT_ALLOWED"}; OPTIONS answers 204',
            ),
            "headers": {"Allow": {"description": "every method of the path", "schema": STRING}},
        },
    }
    doc["tags"] = [
        {"name": "vendor"},
        {"name": "native"},
        {"name": "files"},
        {"name": "compat"},
        {"name": "dedicated"},
        {"name": "workflow"},
        {"name": "sandbox"},
        {
            "name": ADMIN_TAG,
            "description": "the sandbox's own admin surface: not "
            "part of the vendor API, never listed in /v1/tools",
        },
    ]
    return doc


def install(app: FastAPI) -> None:
    """Serve the completed document at ``app.openapi_url`` (built once, then cached)."""

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = complete(
                get_openapi(
                    title=app.title,
                    version=app.version,
                    routes=app.routes,
                    description="The Enterprise Audio Generation API as the songlab sandbox "
                    "serves it, plus its /_sandbox admin surface.",
                )
            )
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]


__all__ = ["ADMIN_TAG", "complete", "install", "table"]
