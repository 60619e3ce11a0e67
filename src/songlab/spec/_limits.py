"""The limits table: every numeric limit of the spec (bytes, characters, ranges, rates), and
songlab's own where the spec shows none (each marked so)."""

from __future__ import annotations

from typing import Final

__all__ = [
    "AGENT_RATE_LIMITS",
    "IDEMPOTENCY_KEY_PATTERN",
    "LIMITS",
    "MIB",
]


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
