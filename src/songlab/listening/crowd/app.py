"""The served campaign's web face: a Starlette app over a :class:`~.service.Service`.

Routes: ``GET /join`` (a rater arrives, from Prolific, Mechanical Turk or a plain link, and is
sent to their page), ``GET /r/<slug>`` (a rater's own link, for a panel invited by email),
``GET /p/<assignment>`` (the page), ``GET /a/<token>`` (one audio element of the pool),
``POST /api/answers`` (one answer, or the headphone check), ``POST /api/alive`` (the page is
still open), ``POST /answers`` (a whole answer file, as a page downloads it), ``GET /health``.

Every request gets a reply with a reason (a body too large, not JSON, an unexpected error: a
JSON ``message``), never a dropped connection; the blocking work (the database, encoding
audio) runs in the thread pool.
"""

from __future__ import annotations

import html
import logging

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from songlab.listening._answers import MAX_ANSWER_BYTES
from songlab.listening.crowd.service import Reply, Service

__all__ = ["create_app"]

_HEADERS = {
    "Cache-Control": "no-store",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}
log = logging.getLogger("songlab.campaign")


class TooLarge(Exception):
    """A request body over the route's limit (answered 413 with the limit)."""


async def _body(request: Request, limit: int) -> bytes:
    """The request body, at most ``limit`` bytes read (a larger one is refused unread)."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise TooLarge
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise TooLarge
        chunks.append(chunk)
    return b"".join(chunks)


def _json(reply: Reply) -> JSONResponse:
    return JSONResponse(reply.body, status_code=reply.status, headers=_HEADERS)


def _message(text: str, status: int = 200) -> HTMLResponse:
    page = (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>Listening test'
        f"</title></head><body><p>{html.escape(text)}</p></body></html>"
    )
    return HTMLResponse(page, status_code=status, headers=_HEADERS)


class _Routes:
    """The route handlers of one app, over ``service`` (blocking work in the thread pool)."""

    def __init__(self, service: Service) -> None:
        self.service = service

    async def health(self, request: Request) -> Response:
        return JSONResponse(
            {"status": "ok", "campaign": self.service.campaign.id}, headers=_HEADERS
        )

    async def join(self, request: Request) -> Response:
        kind, value = await run_in_threadpool(self.service.join, dict(request.query_params))
        if kind == "page":
            return RedirectResponse(f"p/{value}", status_code=303, headers=_HEADERS)
        return _message(value)

    async def own_link(self, request: Request) -> Response:
        found = await run_in_threadpool(self.service.fixed, request.path_params["slug"])
        if found is None:
            return _message("No such page.", 404)
        kind, value = found
        if kind == "page":
            return RedirectResponse(f"../p/{value}", status_code=303, headers=_HEADERS)
        return _message(value)

    async def page(self, request: Request) -> Response:
        text = await run_in_threadpool(self.service.page, request.path_params["assignment"])
        if text is None:
            return _message("No such page.", 404)
        return HTMLResponse(text, headers=_HEADERS)

    async def audio(self, request: Request) -> Response:
        data = await run_in_threadpool(self.service.audio, request.path_params["token"])
        if data is None:
            return _message("No such clip.", 404)
        headers = {"Cache-Control": "private, max-age=86400", "X-Content-Type-Options": "nosniff"}
        return Response(data, media_type="audio/mpeg", headers=headers)

    async def answer(self, request: Request) -> Response:
        body = await _body(request, 64_000)
        return _json(await run_in_threadpool(self.service.answer, body))

    async def alive(self, request: Request) -> Response:
        body = await _body(request, 4_000)
        return _json(await run_in_threadpool(self.service.alive, body))

    async def answer_file(self, request: Request) -> Response:
        body = await _body(request, MAX_ANSWER_BYTES)
        if not body:
            return _json(Reply(411, {"message": "an answer file of at most 1 MB is expected"}))
        return _json(await run_in_threadpool(self.service.answer_file, body))


async def _too_large(request: Request, exc: Exception) -> Response:
    return _json(Reply(413, {"message": "Refused: the request is larger than this route takes."}))


async def _failed(request: Request, exc: Exception) -> Response:
    # every handler's last resort, so it catches everything: the rater gets a reply, never a
    # dropped connection, and nothing was said received
    log.exception("campaign server: %s %s", request.method, request.url.path)
    message = (
        f"The server could not take this ({type(exc).__name__}); nothing was received. "
        "The page tries again by itself."
    )
    return _json(Reply(500, {"message": message}))


def create_app(service: Service) -> Starlette:
    """The app serving ``service``'s campaign."""
    r = _Routes(service)
    routes = [
        Route("/health", r.health),
        Route("/join", r.join),
        Route("/r/{slug}", r.own_link),
        Route("/p/{assignment}", r.page),
        Route("/a/{token}", r.audio),
        Route("/api/answers", r.answer, methods=["POST"]),
        Route("/api/alive", r.alive, methods=["POST"]),
        Route("/answers", r.answer_file, methods=["POST"]),
    ]
    return Starlette(routes=routes, exception_handlers={TooLarge: _too_large, Exception: _failed})
