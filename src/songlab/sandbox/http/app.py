"""The ASGI application: FastAPI with the route groups, error bodies, body limit, fault latency."""

from __future__ import annotations

import asyncio
from typing import Protocol

from fastapi import FastAPI, Request, Response
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

import songlab.sandbox.errors as errors
from songlab.sandbox.catalog import Catalog
from songlab.sandbox.config import SandboxConfig
from songlab.sandbox.errors import ApiError, UnhandledPayloadError
from songlab.sandbox.http import profiles, routing
from songlab.sandbox.http.hotpath import HotPath
from songlab.sandbox.http.openapi import install as install_openapi
from songlab.sandbox.http.routes import account, admin, compat, dedicated, files, native
from songlab.sandbox.storage.accounts import Accounts
from songlab.sandbox.storage.clock import Clock
from songlab.sandbox.storage.db import Store
from songlab.sandbox.storage.file_store import UPLOAD_MAX_BYTES, Links
from songlab.sandbox.tasks.creates import Creates
from songlab.sandbox.tasks.events import EventLog
from songlab.sandbox.tasks.faults import Faults

VENDOR_PREFIXES = ("/v1/", "/v5/", "/v6/", "/v7/")
# Any request body: room for a 64 MiB file inline as base64 in a JSON body, plus 1 MiB.
MAX_BODY_BYTES = UPLOAD_MAX_BYTES * 4 // 3 + 1024 * 1024


class BodyLimit:
    """Pure ASGI middleware: a request body over ``max_bytes`` is refused before it is read whole.

    A larger ``Content-Length`` is answered at once; a body without one (chunked)
    is counted as it arrives and cut off at the limit. The answer is 422
    InvalidGenerationInput naming ``body``. The limit leaves room for a 64 MiB file
    sent inline as base64 in JSON; multipart uploads to ``/v1/files`` are left to that
    route, whose own, lower limit names ``file``.
    """

    def __init__(self, app: ASGIApp, max_bytes: int = MAX_BODY_BYTES) -> None:
        self.app = app
        self.max_bytes = max_bytes

    def _refusal(self) -> errors.ApiError:
        return errors.invalid("body", f"must be at most {self.max_bytes} bytes")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = dict(scope["headers"]) if scope["type"] == "http" else {}
        if scope["type"] != "http" or (  # an upload: the files route has its own, lower limit
            scope["path"] == "/v1/files"
            and headers.get(b"content-type", b"").startswith(b"multipart/form-data")
        ):
            await self.app(scope, receive, send)
            return
        length = headers.get(b"content-length", b"")
        if length.isdigit() and int(length) > self.max_bytes:
            exc = self._refusal()
            await Response(exc.content(), exc.status, media_type="application/json")(
                scope, receive, send
            )
            return
        seen = 0

        async def limited() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_bytes:
                    raise self._refusal()  # an ApiError: answered by the app's handler
            return message

        await self.app(scope, limited, send)


class FaultLatency:
    """Pure ASGI middleware: the injected ``latency_ms`` on vendor routes (not uploads)."""

    def __init__(self, app: ASGIApp, faults: Faults) -> None:
        self.app = app
        self.faults = faults

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            ms = self.faults.settings.latency_ms
            if (
                ms
                and scope["path"].startswith(VENDOR_PREFIXES)
                and not (scope["method"] == "POST" and scope["path"] == "/v1/files")
            ):
                await asyncio.sleep(ms / 1000)
        await self.app(scope, receive, send)


async def _api_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ApiError)
    return Response(
        exc.content(), status_code=exc.status, media_type="application/json", headers=exc.headers
    )


async def _unhandled(request: Request, exc: Exception) -> Response:
    # The documented behaviour of a raw-object payload_json: a 500, answered whole and in
    # the error shape (the connection stays open; nothing was stored or billed).
    return await _api_error(request, errors.internal(errors.RAW_PAYLOAD_MESSAGE))


async def _internal(request: Request, exc: Exception) -> Response:
    """Anything else a handler raises: logged by the server, answered whole in the error
    shape (never a dropped connection or a text/plain page)."""
    return await _api_error(
        request,
        errors.internal(
            f"internal error ({type(exc).__name__}); nothing was billed for this request"
        ),
    )


async def _http_error(request: Request, exc: Exception) -> Response:
    """Starlette's routing answers (unknown path, unknown method) in the spec's error shape."""
    assert isinstance(exc, StarletteHTTPException)
    if exc.status_code == 405:
        allowed = routing.allowed_methods(request.app, request.url.path)
        return await _api_error(
            request, errors.method_not_allowed().with_headers({"Allow": ", ".join(allowed)})
        )
    if exc.status_code == 404:  # a file path's 404 is the file routes' own ResourceNotFound
        files = request.url.path.startswith("/v1/files/")
        return await _api_error(request, errors.RESOURCE_NOT_FOUND if files else errors.NOT_FOUND)
    return await _api_error(request, errors.ApiError(exc.status_code, {"error": "HTTP_ERROR"}))


class AppParts(Protocol):
    """The parts the HTTP layer hands its route groups (each group gets only its own)."""

    @property
    def config(self) -> SandboxConfig: ...
    @property
    def store(self) -> Store: ...
    @property
    def clock(self) -> Clock: ...
    @property
    def faults(self) -> Faults: ...
    @property
    def catalog(self) -> Catalog: ...
    @property
    def accounts(self) -> Accounts: ...
    @property
    def events(self) -> EventLog: ...
    @property
    def links(self) -> Links: ...
    @property
    def creates(self) -> Creates: ...


def create_app(parts: AppParts) -> FastAPI:
    app = FastAPI(
        title="songlab sandbox: Enterprise Audio Generation API",
        version="0.1.0",
        openapi_url="/openapi.json",
        docs_url=None,
        redoc_url=None,
    )
    app.add_exception_handler(ApiError, _api_error)
    app.add_exception_handler(UnhandledPayloadError, _unhandled)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_exception_handler(Exception, _internal)
    p = parts
    for router in (
        account.router(p.accounts, p.store, p.clock, p.catalog),
        native.router(
            p.accounts, p.store, p.clock, p.catalog, p.creates, p.events, p.faults, p.links
        ),
        files.router(p.accounts, p.store, p.clock, p.links),
        compat.router(p.accounts, p.catalog, p.creates),
        dedicated.router(p.accounts, p.clock, p.catalog, p.creates),
        admin.router(p.config.admin_token, p.accounts, p.store, p.clock, p.faults, p.catalog),
    ):
        app.include_router(router)
    install_openapi(app)  # bodies are parsed by hand: declare them, params and answers
    app.add_middleware(FaultLatency, faults=parts.faults)
    app.add_middleware(routing.Options)
    app.add_middleware(BodyLimit)
    return app


def create_asgi(parts: AppParts) -> ASGIApp:
    """What uvicorn serves: the lean task-GET path in front of the FastAPI app, both behind
    the configured answer profile (``profiles.py``; the default profile adds nothing)."""
    hot = HotPath(
        create_app(parts),
        accounts=parts.accounts,
        store=parts.store,
        faults=parts.faults,
        links=parts.links,
    )
    return profiles.apply(hot, parts.config.profile)
