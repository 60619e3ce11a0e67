"""The spec's words shared by client and sandbox: task statuses, event and ledger kinds, the
models of each family, the audio formats, effects and extend sides, Agent One's studio fields."""

from __future__ import annotations

from enum import StrEnum
from typing import Final

__all__ = [
    "AGENT_TIERS",
    "AUDIO_EFFECTS",
    "AUDIO_FORMATS",
    "EXTEND_SIDES",
    "EventKind",
    "LedgerKind",
    "MIDI",
    "MP3_M4A",
    "SONG_VERSIONS",
    "STEMS",
    "STEM_MODELS",
    "STUDIO_FIELDS",
    "Status",
    "TRANSCRIBE_MODEL",
]


class Status(StrEnum):
    QUEUED = "queued"
    PROCESSING = "processing"
    COMPLETED = "completed"
    FAILED = "failed"

    @property
    def terminal(self) -> bool:
        return self in (Status.COMPLETED, Status.FAILED)


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

AUDIO_FORMATS: Final[tuple[str, ...]] = ("mp3", "m4a", "wav", "flac", "ogg")
MP3_M4A: Final[tuple[str, ...]] = ("mp3", "m4a")
MIDI: Final[tuple[str, ...]] = ("mid",)
EXTEND_SIDES: Final[tuple[str, ...]] = ("tail", "head")
# Agent One payload keys of the studio editing surface: to be left unset (a name or a prefix).
STUDIO_FIELDS: Final[tuple[str, ...]] = ("studio", "visualizer_")
