"""Dedicated routes: voice clones, song translation and the twelve workflow routes.

Their ``license`` is a tier name (``royalty_free`` ... ``master``, default
``royalty_free``). Bad input is 422 InvalidGenerationInput naming the field,
and nothing is billed. A voice clone writes its consent record in the create
transaction, before the task row.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from fastapi import APIRouter, Request, Response

from songlab.pricing import estimate_translation, estimate_workflow, price
from songlab.sandbox import errors
from songlab.sandbox.catalog import tool_id
from songlab.sandbox.http import bodies
from songlab.sandbox.http.routes._common import account, create, parse_object
from songlab.sandbox.service import Sandbox
from songlab.sandbox.storage import billing
from songlab.sandbox.storage.db import Store
from songlab.sandbox.storage.files import UPLOAD_MAX_BYTES
from songlab.sandbox.tasks import ratelimit
from songlab.sandbox.tasks.creates import NewTask
from songlab.sandbox.tasks.payloads import check_range
from songlab.sandbox.tasks.validation import (
    AUDIO_FORMATS,
    MIDI,
    MP3_M4A,
    Resolved,
    Resolver,
    boolean,
    choice,
    string,
)
from songlab.spec import LICENSE_BY_NAME, LIMITS, SONG_VERSIONS

CLONE_BYTES = int(LIMITS["voice_clone_reference_bytes"])
TRANSLATION_BYTES = int(LIMITS["translation_source_bytes"])

# route -> (file fields as (body field, input name, formats), string fields as (name, required))
WORKFLOW_FIELDS: dict[str, tuple[list[tuple[str, str, tuple[str, ...]]], list[tuple[str, bool]]]] = {
    "beat-swaps": ([("song_file_id", "song", AUDIO_FORMATS)], [("prompt", True)]),
    "karaoke-tracks": ([("song_file_id", "song", AUDIO_FORMATS)], []),
    "drumless-mixes": ([("song_file_id", "song", AUDIO_FORMATS)], []),
    "revoicings": ([("song_file_id", "song", AUDIO_FORMATS)], [("lyrics", False)]),
    "instrument-layers": ([("song_file_id", "song", AUDIO_FORMATS)], [("instrument", True)]),
    "hummed-songs": ([("hum_file_id", "hum", AUDIO_FORMATS)], [("prompt", True), ("lyrics", False)]),
    "trending-songs": ([], [("genre", True), ("prompt", False), ("lyrics", False)]),
    "voice-songs": ([("recording_file_id", "recording", AUDIO_FORMATS)],
                    [("prompt", True), ("lyrics", False)]),
    "genre-remixes": ([("song_file_id", "song", AUDIO_FORMATS)], [("genre", True)]),
    "midi-songs": ([("midi_file_id", "midi", MIDI)], [("prompt", True), ("lyrics", False)]),
    "vocal-layers": ([("song_file_id", "song", AUDIO_FORMATS)], [("lyrics", True)]),
    "audio-inpainting": ([("song_file_id", "song", AUDIO_FORMATS)], [("lyrics", False)]),
}
VOCAL_ID_RULE = {"revoicings": True, "vocal-layers": False}  # route -> required
WORKFLOW_MODELS = {
    route: bodies.workflow_model(route, [f for f, _, _ in files], strings, VOCAL_ID_RULE.get(route))
    for route, (files, strings) in WORKFLOW_FIELDS.items()
}


def tier_license(value: Any) -> int:
    """A dedicated-route license: a tier name, default royalty_free."""
    if value is None:
        return 1
    if not isinstance(value, str) or value not in LICENSE_BY_NAME:
        raise errors.invalid("license", f"must be one of {', '.join(LICENSE_BY_NAME)}")
    return LICENSE_BY_NAME[value]


def router(svc: Sandbox) -> APIRouter:
    r = APIRouter()

    async def dedicated(request: Request, build: Callable[[dict, str], NewTask]) -> Response:
        account_id = account(svc, request)
        raw = await request.body()
        return await create(svc, request, account_id,
                            lambda: build(parse_object(raw), account_id))

    @r.post("/v1/voice-clones", status_code=201)
    async def voice_clones(request: Request) -> Response:
        return await dedicated(request, lambda b, a: _clone(svc, b, a))

    @r.post("/v1/song-translations", status_code=201)
    async def song_translations(request: Request) -> Response:
        return await dedicated(request, lambda b, a: _translation(svc, b, a))

    for route in WORKFLOW_FIELDS:
        def make(route: str = route) -> Callable:
            async def handler(request: Request) -> Response:
                return await dedicated(request, lambda b, a: _workflow(svc, route, b, a))
            handler.__name__ = "workflow_" + route.replace("-", "_")
            return handler

        r.add_api_route(f"/v1/{route}", make(), methods=["POST"], status_code=201)
    return r


def _clone(svc: Sandbox, b: dict, account_id: str) -> NewTask:
    b = bodies.check(bodies.VoiceClone, b)
    res = Resolver(svc, account_id)
    fid, _ = res.owned_file("reference_file_id", b.get("reference_file_id"),
                            max_bytes=CLONE_BYTES, formats=MP3_M4A, limit_label="15 MiB")
    name = string(b, "name", max_len=int(LIMITS["voice_clone_name_chars"]))
    description = string(b, "description", max_len=int(LIMITS["voice_clone_description_chars"]))
    version = choice(b, "version", SONG_VERSIONS, default="v5")
    lic = tier_license(b.get("license"))
    if b.get("consent") is not True:
        raise errors.invalid("consent", "must be true (consent of the voice's owner)")
    attestation = string(b, "rights_attestation", required=True,
                         max_len=int(LIMITS["rights_attestation_chars"]))
    tool = svc.catalog.by_pair("vocal_clone", version)
    svc.catalog.check_priced(tool, lic)
    consent_id = str(uuid.uuid4())

    def record_consent(store: Store, task_id: str) -> dict[str, Any]:
        store.execute(
            "INSERT INTO consents (id, account_id, reference_file_id, rights_attestation, active, "
            "created_at) VALUES (?,?,?,?,1,?)",
            (consent_id, account_id, fid, attestation, svc.clock.now()))
        return {"consent_id": consent_id}

    payload = {"reference_file_id": fid, "name": name, "description": description,
               "version": version, "consent_id": consent_id}
    return NewTask(
        operation="vocal_clone", model=version, tool_id=tool.id, license=lic, kind="voice_clone",
        ledger_kind="voice_clone", payload=payload, resolved=Resolved(inputs={"reference": fid}),
        price_units=billing.to_units(price("vocal_clone", version, lic)),
        buckets=ratelimit.for_tool(tool.id, "vocal_clone", version), before_insert=record_consent)


def _translation(svc: Sandbox, b: dict, account_id: str) -> NewTask:
    b = bodies.check(bodies.SongTranslation, b)
    res = Resolver(svc, account_id)
    fid, info = res.owned_file("song_file_id", b.get("song_file_id"), max_bytes=TRANSLATION_BYTES,
                               formats=AUDIO_FORMATS, limit_label="60 MiB")
    target = string(b, "target_language", required=True, max_len=100)
    syllable = boolean(b, "syllable_matched", default=True)
    style = string(b, "song_style", required=True, max_len=2000)
    lic = tier_license(b.get("license"))
    payload = {"song_file_id": fid, "target_language": target, "syllable_matched": syllable,
               "song_style": style}
    return NewTask(
        operation="song_translation", model="pipeline",
        tool_id=tool_id("song_translation", "pipeline"), license=lic, kind="translation",
        ledger_kind="translation_step", payload=payload,
        resolved=Resolved(inputs={"song": fid}, durations={"song": info.duration_s}),
        price_units=billing.to_units(estimate_translation(lic)),
        buckets=ratelimit.for_route("song-translations"))


def _workflow(svc: Sandbox, route: str, b: dict, account_id: str) -> NewTask:
    b = bodies.check(WORKFLOW_MODELS[route], b)
    res = Resolver(svc, account_id)
    files, strings = WORKFLOW_FIELDS[route]
    resolved = Resolved()
    payload: dict[str, Any] = {}
    for field, name, formats in files:
        fid, info = res.owned_file(field, b.get(field), max_bytes=UPLOAD_MAX_BYTES,
                                   formats=formats)
        resolved.inputs[name] = fid
        resolved.durations[name] = info.duration_s
        payload[field] = fid
    for field, required in strings:
        payload[field] = string(b, field, required=required, max_len=5000)
    if route in VOCAL_ID_RULE:
        if VOCAL_ID_RULE[route] and b.get("vocal_id") is None:
            raise errors.invalid("vocal_id", "is required (a vocal_id from a voice clone)")
        resolved.vocal_id = res.voice("vocal_id", b.get("vocal_id"))
        payload["vocal_id"] = resolved.vocal_id
    if route == "audio-inpainting":
        check_range(b, resolved.durations["song"])
        payload["start_ms"], payload["end_ms"] = b["start_ms"], b["end_ms"]
    lic = tier_license(b.get("license"))
    return NewTask(
        operation=route, model="workflow", tool_id=tool_id(route, "workflow"), license=lic,
        kind="workflow", ledger_kind="workflow_step", payload=payload, resolved=resolved,
        price_units=billing.to_units(estimate_workflow(route, lic)),
        buckets=ratelimit.for_route(route))
