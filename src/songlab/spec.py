"""The spec registry: one leaf module for every rule of the spec the code relies on.

This module imports nothing of songlab: error codes, task statuses, license tiers
(and the one function that parses a license), event and ledger kinds, the limits
table, and the registry proper: each operation (:class:`Operation`: its payload
:class:`Field` s with types, ranges, lengths, choices and file kinds, its models,
pricing key, simulated seconds and form rule), each dedicated and workflow
route (:class:`Route`: its body fields, its billed :class:`Step` s and its vocal
rule) and each compat route (:class:`Compat`: its operation's fields under the old
names, with the compat body's own rules), exactly as the spec and
``shared/design.md`` name them. The sandbox's
bodies and payload rules, its OpenAPI document and catalog, the price list's
pipelines, the client's validation and the widgets' gates are derived from it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import IntEnum, StrEnum
from typing import Any, Final

__all__ = [
    "AGENT_RATE_LIMITS",
    "AGENT_TIERS",
    "AUDIO_EFFECTS",
    "AUDIO_FORMATS",
    "COMPAT",
    "COMPAT_ROUTES",
    "Compat",
    "DEFAULT_LICENSE",
    "EXTEND_SIDES",
    "ErrorCode",
    "EventKind",
    "FIELD_TYPES",
    "Field",
    "Form",
    "IDEMPOTENCY_KEY_PATTERN",
    "INTERNAL_OPERATIONS",
    "LICENSE_BY_NAME",
    "LICENSE_NAMES",
    "LICENSE_NAMES_WITH_UNSET",
    "LIMITS",
    "LedgerKind",
    "License",
    "LicenseError",
    "MIB",
    "MIDI",
    "MP3_M4A",
    "OPERATIONS",
    "OTHER_ERRORS",
    "Operation",
    "PIPELINE_ERRORS",
    "REGISTRY",
    "RETRYABLE_CODES",
    "ROUTES",
    "Route",
    "SONG_VERSIONS",
    "STEMS",
    "STEM_MODELS",
    "STUDIO_FIELDS",
    "Status",
    "Step",
    "TRANSCRIBE_MODEL",
    "TRANSLATION_STEPS",
    "WORKFLOWS",
    "WORKFLOW_ROUTES",
    "effective_license",
    "operation",
    "parse_license",
    "route",
]


class Status(StrEnum):
    QUEUED = "queued"
    PROCESSING = "processing"
    COMPLETED = "completed"
    FAILED = "failed"

    @property
    def terminal(self) -> bool:
        return self in (Status.COMPLETED, Status.FAILED)


class License(IntEnum):
    """License tiers: the native ``license`` integer (0 means unset -> royalty-free)."""

    UNSPECIFIED = 0
    ROYALTY_FREE = 1
    STANDARD = 2
    DISTRIBUTION = 3
    SYNC = 4
    MASTER = 5

    @property
    def tier_name(self) -> str:
        """The name used by the dedicated and workflow routes (``royalty_free`` ...)."""
        return LICENSE_NAMES[self]


LICENSE_NAMES: Final[dict[int, str]] = {
    1: "royalty_free",
    2: "standard",
    3: "distribution",
    4: "sync",
    5: "master",
}
# 0 (unspecified) is treated as royalty-free by the service.
LICENSE_NAMES_WITH_UNSET: Final[dict[int, str]] = {0: "royalty_free", **LICENSE_NAMES}
LICENSE_BY_NAME: Final[dict[str, int]] = {v: k for k, v in LICENSE_NAMES.items()}
DEFAULT_LICENSE: Final[int] = 1


def effective_license(value: int | None) -> int:
    """0 or None -> royalty-free (1); 1-5 unchanged. Range is not checked here."""
    return DEFAULT_LICENSE if not value else int(value)


class LicenseError(ValueError):
    """A license value breaks the rule; ``field`` and ``rule`` name it (str: ``field: rule``)."""

    def __init__(self, field: str, rule: str) -> None:
        self.field = field
        self.rule = rule
        super().__init__(f"{field}: {rule}")


def parse_license(
    value: Any, *, field: str = "license", names_only: bool = False, ints_only: bool = False
) -> int:
    """THE license parser: an integer 0-5 or a tier name -> the integer 0-5 (0 = unset).

    ``names_only``: the dedicated and workflow routes take a tier name only;
    ``ints_only``: the native route takes the integer only.
    ``None`` is not a license here (callers apply their default first).
    Raises :class:`LicenseError` naming the field and the rule.
    """
    names = ", ".join(LICENSE_BY_NAME)
    if ints_only and (isinstance(value, bool) or not isinstance(value, int)):
        raise LicenseError(field, f"must be an integer 0-5, got {type(value).__name__}")
    if isinstance(value, str):
        if value not in LICENSE_BY_NAME:
            raise LicenseError(field, f"must be one of {names}, got {value!r}")
        return LICENSE_BY_NAME[value]
    if names_only:
        raise LicenseError(field, f"must be one of {names}, got {value!r}")
    if isinstance(value, bool):
        raise LicenseError(field, "must be an integer 0-5 or a tier name, not a bool")
    if isinstance(value, int):
        if not 0 <= value <= 5:
            raise LicenseError(
                field, f"must be an integer 0-5 (0 = unset = royalty_free), got {value}"
            )
        return value
    raise LicenseError(field, f"must be an integer 0-5 or a tier name, got {type(value).__name__}")


class ErrorCode(StrEnum):
    # pipeline errors (body: error, message, retryable)
    UNKNOWN_TOOL = "UnknownTool"
    INSUFFICIENT_FUNDS = "InsufficientFunds"
    TOOL_NOT_PRICED = "ToolNotPriced"
    INVALID_GENERATION_INPUT = "InvalidGenerationInput"
    RATE_LIMITED = "RateLimited"
    DEPENDENCY_UNAVAILABLE = "DependencyUnavailable"
    # other errors (no retryable field)
    UNAUTHENTICATED = "UNAUTHENTICATED"
    INVALID_API_KEY = "INVALID_API_KEY"
    FORBIDDEN = "FORBIDDEN"
    NOT_FOUND = "NOT_FOUND"
    MISSING_FIELD = "MISSING_FIELD"
    RESOURCE_NOT_FOUND = "ResourceNotFound"


PIPELINE_ERRORS: Final[dict[ErrorCode, tuple[int, bool]]] = {
    ErrorCode.UNKNOWN_TOOL: (400, False),
    ErrorCode.INSUFFICIENT_FUNDS: (402, False),
    ErrorCode.TOOL_NOT_PRICED: (422, False),
    ErrorCode.INVALID_GENERATION_INPUT: (422, False),
    ErrorCode.RATE_LIMITED: (429, True),
    ErrorCode.DEPENDENCY_UNAVAILABLE: (503, True),
}
OTHER_ERRORS: Final[dict[ErrorCode, int]] = {
    ErrorCode.UNAUTHENTICATED: 401,
    ErrorCode.INVALID_API_KEY: 401,
    ErrorCode.FORBIDDEN: 403,
    ErrorCode.NOT_FOUND: 404,
    ErrorCode.MISSING_FIELD: 400,
    ErrorCode.RESOURCE_NOT_FOUND: 404,
}
RETRYABLE_CODES: Final[frozenset[str]] = frozenset(
    c.value for c, (_, r) in PIPELINE_ERRORS.items() if r
)


class EventKind(StrEnum):
    PROGRESS = "progress"
    STREAMING_URL = "streaming_url"
    PARTIAL_OUTPUT = "partial_output"
    TERMINAL = "terminal"
    TIMEOUT = "timeout"
    ERROR = "error"


class LedgerKind(StrEnum):
    GENERATION = "generation"
    VOICE_CLONE = "voice_clone"
    TRANSLATION_STEP = "translation_step"
    WORKFLOW_STEP = "workflow_step"
    AGENT_FEE = "agent_fee"
    AGENT_SUB_TOOL = "agent_sub_tool"


AGENT_TIERS: Final[tuple[str, ...]] = ("flash", "standard", "pro")
SONG_VERSIONS: Final[tuple[str, ...]] = ("v5", "v6", "v7")
STEM_MODELS: Final[tuple[str, ...]] = ("2stem", "6-stem", "12stem")
STEMS: Final[dict[str, tuple[str, ...]]] = {
    "2stem": ("vocals", "instrumental"),
    "6-stem": ("vocals", "drums", "bass", "guitar", "piano", "other"),
    "12stem": (
        "lead_vocals",
        "backing_vocals",
        "drums",
        "kick",
        "snare",
        "hihat",
        "bass",
        "guitar",
        "piano",
        "synth",
        "strings",
        "other",
    ),
}
TRANSCRIBE_MODEL: Final[str] = "whisper-transcribe-v1"


AUDIO_EFFECTS: Final[tuple[str, ...]] = (
    "reverb",
    "echo",
    "lowpass",
    "highpass",
    "pitch_shift",
    "normalize",
)

# Limits of the spec (bytes, characters, ranges).
MIB: Final[int] = 1024 * 1024
LIMITS: Final[dict[str, int | float]] = {
    "idempotency_key_max": 200,
    "voice_clone_reference_bytes": 15 * MIB,
    "translation_source_bytes": 60 * MIB,
    "extend_input_bytes": 40_000_000,  # "40 MB"
    "upload_bytes": 64 * MIB,  # songlab's choice for POST /v1/files
    "upload_filename_chars": 255,  # songlab's choice: a name every file system can hold
    "voice_clone_name_chars": 255,
    "voice_clone_description_chars": 1024,
    "rights_attestation_chars": 2048,
    "extend_lyrics_chars": 3000,
    "extend_at_ms_min": 8000,
    "extend_at_ms_max": 420000,
    "extend_seconds_min": 1.0,
    "extend_seconds_max": 120.0,
    "agent_max_steps_max": 50,
    "agent_max_budget_min": 0,
    # design.md's payload table: song lengths and sound-effect lengths (seconds)
    "song_seconds_min": 5.0,
    "song_seconds_max": 240.0,
    "song_seconds_default": 30.0,
    "sfx_seconds_min": 0.5,
    "sfx_seconds_max": 30.0,
    "sfx_seconds_default": 5.0,
    "effect_amount_min": 0.0,
    "effect_amount_max": 1.0,
    "seed_max": 2**32 - 1,  # songlab's: numpy takes any non-negative seed; 32 bits are plenty
    "ms_max": 2**31 - 1,  # songlab's bound of a start_ms / end_ms of the inpainting route
    # songlab's string lengths of the routes whose bodies the spec does not show
    "text_chars": 5000,
    "id_chars": 200,
    "target_language_chars": 100,
    "song_style_chars": 2000,
    "license_min": 0,
    "license_max": 5,
    "signed_url_seconds": 600,
    "list_limit_min": 1,
    "list_limit_max": 100,
    "list_limit_default": 20,
}
IDEMPOTENCY_KEY_PATTERN: Final[str] = r"^[A-Za-z0-9_.:\-]{1,200}$"

# Agent One rate limits per tier: (per hour, per day).
AGENT_RATE_LIMITS: Final[dict[str, tuple[int, int]]] = {
    "flash": (30, 150),
    "standard": (20, 100),
    "pro": (10, 50),
}


# --- the registry: operations and routes ---------------------------------------------------

AUDIO_FORMATS: Final[tuple[str, ...]] = ("mp3", "m4a", "wav", "flac", "ogg")
MP3_M4A: Final[tuple[str, ...]] = ("mp3", "m4a")
MIDI: Final[tuple[str, ...]] = ("mid",)
EXTEND_SIDES: Final[tuple[str, ...]] = ("tail", "head")
# Agent One payload keys of the studio editing surface: to be left unset (a name or a prefix).
STUDIO_FIELDS: Final[tuple[str, ...]] = ("studio", "visualizer_")

# Field types: "string", "integer", "number", "boolean", "choice", "file" (a payload file
# input: {"url": ...}, a URL, {"base64": ...} or "file_id:<id>"), "file_id" (a body's id of
# an uploaded file of the caller), "voice" (a vocal_id: a saved voice of the caller),
# "tier" (a license tier name), "license" (a compat body's license: an integer 0-5 or a
# tier name).
FIELD_TYPES: Final[tuple[str, ...]] = (
    "string",
    "integer",
    "number",
    "boolean",
    "choice",
    "file",
    "file_id",
    "voice",
    "tier",
    "license",
)


@dataclass(frozen=True, slots=True)
class Field:
    """One field of a payload or a route body and every rule of it.

    ``min``/``max`` are inclusive; ``max_len`` counts characters; ``formats`` and
    ``max_bytes`` bound a file (``size_label`` is how the spec writes the limit);
    ``clamp``: out of ``min``-``max`` (and not 0) is clamped at generation, not refused;
    ``late``: a wrong ``choices`` value fails during generation, not at create;
    ``input``: the name a ``file_id`` field's file has in the pipeline (``song``), or the
    payload field a compat body's field becomes (``audio_url`` -> ``song``);
    ``filled``: a string that, when given, must hold a non-space character (a required
    one must anyway).
    """

    name: str
    type: str
    required: bool = False
    default: Any = None
    min: float | None = None
    max: float | None = None
    max_len: int | None = None
    choices: tuple[Any, ...] = ()
    formats: tuple[str, ...] = ()
    max_bytes: int | None = None
    size_label: str | None = None
    clamp: bool = False
    late: bool = False
    input: str | None = None
    description: str = ""
    filled: bool = False

    def __post_init__(self) -> None:
        assert self.type in FIELD_TYPES, self.type


@dataclass(frozen=True, slots=True)
class Form:
    """What the widgets' generation form offers for an operation (prompt/lyrics/duration)."""

    prompt: bool  # the form asks for a prompt before it can send
    lyrics: str  # "required", "optional" or "none"
    duration: bool  # the form offers duration_seconds (its range: the field's)
    vocal_id: bool  # the form may send a saved voice


@dataclass(frozen=True, slots=True)
class Operation:
    """One operation of the catalog (or an internal tool): its payload and what it costs.

    ``fields`` in the order the sandbox checks them; ``forbidden``: (field, rule)
    refused when present; ``voice``: a ``vocal_id`` is resolved to a saved voice;
    ``pricing_key``: its row in ``pricing``'s price list (None: billed otherwise);
    ``sim_seconds``: how long the sandbox's engine pretends it takes (at speed 1).
    """

    name: str
    title: str
    models: tuple[str, ...]
    fields: tuple[Field, ...]
    pricing_key: str | None
    sim_seconds: float
    internal: bool = False
    forbidden: tuple[tuple[str, str], ...] = ()
    voice: bool = False
    form: Form | None = None

    def field(self, name: str) -> Field:
        for f in self.fields:
            if f.name == name:
                return f
        raise KeyError(f"{self.name} has no field {name!r}")


@dataclass(frozen=True, slots=True)
class Step:
    """One billed step of a fixed pipeline: its name and the tool it runs."""

    name: str
    operation: str
    model: str


@dataclass(frozen=True, slots=True)
class Route:
    """A dedicated or workflow route (path after ``/v1/``): body fields, steps, vocal rule.

    ``vocal``: ``"required"``, ``"optional"`` or None (no ``vocal_id`` field).
    ``forbidden``: (field, rule) refused when present.
    """

    path: str
    kind: str  # "dedicated" or "workflow"
    fields: tuple[Field, ...]
    steps: tuple[Step, ...] = ()
    vocal: str | None = None
    forbidden: tuple[tuple[str, str], ...] = ()

    def field(self, name: str) -> Field:
        for f in self.fields:
            if f.name == name:
                return f
        raise KeyError(f"/v1/{self.path} has no field {name!r}")


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


# --- routes ---------------------------------------------------------------------------------

_TEXT = int(LIMITS["text_chars"])
_ID = int(LIMITS["id_chars"])
_TIER = Field("license", "tier", default="royalty_free", choices=tuple(LICENSE_NAMES.values()))


def _file_id(
    name: str,
    input: str,
    formats: tuple[str, ...] = AUDIO_FORMATS,
    *,
    max_bytes: int | None = None,
    size_label: str | None = None,
) -> Field:
    return Field(
        name,
        "file_id",
        required=True,
        formats=formats,
        input=input,
        max_bytes=int(LIMITS["upload_bytes"]) if max_bytes is None else max_bytes,
        size_label=size_label,
    )


def _text(name: str, required: bool = False, max_len: int = _TEXT) -> Field:
    return Field(name, "string", required=required, max_len=max_len)


def _vocal(required: bool) -> Field:
    return Field("vocal_id", "voice", required=required, max_len=_ID)


def _wf(
    path: str,
    fields: tuple[Field, ...],
    steps: tuple[Step, ...],
    forbidden: tuple[tuple[str, str], ...] = (),
) -> Route:
    vocal = next(
        ("required" if f.required else "optional" for f in fields if f.type == "voice"), None
    )
    return Route(path, "workflow", (*fields, _TIER), steps, vocal, forbidden)


_SONG = _file_id("song_file_id", "song")
_SEP2 = Step("separate", "separate_stems", "2stem")
_MIX = Step("mix", "mix", "v5")
_RENDER = Step("render", "audio_effect", "v5")
_MS_MAX = LIMITS["ms_max"]

_ROUTES: tuple[Route, ...] = (
    Route(
        "voice-clones",
        "dedicated",
        (
            _file_id(
                "reference_file_id",
                "reference",
                MP3_M4A,
                max_bytes=int(LIMITS["voice_clone_reference_bytes"]),
                size_label="15 MiB",
            ),
            _text("name", max_len=int(LIMITS["voice_clone_name_chars"])),
            _text("description", max_len=int(LIMITS["voice_clone_description_chars"])),
            Field("version", "choice", default="v5", choices=SONG_VERSIONS),
            _TIER,
            Field(
                "consent",
                "boolean",
                required=True,
                choices=(True,),
                description="must be true (consent of the voice's owner)",
            ),
            _text("rights_attestation", True, int(LIMITS["rights_attestation_chars"])),
        ),
    ),  # one vocal_clone task on the chosen version's model; no pipeline
    Route(
        "song-translations",
        "dedicated",
        (
            _file_id(
                "song_file_id",
                "song",
                max_bytes=int(LIMITS["translation_source_bytes"]),
                size_label="60 MiB",
            ),
            _text("target_language", True, int(LIMITS["target_language_chars"])),
            Field("syllable_matched", "boolean", default=True),
            _text("song_style", True, int(LIMITS["song_style_chars"])),
            _TIER,
        ),
        steps=(
            Step("transcribe", "transcribe", TRANSCRIBE_MODEL),
            Step("translate", "translate_lyrics", "v5"),
            _SEP2,
            Step("revoice", "generate_singing", "v5"),
            Step("layer", "mix", "v5"),
            _RENDER,
        ),
    ),
    _wf(
        "beat-swaps",
        (_SONG, _text("prompt", True)),
        (_SEP2, Step("beat", "generate_music", "v5"), _MIX),
    ),
    _wf("karaoke-tracks", (_SONG,), (_SEP2, _RENDER)),
    _wf("drumless-mixes", (_SONG,), (Step("separate", "separate_stems", "6-stem"), _MIX)),
    # design.md: song_file_id and vocal_id only; the song is re-sung with its own words,
    # so `lyrics` is refused by the sandbox and the client alike (docs/sandbox.md).
    _wf(
        "revoicings",
        (_SONG, _vocal(True)),
        (_SEP2, Step("sing", "generate_singing", "v5"), _MIX),
        forbidden=(
            (
                "lyrics",
                "not a field of /v1/revoicings: the song is re-sung with "
                "its own words (fields: song_file_id, vocal_id)",
            ),
        ),
    ),
    _wf(
        "instrument-layers",
        (_SONG, _text("instrument", True)),
        (Step("part", "generate_music", "v5"), _MIX),
    ),
    _wf(
        "hummed-songs",
        (_file_id("hum_file_id", "hum"), _text("prompt", True), _text("lyrics")),
        (Step("song", "melody_to_song", "v5"), _RENDER),
    ),
    _wf(
        "trending-songs",
        (_text("genre", True), _text("prompt"), _text("lyrics")),
        (
            Step("search", "web_search", "internal"),
            Step("lyrics", "write_lyrics", "v5"),
            Step("song", "generate_song", "v5"),
        ),
    ),
    _wf(
        "voice-songs",
        (_file_id("recording_file_id", "recording"), _text("prompt", True), _text("lyrics")),
        (Step("song", "similar_song", "v5"), _RENDER),
    ),
    _wf("genre-remixes", (_SONG, _text("genre", True)), (Step("remix", "remix_song", "v5"),)),
    _wf(
        "midi-songs",
        (_file_id("midi_file_id", "midi", MIDI), _text("prompt", True), _text("lyrics")),
        (Step("song", "midi_to_song", "v5"), _RENDER),
    ),
    _wf(
        "vocal-layers",
        (_SONG, _text("lyrics", True), _vocal(False)),
        (Step("sing", "generate_singing", "v5"), _MIX),
    ),
    _wf(
        "audio-inpainting",
        (
            _SONG,
            Field(
                "start_ms",
                "integer",
                required=True,
                min=0,
                max=_MS_MAX,
                description="ms from the song's start",
            ),
            Field(
                "end_ms",
                "integer",
                required=True,
                min=0,
                max=_MS_MAX,
                description="ms, greater than start_ms, inside the song",
            ),
            _text("lyrics"),
        ),
        (Step("inpaint", "inpaint", "v5"),),
    ),
)
ROUTES: Final[dict[str, Route]] = {r.path: r for r in _ROUTES}
WORKFLOWS: Final[dict[str, Route]] = {p: r for p, r in ROUTES.items() if r.kind == "workflow"}
WORKFLOW_ROUTES: Final[tuple[str, ...]] = tuple(WORKFLOWS)
# Song translation's progress steps (design.md): transcribe ... render.
TRANSLATION_STEPS: Final[tuple[str, ...]] = tuple(s.name for s in ROUTES["song-translations"].steps)


def route(path: str) -> Route:
    """The registry's entry of a dedicated or workflow route (``"karaoke-tracks"``)."""
    return ROUTES[path.rsplit("/", 1)[-1]]


# --- compat routes --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Compat:
    """The compat routes of one operation: old-style URLs and field names, tool resolved.

    ``paths``: the URLs (``{v}``: each of ``versions``, the model; a path without it runs
    ``versions[0]``); ``fields``: the body's fields in the order they are checked, each
    its operation's field under the body's name (``input``: the payload's name) plus the
    compat body's own rules (a 5000-character prompt), or the body's ``license`` (0-5 or
    a tier name); ``missing_field``: absent or empty -> 400 MISSING_FIELD, before any
    other rule; ``title``/``doc``: the body's schema. The body is the route's only rule
    pass: its payload (renamed, ``license`` left out) only has its files and voice resolved.
    """

    operation: str
    title: str
    doc: str
    paths: tuple[str, ...]
    versions: tuple[str, ...]
    fields: tuple[Field, ...]
    missing_field: str | None = None

    def field(self, name: str) -> Field:
        for f in self.fields:
            if f.name == name:
                return f
        raise KeyError(f"{self.title} has no field {name!r}")

    @property
    def renames(self) -> tuple[tuple[str, str], ...]:
        """(body field, payload field) of the fields the payload names otherwise."""
        return tuple((f.name, f.input) for f in self.fields if f.input)


def _c(operation: str, name: str, *, body_name: str | None = None, **rules: Any) -> Field:
    """``operation``'s field ``name`` as a compat body states it: under ``body_name`` (the
    payload keeps ``name``), with the body's own ``rules``; no default (the payload's
    defaults apply at generation)."""
    f = REGISTRY[operation].field(name)
    if body_name is not None:
        rules.update(name=body_name, input=name)
    return replace(f, default=None, **rules)


_COMPAT_LICENSE = Field(
    "license",
    "license",
    min=LIMITS["license_min"],
    max=LIMITS["license_max"],
    choices=tuple(LICENSE_NAMES.values()),
    description="license tier 0-5 or its name",
)
_SECONDS = "seconds"
_COMPAT: tuple[Compat, ...] = (
    Compat(
        "generate_song",
        "CompatSong",
        "``POST /v{5,6,7}/generate/song``.",
        ("/{v}/generate/song",),
        SONG_VERSIONS,
        (
            _c("generate_song", "prompt", max_len=_TEXT),
            _c("generate_song", "lyrics", max_len=_TEXT),
            _c("generate_song", "vocal_id", max_len=_ID, filled=True),
            _c("generate_song", "duration_seconds", description=_SECONDS),
            _c("generate_song", "seed"),
            _COMPAT_LICENSE,
        ),
    ),
    Compat(
        "generate_singing",
        "CompatSinging",
        "``POST /v{5,6,7}/generate/singing`` (``styleOfMusic`` in place of ``prompt``).",
        ("/{v}/generate/singing",),
        SONG_VERSIONS,
        (
            _c("generate_singing", "lyrics", max_len=_TEXT),
            _c("generate_singing", "prompt", max_len=_TEXT),
            _c("generate_singing", "styleOfMusic", max_len=_TEXT),
            _c("generate_singing", "vocal_id", max_len=_ID, filled=True),
            _c("generate_singing", "vocal_reference"),
            _c("generate_singing", "duration_seconds", description=_SECONDS),
            _c("generate_singing", "seed"),
            _COMPAT_LICENSE,
        ),
    ),
    Compat(
        "extend_song",
        "CompatExtendSong",
        "``POST /v{5,6,7}/extend/song``; without ``audio_url``: 400 MISSING_FIELD.",
        ("/{v}/extend/song",),
        SONG_VERSIONS,
        (
            _c(
                "extend_song",
                "song",
                body_name="audio_url",
                description="the song to extend (a file input, mp3 or m4a, up to 40 MB)",
            ),
            _c("extend_song", "lyrics"),
            _c(
                "extend_song",
                "extend_at_ms",
                description=(
                    "0 continues from the end, else 8000-420000; clamped at generation time"
                ),
            ),
            _c(
                "extend_song",
                "extend_type",
                max_len=100,
                description=(
                    "tail or head; another value fails during generation, as the spec says"
                ),
            ),
            _c("extend_song", "duration_seconds", description=_SECONDS),
            _COMPAT_LICENSE,
        ),
        missing_field="audio_url",
    ),
    Compat(
        "extend_music",
        "CompatExtendMusic",
        "``POST /v5/extend/music`` and ``/v1/generate/extend``.",
        ("/v5/extend/music", "/v1/generate/extend"),
        _V5,
        (
            _c(
                "extend_music",
                "music",
                body_name="audio_url",
                description="the music to extend (a file input, mp3 or m4a, up to 40 MB)",
            ),
            _c("extend_music", "prompt", max_len=_TEXT),
            _c("extend_music", "extend_seconds"),
            _c("extend_music", "side"),
            _COMPAT_LICENSE,
        ),
        missing_field="audio_url",
    ),
)
COMPAT: Final[dict[str, Compat]] = {c.operation: c for c in _COMPAT}
# path -> (its Compat, the model it runs), in the order the routes are served and documented
COMPAT_ROUTES: Final[dict[str, tuple[Compat, str]]] = {
    **{
        p.format(v=v): (c, v)
        for v in SONG_VERSIONS
        for c in _COMPAT
        for p in c.paths
        if "{v}" in p and v in c.versions
    },
    **{p: (c, c.versions[0]) for c in _COMPAT for p in c.paths if "{v}" not in p},
}
