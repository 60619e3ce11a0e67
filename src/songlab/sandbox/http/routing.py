"""What the router knows about a path: the methods it answers, and ``OPTIONS``.

An unknown method on a known path is 405 ``{"error": "METHOD_NOT_ALLOWED"}``
with an ``Allow`` header that lists every method of every route of that path
(Starlette's own 405 names only the first route it tried). ``OPTIONS`` on a
known path is 204 with the same ``Allow``, no authentication needed; on an
unknown path it is the 404 ``{"error": "NOT_FOUND"}`` of any unknown route.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp, Receive, Scope, Send

_ORDER = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")


def _routes(routes: list[BaseRoute]) -> Iterator[Route]:
    """Every route, flattened (FastAPI keeps included routers as branches)."""
    for r in routes:
        if isinstance(r, Route):
            yield r
        elif (sub := getattr(r, "original_router", None)) is not None:
            yield from _routes(sub.routes)


def allowed_methods(app: Any, path: str) -> list[str]:
    """The methods the app answers on ``path`` (with HEAD for GET, and OPTIONS), or []."""
    methods: set[str] = set()
    for route in _routes(app.router.routes):
        if route.methods and route.path_regex.match(path):
            methods |= route.methods
    if not methods:
        return []
    methods.add("OPTIONS")
    return sorted(methods, key=lambda m: (_ORDER.index(m) if m in _ORDER else len(_ORDER), m))


class Options:
    """Pure ASGI middleware: ``OPTIONS`` on a known path answers 204 with ``Allow``."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "OPTIONS":
            allowed = allowed_methods(scope["app"], scope["path"])
            if allowed:
                await send(
                    {
                        "type": "http.response.start",
                        "status": 204,
                        "headers": [(b"allow", ", ".join(allowed).encode())],
                    }
                )
                await send({"type": "http.response.body", "body": b""})
                return
        await self.app(scope, receive, send)
