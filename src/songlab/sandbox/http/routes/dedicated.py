"""Dedicated routes: voice clones, song translation and every workflow route of the registry.

Their ``license`` is a tier name (``royalty_free`` ... ``master``, default
``royalty_free``). Each body is checked once, against the spec registry's route
(``bodies.check_route``); what remains here is resolution (the caller's files and
saved voices) and the inpainting range inside the song. Bad input is 422
InvalidGenerationInput naming the field, and nothing is billed. A voice clone writes its consent record in the create
transaction, before the task row.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, Request, Response

from songlab.pricing import estimate_translation, estimate_workflow, price
from songlab.sandbox.catalog import Catalog, tool_id
from songlab.sandbox.http import bodies
from songlab.sandbox.http.routes._request_io import account, create, parse_object
from songlab.sandbox.ports import Authenticator, Now
from songlab.sandbox.storage import billing
from songlab.sandbox.storage.db import Store
from songlab.sandbox.tasks import ratelimit
from songlab.sandbox.tasks.creates import Creates, NewTask
from songlab.sandbox.tasks.payloads import check_inside
from songlab.sandbox.tasks.validation import Resolved, Resolver
from songlab.spec import ROUTES, WORKFLOWS, Field, parse_license

if TYPE_CHECKING:
    import songlab.sandbox.engine as engine

# The workflow routes' body models (from the registry's route fields).
WORKFLOW_MODELS = {path: bodies.ROUTE_MODELS[path] for path in WORKFLOWS}


def _owned(res: Resolver, f: Field, value: object) -> tuple[str, engine.AudioInfo]:
    """A ``*_file_id`` field: a file of the caller, within the field's size and kinds."""
    return res.owned_file(
        f.name, value, max_bytes=int(f.max_bytes or 0), formats=f.formats, limit_label=f.size_label
    )


def router(accounts: Authenticator, clock: Now, catalog: Catalog, creates: Creates) -> APIRouter:
    r = APIRouter()

    async def dedicated(
        request: Request, build: Callable[[dict[str, Any], str], NewTask]
    ) -> Response:
        account_id = account(accounts, request)
        raw = await request.body()
        return await create(
            creates, request, account_id, lambda: build(parse_object(raw), account_id)
        )

    @r.post("/v1/voice-clones", status_code=201)
    async def voice_clones(request: Request) -> Response:
        return await dedicated(
            request, lambda b, a: _clone(catalog, clock, creates.resolver(a), b, a)
        )

    @r.post("/v1/song-translations", status_code=201)
    async def song_translations(request: Request) -> Response:
        return await dedicated(request, lambda b, a: _translation(creates.resolver(a), b, a))

    for route in WORKFLOWS:

        def make(route: str = route) -> Callable[[Request], Awaitable[Response]]:
            async def handler(request: Request) -> Response:
                return await dedicated(
                    request, lambda b, a: _workflow(creates.resolver(a), route, b, a)
                )

            handler.__name__ = "workflow_" + route.replace("-", "_")
            return handler

        r.add_api_route(f"/v1/{route}", make(), methods=["POST"], status_code=201)
    return r


def _clone(
    catalog: Catalog, clock: Now, res: Resolver, b: dict[str, Any], account_id: str
) -> NewTask:
    r = ROUTES["voice-clones"]
    b = bodies.check_route(r.path, b)
    fid, _ = _owned(res, r.field("reference_file_id"), b["reference_file_id"])
    version, lic = b["version"], parse_license(b["license"], names_only=True)
    attestation = b["rights_attestation"]
    tool = catalog.by_pair("vocal_clone", version)
    catalog.check_priced(tool, lic)
    consent_id = str(uuid.uuid4())

    def record_consent(store: Store, task_id: str) -> dict[str, Any]:
        store.execute(
            "INSERT INTO consents (id, account_id, reference_file_id, rights_attestation, active, "
            "created_at) VALUES (?,?,?,?,1,?)",
            (consent_id, account_id, fid, attestation, clock.now()),
        )
        return {"consent_id": consent_id}

    payload = {
        "reference_file_id": fid,
        "name": b.get("name"),
        "description": b.get("description"),
        "version": version,
        "consent_id": consent_id,
    }
    return NewTask(
        operation="vocal_clone",
        model=version,
        tool_id=tool.id,
        license=lic,
        kind="voice_clone",
        ledger_kind="voice_clone",
        payload=payload,
        resolved=Resolved(inputs={"reference": fid}),
        price_units=billing.to_units(price("vocal_clone", version, lic)),
        buckets=ratelimit.for_tool(tool.id, "vocal_clone", version),
        before_insert=record_consent,
    )


def _translation(res: Resolver, b: dict[str, Any], account_id: str) -> NewTask:
    r = ROUTES["song-translations"]
    b = bodies.check_route(r.path, b)
    fid, info = _owned(res, r.field("song_file_id"), b["song_file_id"])
    lic = parse_license(b["license"], names_only=True)
    payload = {
        "song_file_id": fid,
        "target_language": b["target_language"],
        "syllable_matched": b["syllable_matched"],
        "song_style": b["song_style"],
    }
    return NewTask(
        operation="song_translation",
        model="pipeline",
        tool_id=tool_id("song_translation", "pipeline"),
        license=lic,
        kind="translation",
        ledger_kind="translation_step",
        payload=payload,
        resolved=Resolved(inputs={"song": fid}, durations={"song": info.duration_s}),
        price_units=billing.to_units(estimate_translation(lic)),
        buckets=ratelimit.for_route("song-translations"),
    )


def _workflow(res: Resolver, route: str, b: dict[str, Any], account_id: str) -> NewTask:
    r = WORKFLOWS[route]
    b = bodies.check_route(route, b)
    resolved = Resolved()
    payload: dict[str, Any] = {}
    for f in r.fields:
        if f.name == "license":
            continue
        if f.type == "file_id":
            fid, info = _owned(res, f, b[f.name])
            resolved.inputs[f.input or f.name] = fid
            resolved.durations[f.input or f.name] = info.duration_s
            payload[f.name] = fid
        elif f.type == "voice":
            resolved.vocal_id = res.voice(f.name, b.get(f.name))
            payload[f.name] = resolved.vocal_id
        else:
            payload[f.name] = b.get(f.name)
    if route == "audio-inpainting":  # the one rule that needs the song: inside it
        check_inside(b["start_ms"], b["end_ms"], resolved.durations["song"])
    lic = parse_license(b["license"], names_only=True)
    return NewTask(
        operation=route,
        model="workflow",
        tool_id=tool_id(route, "workflow"),
        license=lic,
        kind="workflow",
        ledger_kind="workflow_step",
        payload=payload,
        resolved=resolved,
        price_units=billing.to_units(estimate_workflow(route, lic)),
        buckets=ratelimit.for_route(route),
    )
