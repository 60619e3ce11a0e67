"""The lean hot path: ``GET /v1/generations/{id}`` answered before the framework's routing.

Polling is what clients do most, so this pure ASGI layer answers it with a
cached auth lookup, one SQLite point read (or a cached body for a finished
task, which never changes again) and one pre-encoded JSON body. Everything
else, and the same route's OpenAPI entry, stays in FastAPI; the answers are the
same either way (403 FORBIDDEN / 404 NOT_FOUND / 401 bodies included).
"""

from __future__ import annotations

import asyncio
import json

from starlette.types import ASGIApp, Receive, Scope, Send

from songlab.sandbox.errors import ApiError
from songlab.sandbox.service import Sandbox
from songlab.sandbox.tasks import rows as tasks

PREFIX = "/v1/generations/"
_JSON = [(b"content-type", b"application/json")]
_CACHE_MAX = 20_000


class HotPath:
    def __init__(self, app: ASGIApp, svc: Sandbox) -> None:
        self.app = app
        self.svc = svc
        self._done: dict[str, tuple[str, bytes]] = {}  # finished task -> (account, body)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if (scope["type"] != "http" or scope["method"] != "GET" or not path.startswith(PREFIX)
                or "/" in path[len(PREFIX):] or len(path) == len(PREFIX)):
            await self.app(scope, receive, send)
            return
        ms = self.svc.faults.settings.latency_ms
        if ms:
            await asyncio.sleep(ms / 1000)
        status, body = self._answer(scope, path[len(PREFIX):])
        await send({"type": "http.response.start", "status": status,
                    "headers": [*_JSON, (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})

    def _answer(self, scope: Scope, task_id: str) -> tuple[int, bytes]:
        header = None
        for k, v in scope["headers"]:
            if k == b"authorization":
                header = v.decode("latin-1")
                break
        try:
            account_id = self.svc.authenticate(header)
        except ApiError as exc:
            return exc.status, exc.content()
        done = self._done.get(task_id)
        if done is not None:
            return (200, done[1]) if done[0] == account_id else (403, b'{"error": "FORBIDDEN"}')
        row = tasks.get(self.svc.store, task_id)
        if row is None:
            return 404, b'{"error": "NOT_FOUND"}'
        if row["account_id"] != account_id:
            return 403, b'{"error": "FORBIDDEN"}'
        body = json.dumps(tasks.snapshot(row, self.svc.base_url)).encode()
        if row["status"] in ("completed", "failed") and len(self._done) < _CACHE_MAX:
            self._done[task_id] = (row["account_id"], body)
        return 200, body
