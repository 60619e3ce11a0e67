"""Shared plumbing of the operations: seeds, inputs, voices, finishing and encoding assets."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any, SupportsFloat, cast

import numpy as np

import songlab.sandbox.engine.analysis as analysis
import songlab.sandbox.engine.audio_io as audio_io
import songlab.sandbox.engine.recipe as recipe
import songlab.sandbox.engine.song as song
from songlab.sandbox.engine._types import (
    Asset,
    AudioIn,
    EngineInputError,
    Recipe,
    RenderError,
    Score,
    Voice,
    VoiceDict,
)
from songlab.sandbox.engine.prompt import Plan
from songlab.sandbox.engine.voice import DEFAULT_VOICES, analyse_voice

SR = audio_io.SR
TARGET_RMS = 10 ** (-15.5 / 20)  # a finished song sits near -14 LUFS
PEAK = 0.95


def seed_of(*parts: object) -> int:
    blob = json.dumps(parts, sort_keys=True, default=str).encode()
    return int.from_bytes(hashlib.sha256(blob).digest()[:8], "little") >> 1


def rng_of(*parts: object) -> np.random.Generator:
    return np.random.default_rng(seed_of(*parts))


def clamp(value: object, lo: float, hi: float, default: float, field: str) -> float:
    if value is None:
        return default
    try:
        v = float(cast("SupportsFloat | str", value))  # float() says if it is a number
    except (TypeError, ValueError):
        raise RenderError(f"{field}: must be a number, got {value!r}") from None
    return float(min(max(v, lo), hi))


@dataclass
class Src:
    """A resolved input: its bytes, decoded audio (lazily) and recipe (if the sandbox made it)."""

    field: str
    data: bytes
    recipe: Recipe | None
    _audio: np.ndarray | None = None

    @property
    def layered(self) -> bool:
        return recipe.is_layered(self.recipe)

    @property
    def audio(self) -> np.ndarray:
        if self._audio is None:
            try:
                self._audio = audio_io.load(self.data)
            except audio_io.CodecError as exc:
                raise EngineInputError(self.field, str(exc)) from None
        return self._audio

    @property
    def duration_s(self) -> float:
        if self.recipe is not None and self.layered:
            return float(self.recipe["duration_s"])
        return float(self.audio.shape[1] / SR)

    def score(self) -> Score | None:
        return recipe.main_score(self.recipe)

    def plan(self) -> Plan:
        """The input's plan: from its recipe, else measured (tempo, key, mode)."""
        sc = self.score()
        if sc is not None:
            return song.plan_of(sc)
        root, mode = analysis.key(self.audio)
        return Plan(tempo=analysis.tempo(self.audio), root=root, mode=mode)

    def voice(self) -> VoiceDict | None:
        """The singer of the input: its recipe's voice, else analysed from the audio."""
        sc = recipe.vocal_score(self.recipe)
        if sc is not None:
            return sc["voice"]
        return analyse_voice(self.audio)


def get_input(inputs: dict[str, AudioIn] | None, *names: str, required: bool = True) -> Src | None:
    for name in names:
        if inputs and name in inputs:
            a = inputs[name]
            return Src(name, a.data, a.recipe if recipe.is_layered(a.recipe) else None)
    if required:
        raise EngineInputError(names[0], "is required for this operation")
    return None


def voice_dict(voice: Voice | VoiceDict | None) -> VoiceDict | None:
    if voice is None:
        return None
    d = voice.to_dict() if isinstance(voice, Voice) else voice.copy()
    d["formants"] = list(d["formants"])
    return d


def default_voice(gender: str) -> VoiceDict:
    d = DEFAULT_VOICES[gender].copy()
    d["formants"] = list(d["formants"])
    return d


def out_format(payload: dict[str, Any]) -> str:
    fmt = str(payload.get("format", "mp3")).lower()
    if fmt not in ("mp3", "wav", "flac", "ogg", "m4a"):
        raise RenderError(f"format: must be mp3, wav, flac, ogg or m4a, got {fmt!r}")
    return fmt


def asset(name: str, audio: np.ndarray, rec: Recipe, fmt: str = "mp3") -> Asset:
    data = audio_io.encode(audio, fmt)
    return Asset(name, data, audio_io.MIME[fmt], round(audio.shape[1] / SR, 3), rec)


def loudness_gain(mix: np.ndarray) -> float:
    """Scalar gain to the target level (RMS of the loud half), never past the peak ceiling."""
    m = np.abs(mix).max() if mix.size else 0.0
    if m < 1e-7:
        return 1.0
    blocks = (
        mix.mean(axis=0)[: (mix.shape[1] // 4410) * 4410].reshape(-1, 4410)
        if mix.shape[1] >= 4410
        else mix.mean(axis=0)[None, :]
    )
    rms = np.sqrt((blocks**2).mean(axis=1))
    loud = rms[rms >= np.median(rms)]
    level = float(np.sqrt((loud**2).mean())) if len(loud) else float(rms.max())
    g = TARGET_RMS / max(level, 1e-9)
    return float(min(g, PEAK / m))


def finish(rec: Recipe, *, normalise: bool = True) -> tuple[Recipe, np.ndarray]:
    """Render a layered recipe's mix; with ``normalise`` fold a loudness gain into it (exactly)."""
    mix = recipe.render_mix(rec)
    g = loudness_gain(mix) if normalise else min(1.0, PEAK / max(float(np.abs(mix).max()), 1e-9))
    if abs(g - 1.0) > 1e-6:
        rec = recipe.derive(rec, gain=g)
        mix *= np.float32(g)
    return rec, mix


def fit_channels(x: np.ndarray, ch: int) -> np.ndarray:
    if x.shape[0] == ch:
        return x
    if ch == 1:
        return cast(np.ndarray, x.mean(axis=0, keepdims=True))
    return np.repeat(x[:1], ch, axis=0) if x.shape[0] == 1 else x[:ch]
