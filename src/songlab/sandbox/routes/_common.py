"""Small helpers shared by the route modules: JSON answers, bodies, auth."""

from __future__ import annotations

import json
from typing import Any

from fastapi import Request, Response

from songlab.sandbox import errors
from songlab.sandbox.service import Sandbox


def json_response(body: Any, status: int = 200) -> Response:
    """A JSON answer without response-model validation (the hot path stays lean)."""
    return Response(json.dumps(body), status_code=status, media_type="application/json")


def parse_object(raw: bytes) -> dict[str, Any]:
    """A JSON object body, or 422 InvalidGenerationInput naming ``body``."""
    try:
        body = json.loads(raw) if raw else None
    except (ValueError, UnicodeDecodeError, RecursionError):  # RecursionError: a JSON bomb
        raise errors.invalid("body", "is not valid JSON (or nests too deeply)") from None
    if not isinstance(body, dict):
        raise errors.invalid("body", "must be a JSON object")
    return body


def account(svc: Sandbox, request: Request) -> str:
    return svc.authenticate(request.headers.get("authorization"))


def idempotency_key(request: Request) -> str | None:
    return request.headers.get("idempotency-key")


def create_answer(result: tuple[int, dict[str, Any]]) -> Response:
    status, body = result
    return json_response(body, status)
