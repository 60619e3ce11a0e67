"""Sound effects from a prompt: each keyword names a small noise/tone recipe.

Recognised: rain, wind, thunder/explosion, footsteps, bell/chime, laser/zap,
whoosh/swoosh, beep/alarm, bird, water/stream, fire/crackle, applause/crowd,
engine/car, knock/door. Several keywords layer; an unknown prompt gives a
whoosh and an impact. Deterministic from the prompt and seed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
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


@dataclass(frozen=True, slots=True)
class _Canvas:
    """One effect being drawn: its length in samples and seconds, time axis and generator."""

    n: int
    duration_s: float
    t: np.ndarray
    rng: np.random.Generator


def _rain(c: _Canvas, out: np.ndarray) -> None:
    out += 0.25 * _bp(c.rng.standard_normal(c.n), 800, 9000)
    drops = _events(c.n, 40, c.rng)
    drop = np.sin(2 * np.pi * 2500 * np.arange(400) / SR) * np.exp(-np.arange(400) / 60)
    out += _impulses(c.n, drops, drop, c.rng.uniform(0.05, 0.3, len(drops)))


def _wind(c: _Canvas, out: np.ndarray) -> None:
    lfo = 0.5 + 0.5 * np.sin(2 * np.pi * 0.23 * c.t + c.rng.uniform(0, 6)) * np.sin(
        2 * np.pi * 0.07 * c.t
    )
    out += 0.5 * _bp(c.rng.standard_normal(c.n), 200, 1200) * lfo


def _thunder(c: _Canvas, out: np.ndarray) -> None:
    env = np.exp(-c.t / 1.2) * (c.t > 0.05)
    out += 1.2 * _bp(c.rng.standard_normal(c.n), 25, 300) * env


def _footsteps(c: _Canvas, out: np.ndarray) -> None:
    step = _bp(c.rng.standard_normal(2200), 80, 2000) * np.exp(-np.arange(2200) / 300)
    where = (np.arange(0, c.duration_s, 0.52) * SR).astype(int)
    out += _impulses(c.n, where, step, np.full(len(where), 0.8))


def _bell(c: _Canvas, out: np.ndarray) -> None:
    f0 = 660 * 2 ** (c.rng.integers(-5, 6) / 12)
    for ratio, a in ((1, 1), (2.76, 0.5), (5.4, 0.3), (8.9, 0.15)):
        out += 0.3 * a * np.sin(2 * np.pi * f0 * ratio * c.t) * np.exp(-c.t / (1.5 / ratio))


def _laser(c: _Canvas, out: np.ndarray) -> None:
    seg = c.t % 0.4
    f = 3000 * np.exp(-seg / 0.08) + 200
    out += 0.35 * np.sign(np.sin(2 * np.pi * np.cumsum(f) / SR)) * np.exp(-seg / 0.12)


def _whoosh(c: _Canvas, out: np.ndarray) -> None:
    env = np.exp(-0.5 * ((c.t - c.duration_s / 2) / (c.duration_s / 6)) ** 2)
    out += 0.8 * _bp(c.rng.standard_normal(c.n), 300, 6000) * env


def _beep(c: _Canvas, out: np.ndarray) -> None:
    gate = (c.t % 0.5) < 0.2
    out += 0.3 * np.sin(2 * np.pi * 1000 * c.t) * gate


def _birds(c: _Canvas, out: np.ndarray) -> None:
    for w in _events(c.n, 3, c.rng):
        m = int(0.12 * SR)
        tt = np.arange(m) / SR
        chirp = np.sin(
            2 * np.pi * np.cumsum(3000 + 2500 * np.sin(2 * np.pi * 12 * tt)) / SR
        ) * np.hanning(m)
        out[w : w + m] += 0.25 * chirp[: c.n - w]


def _water(c: _Canvas, out: np.ndarray) -> None:
    lfo = 0.6 + 0.4 * np.sin(2 * np.pi * 0.12 * c.t)
    out += 0.35 * _bp(c.rng.standard_normal(c.n), 400, 5000) * lfo


def _fire(c: _Canvas, out: np.ndarray) -> None:
    out += 0.1 * _bp(c.rng.standard_normal(c.n), 100, 800)
    pops = _events(c.n, 25, c.rng)
    out += _impulses(
        c.n,
        pops,
        c.rng.standard_normal(150) * np.exp(-np.arange(150) / 20),
        c.rng.uniform(0.1, 0.6, len(pops)),
    )


def _applause(c: _Canvas, out: np.ndarray) -> None:
    claps = _events(c.n, 300, c.rng)
    out += _impulses(
        c.n,
        claps,
        _bp(c.rng.standard_normal(600), 700, 6000) * np.exp(-np.arange(600) / 90),
        c.rng.uniform(0.05, 0.2, len(claps)),
    )


def _engine(c: _Canvas, out: np.ndarray) -> None:
    f = 45 + 8 * np.sin(2 * np.pi * 0.3 * c.t)
    ph = 2 * np.pi * np.cumsum(f) / SR
    out += 0.3 * sum(np.sin(k * ph) / k for k in range(1, 9))


def _knock(c: _Canvas, out: np.ndarray) -> None:
    knock = _bp(c.rng.standard_normal(3000), 100, 1500) * np.exp(-np.arange(3000) / 250)
    # three knocks in the first second, squeezed into a shorter effect (0.5 s is allowed)
    where = (np.array([0.3, 0.55, 0.8]) * min(c.duration_s, 1.0) * SR).astype(int)
    out += _impulses(c.n, where, knock, np.ones(3))


def _whoosh_and_impact(c: _Canvas, out: np.ndarray) -> None:
    """What an unknown prompt gets."""
    env = np.exp(-0.5 * ((c.t - c.duration_s * 0.4) / (c.duration_s / 8)) ** 2)
    out += 0.7 * _bp(c.rng.standard_normal(c.n), 300, 6000) * env
    hit = int(c.duration_s * 0.6 * SR)
    tail = np.arange(c.n - hit) / SR
    out[hit:] += 0.9 * np.sin(2 * np.pi * 55 * tail) * np.exp(-tail / 0.4)


# (name, the words of a prompt that ask for it, what draws it), in the order they layer
EFFECTS: tuple[tuple[str, tuple[str, ...], Callable[[_Canvas, np.ndarray], None]], ...] = (
    ("rain", ("rain", "storm", "drizzle"), _rain),
    ("wind", ("wind", "breeze", "gust"), _wind),
    ("thunder", ("thunder", "explosion", "boom", "blast"), _thunder),
    ("footsteps", ("footstep", "walking", "steps"), _footsteps),
    ("bell", ("bell", "chime", "ding"), _bell),
    ("laser", ("laser", "zap", "sci-fi", "blaster"), _laser),
    ("whoosh", ("whoosh", "swoosh", "swish", "transition"), _whoosh),
    ("beep", ("beep", "alarm", "notification", "ping"), _beep),
    ("birds", ("bird", "chirp", "forest"), _birds),
    ("water", ("water", "stream", "river", "ocean", "wave"), _water),
    ("fire", ("fire", "crackl", "campfire"), _fire),
    ("applause", ("applause", "crowd", "clapping", "cheer"), _applause),
    ("engine", ("engine", "car", "motor", "truck"), _engine),
    ("knock", ("knock", "door"), _knock),
)


def render(
    prompt: str, duration_s: float, rng: np.random.Generator
) -> tuple[np.ndarray, list[str]]:
    """Mono float32 effect and the keywords it used."""
    text = (prompt or "").lower()
    n = int(duration_s * SR)
    canvas = _Canvas(n, duration_s, np.arange(n) / SR, rng)
    out = np.zeros(n)
    used: list[str] = []
    for name, words, draw in EFFECTS:
        if any(w in text for w in words):
            used.append(name)
            draw(canvas, out)
    if not used:
        used = ["whoosh", "impact"]
        _whoosh_and_impact(canvas, out)
    fade = min(n // 4, int(0.02 * SR))
    if fade:
        out[:fade] *= np.linspace(0, 1, fade)
        out[-fade:] *= np.linspace(1, 0, fade)
    peak = np.abs(out).max()
    if peak > 0:
        out *= 0.8 / peak
    return out.astype(np.float32), used
