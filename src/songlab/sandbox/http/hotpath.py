"""The lean hot path: ``GET /v1/generations/{id}`` answered before the framework's routing.

Polling is what clients do most, so this pure ASGI layer answers it with a
cached auth lookup, one SQLite point read (or a cached body for a finished
task, which never changes again) and one pre-encoded JSON body. Everything
else, and the same route's OpenAPI entry, stays in FastAPI; the answers are the
same either way (403 FORBIDDEN / 404 NOT_FOUND / 401 bodies included).
"""

from __future__ import annotations

import asyncio

from starlette.types import ASGIApp, Receive, Scope, Send

import songlab.sandbox.errors as errors
from songlab.sandbox.errors import ApiError
from songlab.sandbox.ports import Authenticator, FaultGate, Links
from songlab.sandbox.storage.db import Store
from songlab.sandbox.tasks import rows as tasks

PREFIX = "/v1/generations/"
_JSON = [(b"content-type", b"application/json")]
_CACHE_MAX = 20_000
_FORBIDDEN = errors.FORBIDDEN.content()


class HotPath:
    def __init__(
        self,
        app: ASGIApp,
        *,
        accounts: Authenticator,
        store: Store,
        faults: FaultGate,
        links: Links,
    ) -> None:
        self.app = app
        self._accounts = accounts
        self._store = store
        self._faults = faults
        self._links = links
        self._done: dict[str, tuple[str, bytes]] = {}  # finished task -> (account, body)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if (
            scope["type"] != "http"
            or scope["method"] != "GET"
            or not path.startswith(PREFIX)
            or "/" in path[len(PREFIX) :]
            or len(path) == len(PREFIX)
        ):
            await self.app(scope, receive, send)
            return
        ms = self._faults.settings.latency_ms
        if ms:
            await asyncio.sleep(ms / 1000)
        status, body = self._answer(scope, path[len(PREFIX) :])
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [*_JSON, (b"content-length", str(len(body)).encode())],
            }
        )
        await send({"type": "http.response.body", "body": body})

    def _answer(self, scope: Scope, task_id: str) -> tuple[int, bytes]:
        header = None
        for k, v in scope["headers"]:
            if k == b"authorization":
                header = v.decode("latin-1")
                break
        try:
            account_id = self._accounts.authenticate(header)
        except ApiError as exc:
            return exc.status, exc.content()
        done = self._done.get(task_id)
        if done is not None:
            return (200, done[1]) if done[0] == account_id else (403, _FORBIDDEN)
        status, body, final = tasks.answer(self._store, account_id, task_id, self._links.base_url)
        if final and len(self._done) < _CACHE_MAX:
            self._done[task_id] = (account_id, body)
        return status, body
