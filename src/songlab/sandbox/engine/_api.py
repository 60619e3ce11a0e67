"""Engine entry points (see the package docstring for the contract).

:func:`render` dispatches an operation to its module (``ops_music``,
``ops_edit``, ``ops_audio``) and encodes the result; the other functions are
the worker's helpers for uploads, voices and copyright matching.
"""

from __future__ import annotations

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

SAMPLE_RATE = SR

__all__ = ["Asset", "AudioIn", "AudioInfo", "EngineInputError", "RenderError", "RenderResult", "Voice",
           "check_audio", "decode", "excerpt", "extract_voice", "fingerprint", "render", "similarity"]

_TEXT_OPS = ("write_lyrics", "translate_lyrics", "web_search")


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
    payload = dict(payload or {})
    if operation in _TEXT_OPS:
        return ops_audio.text_op(operation, payload, seed)
    if operation == "transcribe":
        return ops_audio.transcribe(payload, inputs)
    if operation == "copyright":
        return ops_audio.copyright_check(payload, inputs)
    if operation == "separate_stems":
        return ops_audio.separate_stems(model, payload, inputs)
    if operation == "audio_effect":
        return ops_audio.audio_effect(model, payload, inputs)
    if operation == "mix":
        return ops_audio.mix(model, payload, inputs)
    if operation == "sfx_gen":
        return ops_audio.sound_effect(payload, seed)
    fmt = out_format(payload)
    normalise = True
    if operation in ("generate_song", "generate_music"):
        rec, meta = ops_music.generate(operation, model, payload, seed, voice, inputs)
    elif operation == "generate_singing":
        rec, meta, normalise = ops_music.singing(model, payload, seed, inputs, voice)
    elif operation in ("similar_song", "similar_music"):
        rec, meta = ops_music.similar(operation, model, payload, seed, inputs, voice)
    elif operation == "melody_to_song":
        rec, meta = ops_music.melody_song(model, payload, seed, inputs)
    elif operation == "midi_to_song":
        rec, meta = ops_music.midi_song(model, payload, seed, inputs)
    elif operation == "remix_song":
        got = ops_music.remix(model, payload, seed, inputs)
        if not isinstance(got, tuple):
            audio, meta = ops_edit.remix_foreign(got, model, payload, seed)
            return _foreign_result(audio, model, meta, fmt)
        rec, meta = got
    elif operation in ("extend_song", "extend_music"):
        out, meta = ops_edit.extend(operation, model, payload, seed, inputs)
        if isinstance(out, np.ndarray):
            return _foreign_result(out, model, meta, fmt)
        rec, normalise = out, False
    elif operation == "inpaint":
        out, meta = ops_edit.inpaint(model, payload, seed, inputs)
        if isinstance(out, np.ndarray):
            return _foreign_result(out, model, meta, fmt)
        rec, normalise = out, False
    elif operation == "vocal_clone":
        raise RenderError("operation: vocal_clone makes no audio; the worker calls extract_voice")
    else:
        raise RenderError(f"operation: the engine cannot render {operation!r}")
    rec, mix = finish(rec, normalise=normalise)
    meta.setdefault("duration_s", rec["duration_s"])
    meta["model"] = model
    return RenderResult(assets=[asset("mix", mix, rec, fmt)], metadata=meta)


def _foreign_result(audio: np.ndarray, model: str, meta: dict, fmt: str) -> RenderResult:
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
    return AudioInfo(p.format, codec.MIME[p.format], round(p.duration_s, 4), p.sample_rate, p.channels)


def extract_voice(data: bytes, *, field: str = "reference_file_id") -> Voice:
    """The timbre of a reference recording: f0 range (YIN), median, LPC formants, gender."""
    try:
        audio = codec.load(data)
    except codec.CodecError as exc:
        raise EngineInputError(field, str(exc)) from None
    got = analyse_voice(audio[:, : SR * 60])
    if got is None:
        raise EngineInputError(field, "holds no voice (no pitched speech or singing was found)")
    return Voice(got["f0_low"], got["f0_high"], got["f0_median"], tuple(got["formants"]), got["gender"])


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
