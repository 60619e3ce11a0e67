"""Answer profiles: what the vendor surface shows (``default``, ``spec``, ``noisy``).

The sandbox's routes always build the generous ``default`` answers of
``shared/design.md``. A profile other than ``default`` reshapes them in this one
pure ASGI layer, in front of everything (the FastAPI routes and the lean
task-GET hot path alike), so no route knows which profile is served:

- ``spec``: every vendor answer carries only what the spec shows. A task (and a
  listing item) is ``task_id``, ``status`` and ``output.{text, metadata_json,
  assets[].{file_id, blob_hash, url}}``; an SSE event keeps its ``id:``/``event:``
  lines and a ``data`` object with only ``seq`` (plus ``cursor`` on ``timeout``
  and ``error``, which the spec says carry a resume cursor); a tool is ``id``,
  ``model``, ``operation``; a create answer ``task_id``, ``status`` (and
  ``consent_id`` on voice clones); a file link ``file_id``, ``url``,
  ``mime_type``, ``expires_at``; an upload ``file_id``; the balance its four
  fields; errors the spec's bodies (pipeline errors ``error``, ``message``,
  ``retryable``; the others ``error`` alone). The sandbox's own JSON events
  page is absent (404 NOT_FOUND), and ``/openapi.json`` says so. The listing
  envelope (``data``/``next_cursor``) is kept: the spec does not show one.
- ``noisy``: the default answers plus unknown fields on every JSON object
  (nested ones too, and inside ``output.metadata_json``) and every event's data.

The ``/_sandbox`` admin surface, signed URLs, storage locators and ``/health``
are never reshaped.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from songlab.spec import PIPELINE_ERRORS, ROUTES

DEFAULT, SPEC, NOISY = "default", "spec", "noisy"
PROFILES: tuple[str, ...] = (DEFAULT, SPEC, NOISY)
VENDOR_PREFIXES = ("/v1/", "/v5/", "/v6/", "/v7/")
EVENTS_PAGE = "/v1/generations/{task_id}/events"  # the sandbox's own route (default, noisy)
CURSOR_KINDS = ("timeout", "error")  # the spec: these carry a resume cursor

Json = Any
_TASK = re.compile(r"^/v1/generations/[^/]+$")
_STREAM = re.compile(r"^/v1/generations/[^/]+/stream$")
_EVENTS = re.compile(r"^/v1/generations/[^/]+/events$")
_LINK = re.compile(r"^/v1/files/[^/]+/url$")
_DOWNLOAD = re.compile(r"^/v1/files/[^/]+/download$")
_PIPELINE_CODES = {code.value for code in PIPELINE_ERRORS}


def own_route_paths() -> frozenset[str]:
    """The paths of the registry's routes that are the sandbox's own (``Route.origin``)."""
    return frozenset(f"/v1/{path}" for path, r in ROUTES.items() if r.origin == "sandbox")


def check(profile: str) -> str:
    """The profile name, or ValueError naming ``profile`` and the choices."""
    if profile not in PROFILES:
        raise ValueError(f"profile: must be one of {', '.join(PROFILES)}, got {profile!r}")
    return profile


def route_kind(method: str, path: str) -> str | None:
    """What a vendor answer is (``task``, ``listing``, ``stream``, ``create`` ...), or None."""
    if not path.startswith(VENDOR_PREFIXES):
        return None
    if method == "POST":
        return "upload" if path == "/v1/files" else "create"
    if method != "GET":
        return "other"
    if path == "/v1/generations":
        return "listing"
    if path == "/v1/tools":
        return "tools"
    if path == "/v1/account/balance":
        return "balance"
    for pattern, kind in (
        (_TASK, "task"),
        (_STREAM, "stream"),
        (_EVENTS, "events_page"),
        (_LINK, "file_link"),
        (_DOWNLOAD, "download"),
    ):
        if pattern.match(path):
            return kind
    return "other"


# --- spec: what the spec shows ---------------------------------------------------------


def _pick(obj: Json, *keys: str) -> dict[str, Any]:
    return {k: obj[k] for k in keys if isinstance(obj, dict) and k in obj}


def spec_task(snap: Json) -> dict[str, Any]:
    """A task snapshot as the spec shows it."""
    out = _pick(snap, "task_id", "status")
    raw = snap.get("output") if isinstance(snap, dict) else None
    if isinstance(raw, dict):
        output = _pick(raw, "text", "metadata_json")
        if isinstance(raw.get("assets"), list):
            output["assets"] = [_pick(a, "file_id", "blob_hash", "url") for a in raw["assets"]]
        out["output"] = output
    return out


def spec_event(data: Json, kind: str) -> dict[str, Any]:
    """An event's data: the sequence cursor only (and the resume cursor where the spec says)."""
    keys = ("seq", "cursor") if kind in CURSOR_KINDS else ("seq",)
    return _pick(data, *keys)


def spec_error(body: Json) -> dict[str, Any]:
    if isinstance(body, dict) and body.get("error") in _PIPELINE_CODES:
        return _pick(body, "error", "message", "retryable")
    return _pick(body, "error")


def _spec_body(kind: str, body: Json) -> Json:
    if kind == "task":
        return spec_task(body)
    if kind == "listing":  # the envelope is songlab's guess; the items are tasks
        items = body.get("data") if isinstance(body, dict) else None
        return {
            "data": [spec_task(t) for t in items or []],
            "next_cursor": body.get("next_cursor") if isinstance(body, dict) else None,
        }
    if kind == "tools":
        items = body.get("data") if isinstance(body, dict) else None
        return {"data": [_pick(t, "id", "model", "operation") for t in items or []]}
    if kind == "create":
        return _pick(body, "task_id", "status", "consent_id")
    if kind == "file_link":
        return _pick(body, "file_id", "url", "mime_type", "expires_at")
    if kind == "download":  # body shape not shown: the link's fields the route has
        return _pick(body, "file_id", "url", "mime_type", "expires_at")
    if kind == "upload":
        return _pick(body, "file_id")
    if kind == "balance":
        return _pick(body, "total_effective", "base_effective", "extra_tokens", "base_expires_at")
    return body


# --- noisy: unknown fields everywhere ----------------------------------------------------


def noise_fields() -> dict[str, Any]:
    """The unknown fields added to every object: a string, a number, null, a nested object."""
    return {
        "x_vendor_rev": "2026-11-noise",
        "x_unknown_count": 7,
        "x_unknown_null": None,
        "x_unknown_obj": {"note": "a field songlab has never seen", "items": [1, "two"]},
    }


def add_noise(value: Json) -> Json:
    """``value`` with :func:`noise_fields` added to every object in it (nested too, and the
    objects inside an ``output.metadata_json`` text: a tool's result may grow fields)."""
    if isinstance(value, dict):
        out = {
            k: _noisy_text(v) if k == "metadata_json" else add_noise(v) for k, v in value.items()
        }
        return {**out, **noise_fields()}
    if isinstance(value, list):
        return [add_noise(v) for v in value]
    return value


def _noisy_text(value: Json) -> Json:
    """A JSON text holding an object, with noise added inside; anything else as it is."""
    if not isinstance(value, str):
        return add_noise(value)
    try:
        parsed = json.loads(value)
    except ValueError:
        return value
    return json.dumps(add_noise(parsed)) if isinstance(parsed, dict) else value


# --- the profile as data ----------------------------------------------------------------


class Profile:
    """How one profile reshapes a JSON answer, an event and the OpenAPI document."""

    def __init__(self, name: str) -> None:
        self.name = check(name)

    def hides(self, path: str) -> bool:
        """A path the vendor surface does not have in this profile (any method: 404): in
        ``spec``, the JSON events page and every route of the sandbox's own."""
        if self.name != SPEC:
            return False
        return _EVENTS.match(path) is not None or path in own_route_paths()

    def body(self, kind: str, status: int, body: Json) -> Json:
        if self.name == NOISY:
            return add_noise(body)
        if self.name == SPEC:
            return spec_error(body) if status >= 400 else _spec_body(kind, body)
        return body

    def event(self, kind: str, data: Json) -> Json:
        if self.name == NOISY:
            return add_noise(data)
        if self.name == SPEC:
            return spec_event(data, kind)
        return data

    def openapi(self, doc: dict[str, Any]) -> dict[str, Any]:
        """The served document, describing what this profile answers."""
        if self.name == DEFAULT:
            return doc
        doc = json.loads(json.dumps(doc))  # a copy: the app caches its own
        info = doc.setdefault("info", {})
        if self.name == NOISY:
            info["description"] = (
                info.get("description", "") + " Profile noisy: every "
                "object and event also carries unknown fields."
            )
            return doc
        info["description"] = (
            info.get("description", "") + " Profile spec: answers carry "
            "only the fields the vendor's spec shows."
        )
        for path in (EVENTS_PAGE, *own_route_paths()):
            doc["paths"].pop(path, None)
        stream = doc["paths"].get("/v1/generations/{task_id}/stream", {}).get("get")
        if stream is not None:
            stream["responses"]["200"]["description"] = (
                'server-sent events (id: seq / event: kind / data: {"seq"}; timeout and '
                'error add "cursor")'
            )
        schemas = doc.get("components", {}).get("schemas", {})
        schemas.pop("EventPage", None)
        schemas.update(_SPEC_SCHEMAS)
        return doc


def _obj(props: dict[str, Any], *required: str) -> dict[str, Any]:
    return {"type": "object", "properties": props, "required": list(required)}


_S = {"type": "string"}
_I = {"type": "integer"}
_SPEC_SCHEMAS: dict[str, Any] = {
    "Asset": _obj({"file_id": _S, "blob_hash": _S, "url": _S}, "file_id", "blob_hash", "url"),
    "Task": _obj(
        {
            "task_id": _S,
            "status": {"type": "string", "enum": ["queued", "processing", "completed", "failed"]},
            "output": _obj(
                {
                    "text": _S,
                    "metadata_json": _S,
                    "assets": {"type": "array", "items": {"$ref": "#/components/schemas/Asset"}},
                }
            ),
        },
        "task_id",
        "status",
    ),
    "Event": _obj(
        {
            "seq": {"type": "integer", "minimum": 1},
            "cursor": {"type": "integer", "minimum": 0, "description": "timeout and error only"},
        },
        "seq",
    ),
    "TaskCreated": _obj(
        {"task_id": _S, "status": {"type": "string", "const": "queued"}, "consent_id": _S},
        "task_id",
        "status",
    ),
    "ToolList": _obj(
        {
            "data": {
                "type": "array",
                "items": _obj({"id": _S, "model": _S, "operation": _S}, "id", "model", "operation"),
            }
        },
        "data",
    ),
    "StoredFile": _obj({"file_id": _S}, "file_id"),
    "FileDownload": _obj({"file_id": _S, "url": _S, "expires_at": _S}, "file_id", "url"),
    "Balance": _obj(
        {"total_effective": _I, "base_effective": _I, "extra_tokens": _I, "base_expires_at": _S},
        "total_effective",
        "base_effective",
        "extra_tokens",
        "base_expires_at",
    ),
    "InternalError": _obj({"error": _S}, "error"),
}


# --- the ASGI layer -----------------------------------------------------------------------

_NOT_FOUND = b'{"error": "NOT_FOUND"}'


def _header(headers: list[tuple[bytes, bytes]], name: bytes) -> bytes:
    for k, v in headers:
        if k.lower() == name:
            return v
    return b""


def _frame(raw: bytes, reshape: Callable[[str, Json], Json]) -> bytes:
    """One SSE frame (``id``/``event``/``data`` lines) with its data reshaped."""
    lines = raw.decode().split("\n")
    kind = next((ln[6:].strip() for ln in lines if ln.startswith("event:")), "")
    out = []
    for ln in lines:
        if ln.startswith("data:"):
            ln = "data: " + json.dumps(reshape(kind, json.loads(ln[5:])))
        out.append(ln)
    return "\n".join(out).encode()


class Shaper:
    """Pure ASGI middleware: every vendor answer of the app reshaped by one :class:`Profile`."""

    def __init__(self, app: ASGIApp, profile: Profile) -> None:
        self.app = app
        self.profile = profile

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = scope["path"]
        if self.profile.hides(path):  # any method, HEAD and OPTIONS included
            await send(
                {
                    "type": "http.response.start",
                    "status": 404,
                    "headers": [
                        (b"content-type", b"application/json"),
                        (b"content-length", str(len(_NOT_FOUND)).encode()),
                    ],
                }
            )
            await send(
                {
                    "type": "http.response.body",
                    "body": b"" if scope["method"] == "HEAD" else _NOT_FOUND,
                }
            )
            return
        if scope["method"] == "HEAD":  # no body to reshape
            await self.app(scope, receive, send)
            return
        if path == "/openapi.json" and scope["method"] == "GET":
            await self._buffered(
                scope, receive, send, lambda status, body: self.profile.openapi(body)
            )
            return
        kind = route_kind(scope["method"], path)
        if kind is None:
            await self.app(scope, receive, send)
            return
        await self._buffered(
            scope, receive, send, lambda status, body: self.profile.body(kind, status, body)
        )

    async def _buffered(
        self, scope: Scope, receive: Receive, send: Send, reshape: Callable[[int, Json], Json]
    ) -> None:
        """Run the app; reshape a JSON answer whole and an event stream frame by frame."""
        start: Message | None = None
        mode = "pass"
        chunks: list[bytes] = []
        pending = b""

        async def shaped(message: Message) -> None:
            nonlocal start, mode, pending
            if message["type"] == "http.response.start":
                ctype = _header(message.get("headers", []), b"content-type")
                if ctype.startswith(b"application/json"):
                    mode, start = "json", message
                    return
                if ctype.startswith(b"text/event-stream"):
                    mode = "sse"
                await send(message)
                return
            if message["type"] != "http.response.body" or mode == "pass":
                await send(message)
                return
            more = message.get("more_body", False)
            if mode == "sse":
                pending += message.get("body", b"")
                *frames, pending = pending.split(b"\n\n")
                body = b"".join(_frame(f, self.profile.event) + b"\n\n" for f in frames)
                if not more and pending:
                    body, pending = body + pending, b""
                await send({"type": "http.response.body", "body": body, "more_body": more})
                return
            chunks.append(message.get("body", b""))
            if more:
                return
            assert start is not None
            raw = b"".join(chunks)
            try:
                payload = json.loads(raw) if raw else None
            except ValueError:
                payload = None
            out = raw if payload is None else json.dumps(reshape(start["status"], payload)).encode()
            headers = [
                (k, v) for k, v in start.get("headers", []) if k.lower() != b"content-length"
            ]
            await send(
                {**start, "headers": [*headers, (b"content-length", str(len(out)).encode())]}
            )
            await send({"type": "http.response.body", "body": out})

        await self.app(scope, receive, shaped)


def apply(app: ASGIApp, profile: str) -> ASGIApp:
    """``app`` as ``profile`` serves it (the default profile: ``app`` itself, untouched)."""
    p = Profile(profile)
    return app if p.name == DEFAULT else Shaper(app, p)


__all__ = [
    "PROFILES",
    "Profile",
    "Shaper",
    "add_noise",
    "apply",
    "check",
    "noise_fields",
    "route_kind",
    "spec_error",
    "spec_event",
    "spec_task",
]
