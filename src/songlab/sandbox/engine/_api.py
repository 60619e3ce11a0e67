"""Engine entry points (see the package docstring for the contract).

:func:`render` dispatches an operation through :data:`RENDERERS` (keyed by the
spec registry's operation names) to its module (``ops_music``, ``ops_edit``,
``ops_audio``) and encodes the result; the other functions are
the worker's helpers for uploads, voices and copyright matching.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

import songlab.sandbox.engine.codec as codec
import songlab.sandbox.engine.fprint as _fp
import songlab.sandbox.engine.ops_audio as ops_audio
import songlab.sandbox.engine.ops_edit as ops_edit
import songlab.sandbox.engine.ops_music as ops_music
import songlab.sandbox.engine.probe as probe
from songlab.sandbox.engine._common import SR, asset, finish, out_format
from songlab.sandbox.engine._types import (
    Asset,
    AudioIn,
    AudioInfo,
    EngineInputError,
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
Renderer = Callable[[str, dict[str, Any], int, Inputs, Voice | None], RenderResult]
# what a music renderer makes: (recipe, or foreign audio as an array), metadata, normalise
Made = tuple[Any, dict[str, Any], bool]


def _text(operation: str) -> Renderer:
    return lambda model, p, seed, inputs, voice: ops_audio.text_op(operation, p, seed)


def _music(make: Callable[[str, dict[str, Any], int, Inputs, Voice | None], Made]) -> Renderer:
    """A renderer from a music maker: a recipe is finished and encoded, foreign audio kept."""

    def run(
        model: str, payload: dict[str, Any], seed: int, inputs: Inputs, voice: Voice | None
    ) -> RenderResult:
        fmt = out_format(payload)
        out, meta, normalise = make(model, payload, seed, inputs, voice)
        if isinstance(out, np.ndarray):
            return _foreign_result(out, model, meta, fmt)
        rec, mix = finish(out, normalise=normalise)
        meta.setdefault("duration_s", rec["duration_s"])
        meta["model"] = model
        return RenderResult(assets=[asset("mix", mix, rec, fmt)], metadata=meta)

    return run


def _made(pair: tuple[Any, dict[str, Any]], normalise: bool = True) -> Made:
    return pair[0], pair[1], normalise


def _remix(model: str, p: dict[str, Any], seed: int, inputs: Inputs, voice: Voice | None) -> Made:
    got = ops_music.remix(model, p, seed, inputs)
    if not isinstance(got, tuple):
        return (*ops_edit.remix_foreign(got, model, p, seed), True)
    return _made(got)


def _edit(out: Any, meta: dict[str, Any]) -> Made:
    """An edit (extend, inpaint) is not normalised again: its source's level is kept."""
    return out, meta, False


def _vocal_clone(
    model: str, p: dict[str, Any], seed: int, inputs: Inputs, voice: Voice | None
) -> RenderResult:
    raise RenderError("operation: vocal_clone makes no audio; the worker calls extract_voice")


# operation (the spec registry's names) -> its renderer: the code that really differs.
RENDERERS: dict[str, Renderer] = {
    "generate_song": _music(
        lambda m, p, s, i, v: _made(ops_music.generate("generate_song", m, p, s, v, i))
    ),
    "generate_music": _music(
        lambda m, p, s, i, v: _made(ops_music.generate("generate_music", m, p, s, v, i))
    ),
    "generate_singing": _music(lambda m, p, s, i, v: ops_music.singing(m, p, s, i, v)),
    "similar_song": _music(
        lambda m, p, s, i, v: _made(ops_music.similar("similar_song", m, p, s, i, v))
    ),
    "similar_music": _music(
        lambda m, p, s, i, v: _made(ops_music.similar("similar_music", m, p, s, i, v))
    ),
    "melody_to_song": _music(lambda m, p, s, i, v: _made(ops_music.melody_song(m, p, s, i))),
    "midi_to_song": _music(lambda m, p, s, i, v: _made(ops_music.midi_song(m, p, s, i))),
    "remix_song": _music(_remix),
    "extend_song": _music(lambda m, p, s, i, v: _edit(*ops_edit.extend("extend_song", m, p, s, i))),
    "extend_music": _music(
        lambda m, p, s, i, v: _edit(*ops_edit.extend("extend_music", m, p, s, i))
    ),
    "inpaint": _music(lambda m, p, s, i, v: _edit(*ops_edit.inpaint(m, p, s, i))),
    "vocal_clone": _vocal_clone,
    "separate_stems": lambda m, p, s, i, v: ops_audio.separate_stems(m, p, i),
    "copyright": lambda m, p, s, i, v: ops_audio.copyright_check(p, i),
    "transcribe": lambda m, p, s, i, v: ops_audio.transcribe(p, i),
    "audio_effect": lambda m, p, s, i, v: ops_audio.audio_effect(m, p, i),
    "sfx_gen": lambda m, p, s, i, v: ops_audio.sound_effect(p, s),
    "write_lyrics": _text("write_lyrics"),
    "web_search": _text("web_search"),
    "mix": lambda m, p, s, i, v: ops_audio.mix(m, p, i),
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
    return renderer(model, dict(payload or {}), seed, inputs, voice)


def _foreign_result(audio: np.ndarray, model: str, meta: dict[str, Any], fmt: str) -> RenderResult:
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
    except codec.CodecError as exc:
        raise EngineInputError(field, str(exc)) from None
    if formats and p.format not in formats:
        raise EngineInputError(field, f"must be {' or '.join(formats)}, got {p.format}")
    return AudioInfo(
        p.format, codec.MIME[p.format], round(p.duration_s, 4), p.sample_rate, p.channels
    )


def extract_voice(data: bytes, *, field: str = "reference_file_id") -> Voice:
    """The timbre of a reference recording: f0 range (YIN), median, LPC formants, gender."""
    try:
        audio = codec.load(data)
    except codec.CodecError as exc:
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
        return codec.decode(data)
    except codec.CodecError as exc:
        raise EngineInputError("audio", str(exc)) from None


def excerpt(data: bytes, seconds: float) -> bytes:
    """The first ``seconds`` of an encoded file, re-encoded as MP3 (for partial_output)."""
    n = max(1, int(seconds * SR))
    try:
        # Decode only the head, with a margin so the resampler's filter sees past the cut:
        # the samples equal those of decoding and resampling the whole file.
        audio, sr = codec.decode_head(data, seconds + 0.05)
    except codec.CodecError as exc:
        raise EngineInputError("audio", str(exc)) from None
    audio = codec.resample(audio, sr)
    return codec.encode(audio[:, :n], "mp3")


def fingerprint(data: bytes) -> str:
    """A robust content fingerprint (hex) for copyright matching; see :func:`similarity`."""
    try:
        audio = codec.load(data)
    except codec.CodecError:
        return ""
    return _fp.encode_bits(_fp.bits(audio))


def similarity(fp_a: str, fp_b: str) -> float:
    """0 (unrelated) .. 1 (identical); >= 0.9 means a near copy (re-encoded, trimmed, lightly edited)."""
    return _fp.similarity(fp_a, fp_b)
