"""Per-operation rules for the payload of a generation (native, compat, Agent sub-tasks).

One function per operation family, following the payload tables of the spec
(extend, Agent One) and of design.md (the operations the spec leaves open).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from songlab.sandbox import errors
from songlab.sandbox.storage.files import UPLOAD_MAX_BYTES
from songlab.sandbox.tasks.validation import (
    AUDIO_FORMATS,
    MIDI,
    MP3_M4A,
    UUID_RE,
    Resolved,
    Resolver,
    boolean,
    choice,
    integer,
    number,
    string,
)
from songlab.spec import AUDIO_EFFECTS, LIMITS

EXTEND_BYTES = int(LIMITS["extend_input_bytes"])
SEED_MAX = 2**32 - 1  # as bodies.SEED_MAX: numpy takes any non-negative seed
Validator = Callable[[dict, Resolver, str], Resolved]


def _file(p: dict, r: Resolver, out: Resolved, name: str, *, required: bool = True,
          formats: tuple[str, ...] = AUDIO_FORMATS, max_bytes: int = UPLOAD_MAX_BYTES,
          label: str | None = None) -> None:
    if p.get(name) is None:
        if required:
            raise errors.invalid(name, "is required (a file input)")
        return
    fid, info = r.file_input(name, p[name], max_bytes=max_bytes, formats=formats,
                             limit_label=label)
    out.inputs[name] = fid
    out.durations[name] = info.duration_s


def _song_like(p: dict, r: Resolver, operation: str) -> Resolved:
    out = Resolved()
    string(p, "prompt", required=operation in ("generate_song", "generate_music"))
    string(p, "lyrics")
    number(p, "duration_seconds", lo=5.0, hi=240.0)
    integer(p, "seed", lo=0, hi=SEED_MAX)
    file_field = {"similar_song": "song", "similar_music": "music", "melody_to_song": "melody",
                  "midi_to_song": "midi", "remix_song": "song"}.get(operation)
    if file_field is not None:
        _file(p, r, out, file_field, formats=MIDI if file_field == "midi" else AUDIO_FORMATS)
    if operation == "melody_to_song" and p.get("vocal_id") is not None:
        raise errors.invalid("vocal_id", "a saved voice does not work with melody_to_song")
    if operation in ("generate_song", "similar_song", "midi_to_song", "remix_song"):
        out.vocal_id = r.voice("vocal_id", p.get("vocal_id"))
    return out


def _singing(p: dict, r: Resolver, operation: str) -> Resolved:
    out = Resolved()
    string(p, "prompt")
    string(p, "styleOfMusic")
    string(p, "lyrics", required=True)
    integer(p, "seed", lo=0, hi=SEED_MAX)
    number(p, "duration_seconds", lo=5.0, hi=240.0)
    _file(p, r, out, "vocal_reference", required=False)
    out.vocal_id = r.voice("vocal_id", p.get("vocal_id"))
    return out


def _extend_song(p: dict, r: Resolver, operation: str) -> Resolved:
    out = Resolved()
    _file(p, r, out, "song", formats=MP3_M4A, max_bytes=EXTEND_BYTES, label="40 MB")
    string(p, "lyrics", max_len=int(LIMITS["extend_lyrics_chars"]))
    integer(p, "extend_at_ms")  # range enforced by clamping at generation time
    number(p, "duration_seconds", lo=5.0, hi=240.0)  # songlab's: length of the new part
    string(p, "extend_type")  # an unknown value fails during generation
    return out


def _extend_music(p: dict, r: Resolver, operation: str) -> Resolved:
    out = Resolved()
    _file(p, r, out, "music", formats=MP3_M4A, max_bytes=EXTEND_BYTES, label="40 MB")
    string(p, "prompt")
    number(p, "extend_seconds", lo=float(LIMITS["extend_seconds_min"]),
           hi=float(LIMITS["extend_seconds_max"]))
    choice(p, "side", ("tail", "head"))
    return out


def _inpaint(p: dict, r: Resolver, operation: str) -> Resolved:
    out = Resolved()
    _file(p, r, out, "song")
    check_range(p, out.durations["song"])
    string(p, "lyrics")
    return out


def check_range(p: dict, duration_s: float) -> None:
    start = integer(p, "start_ms", lo=0, required=True)
    end = integer(p, "end_ms", lo=0, required=True)
    if end <= start:
        raise errors.invalid("end_ms", f"must be greater than start_ms ({start}), got {end}")
    song_ms = int(duration_s * 1000)
    if song_ms and end > song_ms:
        raise errors.invalid("end_ms", f"must be inside the song ({song_ms} ms), got {end}")


def _audio_only(p: dict, r: Resolver, operation: str) -> Resolved:
    out = Resolved()
    _file(p, r, out, "audio")
    if operation == "transcribe":
        string(p, "language")
    if operation == "audio_effect":
        choice(p, "effect", AUDIO_EFFECTS, required=True)
        number(p, "amount", lo=0.0, hi=1.0)
    return out


def _write_lyrics(p: dict, r: Resolver, operation: str) -> Resolved:
    string(p, "prompt")
    return Resolved()


def _sfx(p: dict, r: Resolver, operation: str) -> Resolved:
    string(p, "prompt", required=True)
    number(p, "duration_seconds", lo=0.5, hi=30.0)
    return Resolved()


def _vocal_clone(p: dict, r: Resolver, operation: str) -> Resolved:
    """Native vocal_clone: only with a consent_id issued by POST /v1/voice-clones."""
    consent_id = p.get("consent_id")
    if not isinstance(consent_id, str) or not UUID_RE.match(consent_id):
        raise errors.invalid("consent_id", "is required: a consent id issued by POST /v1/voice-clones")
    row = r.svc.store.one("SELECT account_id, reference_file_id, active FROM consents WHERE id = ?",
                          (consent_id,))
    if row is None or row[0] != r.account_id or not row[2]:
        raise errors.invalid("consent_id", "is not an active consent record of this account")
    out = Resolved()
    ref = p.get("reference_file_id", row[1])
    fid, info = r.owned_file("reference_file_id", ref, max_bytes=int(LIMITS["voice_clone_reference_bytes"]),
                             formats=MP3_M4A, limit_label="15 MiB")
    out.inputs["reference"] = fid
    return out


def _agent(p: dict, r: Resolver, operation: str) -> Resolved:
    for key in p:
        if key == "studio" or key.startswith("visualizer_"):
            raise errors.invalid(key, "belongs to the studio editing surface and must be left unset")
    string(p, "prompt", required=True)
    string(p, "system_prompt")
    integer(p, "max_steps", lo=0, hi=int(LIMITS["agent_max_steps_max"]))
    integer(p, "max_budget", lo=0)
    boolean(p, "workflow_build_only")
    return Resolved()


def _internal(p: dict, r: Resolver, operation: str) -> Resolved:
    out = Resolved()
    for name, value in p.items():
        if name in ("audio", "song", "music") or name.startswith("track"):
            fid, info = r.file_input(name, value, max_bytes=UPLOAD_MAX_BYTES, formats=AUDIO_FORMATS)
            out.inputs[name] = fid
    return out


VALIDATORS: dict[str, Validator] = {
    "generate_song": _song_like, "similar_song": _song_like, "melody_to_song": _song_like,
    "midi_to_song": _song_like, "generate_music": _song_like, "similar_music": _song_like,
    "remix_song": _song_like, "generate_singing": _singing, "extend_song": _extend_song,
    "extend_music": _extend_music, "inpaint": _inpaint, "separate_stems": _audio_only,
    "copyright": _audio_only, "transcribe": _audio_only, "audio_effect": _audio_only,
    "write_lyrics": _write_lyrics, "sfx_gen": _sfx, "vocal_clone": _vocal_clone, "agent": _agent,
    "web_search": _internal, "mix": _internal, "translate_lyrics": _internal,
}


def validate(operation: str, payload: Any, r: Resolver) -> Resolved:
    if not isinstance(payload, dict):
        raise errors.invalid("payload_json", "must encode a JSON object")
    out = VALIDATORS[operation](payload, r, operation)
    out.new_files = list(r.new_files)
    return out
