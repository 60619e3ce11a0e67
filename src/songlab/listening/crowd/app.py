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


def create_app(service: Service) -> Starlette:
    """The app serving ``service``'s campaign."""

    async def health(request: Request) -> Response:
        return JSONResponse({"status": "ok", "campaign": service.campaign.id}, headers=_HEADERS)

    async def join(request: Request) -> Response:
        kind, value = await run_in_threadpool(service.join, dict(request.query_params))
        if kind == "page":
            return RedirectResponse(f"p/{value}", status_code=303, headers=_HEADERS)
        return _message(value)

    async def own_link(request: Request) -> Response:
        found = await run_in_threadpool(service.fixed, request.path_params["slug"])
        if found is None:
            return _message("No such page.", 404)
        kind, value = found
        if kind == "page":
            return RedirectResponse(f"../p/{value}", status_code=303, headers=_HEADERS)
        return _message(value)

    async def page(request: Request) -> Response:
        text = await run_in_threadpool(service.page, request.path_params["assignment"])
        if text is None:
            return _message("No such page.", 404)
        return HTMLResponse(text, headers=_HEADERS)

    async def audio(request: Request) -> Response:
        data = await run_in_threadpool(service.audio, request.path_params["token"])
        if data is None:
            return _message("No such clip.", 404)
        headers = {"Cache-Control": "private, max-age=86400", "X-Content-Type-Options": "nosniff"}
        return Response(data, media_type="audio/mpeg", headers=headers)

    async def answer(request: Request) -> Response:
        return _json(await run_in_threadpool(service.answer, await _body(request, 64_000)))

    async def alive(request: Request) -> Response:
        return _json(await run_in_threadpool(service.alive, await _body(request, 4_000)))

    async def answer_file(request: Request) -> Response:
        body = await _body(request, MAX_ANSWER_BYTES)
        if not body:
            return _json(Reply(411, {"message": "an answer file of at most 1 MB is expected"}))
        return _json(await run_in_threadpool(service.answer_file, body))

    async def too_large(request: Request, exc: Exception) -> Response:
        return _json(
            Reply(413, {"message": "Refused: the request is larger than this route takes."})
        )

    async def failed(request: Request, exc: Exception) -> Response:
        # the rater gets a reply, never a dropped connection; nothing was said received
        log.exception("campaign server: %s %s", request.method, request.url.path)
        return _json(
            Reply(
                500,
                {
                    "message": f"The server could not take this ({type(exc).__name__}); "
                    "nothing was received. The page tries again by itself."
                },
            )
        )

    routes = [
        Route("/health", health),
        Route("/join", join),
        Route("/r/{slug}", own_link),
        Route("/p/{assignment}", page),
        Route("/a/{token}", audio),
        Route("/api/answers", answer, methods=["POST"]),
        Route("/api/alive", alive, methods=["POST"]),
        Route("/answers", answer_file, methods=["POST"]),
    ]
    return Starlette(routes=routes, exception_handlers={TooLarge: too_large, Exception: failed})
