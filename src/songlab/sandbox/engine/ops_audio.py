"""Audio-in operations: stems, effects, mix, transcription, copyright, sound effects, text ops."""

from __future__ import annotations

from typing import Any

import numpy as np

import songlab.sandbox.engine.effects as effects
import songlab.sandbox.engine.fprint as fp
import songlab.sandbox.engine.recipe as recipe
import songlab.sandbox.engine.separate as separate
import songlab.sandbox.engine.sfx as sfx
import songlab.sandbox.engine.text as text
from songlab.sandbox.engine._ops_shared import (
    SR,
    Src,
    asset,
    clamp,
    fit_channels,
    get_input,
    out_format,
    rng_of,
    seed_of,
)
from songlab.sandbox.engine._types import AudioIn, RenderError, RenderResult
from songlab.sandbox.engine.voice import f0_track
from songlab.spec import LIMITS


def separate_stems(
    model: str, payload: dict[str, Any], inputs: dict[str, AudioIn] | None
) -> RenderResult:
    if model not in separate.GROUPS:
        raise RenderError(
            f"model: stem separation models are {', '.join(separate.GROUPS)}, got {model!r}"
        )
    src = get_input(inputs, "audio", "song")
    assert src is not None
    fmt = out_format(payload)
    assets = []
    if src.layered:
        rec = src.recipe
        fine = recipe.render(rec)  # type: ignore[arg-type]
        n = int(round(rec["duration_s"] * SR))  # type: ignore[index]
        stems = separate.group(fine, model, (rec["channels"], n))  # type: ignore[index]
        for name, members in separate.GROUPS[model].items():
            assets.append(asset(name, stems[name], recipe.derive(rec, stems=list(members)), fmt))  # type: ignore[arg-type]
        method = "recipe"
    else:
        stems = separate.spectral(src.audio, model)
        d = src.audio.shape[1] / SR
        for name in separate.GROUPS[model]:
            assets.append(asset(name, stems[name], recipe.foreign(model, d, stem=name), fmt))
        method = "spectral"
    return RenderResult(
        assets=assets, metadata={"stems": list(separate.GROUPS[model]), "method": method}
    )


def audio_effect(
    model: str, payload: dict[str, Any], inputs: dict[str, AudioIn] | None
) -> RenderResult:
    src = get_input(inputs, "audio", "song")
    assert src is not None
    eff = payload.get("effect", "normalize")
    if eff not in effects.EFFECTS:
        raise RenderError(f"effect: must be one of {', '.join(effects.EFFECTS)}, got {eff!r}")
    amount = clamp(payload.get("amount"), 0, 1, 0.5, "amount")
    semis = payload.get("semitones")
    semis = None if semis is None else clamp(semis, -24, 24, 0, "semitones")
    x = src.audio
    if eff == "normalize":
        g = effects.normalize_gain(x)
        y = x * np.float32(g)
        rec = (
            recipe.derive(src.recipe, gain=g)
            if src.layered and src.recipe is not None
            else recipe.foreign(model, x.shape[1] / SR)
        )
        lufs = effects.loudness(y) if np.abs(y).max() > 1e-6 else float("-inf")
        meta = {
            "effect": eff,
            "gain_db": round(float(20 * np.log10(max(g, 1e-9))), 2),
            "loudness_lufs": round(lufs, 2) if np.isfinite(lufs) else None,
        }
    else:
        y = effects.apply(x, eff, amount, semitones=semis)
        peak = float(np.abs(y).max())
        g = min(1.0, effects.PEAK / peak) if peak > 0 else 1.0
        y *= np.float32(g)
        rec = (
            recipe.derive(recipe.derive(src.recipe, effect=[eff, amount, semis]), gain=g)  # type: ignore[arg-type]
            if src.layered
            else recipe.foreign(model, x.shape[1] / SR)
        )
        meta = {"effect": eff, "amount": amount}
        if eff == "lowpass":
            meta["cutoff_hz"] = round(effects.lowpass_hz(amount), 1)
        elif eff == "highpass":
            meta["cutoff_hz"] = round(effects.highpass_hz(amount), 1)
        elif eff == "pitch_shift":
            meta["semitones"] = amount * 12 if semis is None else semis
    return RenderResult(assets=[asset("mix", y, rec, out_format(payload))], metadata=meta)


def mix(model: str, payload: dict[str, Any], inputs: dict[str, AudioIn] | None) -> RenderResult:
    """Sum ``track0..trackN`` with optional linear ``gains``; exact in the recipe when all are sandbox files."""
    names = sorted(
        (k for k in (inputs or {}) if k.startswith("track")), key=lambda k: int(k[5:] or 0)
    )
    if not names:
        raise RenderError("tracks: mix needs at least one track (inputs track0, track1, ...)")
    gains = payload.get("gains") or [1.0] * len(names)
    if len(gains) != len(names):
        raise RenderError(f"gains: expected {len(names)} gains, got {len(gains)}")
    srcs = [get_input(inputs, n) for n in names]
    fmt = out_format(payload)
    if all(s.layered for s in srcs):  # type: ignore[union-attr]
        layers = []
        for s, g in zip(srcs, gains, strict=True):
            layers += recipe.derive(s.recipe, gain=float(g))["layers"]  # type: ignore[union-attr, arg-type]
        dur = max(s.recipe["duration_s"] for s in srcs)  # type: ignore[union-attr, index]
        ch = max(s.recipe["channels"] for s in srcs)  # type: ignore[union-attr, index]
        rec = recipe.make(layers, model=model, duration_s=dur, channels=ch)
        out = recipe.render_mix(rec)
        peak = float(np.abs(out).max())
        if peak > effects.PEAK:
            rec = recipe.derive(rec, gain=effects.PEAK / peak)
            out *= np.float32(effects.PEAK / peak)
        return RenderResult(
            assets=[asset("mix", out, rec, fmt)],
            metadata={"tracks": len(names), "method": "recipe"},
        )
    audios = [s.audio for s in srcs]  # type: ignore[union-attr]
    ch = max(a.shape[0] for a in audios)
    n = max(a.shape[1] for a in audios)
    out = np.zeros((ch, n), dtype=np.float32)
    for a, g in zip(audios, gains, strict=True):
        out[:, : a.shape[1]] += fit_channels(a, ch) * np.float32(g)
    peak = float(np.abs(out).max())
    if peak > effects.PEAK:
        out *= np.float32(effects.PEAK / peak)
    return RenderResult(
        assets=[asset("mix", out, recipe.foreign(model, n / SR), fmt)],
        metadata={"tracks": len(names), "method": "audio"},
    )


def transcribe(payload: dict[str, Any], inputs: dict[str, AudioIn] | None) -> RenderResult:
    src = get_input(inputs, "audio", "song")
    assert src is not None
    lang = payload.get("language")
    if src.layered:
        lines = recipe.sung(src.recipe)
        segs = [
            {"start_ms": int(round(s * 1000)), "end_ms": int(round(e * 1000)), "text": t}
            for s, e, t, _ in lines
        ]
        language = lang or (lines[0][3] if lines else "en")
        source = "recipe"
    else:
        segs = _estimate_segments(src)
        language = lang or "en"
        source = "estimated"
    out = "\n".join(str(s["text"]) for s in segs)
    return RenderResult(
        text=out, metadata={"language": language, "segments": segs, "source": source}
    )


def _estimate_segments(src: Src) -> list[dict[str, Any]]:
    """Voiced stretches of foreign audio, labelled with plausible lines (the engine cannot listen)."""
    times, f0 = f0_track(src.audio[:, : SR * 240])
    if len(f0) == 0:
        return []
    voiced = (f0 > 80) & (f0 < 1000)
    segs, start = [], None
    for i in range(0, len(voiced), 50):  # half-second blocks
        v = voiced[i : i + 50].mean() > 0.4
        t = float(times[i])
        if v and start is None:
            start = t
        if (not v or i + 50 >= len(voiced)) and start is not None:
            if t - start >= 1.0:
                segs.append((start, t))
            start = None
    lines = text.pseudo_lyrics(seed_of("transcribe", len(src.data)), len(segs))
    return [
        {"start_ms": int(s * 1000), "end_ms": int(e * 1000), "text": ln}
        for (s, e), ln in zip(segs, lines, strict=True)
    ]


def copyright_check(payload: dict[str, Any], inputs: dict[str, AudioIn] | None) -> RenderResult:
    src = get_input(inputs, "audio", "song")
    assert src is not None
    f = fp.encode_bits(fp.bits(src.audio))
    return RenderResult(
        text="fingerprinted; the service compares it with the library",
        metadata={
            "fingerprint": f,
            "duration_s": round(src.audio.shape[1] / SR, 3),
            "match_threshold": fp.MATCH_THRESHOLD,
        },
    )


def sound_effect(payload: dict[str, Any], seed: int) -> RenderResult:
    prompt = str(payload.get("prompt") or "")
    dur = clamp(
        payload.get("duration_seconds"),
        float(LIMITS["sfx_seconds_min"]),
        float(LIMITS["sfx_seconds_max"]),
        float(LIMITS["sfx_seconds_default"]),
        "duration_seconds",
    )
    audio, used = sfx.render(prompt, dur, rng_of("sfx", prompt, payload.get("seed", seed)))
    rec = recipe.foreign("v5", dur, sfx=used)
    return RenderResult(
        assets=[asset("mix", audio[None, :], rec, out_format(payload))],
        metadata={"layers": used, "duration_s": dur},
    )


def text_op(operation: str, payload: dict[str, Any], seed: int) -> RenderResult:
    if operation == "write_lyrics":
        prompt = str(payload.get("prompt") or "")
        lyr = text.write_lyrics(prompt, seed=int(payload.get("seed", 0)))
        return RenderResult(
            text=lyr, metadata={"theme": text.theme_of(prompt), "lines": len(text.lyric_lines(lyr))}
        )
    if operation == "translate_lyrics":
        lang = str(payload.get("target_language") or "")
        if not lang:
            raise RenderError("target_language: is required")
        matched = bool(payload.get("syllable_matched", True))
        out = text.translate(str(payload.get("lyrics") or ""), lang, syllable_matched=matched)
        return RenderResult(
            text=out, metadata={"language": text.language_code(lang), "syllable_matched": matched}
        )
    q = str(payload.get("query") or payload.get("prompt") or "")
    out, results = text.web_search(q)
    return RenderResult(text=out, metadata={"query": q, "results": results})
