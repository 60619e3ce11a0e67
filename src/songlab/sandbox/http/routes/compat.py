"""Compat routes: old-style URLs and field names; the tool is resolved server-side.

The routes, their operations and their bodies are the registry's (``spec.COMPAT``,
``spec.COMPAT_ROUTES``): ``/v{5,6,7}/generate/song`` and ``/generate/singing``
(``styleOfMusic`` in place of ``prompt``), ``/v{5,6,7}/extend/song`` and
``/v5/extend/music`` (alias ``/v1/generate/extend``); the extend routes answer 400
``{"error": "MISSING_FIELD"}`` without ``audio_url``. ``license`` may be 0-5 or a tier
name. Each body is checked once (``bodies.check_compat``); its payload (``audio_url``
renamed, ``license`` left out) then only has its files and saved voice resolved.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request, Response

import songlab.sandbox.errors as errors
from songlab.sandbox.catalog import Catalog
from songlab.sandbox.http import bodies
from songlab.sandbox.http.routes._request_io import account, create, parse_object
from songlab.sandbox.http.routes.native import generation_task
from songlab.sandbox.ports import Authenticator
from songlab.sandbox.tasks.creates import Creates, NewTask
from songlab.spec import (
    COMPAT_ROUTES,
    Compat,
    LicenseError,
    effective_license,
    parse_license,
)


def compat_license(value: Any) -> int:
    """0-5 or a tier name (the body model checked it) -> 1-5; unset is royalty-free."""
    try:
        return effective_license(None if value is None else parse_license(value))
    except LicenseError as exc:
        raise errors.invalid(exc.field, exc.rule) from None


def compat_payload(c: Compat, body: dict[str, Any]) -> dict[str, Any]:
    """The checked body as its operation's payload: renamed fields, no ``license``."""
    renames = dict(c.renames)
    p = {k: v for k, v in body.items() if k != "license" and k not in renames}
    for name, to in renames.items():
        p[to] = body[name]
    return p


def router(accounts: Authenticator, catalog: Catalog, creates: Creates) -> APIRouter:
    r = APIRouter()

    def route(path: str, c: Compat, version: str) -> None:
        async def handler(request: Request) -> Response:
            account_id = account(accounts, request)
            raw = await request.body()

            def build() -> NewTask:
                body = bodies.check_compat(c, parse_object(raw))
                tool = catalog.by_pair(c.operation, version)
                lic = compat_license(body.get("license"))
                return generation_task(
                    catalog,
                    creates.resolver(account_id),
                    tool,
                    lic,
                    compat_payload(c, body),
                    checked=True,
                )

            return await create(creates, request, account_id, build)

        handler.__name__ = f"compat_{c.operation}_{version}_{path.strip('/').replace('/', '_')}"
        r.add_api_route(path, handler, methods=["POST"], status_code=201, name=handler.__name__)

    for path, (c, version) in COMPAT_ROUTES.items():
        route(path, c, version)
    return r
