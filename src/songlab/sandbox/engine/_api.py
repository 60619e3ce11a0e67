"""Engine entry points and their data types (see the package docstring for the contract).

This first version renders valid, decodable audio of the requested length; the
musical renderer replaces the body of :func:`render` without changing its shape.
"""

from __future__ import annotations

import hashlib
import io
import json
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import soundfile as sf

SAMPLE_RATE = 44100


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


def _seed_of(*parts: Any) -> int:
    blob = json.dumps(parts, sort_keys=True, default=str).encode()
    return int.from_bytes(hashlib.sha256(blob).digest()[:8], "little")


def _encode(audio: np.ndarray, fmt: str = "MP3") -> bytes:
    buf = io.BytesIO()
    sf.write(buf, audio, SAMPLE_RATE, format=fmt)
    return buf.getvalue()


def render(
    operation: str,
    model: str,
    payload: dict[str, Any],
    *,
    seed: int,
    inputs: dict[str, AudioIn] | None = None,
    voice: Voice | None = None,
) -> RenderResult:
    if operation in ("write_lyrics", "translate_lyrics", "web_search", "copyright", "transcribe"):
        return RenderResult(text="", metadata={})
    if operation == "extend_song" and payload.get("extend_type", "tail") not in ("tail", "head"):
        raise RenderError(f"extend_type: must be 'tail' or 'head', got {payload['extend_type']!r}")
    duration = float(payload.get("duration_seconds", 30.0))
    rng = np.random.default_rng(_seed_of(operation, model, payload, seed))
    t = np.arange(int(duration * SAMPLE_RATE)) / SAMPLE_RATE
    f = 220.0 * 2 ** (rng.integers(0, 12) / 12)
    audio = 0.2 * np.sin(2 * np.pi * f * t).astype(np.float32)
    recipe = {"operation": operation, "model": model, "payload": payload, "seed": seed}
    return RenderResult(
        assets=[Asset("mix", _encode(audio), "audio/mpeg", duration, recipe)], metadata={}
    )


_FORMATS = {"MP3": "mp3", "WAV": "wav", "FLAC": "flac", "OGG": "ogg"}


def check_audio(data: bytes, *, field: str, formats: tuple[str, ...] = ()) -> AudioInfo:
    if data[:4] == b"MThd":
        info = AudioInfo("mid", "audio/midi", 0.0, 0, 0)
    else:
        try:
            si = sf.info(io.BytesIO(data))
        except Exception:
            raise EngineInputError(field, "is not a decodable audio file") from None
        fmt = _FORMATS.get(si.format, si.format.lower())
        mime = {"mp3": "audio/mpeg", "wav": "audio/wav"}.get(fmt, f"audio/{fmt}")
        info = AudioInfo(fmt, mime, si.duration, si.samplerate, si.channels)
    if formats and info.format not in formats:
        raise EngineInputError(field, f"must be {' or '.join(formats)}, got {info.format}")
    return info


def extract_voice(data: bytes) -> Voice:
    return Voice(110.0, 220.0, 150.0, (700.0, 1200.0, 2600.0), "male")
