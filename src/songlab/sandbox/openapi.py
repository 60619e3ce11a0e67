"""The sandbox's OpenAPI document, made complete: bodies, parameters, security, responses.

Routes read their bodies by hand, so that bad input gets the spec's exact error
bodies; FastAPI therefore sees no request models. This module is the one table
that declares, per operation, what the handlers really accept and answer: the
JSON body (fields, types, required), the multipart upload, the query and header
parameters, the security scheme (bearer key; the admin header for
``/_sandbox``) and the documented answers with the spec's error bodies.
:func:`install` merges it into ``app.openapi()``; a route missing from the
table fails the document (and a test) instead of being served undeclared.
Field rules come from ``_vocab``, ``pricing`` and the route modules' own tables.
No example holds a key or token.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

from songlab._vocab import (
    AGENT_TIERS,
    IDEMPOTENCY_KEY_PATTERN,
    LICENSE_NAMES,
    LIMITS,
    OTHER_ERRORS,
    PIPELINE_ERRORS,
    SONG_VERSIONS,
    ErrorCode,
    Status,
)
from songlab.sandbox.catalog import tool_id
from songlab.sandbox.clock import MAX_ADVANCE_SECONDS
from songlab.sandbox.faults import MAX_COUNT, MAX_LATENCY_MS
from songlab.sandbox.routes.admin import MAX_TOKENS
from songlab.sandbox.routes.compat import VERSIONS
from songlab.sandbox.routes.dedicated import VOCAL_ID_RULE, WORKFLOW_FIELDS
from songlab.sandbox.storage import UPLOAD_MAX_BYTES

Schema = dict[str, Any]
E = ErrorCode
S: Schema = {"type": "string"}
I: Schema = {"type": "integer"}  # noqa: E741
N: Schema = {"type": "number"}
B: Schema = {"type": "boolean"}
NULL_S: Schema = {"type": ["string", "null"]}
ADMIN_TAG = "sandbox-admin"


def ref(name: str) -> Schema:
    return {"$ref": f"#/components/schemas/{name}"}


def obj(props: dict[str, Schema], *required: str, extra: bool = True) -> Schema:
    out: Schema = {"type": "object", "properties": props}
    if required:
        out["required"] = list(required)
    if not extra:
        out["additionalProperties"] = False
    return out


def s(max_len: int | None = None, **more: Any) -> Schema:
    return {"type": "string", **({"maxLength": max_len} if max_len else {}), **more}


NATIVE_LICENSE = {"type": "integer", "minimum": 0, "maximum": 5, "default": 0,
                  "description": "license tier 0-5; 0 or absent = royalty-free"}
TIER_NAME = {"type": "string", "enum": list(LICENSE_NAMES.values()), "default": "royalty_free"}
COMPAT_LICENSE = {"anyOf": [{"type": "integer", "minimum": 0, "maximum": 5}, TIER_NAME],
                  "description": "license tier 0-5 or its name"}
FILE_REF = s(description="a file id of the caller (from POST /v1/files or a task output)")
DURATION = {"type": "number", "minimum": 5.0, "maximum": 240.0}
LIMIT_MAX, LIMIT_DEFAULT = int(LIMITS["list_limit_max"]), int(LIMITS["list_limit_default"])

SCHEMAS: dict[str, Schema] = {
    "PipelineError": obj({"error": {"type": "string", "enum": [c.value for c in PIPELINE_ERRORS]},
                          "message": S, "retryable": B}, "error", "message", "retryable"),
    "Error": obj({"error": {"type": "string", "enum": [c.value for c in OTHER_ERRORS]}}, "error"),
    "AdminError": obj({"error": s(description="UNAUTHENTICATED, NOT_FOUND or InvalidRequest"),
                       "message": S}, "error", "message"),
    "TaskCreated": obj({"task_id": S, "status": {"type": "string", "const": Status.QUEUED.value},
                        "consent_id": s(description="voice clones only")}, "task_id", "status"),
    "Task": obj({
        "task_id": S, "tool_id": NULL_S, "model": S, "operation": S, "license": I,
        "status": {"type": "string", "enum": [st.value for st in Status]},
        "created_at": S, "updated_at": S,
        "cost_usd": {"type": ["string", "null"], "description": "decimal USD, null until charged"},
        "parent_task_id": S, "progress": {"type": "number", "minimum": 0, "maximum": 1},
        "failure": obj({"error": S, "message": S}, "error"),
        "output": obj({"text": S, "metadata_json": S, "assets": {"type": "array",
                                                                  "items": {"type": "object"}}}),
    }, "task_id", "tool_id", "model", "operation", "license", "status", "created_at",
        "updated_at", "cost_usd", "output"),
    "TaskList": obj({"data": {"type": "array", "items": ref("Task")}, "next_cursor": NULL_S},
                    "data", "next_cursor"),
    "Balance": obj({"total_effective": I, "base_effective": I, "extra_tokens": I,
                    "base_expires_at": S},
                   "total_effective", "base_effective", "extra_tokens", "base_expires_at"),
    "ToolList": obj({"data": {"type": "array", "items": obj(
        {"id": S, "model": S, "operation": S, "name": S}, "id", "model", "operation", "name")}},
        "data"),
    "StoredFile": obj({"file_id": S, "mime_type": S, "size_bytes": I, "sha256": S},
                      "file_id", "mime_type", "size_bytes", "sha256"),
    "FileLink": obj({"file_id": S, "url": S, "mime_type": S, "expires_at": S},
                    "file_id", "url", "mime_type", "expires_at"),
    "FileDownload": obj({"file_id": S, "url": S, "expires_at": S}, "file_id", "url", "expires_at"),
    "AccountCreated": obj({"account_id": S, "api_key": S}, "account_id", "api_key"),
    "ApiKey": obj({"api_key": S}, "api_key"),
    "Ledger": obj({"entries": {"type": "array", "items": obj({
        "task_id": S, "parent_task_id": NULL_S, "tool_id": NULL_S, "operation": S, "model": S,
        "license": I, "kind": S, "amount_usd": S, "created_at": S})}}, "entries"),
    "Faults": obj({
        "rate_limited": {"type": "number", "minimum": 0, "maximum": 1},
        "dependency_unavailable": {"type": "number", "minimum": 0, "maximum": 1},
        "fail_tasks": {"type": "number", "minimum": 0, "maximum": 1},
        "drop_stream_after": {"type": ["integer", "null"], "minimum": 0, "maximum": MAX_COUNT},
        "latency_ms": {"type": "integer", "minimum": 0, "maximum": MAX_LATENCY_MS},
        "seed": {"type": ["integer", "null"]},
    }, extra=False),
    "Clock": obj({"now": S}, "now"),
    "ToolState": obj({"id": S, "model": S, "operation": S, "name": S, "active": B,
                      "priced_licenses": {"type": "array", "items": I}},
                     "id", "active", "priced_licenses"),
}
SECURITY_SCHEMES: dict[str, Schema] = {
    "ApiKey": {"type": "http", "scheme": "bearer",
               "description": "the account's API key: Authorization: Bearer <key>"},
    "SandboxAdmin": {"type": "apiKey", "in": "header", "name": "X-Sandbox-Admin-Token",
                     "description": "the sandbox's admin token (--admin-token)"},
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


AUTH = (E.UNAUTHENTICATED, E.INVALID_API_KEY)
CREATE_ERRORS = (*AUTH, E.UNKNOWN_TOOL, E.INSUFFICIENT_FUNDS, E.TOOL_NOT_PRICED,
                 E.INVALID_GENERATION_INPUT, E.RATE_LIMITED, E.DEPENDENCY_UNAVAILABLE)
CREATED = {"201": _json(ref("TaskCreated"), "the task, queued")}
RAW_PAYLOAD_500 = {"500": {
    "description": "payload_json sent as a raw JSON object instead of a string: the server's "
                   "unhandled error, as the spec documents",
    "content": {"text/plain": {"schema": S}}}}

# --- parameters ------------------------------------------------------------------------

IDEMPOTENCY = {"name": "Idempotency-Key", "in": "header", "required": False,
               "schema": {"type": "string", "pattern": IDEMPOTENCY_KEY_PATTERN,
                          "maxLength": int(LIMITS["idempotency_key_max"])},
               "description": "same key (per account) -> same task, billed once; "
                              "a malformed key means no dedup (no error)"}
LIST_QUERY = [
    {"name": "limit", "in": "query", "required": False,
     "schema": {"type": "integer", "minimum": 1, "maximum": LIMIT_MAX, "default": LIMIT_DEFAULT}},
    {"name": "cursor", "in": "query", "required": False,
     "schema": s(description="next_cursor of the previous page")},
]
AFTER = {"name": "after", "in": "query", "required": False,
         "schema": {"type": "integer", "minimum": 0, "default": 0},
         "description": "replay the events after this seq"}

# --- request bodies --------------------------------------------------------------------

NATIVE_BODY = obj({
    "tool_id": s(description="an id from GET /v1/tools",
                 examples=[tool_id("write_lyrics", "v5"), tool_id("generate_song", "v7"),
                           tool_id("agent", AGENT_TIERS[0])]),
    "license": NATIVE_LICENSE,
    "payload_json": s(contentMediaType="application/json",
                      description="the tool's input as a STRING of JSON text (an object); a raw "
                                  "object is the documented 500",
                      examples=['{"prompt": "a calm piano song"}']),
}, "tool_id", "payload_json")
COMPAT_SONG = obj({"prompt": S, "lyrics": S, "vocal_id": S, "duration_seconds": DURATION,
                   "seed": I, "license": COMPAT_LICENSE}, "prompt")
COMPAT_SINGING = obj({"lyrics": S, "prompt": S, "styleOfMusic": S, "vocal_id": S,
                      "vocal_reference": s(description="a file input"),
                      "duration_seconds": DURATION, "seed": I, "license": COMPAT_LICENSE},
                     "lyrics")
COMPAT_EXTEND_SONG = obj({
    "audio_url": s(description="the song to extend (a file input, up to 40 MB)"),
    "lyrics": s(int(LIMITS["extend_lyrics_chars"])),
    "extend_at_ms": {"type": "integer", "description": "clamped to the song at generation time"},
    "extend_type": S, "duration_seconds": DURATION, "license": COMPAT_LICENSE}, "audio_url")
COMPAT_EXTEND_MUSIC = obj({
    "audio_url": s(description="the music to extend (a file input, up to 40 MB)"),
    "prompt": S, "license": COMPAT_LICENSE,
    "extend_seconds": {"type": "number", "minimum": LIMITS["extend_seconds_min"],
                       "maximum": LIMITS["extend_seconds_max"]},
    "side": {"type": "string", "enum": ["tail", "head"]}}, "audio_url")
VOICE_CLONE = obj({
    "reference_file_id": FILE_REF, "name": s(int(LIMITS["voice_clone_name_chars"])),
    "description": s(int(LIMITS["voice_clone_description_chars"])),
    "version": {"type": "string", "enum": list(SONG_VERSIONS), "default": "v5"},
    "license": TIER_NAME, "consent": {"type": "boolean", "const": True},
    "rights_attestation": s(int(LIMITS["rights_attestation_chars"]))},
    "reference_file_id", "consent", "rights_attestation")
TRANSLATION = obj({"song_file_id": FILE_REF, "target_language": s(100),
                   "syllable_matched": {"type": "boolean", "default": True},
                   "song_style": s(2000), "license": TIER_NAME},
                  "song_file_id", "target_language", "song_style")
UPLOAD = {"required": True, "content": {
    "multipart/form-data": {"schema": obj({"file": {
        "type": "string", "format": "binary",
        "description": f"the audio or MIDI file, at most {UPLOAD_MAX_BYTES} bytes"}}, "file")},
    "application/json": {"schema": obj({"source_url": s(
        description="one of this sandbox's signed file URLs (nothing else is fetched)")},
        "source_url")},
}}


def workflow_body(route: str) -> Schema:
    """From the dedicated route's own field table (design.md's workflow table)."""
    files, strings = WORKFLOW_FIELDS[route]
    props: dict[str, Schema] = {field: FILE_REF for field, _, _ in files}
    required = [field for field, _, _ in files]
    for field, req in strings:
        props[field] = s(5000)
        required += [field] if req else []
    if route in VOCAL_ID_RULE:
        props["vocal_id"] = s(description="a vocal_id from a voice clone")
        required += ["vocal_id"] if VOCAL_ID_RULE[route] else []
    if route == "audio-inpainting":
        props["start_ms"] = props["end_ms"] = {"type": "integer", "minimum": 0}
        required += ["start_ms", "end_ms"]
    props["license"] = TIER_NAME
    return obj(props, *required)


def _body(schema: Schema, required: bool = True) -> Schema:
    return {"required": required, "content": {"application/json": {"schema": schema}}}


# --- the table -------------------------------------------------------------------------


def _vendor(ok: dict[str, Schema], *codes: ErrorCode, body: Schema | None = None,
            params: list[Schema] | None = None, tag: str = "vendor") -> Schema:
    out: Schema = {"tags": [tag], "security": [{"ApiKey": []}], "parameters": params or [],
                   "responses": {**ok, **errors_of(*codes)}}
    if body is not None:
        out["requestBody"] = body
    return out


def _create(body: Schema, *extra: ErrorCode, tag: str) -> Schema:
    return _vendor(CREATED, *CREATE_ERRORS, *extra, body=_body(body), params=[IDEMPOTENCY], tag=tag)


def _admin(ok: dict[str, Schema], body: Schema | None = None, *, body_required: bool = True,
           found: bool = False) -> Schema:
    responses = {**ok, "401": _json(ref("AdminError"), "UNAUTHENTICATED: admin token missing or wrong")}
    if found:
        responses["404"] = _json(ref("AdminError"), "NOT_FOUND: no such account, key or tool")
    if body is not None:
        responses["422"] = _json(ref("AdminError"), "InvalidRequest naming the field")
    out: Schema = {"tags": [ADMIN_TAG], "security": [{"SandboxAdmin": []}], "parameters": [],
                   "responses": responses}
    if body is not None:
        out["requestBody"] = _body(body, body_required)
    return out


def _ok(name: str, description: str = "OK", status: int = 200) -> dict[str, Schema]:
    return {str(status): _json(ref(name), description)}


NO_CONTENT = {"204": {"description": "done"}}
STREAM_OK = {"200": {"description": "server-sent events (id / event / data frames)",
                     "content": {"text/event-stream": {"schema": S}}}}


def table() -> dict[tuple[str, str], Schema]:
    """(method, path) -> the operation's declarations (merged over FastAPI's)."""
    t: dict[tuple[str, str], Schema] = {
        ("get", "/health"): {"tags": ["sandbox"], "security": [], "parameters": [],
                             "responses": {"200": _json(obj({"status": S}, "status"), "up")}},
        ("get", "/v1/account/balance"): _vendor(_ok("Balance"), *AUTH),
        ("get", "/v1/tools"): _vendor(_ok("ToolList"), *AUTH),
        ("post", "/v1/generations"): _vendor(
            {**CREATED, **RAW_PAYLOAD_500}, *CREATE_ERRORS, body=_body(NATIVE_BODY),
            params=[IDEMPOTENCY], tag="native"),
        ("get", "/v1/generations"): _vendor(_ok("TaskList"), *AUTH, E.INVALID_GENERATION_INPUT,
                                            params=LIST_QUERY, tag="native"),
        ("get", "/v1/generations/{task_id}"): _vendor(_ok("Task"), *AUTH, E.FORBIDDEN,
                                                      E.NOT_FOUND, tag="native"),
        ("get", "/v1/generations/{task_id}/stream"): _vendor(
            STREAM_OK, *AUTH, E.FORBIDDEN, E.NOT_FOUND, E.INVALID_GENERATION_INPUT,
            params=[AFTER], tag="native"),
        ("post", "/v1/files"): _vendor(_ok("StoredFile", "stored", 201), *AUTH,
                                       E.INVALID_GENERATION_INPUT, body=UPLOAD, tag="files"),
        ("get", "/v1/files/{file_id}/url"): _vendor(_ok("FileLink"), *AUTH,
                                                    E.RESOURCE_NOT_FOUND, tag="files"),
        ("get", "/v1/files/{file_id}/download"): _vendor(_ok("FileDownload"), *AUTH,
                                                         E.RESOURCE_NOT_FOUND, tag="files"),
        ("post", "/v1/voice-clones"): _create(VOICE_CLONE, tag="dedicated"),
        ("post", "/v1/song-translations"): _create(TRANSLATION, tag="dedicated"),
    }
    for v in VERSIONS:
        t[("post", f"/{v}/generate/song")] = _create(COMPAT_SONG, tag="compat")
        t[("post", f"/{v}/generate/singing")] = _create(COMPAT_SINGING, tag="compat")
        t[("post", f"/{v}/extend/song")] = _create(COMPAT_EXTEND_SONG, E.MISSING_FIELD, tag="compat")
    for path in ("/v5/extend/music", "/v1/generate/extend"):
        t[("post", path)] = _create(COMPAT_EXTEND_MUSIC, E.MISSING_FIELD, tag="compat")
    for route in WORKFLOW_FIELDS:
        t[("post", f"/v1/{route}")] = _create(workflow_body(route), tag="workflow")
    tokens = {"type": "integer", "minimum": 0, "maximum": MAX_TOKENS}
    account_body = obj({"name": S, "balance_tokens": tokens | {"default": 100_000},
                        "extra_tokens": tokens | {"default": 0}})
    a = "/_sandbox"
    t.update({
        ("post", f"{a}/accounts"): _admin(_ok("AccountCreated", "created", 201), account_body,
                                          body_required=False),
        ("post", f"{a}/accounts/{{account_id}}/keys"): _admin(_ok("ApiKey", "created", 201),
                                                               found=True),
        ("delete", f"{a}/keys/{{api_key}}"): _admin(NO_CONTENT, found=True),
        ("post", f"{a}/accounts/{{account_id}}/topup"): _admin(
            _ok("Balance"), obj({"tokens": tokens | {"minimum": 1}}, "tokens"),
            found=True),
        ("get", f"{a}/accounts/{{account_id}}/balance"): _admin(_ok("Balance"), found=True),
        ("get", f"{a}/accounts/{{account_id}}/ledger"): _admin(_ok("Ledger"), found=True),
        ("put", f"{a}/faults"): _admin(_ok("Faults"), ref("Faults"), body_required=False),
        ("get", f"{a}/faults"): _admin(_ok("Faults")),
        ("delete", f"{a}/faults"): _admin(NO_CONTENT),
        ("post", f"{a}/clock"): _admin(_ok("Clock"), obj(
            {"advance_seconds": {"type": "number", "minimum": 0,
                                "maximum": MAX_ADVANCE_SECONDS}}, "advance_seconds")),
        ("get", f"{a}/clock"): _admin(_ok("Clock")),
        ("put", f"{a}/tools/{{tool_id}}"): _admin(_ok("ToolState"), obj({
            "active": B, "priced_licenses": {"type": "array", "items": {
                "type": "integer", "minimum": 1, "maximum": 5}}}), body_required=False,
            found=True),
    })
    return t


BODY_LIMIT_NOTE = ("Any JSON body over the sandbox's body limit is refused with 422 "
                   "InvalidGenerationInput naming `body`.")


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
                op["description"] = BODY_LIMIT_NOTE
    components = doc.setdefault("components", {})
    components["schemas"] = dict(SCHEMAS)  # FastAPI's ValidationError schemas are unused now
    components["securitySchemes"] = SECURITY_SCHEMES
    doc["tags"] = [{"name": "vendor"}, {"name": "native"}, {"name": "files"},
                   {"name": "compat"}, {"name": "dedicated"}, {"name": "workflow"},
                   {"name": "sandbox"},
                   {"name": ADMIN_TAG, "description": "the sandbox's own admin surface: not "
                    "part of the vendor API, never listed in /v1/tools"}]
    return doc


def install(app: FastAPI) -> None:
    """Serve the completed document at ``app.openapi_url`` (built once, then cached)."""

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = complete(get_openapi(
                title=app.title, version=app.version, routes=app.routes,
                description="The Enterprise Audio Generation API as the songlab sandbox "
                            "serves it, plus its /_sandbox admin surface."))
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]


__all__ = ["ADMIN_TAG", "complete", "install", "table"]
