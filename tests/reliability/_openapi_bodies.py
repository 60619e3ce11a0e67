"""Request shapes for fuzzing: an overlay on the sandbox's own ``/openapi.json``.

The sandbox's routes read their bodies by hand (so that bad input gets the
spec's error bodies), which leaves the generated OpenAPI document without
request bodies, query parameters or headers. For schemathesis to fuzz them,
this module adds them, from the spec's and design.md's field tables: JSON
bodies per route, the listing's ``limit``/``cursor``, the stream's ``after``
and the ``Idempotency-Key`` header of creates. Every path and method of the
document is kept as it is; nothing is removed.
"""

from __future__ import annotations

import copy
from typing import Any

S = {"type": "string"}
I = {"type": "integer"}  # noqa: E741
B = {"type": "boolean"}
N = {"type": "number"}
LICENSE_NAME = {"type": "string", "enum": ["royalty_free", "standard", "distribution", "sync",
                                            "master"]}
FILE_INPUT = {"anyOf": [S, {"type": "object", "properties": {"url": S}},
                        {"type": "object", "properties": {"base64": S, "filename": S}}]}


def _obj(props: dict[str, Any], required: tuple[str, ...] = ()) -> dict[str, Any]:
    return {"type": "object", "properties": props, "required": list(required)}


COMPAT_SONG = _obj({"prompt": S, "lyrics": S, "vocal_id": S, "styleOfMusic": S,
                    "duration_seconds": N, "seed": I, "license": {"anyOf": [I, S]}})
COMPAT_EXTEND = _obj({"audio_url": S, "lyrics": S, "prompt": S, "extend_at_ms": I,
                      "extend_type": S, "extend_seconds": N, "side": S,
                      "license": {"anyOf": [I, S]}}, ("audio_url",))
WORKFLOW_FIELDS = {
    "beat-swaps": ("song_file_id", "prompt"), "karaoke-tracks": ("song_file_id",),
    "drumless-mixes": ("song_file_id",), "revoicings": ("song_file_id", "vocal_id"),
    "instrument-layers": ("song_file_id", "instrument"), "hummed-songs": ("hum_file_id", "prompt"),
    "trending-songs": ("genre",), "voice-songs": ("recording_file_id", "prompt"),
    "genre-remixes": ("song_file_id", "genre"), "midi-songs": ("midi_file_id", "prompt"),
    "vocal-layers": ("song_file_id", "lyrics"), "audio-inpainting": ("song_file_id", "start_ms",
                                                                     "end_ms"),
}


def _bodies(tool_ids: list[str]) -> dict[tuple[str, str], dict[str, Any]]:
    out: dict[tuple[str, str], dict[str, Any]] = {
        ("post", "/v1/generations"): _obj({
            "tool_id": {"anyOf": [{"type": "string", "enum": tool_ids}, S]},
            "license": I,
            # a string of JSON text; also a raw object (the spec's documented 500)
            "payload_json": {"anyOf": [S, {"type": "object"}]},
        }, ("tool_id", "payload_json")),
        ("post", "/v1/voice-clones"): _obj({
            "reference_file_id": S, "name": S, "description": S,
            "version": {"type": "string", "enum": ["v5", "v6", "v7"]}, "license": LICENSE_NAME,
            "consent": B, "rights_attestation": S,
        }, ("reference_file_id", "consent", "rights_attestation")),
        ("post", "/v1/song-translations"): _obj({
            "song_file_id": S, "target_language": S, "syllable_matched": B, "song_style": S,
            "license": LICENSE_NAME,
        }, ("song_file_id", "target_language", "song_style")),
    }
    for v in ("v5", "v6", "v7"):
        out[("post", f"/{v}/generate/song")] = COMPAT_SONG
        out[("post", f"/{v}/generate/singing")] = COMPAT_SONG
        out[("post", f"/{v}/extend/song")] = COMPAT_EXTEND
    out[("post", "/v5/extend/music")] = COMPAT_EXTEND
    out[("post", "/v1/generate/extend")] = COMPAT_EXTEND
    for route, required in WORKFLOW_FIELDS.items():
        props = {name: (I if name.endswith("_ms") else S) for name in required}
        props.update({"lyrics": S, "prompt": S, "vocal_id": S, "license": LICENSE_NAME})
        out[("post", f"/v1/{route}")] = _obj(props, required)
    return out


def with_request_shapes(doc: dict[str, Any], tool_ids: list[str]) -> dict[str, Any]:
    """A copy of ``doc`` with request bodies and query parameters added."""
    doc = copy.deepcopy(doc)
    bodies = _bodies(tool_ids)
    for path, ops in doc["paths"].items():
        for method, op in ops.items():
            params = op.setdefault("parameters", [])
            if (method, path) in bodies:
                op["requestBody"] = {"required": True, "content": {
                    "application/json": {"schema": bodies[(method, path)]}}}
            if method == "post" and path == "/v1/files":
                op["requestBody"] = {"required": True, "content": {
                    "application/json": {"schema": _obj({"source_url": S}, ("source_url",))},
                    "multipart/form-data": {"schema": _obj(
                        {"file": {"type": "string", "format": "binary"}}, ("file",))},
                }}
            if method == "get" and path == "/v1/generations":
                params += [{"name": "limit", "in": "query", "required": False, "schema": I},
                           {"name": "cursor", "in": "query", "required": False, "schema": S}]
            if method == "get" and path.endswith("/stream"):
                params.append({"name": "after", "in": "query", "required": False, "schema": S})
    return doc
