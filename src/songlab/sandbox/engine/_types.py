"""The engine's data types (re-exported by the package; see its docstring for the contract)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


class EngineInputError(ValueError):
    """An input file is not usable; ``field`` names the request field."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


class RenderError(RuntimeError):
    """Generation failed (the task fails and its reservation is released)."""


@dataclass(frozen=True, slots=True)
class AudioIn:
    data: bytes
    mime_type: str
    recipe: dict[str, Any] | None = None  # provenance of a sandbox-made file


@dataclass(frozen=True, slots=True)
class AudioInfo:
    format: str  # "mp3", "m4a", "wav", "flac", "ogg", "mid"
    mime_type: str
    duration_s: float
    sample_rate: int
    channels: int


@dataclass(frozen=True, slots=True)
class Voice:
    f0_low: float
    f0_high: float
    f0_median: float
    formants: tuple[float, ...]
    gender: str  # "female" | "male"

    def to_dict(self) -> dict[str, Any]:
        return {
            "f0_low": self.f0_low,
            "f0_high": self.f0_high,
            "f0_median": self.f0_median,
            "formants": list(self.formants),
            "gender": self.gender,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Voice:
        return cls(d["f0_low"], d["f0_high"], d["f0_median"], tuple(d["formants"]), d["gender"])


@dataclass(slots=True)
class Asset:
    name: str  # "mix", "vocals", "drums", ...
    data: bytes
    mime_type: str
    duration_s: float
    recipe: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class RenderResult:
    assets: list[Asset] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    text: str | None = None
