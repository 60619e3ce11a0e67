"""Sound effects from a prompt: each keyword names a small noise/tone recipe.

Recognised: rain, wind, thunder/explosion, footsteps, bell/chime, laser/zap,
whoosh/swoosh, beep/alarm, bird, water/stream, fire/crackle, applause/crowd,
engine/car, knock/door. Several keywords layer; an unknown prompt gives a
whoosh and an impact. Deterministic from the prompt and seed.
"""

from __future__ import annotations

from typing import cast

import numpy as np
from scipy.signal import butter, sosfilt

SR = 44100


def _bp(x: np.ndarray, lo: float, hi: float) -> np.ndarray:
    sos = butter(2, [lo, min(hi, SR / 2 * 0.95)], btype="bandpass", fs=SR, output="sos")
    return cast(np.ndarray, sosfilt(sos, x))


def _events(n: int, rate_hz: float, rng: np.random.Generator) -> np.ndarray:
    k = rng.poisson(rate_hz * n / SR)
    return np.sort(rng.integers(0, max(n, 1), size=k))


def _impulses(n: int, where: np.ndarray, kernel: np.ndarray, gains: np.ndarray) -> np.ndarray:
    out = np.zeros(n + len(kernel))
    for w, g in zip(where, gains, strict=True):
        if 0 <= w < n:  # an event at or past the end is not heard
            out[w : w + len(kernel)] += g * kernel
    return out[:n]


def render(
    prompt: str, duration_s: float, rng: np.random.Generator
) -> tuple[np.ndarray, list[str]]:
    """Mono float32 effect and the keywords it used."""
    text = (prompt or "").lower()
    n = int(duration_s * SR)
    t = np.arange(n) / SR
    out = np.zeros(n)
    used: list[str] = []

    def has(*ws: str) -> bool:
        return any(w in text for w in ws)

    if has("rain", "storm", "drizzle"):
        used.append("rain")
        out += 0.25 * _bp(rng.standard_normal(n), 800, 9000)
        drops = _events(n, 40, rng)
        drop = np.sin(2 * np.pi * 2500 * np.arange(400) / SR) * np.exp(-np.arange(400) / 60)
        out += _impulses(n, drops, drop, rng.uniform(0.05, 0.3, len(drops)))
    if has("wind", "breeze", "gust"):
        used.append("wind")
        lfo = 0.5 + 0.5 * np.sin(2 * np.pi * 0.23 * t + rng.uniform(0, 6)) * np.sin(
            2 * np.pi * 0.07 * t
        )
        out += 0.5 * _bp(rng.standard_normal(n), 200, 1200) * lfo
    if has("thunder", "explosion", "boom", "blast"):
        used.append("thunder")
        env = np.exp(-t / 1.2) * (t > 0.05)
        out += 1.2 * _bp(rng.standard_normal(n), 25, 300) * env
    if has("footstep", "walking", "steps"):
        used.append("footsteps")
        step = _bp(rng.standard_normal(2200), 80, 2000) * np.exp(-np.arange(2200) / 300)
        where = (np.arange(0, duration_s, 0.52) * SR).astype(int)
        out += _impulses(n, where, step, np.full(len(where), 0.8))
    if has("bell", "chime", "ding"):
        used.append("bell")
        f0 = 660 * 2 ** (rng.integers(-5, 6) / 12)
        for ratio, a in ((1, 1), (2.76, 0.5), (5.4, 0.3), (8.9, 0.15)):
            out += 0.3 * a * np.sin(2 * np.pi * f0 * ratio * t) * np.exp(-t / (1.5 / ratio))
    if has("laser", "zap", "sci-fi", "blaster"):
        used.append("laser")
        seg = t % 0.4
        f = 3000 * np.exp(-seg / 0.08) + 200
        out += 0.35 * np.sign(np.sin(2 * np.pi * np.cumsum(f) / SR)) * np.exp(-seg / 0.12)
    if has("whoosh", "swoosh", "swish", "transition"):
        used.append("whoosh")
        env = np.exp(-0.5 * ((t - duration_s / 2) / (duration_s / 6)) ** 2)
        out += 0.8 * _bp(rng.standard_normal(n), 300, 6000) * env
    if has("beep", "alarm", "notification", "ping"):
        used.append("beep")
        gate = (t % 0.5) < 0.2
        out += 0.3 * np.sin(2 * np.pi * 1000 * t) * gate
    if has("bird", "chirp", "forest"):
        used.append("birds")
        for w in _events(n, 3, rng):
            m = int(0.12 * SR)
            tt = np.arange(m) / SR
            chirp = np.sin(
                2 * np.pi * np.cumsum(3000 + 2500 * np.sin(2 * np.pi * 12 * tt)) / SR
            ) * np.hanning(m)
            out[w : w + m] += 0.25 * chirp[: n - w]
    if has("water", "stream", "river", "ocean", "wave"):
        used.append("water")
        lfo = 0.6 + 0.4 * np.sin(2 * np.pi * 0.12 * t)
        out += 0.35 * _bp(rng.standard_normal(n), 400, 5000) * lfo
    if has("fire", "crackl", "campfire"):
        used.append("fire")
        out += 0.1 * _bp(rng.standard_normal(n), 100, 800)
        pops = _events(n, 25, rng)
        out += _impulses(
            n,
            pops,
            rng.standard_normal(150) * np.exp(-np.arange(150) / 20),
            rng.uniform(0.1, 0.6, len(pops)),
        )
    if has("applause", "crowd", "clapping", "cheer"):
        used.append("applause")
        claps = _events(n, 300, rng)
        out += _impulses(
            n,
            claps,
            _bp(rng.standard_normal(600), 700, 6000) * np.exp(-np.arange(600) / 90),
            rng.uniform(0.05, 0.2, len(claps)),
        )
    if has("engine", "car", "motor", "truck"):
        used.append("engine")
        f = 45 + 8 * np.sin(2 * np.pi * 0.3 * t)
        ph = 2 * np.pi * np.cumsum(f) / SR
        out += 0.3 * sum(np.sin(k * ph) / k for k in range(1, 9))
    if has("knock", "door"):
        used.append("knock")
        knock = _bp(rng.standard_normal(3000), 100, 1500) * np.exp(-np.arange(3000) / 250)
        # three knocks in the first second, squeezed into a shorter effect (0.5 s is allowed)
        where = (np.array([0.3, 0.55, 0.8]) * min(duration_s, 1.0) * SR).astype(int)
        out += _impulses(n, where, knock, np.ones(3))
    if not used:
        used = ["whoosh", "impact"]
        env = np.exp(-0.5 * ((t - duration_s * 0.4) / (duration_s / 8)) ** 2)
        out += 0.7 * _bp(rng.standard_normal(n), 300, 6000) * env
        hit = int(duration_s * 0.6 * SR)
        tail = np.arange(n - hit) / SR
        out[hit:] += 0.9 * np.sin(2 * np.pi * 55 * tail) * np.exp(-tail / 0.4)
    fade = min(n // 4, int(0.02 * SR))
    if fade:
        out[:fade] *= np.linspace(0, 1, fade)
        out[-fade:] *= np.linspace(1, 0, fade)
    peak = np.abs(out).max()
    if peak > 0:
        out *= 0.8 / peak
    return out.astype(np.float32), used
