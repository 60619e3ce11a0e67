"""Instruments: wavetable tones and drum one-shots, vectorised numpy, band-limited per model.

A tone reads two single-cycle wavetables (a bright one with every partial the
model allows, a dull one with three) and crossfades from bright to dull as it
decays, so a note costs a few array operations whatever its partial count.
Models differ here: v5 keeps partials below 8 kHz and at most 6 of them, v6 12
below 14 kHz, v7 28 up to 20 kHz with a slower roll-off (richer timbre).
Notes are cached per render (a song repeats the same few pitches).
"""

from __future__ import annotations

import zlib
from functools import lru_cache
from typing import cast

import numpy as np

SR = 44100
TABLE = 4096

# model -> (band limit Hz, max partials, roll-off offset: lower = brighter)
MODELS = {"v5": (8000.0, 6, 0.35), "v6": (14000.0, 12, 0.15), "v7": (20000.0, 28, 0.0)}

# instrument -> (roll-off exponent, odd-partial weight, attack s, decay s, sustain level,
#                release s, bright-decay s)
INSTRUMENTS = {
    "piano": (1.15, 1.0, 0.004, 1.6, 0.0, 0.12, 0.25),
    "guitar": (1.05, 1.0, 0.003, 1.0, 0.0, 0.08, 0.12),
    "synth": (0.95, 1.0, 0.01, 0.6, 0.55, 0.1, 0.5),
    "strings": (1.2, 1.0, 0.18, 2.0, 0.85, 0.3, 3.0),
    "other": (1.5, 1.6, 0.08, 1.5, 0.7, 0.25, 1.0),  # pads, brass, flute-like lead
    "bass": (1.7, 1.0, 0.006, 0.9, 0.35, 0.06, 0.15),
    "lead": (1.3, 1.8, 0.02, 1.2, 0.75, 0.12, 0.6),
}


def model_params(model: str) -> tuple[float, int, float]:
    return MODELS.get(model, MODELS["v7"])


@lru_cache(maxsize=512)
def _tables(inst: str, model: str, f0: float) -> tuple[np.ndarray, np.ndarray]:
    band, hmax, off = model_params(model)
    roll, odd = INSTRUMENTS[inst][:2]
    n = int(max(1, min(hmax, band // max(f0, 1.0), (SR / 2 - 500) // max(f0, 1.0))))
    k = np.arange(1, n + 1, dtype=np.float64)
    amp = 1.0 / k ** (roll + off)
    amp[1::2] /= odd  # even partials (k = 2, 4, ...) weaker for hollow timbres
    if inst == "guitar":
        amp *= np.abs(np.sin(np.pi * k * 0.18)) + 0.15  # pluck position
    spec = np.zeros(TABLE // 2 + 1, dtype=np.complex128)
    spec[1 : n + 1] = -0.5j * TABLE * amp  # sum of a_k sin(2 pi k phase), by inverse FFT
    bright = np.fft.irfft(spec, TABLE)
    spec[4:] = 0
    dull = np.fft.irfft(spec, TABLE)
    scale = 1.0 / max(np.abs(bright).max(), 1e-9)
    return (bright * scale).astype(np.float32), (dull * scale).astype(np.float32)


def envelope(
    n: int, n_on: int, attack: float, decay: float, sustain: float, release: float
) -> np.ndarray:
    """Attack / exponential decay to ``sustain`` while held, then exponential release."""
    t = np.arange(n, dtype=np.float32) / SR
    env = sustain + (1.0 - sustain) * np.exp(-t / max(decay, 1e-3))
    env *= np.minimum(1.0, t / max(attack, 1e-4))
    t_off = n_on / SR
    held = env[min(n_on, n - 1)]
    rel = held * np.exp(-np.maximum(t - t_off, 0) / max(release / 4, 1e-3))
    env = np.where(t < t_off, env, rel)
    fade = min(n, int(0.004 * SR))
    if fade:
        env[-fade:] *= np.linspace(1.0, 0.0, fade, dtype=np.float32)
    return env.astype(np.float32)


@lru_cache(maxsize=2048)
def _note(inst: str, model: str, midi: float, n_on: int, vel_q: int) -> np.ndarray:
    attack, decay, sustain, release, bdecay = INSTRUMENTS[inst][2:]
    f0 = 440.0 * 2 ** ((midi - 69) / 12)
    decay *= min(2.0, 60.0 / max(midi, 20) + 0.3)  # low notes ring longer
    n = n_on + int(release * SR)
    bright, dull = _tables(inst, model, round(f0, 2))
    t = np.arange(n, dtype=np.float64) / SR
    phase = f0 * t
    if inst in ("strings", "lead", "other"):
        phase += 0.003 * f0 / 5.5 * np.sin(2 * np.pi * 5.5 * t) * np.minimum(1, t / 0.4)
    idx = ((phase % 1.0) * TABLE).astype(np.intp)
    mixw = np.exp(-t / bdecay).astype(np.float32)
    wave = dull[idx] + mixw * (bright[idx] - dull[idx])
    out = wave * envelope(n, n_on, attack, decay, sustain, release) * (vel_q / 16.0)
    return cast(np.ndarray, out.astype(np.float32))


def tone(inst: str, model: str, midi: float, dur_s: float, vel: float = 0.8) -> np.ndarray:
    """One note of ``inst``: float32 mono, ``dur_s`` held plus its release."""
    n_on = max(int(round(dur_s * SR / 64)) * 64, 64)  # quantised so the cache hits
    return _note(inst, model, float(round(midi, 2)), n_on, min(16, max(1, round(vel * 16))))


def bandlimit(x: np.ndarray, low: float, high: float) -> np.ndarray:
    """Brick-wall band-pass by FFT (one-shots only: short arrays)."""
    spec = np.fft.rfft(x)
    f = np.fft.rfftfreq(len(x), 1 / SR)
    spec[(f < low) | (f > high)] = 0
    return np.fft.irfft(spec, len(x)).astype(np.float32)


@lru_cache(maxsize=64)
def drum(name: str, model: str, seed: int) -> np.ndarray:
    """A drum one-shot (kick, snare, hihat, openhat, crash, clap, shaker, tom)."""
    band = model_params(model)[0]
    rng = np.random.default_rng([seed, zlib.crc32(name.encode())])

    def t_of(sec: float) -> np.ndarray:
        return np.arange(int(sec * SR)) / SR

    if name == "kick":
        t = t_of(0.45)
        f = 48 + 110 * np.exp(-t / 0.035)
        x = np.sin(2 * np.pi * np.cumsum(f) / SR) * np.exp(-t / 0.16)
        x[: int(0.002 * SR)] += rng.standard_normal(int(0.002 * SR)) * 0.3
    elif name == "snare":
        t = t_of(0.3)
        noise = bandlimit(rng.standard_normal(len(t)), 1200, band)
        x = 0.75 * noise * np.exp(-t / 0.07) + 0.6 * np.sin(2 * np.pi * 185 * t) * np.exp(-t / 0.05)
    elif name in ("hihat", "openhat", "shaker"):
        length, dec = {"hihat": (0.09, 0.018), "openhat": (0.4, 0.12), "shaker": (0.12, 0.03)}[name]
        t = t_of(length)
        lo = 7000 if name != "shaker" else 4500
        x = bandlimit(rng.standard_normal(len(t)), min(lo, band * 0.75), band) * np.exp(-t / dec)
        x *= 1.5
    elif name == "crash":
        t = t_of(1.6)
        x = bandlimit(rng.standard_normal(len(t)), 3500, band) * np.exp(-t / 0.5) * 0.7
    elif name == "clap":
        t = t_of(0.25)
        bursts = sum(np.exp(-np.maximum(t - d, 0) / 0.008) * (t >= d) for d in (0, 0.011, 0.022))
        x = (
            bandlimit(rng.standard_normal(len(t)), 900, min(band, 9000))
            * (bursts + np.exp(-t / 0.06))
            * 0.5
        )
    elif name == "tom":
        t = t_of(0.4)
        f = 95 + 60 * np.exp(-t / 0.05)
        x = np.sin(2 * np.pi * np.cumsum(f) / SR) * np.exp(-t / 0.15)
    else:
        raise KeyError(name)
    fade = int(0.003 * SR)
    x[-fade:] *= np.linspace(1, 0, fade)
    x = bandlimit(x, 20.0, band)  # attacks and clicks stay inside the model's band too
    return cast(np.ndarray, (x / max(np.abs(x).max(), 1e-9)).astype(np.float32))


def place(buf: np.ndarray, sound: np.ndarray, start: int, gain: float = 1.0) -> None:
    """Add ``sound * gain`` into ``buf`` at sample ``start`` (clipped to the buffer)."""
    if start >= len(buf) or start + len(sound) <= 0:
        return
    s0 = max(0, -start)
    end = min(len(buf), start + len(sound))
    buf[start + s0 : end] += gain * sound[s0 : end - start]
