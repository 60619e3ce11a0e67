"""Engine entry points (see the package docstring for the contract).

:func:`render` dispatches an operation through :data:`RENDERERS` (keyed by the
spec registry's operation names) to its module (``ops_music``, ``ops_edit``,
``ops_audio``) and encodes the result; the other functions are
the worker's helpers for uploads, voices and copyright matching.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

import songlab.sandbox.engine.audio_io as audio_io
import songlab.sandbox.engine.fprint as _fp
import songlab.sandbox.engine.ops_audio as ops_audio
import songlab.sandbox.engine.ops_edit as ops_edit
import songlab.sandbox.engine.ops_music as ops_music
import songlab.sandbox.engine.probe as probe
from songlab.sandbox.engine._ops_shared import SR, asset, finish, out_format
from songlab.sandbox.engine._types import (
    Asset,
    AudioIn,
    AudioInfo,
    EngineInputError,
    Metadata,
    Recipe,
    RenderError,
    RenderResult,
    Voice,
)
from songlab.sandbox.engine.recipe import foreign
from songlab.sandbox.engine.voice import analyse_voice
from songlab.spec import REGISTRY

SAMPLE_RATE = SR

__all__ = [
    "Asset",
    "AudioIn",
    "AudioInfo",
    "EngineInputError",
    "Metadata",
    "Recipe",
    "RenderError",
    "RenderResult",
    "Voice",
    "check_audio",
    "decode",
    "excerpt",
    "extract_voice",
    "fingerprint",
    "render",
    "similarity",
]

Inputs = dict[str, AudioIn] | None
# what a music renderer makes: (recipe, or foreign audio as an array), metadata, normalise
Made = tuple[Recipe | np.ndarray, Metadata, bool]


@dataclass(frozen=True, slots=True)
class RenderCall:
    """One render's arguments: the model, the payload (a copy), the seed, the resolved
    file inputs and the saved voice."""

    model: str
    payload: dict[str, Any]
    seed: int
    inputs: Inputs
    voice: Voice | None


Renderer = Callable[[RenderCall], RenderResult]
MusicMaker = Callable[[RenderCall], Made]


def _music(make: MusicMaker) -> Renderer:
    """A renderer from a music maker: a recipe is finished and encoded, foreign audio kept."""

    def run(call: RenderCall) -> RenderResult:
        fmt = out_format(call.payload)
        out, meta, normalise = make(call)
        if isinstance(out, np.ndarray):
            return _foreign_result(out, call.model, meta, fmt)
        rec, mix = finish(out, normalise=normalise)
        meta.setdefault("duration_s", rec["duration_s"])
        meta["model"] = call.model
        return RenderResult(assets=[asset("mix", mix, rec, fmt)], metadata=meta)

    return run


def _made(pair: tuple[Recipe, Metadata]) -> Made:
    """A new piece: normalised when finished."""
    return pair[0], pair[1], True


def _edited(out: Recipe | np.ndarray, meta: Metadata) -> Made:
    """An edit (extend, inpaint) is not normalised again: its source's level is kept."""
    return out, meta, False


def _generate_song(call: RenderCall) -> Made:
    return _made(
        ops_music.generate(
            "generate_song", call.model, call.payload, call.seed, call.voice, call.inputs
        )
    )


def _generate_music(call: RenderCall) -> Made:
    return _made(
        ops_music.generate(
            "generate_music", call.model, call.payload, call.seed, call.voice, call.inputs
        )
    )


def _generate_singing(call: RenderCall) -> Made:
    return ops_music.singing(call.model, call.payload, call.seed, call.inputs, call.voice)


def _similar_song(call: RenderCall) -> Made:
    return _made(
        ops_music.similar(
            "similar_song", call.model, call.payload, call.seed, call.inputs, call.voice
        )
    )


def _similar_music(call: RenderCall) -> Made:
    return _made(
        ops_music.similar(
            "similar_music", call.model, call.payload, call.seed, call.inputs, call.voice
        )
    )


def _melody_to_song(call: RenderCall) -> Made:
    return _made(ops_music.melody_song(call.model, call.payload, call.seed, call.inputs))


def _midi_to_song(call: RenderCall) -> Made:
    return _made(ops_music.midi_song(call.model, call.payload, call.seed, call.inputs))


def _remix_song(call: RenderCall) -> Made:
    got = ops_music.remix(call.model, call.payload, call.seed, call.inputs)
    if not isinstance(got, tuple):
        return (*ops_edit.remix_foreign(got, call.model, call.payload, call.seed), True)
    return _made(got)


def _extend_song(call: RenderCall) -> Made:
    return _edited(
        *ops_edit.extend("extend_song", call.model, call.payload, call.seed, call.inputs)
    )


def _extend_music(call: RenderCall) -> Made:
    return _edited(
        *ops_edit.extend("extend_music", call.model, call.payload, call.seed, call.inputs)
    )


def _inpaint(call: RenderCall) -> Made:
    return _edited(*ops_edit.inpaint(call.model, call.payload, call.seed, call.inputs))


def _vocal_clone(call: RenderCall) -> RenderResult:
    raise RenderError("operation: vocal_clone makes no audio; the worker calls extract_voice")


def _separate_stems(call: RenderCall) -> RenderResult:
    return ops_audio.separate_stems(call.model, call.payload, call.inputs)


def _copyright(call: RenderCall) -> RenderResult:
    return ops_audio.copyright_check(call.payload, call.inputs)


def _transcribe(call: RenderCall) -> RenderResult:
    return ops_audio.transcribe(call.payload, call.inputs)


def _audio_effect(call: RenderCall) -> RenderResult:
    return ops_audio.audio_effect(call.model, call.payload, call.inputs)


def _sfx_gen(call: RenderCall) -> RenderResult:
    return ops_audio.sound_effect(call.payload, call.seed)


def _mix(call: RenderCall) -> RenderResult:
    return ops_audio.mix(call.model, call.payload, call.inputs)


def _text(operation: str) -> Renderer:
    """The renderer of a text operation (lyrics, a web search, a translation)."""

    def run(call: RenderCall) -> RenderResult:
        return ops_audio.text_op(operation, call.payload, call.seed)

    return run


# operation (the spec registry's names) -> its renderer: the code that really differs.
RENDERERS: dict[str, Renderer] = {
    "generate_song": _music(_generate_song),
    "generate_music": _music(_generate_music),
    "generate_singing": _music(_generate_singing),
    "similar_song": _music(_similar_song),
    "similar_music": _music(_similar_music),
    "melody_to_song": _music(_melody_to_song),
    "midi_to_song": _music(_midi_to_song),
    "remix_song": _music(_remix_song),
    "extend_song": _music(_extend_song),
    "extend_music": _music(_extend_music),
    "inpaint": _music(_inpaint),
    "vocal_clone": _vocal_clone,
    "separate_stems": _separate_stems,
    "copyright": _copyright,
    "transcribe": _transcribe,
    "audio_effect": _audio_effect,
    "sfx_gen": _sfx_gen,
    "write_lyrics": _text("write_lyrics"),
    "web_search": _text("web_search"),
    "mix": _mix,
    "translate_lyrics": _text("translate_lyrics"),
}
# every operation of the registry but Agent One (run by its runner, not rendered)
assert set(RENDERERS) == set(REGISTRY) - {"agent"}


def render(
    operation: str,
    model: str,
    payload: dict[str, Any],
    *,
    seed: int,
    inputs: dict[str, AudioIn] | None = None,
    voice: Voice | None = None,
) -> RenderResult:
    """Render one operation; deterministic in all its arguments."""
    renderer = RENDERERS.get(operation)
    if renderer is None:
        raise RenderError(f"operation: the engine cannot render {operation!r}")
    return renderer(RenderCall(model, dict(payload or {}), seed, inputs, voice))


def _foreign_result(audio: np.ndarray, model: str, meta: Metadata, fmt: str) -> RenderResult:
    peak = float(np.abs(audio).max()) if audio.size else 0.0
    if peak > 0.98:
        audio = audio * np.float32(0.98 / peak)
    d = audio.shape[1] / SR
    meta = {**meta, "duration_s": round(d, 3), "model": model}
    return RenderResult(assets=[asset("mix", audio, foreign(model, d), fmt)], metadata=meta)


def check_audio(data: bytes, *, field: str, formats: tuple[str, ...] = ()) -> AudioInfo:
    """Recognise and fully decode-check an upload; :class:`EngineInputError` names ``field``."""
    try:
        p = probe.probe(data)
    except audio_io.CodecError as exc:
        raise EngineInputError(field, str(exc)) from None
    if formats and p.format not in formats:
        raise EngineInputError(field, f"must be {' or '.join(formats)}, got {p.format}")
    return AudioInfo(
        p.format, audio_io.MIME[p.format], round(p.duration_s, 4), p.sample_rate, p.channels
    )


def extract_voice(data: bytes, *, field: str = "reference_file_id") -> Voice:
    """The timbre of a reference recording: f0 range (YIN), median, LPC formants, gender."""
    try:
        audio = audio_io.load(data)
    except audio_io.CodecError as exc:
        raise EngineInputError(field, str(exc)) from None
    got = analyse_voice(audio[:, : SR * 60])
    if got is None:
        raise EngineInputError(field, "holds no voice (no pitched speech or singing was found)")
    return Voice(
        got["f0_low"], got["f0_high"], got["f0_median"], tuple(got["formants"]), got["gender"]
    )


def decode(data: bytes) -> tuple[np.ndarray, int]:
    """Decode audio bytes (mp3, m4a, wav, flac, ogg) to float32 ``(channels, samples)`` and the rate."""
    try:
        return audio_io.decode(data)
    except audio_io.CodecError as exc:
        raise EngineInputError("audio", str(exc)) from None


def excerpt(data: bytes, seconds: float) -> bytes:
    """The first ``seconds`` of an encoded file, re-encoded as MP3 (for partial_output)."""
    n = max(1, int(seconds * SR))
    try:
        # Decode only the head, with a margin so the resampler's filter sees past the cut:
        # the samples equal those of decoding and resampling the whole file.
        audio, sr = audio_io.decode_head(data, seconds + 0.05)
    except audio_io.CodecError as exc:
        raise EngineInputError("audio", str(exc)) from None
    audio = audio_io.resample(audio, sr)
    return audio_io.encode(audio[:, :n], "mp3")


def fingerprint(data: bytes) -> str:
    """A robust content fingerprint (hex) for copyright matching; see :func:`similarity`."""
    try:
        audio = audio_io.load(data)
    except audio_io.CodecError:
        return ""
    return _fp.encode_bits(_fp.bits(audio))


def similarity(fp_a: str, fp_b: str) -> float:
    """0 (unrelated) .. 1 (identical); >= 0.9 means a near copy (re-encoded, trimmed, lightly edited)."""
    return _fp.similarity(fp_a, fp_b)
