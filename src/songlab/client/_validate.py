"""Client-side validation: every rule of the spec the client can check before sending.

Each check raises :class:`ValidationError` (a ``ValueError``) naming the field and
the rule, before any request is built. The one thing the service clamps rather
than rejects (``extend_at_ms``) is a :class:`ClampWarning` saying what will be
applied. Rules come from the spec's Limits table and design.md's payload tables.
"""

from __future__ import annotations

import json
import math
import re
import warnings
from collections.abc import Mapping
from typing import Any

from songlab.client._errors import ValidationError
from songlab.spec import (
    AGENT_TIERS,
    AUDIO_EFFECTS,
    LICENSE_BY_NAME,
    LICENSE_NAMES_WITH_UNSET,
    LIMITS,
    SONG_VERSIONS,
)

__all__ = ["ClampWarning", "ValidationError"]

_KEY_RE = re.compile(r"[A-Za-z0-9_.:\-]{1,200}")
AUDIO_MIME = {"audio/mpeg": "mp3", "audio/mp3": "mp3", "audio/mp4": "m4a", "audio/x-m4a": "m4a",
              "audio/m4a": "m4a", "audio/aac": "m4a"}


class ClampWarning(UserWarning):
    """A value the service will clamp rather than reject; the message says what applies."""


def require(cond: bool, field: str, rule: str) -> None:
    if not cond:
        raise ValidationError(field, rule)


def idempotency_key(key: Any) -> str:
    require(isinstance(key, str), "idempotency_key", "must be a string")
    require(len(key) <= LIMITS["idempotency_key_max"], "idempotency_key",
            f"at most 200 characters (got {len(key)})")
    require(bool(_KEY_RE.fullmatch(key)), "idempotency_key",
            "only characters A-Z a-z 0-9 _ . : - (and not empty)")
    return str(key)


def license_number(value: Any, field: str = "license") -> int:
    """Native routes: 0-5 (0 = unset = royalty-free) or a tier name -> the integer sent."""
    if isinstance(value, bool):
        raise ValidationError(field, "an integer 0-5 or a tier name, not a bool")
    if isinstance(value, int):
        require(0 <= value <= 5, field, f"an integer 0-5 (0 = unset = royalty_free), got {value}")
        return value
    if isinstance(value, str):
        require(value in LICENSE_BY_NAME, field,
                f"one of {', '.join(LICENSE_BY_NAME)}, got {value!r}")
        return LICENSE_BY_NAME[value]
    raise ValidationError(field, f"an integer 0-5 or a tier name, got {type(value).__name__}")


def license_name(value: Any, field: str = "license") -> str:
    """Dedicated and workflow routes: a tier name (an integer 0-5 is converted)."""
    return LICENSE_NAMES_WITH_UNSET[license_number(value, field)]


def text(value: Any, field: str, *, max_chars: int | None = None, required: bool = False,
         nonempty: bool = False) -> None:
    if value is None:
        require(not required, field, "required")
        return
    require(isinstance(value, str), field, f"must be a string, got {type(value).__name__}")
    if nonempty or required:
        require(bool(value.strip()), field, "must not be empty")
    if max_chars is not None:
        require(len(value) <= max_chars, field,
                f"at most {max_chars} characters (got {len(value)})")


def integer(value: Any, field: str, lo: int | None = None, hi: int | None = None) -> None:
    require(isinstance(value, int) and not isinstance(value, bool), field,
            f"must be an integer, got {type(value).__name__}")
    if lo is not None and hi is not None:
        require(lo <= value <= hi, field, f"must be in {lo}-{hi}, got {value}")
    elif lo is not None:
        require(value >= lo, field, f"must be >= {lo}, got {value}")


def number(value: Any, field: str, lo: float, hi: float) -> None:
    require(isinstance(value, int | float) and not isinstance(value, bool), field,
            f"must be a number, got {type(value).__name__}")
    require(math.isfinite(value) and lo <= value <= hi, field, f"must be in {lo:g}-{hi:g}, got {value}")


def choice(value: Any, field: str, options: tuple[str, ...]) -> None:
    require(value in options, field, f"one of {', '.join(options)}, got {value!r}")


def file_input(value: Any, field: str, *, required: bool = True) -> None:
    """A file input: ``{"url": ...}``, a bare URL string, or ``{"base64": ...}``."""
    if value is None:
        require(not required, field, "required (a {'url': ...} object, a URL string or base64)")
        return
    if isinstance(value, str):
        require(bool(value), field, "must not be empty")
        return
    require(isinstance(value, Mapping) and ("url" in value or "base64" in value), field,
            "a {'url': ...} object, a URL string or {'base64': ...}")


def check_file(field: str, *, size: int | None, mime_type: str | None, filename: str | None,
               max_bytes: int, limit_text: str, formats: tuple[str, ...] | None = None) -> None:
    """Size and (optionally) format of a file the client knows about."""
    if size is not None:
        require(size <= max_bytes, field, f"at most {limit_text} ({max_bytes} bytes), got {size}")
    if formats:
        fmt = AUDIO_MIME.get((mime_type or "").split(";")[0].strip().lower())
        if fmt is None and filename and "." in filename:
            fmt = filename.rsplit(".", 1)[1].lower()
        if fmt is not None or mime_type:
            require(fmt in formats, field,
                    f"must be {' or '.join(formats)}, got {mime_type or filename}")


def _no_constant(name: str) -> None:
    raise ValueError(f"{name} is not JSON")


def payload_json(payload: Any, field: str = "payload") -> str:
    """The payload as JSON text: ``payload_json`` is always sent as a string.

    Strict JSON only: NaN and Infinity (which Python's json would write) are refused.
    """
    if isinstance(payload, str):
        try:
            obj = json.loads(payload, parse_constant=_no_constant)
        except (ValueError, RecursionError) as e:
            raise ValidationError(field, f"a JSON object or its text; not JSON ({e})") from None
        require(isinstance(obj, dict), field, "must encode a JSON object")
        return payload
    require(isinstance(payload, Mapping), field,
            f"a dict (JSON object), got {type(payload).__name__}")
    try:
        return json.dumps(dict(payload), separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError, RecursionError) as e:
        raise ValidationError(field, f"must be JSON-serialisable ({e})") from None


def extend_at_ms(value: Any) -> None:
    integer(value, "payload.extend_at_ms")
    lo, hi = LIMITS["extend_at_ms_min"], LIMITS["extend_at_ms_max"]
    if value == 0 or lo <= value <= hi:
        return
    applied = int(lo) if value < lo else int(hi)
    warnings.warn(
        ClampWarning(f"payload.extend_at_ms={value} is outside 0 or {lo}-{hi}; "
                     f"the service clamps it and will apply {applied}"),
        stacklevel=4,
    )


def no_studio_fields(payload: Mapping[str, Any], field: str = "payload") -> None:
    for key in payload:
        require(not (key == "studio" or str(key).startswith("visualizer_")), f"{field}.{key}",
                "studio and visualizer_* fields belong to the studio surface; leave them unset")


def agent_payload(p: Mapping[str, Any]) -> None:
    text(p.get("prompt"), "payload.prompt", required=True)
    text(p.get("system_prompt"), "payload.system_prompt")
    if p.get("max_steps") is not None:
        integer(p["max_steps"], "payload.max_steps", 0, int(LIMITS["agent_max_steps_max"]))
    if p.get("max_budget") is not None:
        integer(p["max_budget"], "payload.max_budget", lo=0)
    if p.get("workflow_build_only") is not None:
        require(isinstance(p["workflow_build_only"], bool), "payload.workflow_build_only",
                "must be a boolean")
    no_studio_fields(p)


def _song_like(p: Mapping[str, Any]) -> None:
    text(p.get("prompt"), "payload.prompt", required=True)
    text(p.get("lyrics"), "payload.lyrics")
    if p.get("duration_seconds") is not None:
        number(p["duration_seconds"], "payload.duration_seconds", 5.0, 240.0)


def _payload_rules(operation: str, p: Mapping[str, Any]) -> None:
    f = "payload."
    if operation in ("generate_song", "generate_music"):
        _song_like(p)
        if operation == "generate_song":
            text(p.get("vocal_id"), f + "vocal_id")
            require("melody_url" not in p or "vocal_id" not in p, f + "vocal_id",
                    "a saved voice does not work with melody_url")
    elif operation == "generate_singing":
        text(p.get("lyrics"), f + "lyrics", required=True)
        file_input(p.get("vocal_reference"), f + "vocal_reference", required=False)
    elif operation in ("similar_song", "similar_music"):
        key = "song" if operation == "similar_song" else "music"
        file_input(p.get(key), f + key)
    elif operation == "melody_to_song":
        file_input(p.get("melody"), f + "melody")
        require("vocal_id" not in p, f + "vocal_id",
                "a saved voice does not work with melody_to_song (melody_url)")
    elif operation == "midi_to_song":
        file_input(p.get("midi"), f + "midi")
    elif operation == "remix_song":
        file_input(p.get("song"), f + "song")
    elif operation == "extend_song":
        file_input(p.get("song"), f + "song")
        text(p.get("lyrics"), f + "lyrics", max_chars=int(LIMITS["extend_lyrics_chars"]))
        if p.get("extend_type") is not None:
            choice(p["extend_type"], f + "extend_type", ("tail", "head"))
        if p.get("extend_at_ms") is not None:
            extend_at_ms(p["extend_at_ms"])
    elif operation == "extend_music":
        file_input(p.get("music"), f + "music")
        if p.get("extend_seconds") is not None:
            number(p["extend_seconds"], f + "extend_seconds", 1.0, 120.0)
        if p.get("side") is not None:
            choice(p["side"], f + "side", ("tail", "head"))
    elif operation == "inpaint":
        file_input(p.get("song"), f + "song")
        time_range(p.get("start_ms"), p.get("end_ms"), f + "start_ms", f + "end_ms")
    elif operation in ("separate_stems", "copyright", "transcribe"):
        file_input(p.get("audio"), f + "audio")
    elif operation == "audio_effect":
        file_input(p.get("audio"), f + "audio")
        choice(p.get("effect"), f + "effect", AUDIO_EFFECTS)
        if p.get("amount") is not None:
            number(p["amount"], f + "amount", 0.0, 1.0)
    elif operation == "sfx_gen":
        text(p.get("prompt"), f + "prompt", required=True)
        if p.get("duration_seconds") is not None:
            number(p["duration_seconds"], f + "duration_seconds", 0.5, 30.0)
    elif operation == "write_lyrics":
        text(p.get("prompt"), f + "prompt")  # optional (design.md), as the service has it
    elif operation == "agent":
        agent_payload(p)
    elif operation == "vocal_clone":
        raise ValidationError("tool_id", "voice clones are created with client.voice_clones.create "
                              "(POST /v1/voice-clones), which records consent first")


# Native file fields with a size/format limit: operation -> (field, bytes, text, formats).
FILE_LIMITS: dict[str, tuple[str, int, str, tuple[str, ...]]] = {
    "extend_song": ("song", int(LIMITS["extend_input_bytes"]), "40 MB", ("mp3", "m4a")),
    "extend_music": ("music", int(LIMITS["extend_input_bytes"]), "40 MB", ("mp3", "m4a")),
}


def referenced_file_id(value: Any) -> str | None:
    """The file id of a ``file_id:<id>`` file input (string or ``{"url": ...}``), else None."""
    url = value.get("url") if isinstance(value, Mapping) else value
    if isinstance(url, str) and url.startswith("file_id:"):
        return url[len("file_id:"):]
    return None


def payload_for(operation: str | None, payload: Any, known_files: Mapping[str, Any] | None = None) -> None:
    """Check a native payload against the rules of its operation (when known).

    ``known_files`` (file id -> UploadedFile) lets size and format limits be
    checked for ``file_id:<id>`` inputs of files this client uploaded.
    """
    if operation is None or not isinstance(payload, Mapping):
        return
    _payload_rules(operation, payload)
    if operation in FILE_LIMITS:
        field, max_bytes, limit_text, formats = FILE_LIMITS[operation]
        known_file_input(payload.get(field), "payload." + field, known_files or {},
                         max_bytes=max_bytes, limit_text=limit_text, formats=formats)


def known_file_input(value: Any, field: str, known_files: Mapping[str, Any], *, max_bytes: int,
                     limit_text: str, formats: tuple[str, ...]) -> None:
    fid = referenced_file_id(value)
    info = known_files.get(fid) if fid else None
    if info is not None:
        check_file(field, size=info.size_bytes, mime_type=info.mime_type, filename=None,
                   max_bytes=max_bytes, limit_text=limit_text, formats=formats)


def time_range(start: Any, end: Any, start_field: str, end_field: str) -> None:
    integer(start, start_field, lo=0)
    integer(end, end_field, lo=0)
    require(end > start, end_field, f"must be greater than {start_field.rsplit('.', 1)[-1]} "
            f"({end} <= {start})")


def version(value: Any, field: str = "version") -> None:
    choice(value, field, SONG_VERSIONS)


def tier(value: Any) -> None:
    choice(value, "tier", AGENT_TIERS)


def list_limit(value: Any) -> None:
    integer(value, "limit", 1, int(LIMITS["list_limit_max"]))


# Workflow routes: (required fields, optional fields), from design.md.
WORKFLOW_FIELDS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "beat-swaps": (("song_file_id", "prompt"), ()),
    "karaoke-tracks": (("song_file_id",), ()),
    "drumless-mixes": (("song_file_id",), ()),
    "revoicings": (("song_file_id", "vocal_id"), ()),
    "instrument-layers": (("song_file_id", "instrument"), ()),
    "hummed-songs": (("hum_file_id", "prompt"), ("lyrics",)),
    "trending-songs": (("genre",), ("prompt", "lyrics")),
    "voice-songs": (("recording_file_id", "prompt"), ("lyrics",)),
    "genre-remixes": (("song_file_id", "genre"), ()),
    "midi-songs": (("midi_file_id", "prompt"), ("lyrics",)),
    "vocal-layers": (("song_file_id", "lyrics"), ("vocal_id",)),
    "audio-inpainting": (("song_file_id", "start_ms", "end_ms"), ("lyrics",)),
}


def workflow_body(route: str, fields: Mapping[str, Any]) -> None:
    required, optional = WORKFLOW_FIELDS[route]
    for name in fields:
        require(name in required or name in optional, name,
                f"not a field of /v1/{route} (fields: {', '.join(required + optional)})")
    for name in required:
        require(fields.get(name) is not None, name, f"required by /v1/{route}")
    for name, value in fields.items():
        if value is not None and name not in ("start_ms", "end_ms"):
            text(value, name, nonempty=name in required)
    if route == "audio-inpainting":
        time_range(fields.get("start_ms"), fields.get("end_ms"), "start_ms", "end_ms")
