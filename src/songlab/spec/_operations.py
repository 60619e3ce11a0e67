"""The operations of the catalog and the internal tools: each one's payload fields, models,
pricing key, simulated seconds and form rule (``REGISTRY``)."""

from __future__ import annotations

from typing import Any, Final

from songlab.spec._entries import Field, Form, Operation
from songlab.spec._limits import LIMITS
from songlab.spec._vocabulary import (
    AGENT_TIERS,
    AUDIO_EFFECTS,
    AUDIO_FORMATS,
    EXTEND_SIDES,
    MIDI,
    MP3_M4A,
    SONG_VERSIONS,
    STEM_MODELS,
    TRANSCRIBE_MODEL,
)

__all__ = [
    "INTERNAL_OPERATIONS",
    "OPERATIONS",
    "REGISTRY",
    "operation",
]


def _num(name: str, lo: str, hi: str, default: str | None = None, **kw: Any) -> Field:
    return Field(
        name,
        "number",
        min=float(LIMITS[lo]),
        max=float(LIMITS[hi]),
        default=None if default is None else float(LIMITS[default]),
        **kw,
    )


def _song_seconds(**kw: Any) -> Field:
    return _num(
        "duration_seconds", "song_seconds_min", "song_seconds_max", "song_seconds_default", **kw
    )


def _file(
    name: str,
    formats: tuple[str, ...] = AUDIO_FORMATS,
    *,
    required: bool = True,
    max_bytes: int | None = None,
    size_label: str | None = None,
) -> Field:
    return Field(
        name,
        "file",
        required=required,
        formats=formats,
        max_bytes=int(LIMITS["upload_bytes"]) if max_bytes is None else max_bytes,
        size_label=size_label,
    )


_SEED = Field("seed", "integer", min=0, max=LIMITS["seed_max"])
_LYRICS = Field("lyrics", "string")
_VOCAL_ID = Field("vocal_id", "voice")
_V5 = ("v5",)
_EXTEND_BYTES = int(LIMITS["extend_input_bytes"])


def _song_like(
    name: str,
    title: str,
    file: Field | None,
    *,
    prompt_required: bool = False,
    pricing_key: str = "song",
    voice: bool = True,
    sim: float = 5.0,
    forbidden: tuple[tuple[str, str], ...] = (),
    form: Form | None = None,
) -> Operation:
    fields = [Field("prompt", "string", required=prompt_required), _LYRICS, _song_seconds(), _SEED]
    if file is not None:
        fields.append(file)
    if voice:
        fields.append(_VOCAL_ID)
    return Operation(
        name,
        title,
        SONG_VERSIONS,
        tuple(fields),
        pricing_key,
        sim,
        voice=voice,
        forbidden=forbidden,
        form=form,
    )


_OPERATIONS: tuple[Operation, ...] = (
    _song_like(
        "generate_song",
        "Song generation",
        None,
        prompt_required=True,
        form=Form(prompt=True, lyrics="optional", duration=True, vocal_id=True),
    ),
    _song_like("similar_song", "Similar song", _file("song")),
    _song_like(
        "melody_to_song",
        "Melody to song",
        _file("melody"),
        voice=False,
        forbidden=(("vocal_id", "a saved voice does not work with melody_to_song"),),
    ),
    _song_like("midi_to_song", "MIDI to song", _file("midi", MIDI)),
    _song_like(
        "generate_music",
        "Music generation",
        None,
        prompt_required=True,
        pricing_key="music",
        voice=False,
        sim=4.0,
        form=Form(prompt=True, lyrics="none", duration=True, vocal_id=False),
    ),
    _song_like(
        "similar_music", "Similar music", _file("music"), pricing_key="music", voice=False, sim=4.0
    ),
    Operation(
        "generate_singing",
        "Singing generation",
        SONG_VERSIONS,
        (
            Field("prompt", "string"),
            Field("styleOfMusic", "string"),
            Field("lyrics", "string", required=True),
            _SEED,
            _song_seconds(),
            _file("vocal_reference", required=False),
            _VOCAL_ID,
        ),
        "singing",
        4.0,
        voice=True,
        form=Form(prompt=False, lyrics="required", duration=False, vocal_id=True),
    ),
    Operation(
        "extend_song",
        "Extend song",
        SONG_VERSIONS,
        (
            _file("song", MP3_M4A, max_bytes=_EXTEND_BYTES, size_label="40 MB"),
            Field("lyrics", "string", max_len=int(LIMITS["extend_lyrics_chars"])),
            Field(
                "extend_at_ms",
                "integer",
                min=LIMITS["extend_at_ms_min"],
                max=LIMITS["extend_at_ms_max"],
                clamp=True,
                description="0 continues from the end, else 8000-420000; clamped at generation",
            ),
            _song_seconds(description="songlab's: the length of the new part"),
            Field(
                "extend_type",
                "choice",
                choices=EXTEND_SIDES,
                late=True,
                description="tail or head; another value fails during generation",
            ),
        ),
        "extend",
        4.0,
    ),
    Operation(
        "extend_music",
        "Extend music",
        _V5,
        (
            _file("music", MP3_M4A, max_bytes=_EXTEND_BYTES, size_label="40 MB"),
            Field("prompt", "string"),
            _num("extend_seconds", "extend_seconds_min", "extend_seconds_max"),
            Field("side", "choice", choices=EXTEND_SIDES),
        ),
        "extend",
        4.0,
    ),
    _song_like("remix_song", "Remix", _file("song"), pricing_key="remix", sim=4.0),
    Operation(
        "vocal_clone",
        "Voice clone",
        SONG_VERSIONS,
        (
            Field(
                "consent_id",
                "string",
                required=True,
                description="a consent id issued by POST /v1/voice-clones",
            ),
            Field(
                "reference_file_id",
                "file_id",
                formats=MP3_M4A,
                max_bytes=int(LIMITS["voice_clone_reference_bytes"]),
                size_label="15 MiB",
            ),
        ),
        "clone",
        3.0,
    ),
    Operation(
        "inpaint",
        "Audio inpainting",
        _V5,
        (
            _file("song"),
            Field("start_ms", "integer", required=True, min=0),
            Field(
                "end_ms",
                "integer",
                required=True,
                min=0,
                description="greater than start_ms, inside the song",
            ),
            _LYRICS,
        ),
        "inpaint",
        4.0,
    ),
    Operation("separate_stems", "Stem separation", STEM_MODELS, (_file("audio"),), "stems", 3.0),
    Operation("copyright", "Copyright check", _V5, (_file("audio"),), "copyright", 1.5),
    Operation(
        "write_lyrics",
        "Lyrics",
        _V5,
        (Field("prompt", "string"),),
        "lyrics",
        1.0,
        form=Form(prompt=True, lyrics="none", duration=False, vocal_id=False),
    ),
    Operation(
        "transcribe",
        "Transcription",
        (TRANSCRIBE_MODEL,),
        (_file("audio"), Field("language", "string")),
        "transcribe",
        1.5,
    ),
    Operation(
        "sfx_gen",
        "Sound effects",
        _V5,
        (
            Field("prompt", "string", required=True),
            _num("duration_seconds", "sfx_seconds_min", "sfx_seconds_max", "sfx_seconds_default"),
        ),
        "sfx",
        2.0,
        form=Form(prompt=True, lyrics="none", duration=True, vocal_id=False),
    ),
    Operation(
        "audio_effect",
        "Audio effect",
        _V5,
        (
            _file("audio"),
            Field("effect", "choice", required=True, choices=AUDIO_EFFECTS),
            _num("amount", "effect_amount_min", "effect_amount_max"),
        ),
        "effect",
        1.5,
    ),
    Operation(
        "agent",
        "Agent One",
        AGENT_TIERS,
        (
            Field("prompt", "string", required=True),
            Field("system_prompt", "string"),
            Field("max_steps", "integer", min=0, max=LIMITS["agent_max_steps_max"]),
            Field("max_budget", "integer", min=LIMITS["agent_max_budget_min"]),
            Field("workflow_build_only", "boolean"),
        ),
        None,
        2.0,
    ),
    # internal-only tools: their payloads are built by the pipelines and Agent One
    Operation(
        "web_search", "Web search (internal)", ("internal",), (), "web_search", 1.0, internal=True
    ),
    Operation("mix", "Mix (internal)", _V5, (), "mix", 1.0, internal=True),
    Operation(
        "translate_lyrics",
        "Lyrics translation (internal)",
        _V5,
        (),
        "translate",
        1.0,
        internal=True,
    ),
)
REGISTRY: Final[dict[str, Operation]] = {op.name: op for op in _OPERATIONS}
# Operations named in the spec's catalog.
OPERATIONS: Final[tuple[str, ...]] = tuple(n for n, op in REGISTRY.items() if not op.internal)
# Tools that exist only for Agent One and the fixed pipelines: absent from
# /v1/tools, 400 UnknownTool when called directly (the operation names are songlab's).
INTERNAL_OPERATIONS: Final[tuple[str, ...]] = tuple(n for n, op in REGISTRY.items() if op.internal)


def operation(name: str) -> Operation:
    """The registry's entry of an operation (KeyError for another name)."""
    return REGISTRY[name]
