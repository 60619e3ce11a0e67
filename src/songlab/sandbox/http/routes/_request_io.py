"""Small helpers shared by the route modules: JSON answers, bodies, auth."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from fastapi import Request, Response
from starlette.concurrency import run_in_threadpool

from songlab.sandbox.http import jsonrules
from songlab.sandbox.ports import Authenticator
from songlab.sandbox.tasks.creates import Creates, NewTask


def json_response(body: Any, status: int = 200) -> Response:
    """A JSON answer without response-model validation (the hot path stays lean)."""
    return Response(json.dumps(body), status_code=status, media_type="application/json")


def parse_object(raw: bytes) -> dict[str, Any]:
    """A JSON object body under the sandbox's JSON rules, or 422 naming ``body``."""
    return jsonrules.loads_object(raw, "body")


def account(accounts: Authenticator, request: Request) -> str:
    return accounts.authenticate(request.headers.get("authorization"))


def idempotency_key(request: Request) -> str | None:
    return request.headers.get("idempotency-key")


def create_answer(result: tuple[int, dict[str, Any]]) -> Response:
    status, body = result
    return json_response(body, status)


async def create(
    creates: Creates, request: Request, account_id: str, build: Callable[[], NewTask]
) -> Response:
    """Run a create in a worker thread: validation may decode input audio (Creates.submit)."""
    return create_answer(
        await run_in_threadpool(creates.submit, account_id, idempotency_key(request), build)
    )
