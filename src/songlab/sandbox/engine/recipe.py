"""Recipes: how a sandbox file was made, precisely enough to re-render its stems.

A recipe is a JSON-able dict stored with every output::

    {"engine": 1, "kind": "layers", "model", "channels", "duration_s", "layers": [layer, ...]}

    layer = {"score": score dict, "offset_s": output time of score time 0,
             "start_s", "end_s", "fade_in_s", "fade_out_s": where it sounds (output time),
             "gain": linear, "stems": [fine stem names] or None (all), "effects": [[name, amount, semitones]]}

Rendering a recipe renders each layer's score over its window, keeps its
stems, applies gain, fades and effects *per stem*, pans, and sums by stem
name: the file is the sum of its stems, so separating a sandbox file is exact.
Audio the engine did not make (or cannot reproduce) has ``"kind": "foreign"``.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator

import numpy as np

import songlab.sandbox.engine.effects as effects
import songlab.sandbox.engine.song as song
from songlab.sandbox.engine._types import Layer, Recipe, Score
from songlab.sandbox.engine.synth import SR

# stereo position per stem (-1 left .. 1 right) at full width; v6 plays them narrower
PAN = {
    "lead_vocals": 0.0,
    "backing_vocals": -0.45,
    "kick": 0.0,
    "snare": 0.05,
    "hihat": 0.35,
    "perc": -0.4,
    "bass": 0.0,
    "guitar": -0.5,
    "piano": 0.3,
    "synth": -0.25,
    "strings": 0.45,
    "other": -0.3,
}
WIDTH = {"v5": 0.0, "v6": 0.55, "v7": 1.0}
CHANNELS = {"v5": 1, "v6": 2, "v7": 2}


def channels_of(model: str) -> int:
    return CHANNELS.get(model, 2)


def layer(
    score: Score,
    *,
    start_s: float = 0.0,
    end_s: float | None = None,
    offset_s: float = 0.0,
    fade_in_s: float = 0.01,
    fade_out_s: float = 0.01,
    gain: float = 1.0,
    stems: list[str] | None = None,
) -> Layer:
    return {
        "score": score,
        "offset_s": float(offset_s),
        "start_s": float(start_s),
        "end_s": float(score["duration_s"] + offset_s if end_s is None else end_s),
        "fade_in_s": float(fade_in_s),
        "fade_out_s": float(fade_out_s),
        "gain": float(gain),
        "stems": stems,
        "effects": [],
    }


def make(
    layers: list[Layer], *, model: str, duration_s: float, channels: int | None = None
) -> Recipe:
    ch = channels or max(
        [channels_of(model)] + [channels_of(ly["score"]["model"]) for ly in layers]
    )
    return {
        "engine": 1,
        "kind": "layers",
        "model": model,
        "channels": ch,
        "duration_s": float(duration_s),
        "layers": layers,
    }


def foreign(
    model: str, duration_s: float, *, stem: str | None = None, sfx: list[str] | None = None
) -> Recipe:
    """The recipe of audio the engine cannot re-render: a stem of foreign audio (``stem``),
    a sound effect (``sfx``: the words it drew), or anything else."""
    rec = Recipe(engine=1, kind="foreign", model=model, duration_s=float(duration_s))
    if stem is not None:
        rec["stem"] = stem
    if sfx is not None:
        rec["sfx"] = sfx
    return rec


def is_layered(rec: Recipe | None) -> bool:
    if not rec:
        return False
    return rec.get("engine") == 1 and rec.get("kind") == "layers" and bool(rec.get("layers"))


def derive(
    rec: Recipe,
    *,
    gain: float = 1.0,
    stems: list[str] | None = None,
    effect: list[object] | None = None,
) -> Recipe:
    """A copy of ``rec`` with a gain, a stem subset or an effect applied to every layer."""
    out = copy.deepcopy(rec)
    for ly in out["layers"]:
        ly["gain"] *= gain
        if stems is not None:
            have = ly["stems"] if ly["stems"] is not None else list(song.FINE_STEMS)
            ly["stems"] = [s for s in have if s in stems]
        if effect is not None:
            ly["effects"].append(list(effect))
    out["layers"] = [ly for ly in out["layers"] if ly["stems"] is None or ly["stems"]]
    return out


def _effect_step(step: list[object]) -> tuple[str, float, float | None]:
    """A layer's effect as the recipe stores it: [name, amount, semitones or None]."""
    name, amount, semis = step
    assert isinstance(name, str) and isinstance(amount, int | float), step
    assert semis is None or isinstance(semis, int | float), step
    return name, amount, semis


def _window(n: int, ly: Layer) -> tuple[int, int, int, int]:
    """Sample range ``[a, b)`` of a layer and its fade lengths in samples."""
    a = max(0, int(round(ly["start_s"] * SR)))
    b = min(n, int(round(ly["end_s"] * SR)))
    fi = int(ly["fade_in_s"] * SR) if a > 0 or ly["start_s"] >= 0 else 0
    return a, b, fi, int(ly["fade_out_s"] * SR)


def _fade(x: np.ndarray, fi: int, fo: int, cut_in: int, cut_out: int) -> None:
    """In-place linear fades; ``cut_*`` are samples of the fade lying outside ``x``."""
    m = len(x)
    if fi:
        ramp = np.linspace(0.0, 1.0, fi, dtype=np.float32)[cut_in:][:m]
        x[: len(ramp)] *= ramp
    if fo:
        ramp = np.linspace(1.0, 0.0, fo, dtype=np.float32)[: max(0, fo - cut_out)][-m:]
        if len(ramp):
            x[m - len(ramp) :] *= ramp


def _placed(rec: Recipe) -> Iterator[tuple[str, np.ndarray, int, int, float]]:
    """Yield ``(stem, mono float32, a, b, pan)`` of every layer: the stem's samples for
    output ``[a, b)`` (gain, fades and effects applied) and its pan position."""
    n = int(round(rec["duration_s"] * SR))
    cache: dict[str, dict[str, np.ndarray]] = {}
    for ly in rec["layers"]:
        a, b, fi, fo = _window(n, ly)
        if b <= a:
            continue
        a_full = int(round(ly["start_s"] * SR))
        b_full = int(round(ly["end_s"] * SR))
        t0 = a / SR - ly["offset_s"]
        key = json.dumps([ly["score"], a, b], sort_keys=True)
        if key not in cache:
            cache[key] = song.render(ly["score"], t0, t0 + (b - a) / SR)
        width = WIDTH.get(ly["score"]["model"], 1.0)
        for name, mono in cache[key].items():
            if ly["stems"] is not None and name not in ly["stems"]:
                continue
            x = mono[: b - a] * np.float32(ly["gain"])
            _fade(x, fi, fo, a - a_full, b_full - b)
            a2, b2 = a, b
            if ly["effects"]:
                full = np.zeros((1, n), dtype=np.float32)
                full[0, a:b] = x
                for step in ly["effects"]:
                    eff, amount, semis = _effect_step(step)
                    full = effects.apply(full, eff, amount, semitones=semis)
                x, a2, b2 = full[0], 0, n
            yield name, x, a2, b2, PAN.get(name, 0.0) * width


def _add(dst: np.ndarray, x: np.ndarray, a: int, b: int, pan: float) -> None:
    if dst.shape[0] == 2:
        ang = (pan + 1) * np.pi / 4  # equal-power pan, unity in the centre
        dst[0, a:b] += x * float(np.cos(ang) * np.sqrt(2))
        dst[1, a:b] += x * float(np.sin(ang) * np.sqrt(2))
    else:
        dst[0, a:b] += x


def render(rec: Recipe) -> dict[str, np.ndarray]:
    """Stems of a layered recipe: ``{fine stem: float32 (channels, samples)}``."""
    n = int(round(rec["duration_s"] * SR))
    out: dict[str, np.ndarray] = {}
    for name, x, a, b, pan in _placed(rec):
        if name not in out:
            out[name] = np.zeros((rec["channels"], n), dtype=np.float32)
        _add(out[name], x, a, b, pan)
    return out


def render_mix(rec: Recipe) -> np.ndarray:
    """The mix of a layered recipe, ``float32 (channels, samples)``: the sum of :func:`render`'s
    stems, panned straight into one buffer (no per-stem arrays)."""
    mix = np.zeros((rec["channels"], int(round(rec["duration_s"] * SR))), dtype=np.float32)
    for _, x, a, b, pan in _placed(rec):
        _add(mix, x, a, b, pan)
    return mix


def mixdown(stems: dict[str, np.ndarray], n: int, ch: int) -> np.ndarray:
    mix = np.zeros((ch, n), dtype=np.float32)
    for x in stems.values():
        mix += x
    return mix


def sung(rec: Recipe | None) -> list[tuple[float, float, str, str]]:
    """Lines sung in a layered recipe: ``(start_s, end_s, text, language)`` in output time."""
    if not is_layered(rec):
        return []
    assert rec is not None
    out = []
    for ly in rec["layers"]:
        if ly["stems"] is not None and "lead_vocals" not in ly["stems"]:
            continue
        if ly["gain"] <= 1e-4:
            continue
        for line in song.sung_lines(ly["score"]):
            s, e = line.start + ly["offset_s"], line.end + ly["offset_s"]
            mid = (s + e) / 2
            if ly["start_s"] <= mid < ly["end_s"] and mid < rec["duration_s"]:
                out.append((s, e, line.text, ly["score"].get("language", "en")))
    out.sort()
    return out


def main_score(rec: Recipe | None) -> Score | None:
    """The score of the layer that sounds longest (its plan, voice and lyrics describe the file)."""
    if not is_layered(rec):
        return None
    assert rec is not None
    return max(rec["layers"], key=lambda ly: ly["end_s"] - ly["start_s"])["score"]


def vocal_score(rec: Recipe | None) -> Score | None:
    """The score that sings in a recipe (the longest layer with a lead vocal), if any."""
    if not is_layered(rec):
        return None
    assert rec is not None
    cands = [
        ly
        for ly in rec["layers"]
        if ly["score"].get("voice")
        and "vocal" in ly["score"]["parts"]
        and (ly["stems"] is None or "lead_vocals" in ly["stems"])
    ]
    if not cands:
        return None
    return max(cands, key=lambda ly: ly["end_s"] - ly["start_s"])["score"]
