"""The spec registry: one leaf module for every rule of the spec the code relies on.

This module imports nothing of songlab: error codes, task statuses, operations,
license tiers, event kinds and ledger kinds, exactly as the spec and
``shared/design.md`` name them.
"""

from __future__ import annotations

from enum import IntEnum, StrEnum
from typing import Final


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


# Operations named in the spec's catalog.
OPERATIONS: Final[tuple[str, ...]] = (
    "generate_song",
    "similar_song",
    "melody_to_song",
    "midi_to_song",
    "generate_music",
    "similar_music",
    "generate_singing",
    "extend_song",
    "extend_music",
    "remix_song",
    "vocal_clone",
    "inpaint",
    "separate_stems",
    "copyright",
    "write_lyrics",
    "transcribe",
    "sfx_gen",
    "audio_effect",
    "agent",
)

# Tools that exist only for Agent One and the fixed pipelines: absent from
# /v1/tools, 400 UnknownTool when called directly (the operation names are songlab's).
INTERNAL_OPERATIONS: Final[tuple[str, ...]] = ("web_search", "mix", "translate_lyrics")

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

TRANSLATION_STEPS: Final[tuple[str, ...]] = (
    "transcribe",
    "translate",
    "separate",
    "revoice",
    "layer",
    "render",
)

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
    "voice_clone_name_chars": 255,
    "voice_clone_description_chars": 1024,
    "rights_attestation_chars": 2048,
    "extend_lyrics_chars": 3000,
    "extend_at_ms_min": 8000,
    "extend_at_ms_max": 420000,
    "extend_seconds_min": 1.0,
    "extend_seconds_max": 120.0,
    "agent_max_steps_max": 50,
    "signed_url_seconds": 600,
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

WORKFLOW_ROUTES: Final[tuple[str, ...]] = (
    "beat-swaps",
    "karaoke-tracks",
    "drumless-mixes",
    "revoicings",
    "instrument-layers",
    "hummed-songs",
    "trending-songs",
    "voice-songs",
    "genre-remixes",
    "midi-songs",
    "vocal-layers",
    "audio-inpainting",
)
