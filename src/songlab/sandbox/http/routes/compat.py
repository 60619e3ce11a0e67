"""Compat routes: old-style URLs and field names; the tool is resolved server-side.

``/v{5,6,7}/generate/song`` and ``/generate/singing`` (``styleOfMusic`` in
place of ``prompt``), ``/v{5,6,7}/extend/song`` and ``/v5/extend/music`` (alias
``/v1/generate/extend``); the extend routes answer 400 ``{"error":
"MISSING_FIELD"}`` without ``audio_url``. ``license`` may be 0-5 or a tier name.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request, Response

import songlab.sandbox.errors as errors
from songlab.sandbox.catalog import Catalog
from songlab.sandbox.http import bodies
from songlab.sandbox.http.routes._common import account, create, parse_object
from songlab.sandbox.http.routes.native import generation_task
from songlab.sandbox.ports import Authenticator
from songlab.sandbox.tasks.creates import Creates, NewTask
from songlab.spec import SONG_VERSIONS, LicenseError, effective_license, parse_license

VERSIONS = SONG_VERSIONS
MODELS: dict[str, type[bodies.Body]] = {"generate_song": bodies.CompatSong, "generate_singing": bodies.CompatSinging,
          "extend_song": bodies.CompatExtendSong, "extend_music": bodies.CompatExtendMusic}


def compat_license(value: Any) -> int:
    """0-5 or a tier name (the body model checked it) -> 1-5; unset is royalty-free."""
    try:
        return effective_license(None if value is None else parse_license(value))
    except LicenseError as exc:
        raise errors.invalid(exc.field, exc.rule) from None


def _payload_song(body: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in body.items() if k != "license"}


def _payload_extend_song(body: dict[str, Any]) -> dict[str, Any]:
    p = {k: v for k, v in body.items() if k not in ("license", "audio_url")}
    p["song"] = body["audio_url"]
    return p


def _payload_extend_music(body: dict[str, Any]) -> dict[str, Any]:
    p = {k: v for k, v in body.items() if k not in ("license", "audio_url")}
    p["music"] = body["audio_url"]
    return p


def router(accounts: Authenticator, catalog: Catalog, creates: Creates) -> APIRouter:
    r = APIRouter()

    def route(path: str, operation: str, version: str, to_payload: Any, needs_audio: bool) -> None:
        model = MODELS[operation]

        async def handler(request: Request) -> Response:
            account_id = account(accounts, request)
            raw = await request.body()

            def build() -> NewTask:
                body = parse_object(raw)
                if needs_audio and not body.get("audio_url"):
                    raise errors.MISSING_FIELD
                body = bodies.check(model, body)
                tool = catalog.by_pair(operation, version)
                lic = compat_license(body.get("license"))
                return generation_task(catalog, creates.resolver(account_id), tool, lic,
                                       to_payload(body))

            return await create(creates, request, account_id, build)

        handler.__name__ = f"compat_{operation}_{version}_{path.strip('/').replace('/', '_')}"
        r.add_api_route(path, handler, methods=["POST"], status_code=201, name=handler.__name__)

    for v in VERSIONS:
        route(f"/{v}/generate/song", "generate_song", v, _payload_song, False)
        route(f"/{v}/generate/singing", "generate_singing", v, _payload_song, False)
        route(f"/{v}/extend/song", "extend_song", v, _payload_extend_song, True)
    route("/v5/extend/music", "extend_music", "v5", _payload_extend_music, True)
    route("/v1/generate/extend", "extend_music", "v5", _payload_extend_music, True)
    return r
