"""Editing operations: extend (song and music), inpaint, and remix of foreign audio.

Sandbox inputs are edited in the recipe: the original layers are clipped and
a new layer is added on the *same* timeline (so bars, tempo and key run
straight through the join) with complementary linear crossfades; outside the
edited range the output is the original, sample for sample. Foreign inputs
are edited as audio with the same crossfades.
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np

import songlab.sandbox.engine.arrange as arrange
import songlab.sandbox.engine.recipe as recipe
import songlab.sandbox.engine.separate as separate
import songlab.sandbox.engine.song as song
from songlab.sandbox.engine._ops_shared import SR, Src, clamp, fit_channels, get_input, seed_of
from songlab.sandbox.engine._types import AudioIn, Layer, Metadata, Recipe, RenderError, Score
from songlab.sandbox.engine.prompt import plan_from_prompt
from songlab.spec import LIMITS

# the ranges of the registry's duration fields (design.md's payload table)
SONG_MIN, SONG_MAX = float(LIMITS["song_seconds_min"]), float(LIMITS["song_seconds_max"])

XFADE = 0.3  # s, extend joins
EXTEND_MIN_MS, EXTEND_MAX_MS = 8000, 420000


def clip_layer(ly: Layer, lo: float, hi: float, fade: float) -> Layer | None:
    new = copy.deepcopy(ly)
    if new["start_s"] < lo:
        new["start_s"], new["fade_in_s"] = lo, fade
    if new["end_s"] > hi:
        new["end_s"], new["fade_out_s"] = hi, fade
    return new if new["end_s"] > new["start_s"] + 1e-6 else None


def _main_layer(rec: Recipe) -> Layer:
    return max(rec["layers"], key=lambda ly: ly["end_s"] - ly["start_s"])


def _variant(
    score: Score,
    *,
    model: str,
    seed: int,
    lyrics: str | None,
    vocal_start_s: float,
    rotate: int = 0,
) -> Score:
    """The same song's plan with a new seed (new melody, fills) and, if asked, rotated chords."""
    sc = copy.deepcopy(score)
    plan = song.plan_of(sc)
    if rotate:
        plan.progression = plan.progression[rotate:] + plan.progression[:rotate]
    parts = [p for p in sc["parts"] if p != "vocal"] if not lyrics else list(sc["parts"])
    if lyrics and "vocal" not in parts:
        parts.append("vocal")
    sc["plan"] = plan.to_dict()
    sc["model"] = model
    sc["seed"] = seed
    sc["lyrics"] = lyrics or ""
    sc["parts"] = parts
    sc["vocal_start_s"] = float(vocal_start_s)
    sc["melody"] = None
    if lyrics and not sc.get("voice"):
        sc["voice"] = song.new_score(plan, model=model, seed=seed, duration_s=1)["voice"]
    return sc


def extend(
    operation: str,
    model: str,
    payload: dict[str, Any],
    seed: int,
    inputs: dict[str, AudioIn] | None,
) -> tuple[Recipe | np.ndarray, Metadata]:
    if operation == "extend_song":
        etype = payload.get("extend_type", "tail")
        if etype not in ("tail", "head"):
            raise RenderError(f"extend_type: must be 'tail' or 'head', got {etype!r}")
        raw = payload.get("extend_at_ms", 0) or 0
        try:
            at_ms = int(raw)
        except (TypeError, ValueError):
            raise RenderError(f"extend_at_ms: must be an integer, got {raw!r}") from None
        applied = 0 if at_ms == 0 else int(min(max(at_ms, EXTEND_MIN_MS), EXTEND_MAX_MS))
        length = clamp(
            payload.get("duration_seconds"),
            SONG_MIN,
            SONG_MAX,
            float(LIMITS["song_seconds_default"]),
            "duration_seconds",
        )
        lyrics = str(payload.get("lyrics") or "")
        src = get_input(inputs, "song", "audio")
    else:
        etype = payload.get("side", "tail")
        if etype not in ("tail", "head"):
            raise RenderError(f"side: must be 'tail' or 'head', got {etype!r}")
        applied = 0
        length = clamp(
            payload.get("extend_seconds"),
            float(LIMITS["extend_seconds_min"]),
            float(LIMITS["extend_seconds_max"]),
            30.0,
            "extend_seconds",
        )
        lyrics = ""
        src = get_input(inputs, "music", "audio", "song")
    assert src is not None
    d = src.duration_s
    if etype == "tail":
        x = d if applied == 0 else min(applied / 1000, d)
    else:
        x = 0.0 if applied == 0 else min(applied / 1000, d)
    if not src.layered and etype == "tail" and applied == 0:
        x = _before_fade_out(src.audio)
    key = seed_of("extend", payload.get("prompt"), lyrics, seed, etype, applied)
    meta = {
        "extend_at_ms": applied,
        "extend_type": etype,
        "join_s": round(x if etype == "tail" else length, 4),
        "added_s": length,
    }
    if src.layered:
        rec = _extend_layered(src.recipe, model, etype, x, length, lyrics, key)  # type: ignore[arg-type]
        return rec, meta
    return _extend_foreign(src, model, payload, etype, x, length, lyrics, key), meta


def _before_fade_out(audio: np.ndarray) -> float:
    """Where a foreign song's ending fade begins (within its last 3 s), to continue from there."""
    blk = SR // 20
    m = audio.mean(axis=0)
    nb = len(m) // blk
    if nb < 20:
        return len(m) / SR
    rms = np.sqrt((m[: nb * blk].reshape(nb, blk) ** 2).mean(axis=1))
    ref = np.median(rms)
    tail = max(0, nb - 60)
    loud = np.flatnonzero(rms[tail:] >= 0.5 * ref)
    if len(loud) == 0:
        return len(m) / SR
    end = (tail + loud[-1] + 1) * blk
    return float(min(len(m), end) / SR)


def _extend_layered(
    rec: Recipe, model: str, etype: str, x: float, length: float, lyrics: str, key: int
) -> Recipe:
    main = _main_layer(rec)
    sc = main["score"]
    bl = arrange.bar_len(song.plan_of(sc))
    h = XFADE / 2
    layers = []
    if etype == "tail":
        for ly in rec["layers"]:
            ly = copy.deepcopy(ly)
            if ly["end_s"] >= rec["duration_s"] - 1e-6 or ly["end_s"] > x + h:
                ly["end_s"], ly["fade_out_s"] = x + h, XFADE  # its ending gives way to the new part
            if ly["end_s"] > ly["start_s"]:
                layers.append(ly)
        vstart = (np.ceil((x - main["offset_s"]) / bl) + 1) * bl
        new = _variant(sc, model=model, seed=key, lyrics=lyrics, vocal_start_s=vstart)
        layers.append(
            recipe.layer(
                new,
                offset_s=main["offset_s"],
                start_s=x - h,
                end_s=x + length,
                fade_in_s=XFADE,
                fade_out_s=min(1.5, length / 4),
                gain=main["gain"],
            )
        )
        total = x + length
    else:
        shift = length - x
        for ly in rec["layers"]:
            ly = copy.deepcopy(ly)
            for k in ("offset_s", "start_s", "end_s"):
                ly[k] += shift
            if ly["start_s"] < length - h:
                ly["start_s"], ly["fade_in_s"] = length - h, XFADE
            if ly["end_s"] > ly["start_s"]:
                layers.append(ly)
        off = main["offset_s"] + shift
        vstart = (np.ceil(-off / bl) + 1) * bl
        new = _variant(sc, model=model, seed=key, lyrics=lyrics, vocal_start_s=vstart)
        layers.append(
            recipe.layer(
                new,
                offset_s=off,
                start_s=0.0,
                end_s=length + h,
                fade_in_s=0.01,
                fade_out_s=XFADE,
                gain=main["gain"],
            )
        )
        total = length + rec["duration_s"] - x
    return recipe.make(
        layers,
        model=rec["model"],
        duration_s=total,
        channels=max(rec["channels"], recipe.channels_of(model)),
    )


def _new_part(
    src: Src, model: str, prompt: str, lyrics: str, key: int, duration: float
) -> tuple[Recipe, np.ndarray]:
    """A layered recipe for new material at the foreign input's tempo and key."""
    plan = plan_from_prompt(prompt, np.random.default_rng(key), base=src.plan())
    parts = song.ALL_PARTS if lyrics else ("drums", "bass", "harmony", "lead")
    sc = song.new_score(
        plan, model=model, seed=key, duration_s=duration, lyrics=lyrics, parts=parts
    )
    rec = recipe.make([recipe.layer(sc)], model=model, duration_s=duration)
    return rec, recipe.render_mix(rec)


def _level_match(new: np.ndarray, ref: np.ndarray) -> np.ndarray:
    r_ref = float(np.sqrt((ref**2).mean())) if ref.size else 0.0
    r_new = float(np.sqrt((new**2).mean())) if new.size else 0.0
    return new * np.float32(r_ref / r_new) if r_new > 1e-7 and r_ref > 1e-7 else new


def _extend_foreign(
    src: Src,
    model: str,
    payload: dict[str, Any],
    etype: str,
    x: float,
    length: float,
    lyrics: str,
    key: int,
) -> np.ndarray:
    audio = src.audio
    ch = max(audio.shape[0], recipe.channels_of(model))
    audio = fit_channels(audio, ch)
    h = int(XFADE / 2 * SR)
    xn, ln = int(round(x * SR)), int(round(length * SR))
    _, new = _new_part(src, model, str(payload.get("prompt") or ""), lyrics, key, length + XFADE)
    new = _level_match(fit_channels(new, ch), audio)
    ramp = np.linspace(0, 1, 2 * h, dtype=np.float32)
    if etype == "tail":
        out = np.zeros((ch, xn + ln), dtype=np.float32)
        keep = audio[:, : xn + h].copy()
        keep[:, max(0, keep.shape[1] - 2 * h) :] *= ramp[::-1][-min(2 * h, keep.shape[1]) :]
        out[:, : keep.shape[1]] += keep
        seg = new[:, : out.shape[1] - (xn - h)].copy()
        seg[:, : 2 * h] *= ramp[: seg.shape[1]]
        out[:, xn - h : xn - h + seg.shape[1]] += seg
    else:
        rest = audio[:, xn:].copy()
        out = np.zeros((ch, max(ln + h, ln - h + rest.shape[1])), dtype=np.float32)
        seg = new[:, : ln + h].copy()
        seg[:, -2 * h :] *= ramp[::-1]
        out[:, : seg.shape[1]] += seg
        k = min(2 * h, rest.shape[1])
        rest[:, :k] *= ramp[:k]
        out[:, ln - h : ln - h + rest.shape[1]] += rest
    return out


def inpaint(
    model: str, payload: dict[str, Any], seed: int, inputs: dict[str, AudioIn] | None
) -> tuple[Recipe | np.ndarray, Metadata]:
    src = get_input(inputs, "song", "audio")
    assert src is not None
    try:
        a, b = float(payload["start_ms"]) / 1000, float(payload["end_ms"]) / 1000
    except (KeyError, TypeError, ValueError):
        raise RenderError("start_ms, end_ms: both are required numbers") from None
    d = src.duration_s
    a, b = max(0.0, a), min(b, d)
    if b <= a:
        raise RenderError("end_ms: must be after start_ms and inside the song")
    xf = min(0.05, (b - a) / 4)
    lyrics = payload.get("lyrics")
    key = seed_of("inpaint", a, b, lyrics, seed)
    meta: Metadata = {"start_ms": int(round(a * 1000)), "end_ms": int(round(b * 1000))}
    if src.layered:
        rec = src.recipe
        assert rec is not None  # layered
        main = _main_layer(rec)
        layers = []
        for ly in rec["layers"]:
            for part in (clip_layer(ly, -1e9, a + xf, xf), clip_layer(ly, b - xf, 1e9, xf)):
                if part is not None:
                    layers.append(part)
        sc = main["score"]
        bl = arrange.bar_len(song.plan_of(sc))
        if lyrics is None:
            lyrics = sc["lyrics"] if "vocal" in sc["parts"] else ""
        vstart = np.ceil((a - main["offset_s"]) / bl) * bl
        new = _variant(
            sc, model=model, seed=key, lyrics=str(lyrics), vocal_start_s=vstart, rotate=1
        )
        layers.append(
            recipe.layer(
                new,
                offset_s=main["offset_s"],
                start_s=a,
                end_s=b,
                fade_in_s=xf,
                fade_out_s=xf,
                gain=main["gain"],
            )
        )
        return recipe.make(layers, model=rec["model"], duration_s=d, channels=rec["channels"]), meta
    audio = src.audio.copy()
    an, bn, xn = int(round(a * SR)), int(round(b * SR)), int(round(xf * SR))
    _, fresh = _new_part(
        src, model, str(payload.get("prompt") or ""), str(lyrics or ""), key, b - a
    )
    fresh = _level_match(fit_channels(fresh, audio.shape[0])[:, : bn - an], audio[:, an:bn])
    w = np.ones(bn - an, dtype=np.float32)
    if xn:
        w[:xn] = np.linspace(0, 1, xn)
        w[-xn:] = np.linspace(1, 0, xn)
    audio[:, an:bn] = audio[:, an:bn] * (1 - w) + fresh[:, : bn - an] * w
    return audio, meta


def remix_foreign(
    src: Src, model: str, payload: dict[str, Any], seed: int
) -> tuple[np.ndarray, Metadata]:
    """Foreign remix: the input's (spectrally separated) vocals over a new arrangement."""
    prompt = str(payload.get("prompt") or payload.get("genre") or "")
    key = seed_of("remix-foreign", prompt, seed, len(src.data))
    audio = src.audio
    vocals = separate.spectral(audio, "2stem")["vocals"]
    rec, inst = _new_part(src, model, prompt, "", key, audio.shape[1] / SR)
    ch = max(audio.shape[0], inst.shape[0])
    inst = _level_match(fit_channels(inst, ch), fit_channels(audio, ch)) * np.float32(0.8)
    out = fit_channels(vocals, ch)[:, : inst.shape[1]] + inst[:, : vocals.shape[1]]
    plan = song.plan_of(rec["layers"][0]["score"])
    return out, {"genre": plan.genre, "tempo_bpm": plan.tempo}
