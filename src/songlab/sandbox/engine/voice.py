"""Singing synthesis (source-filter) and voice analysis (YIN f0 tracker, LPC formants).

The singer is a glottal source following a melody (portamento, vibrato)
shaped, frame by frame in the STFT domain, by the formants of the vowel of
each syllable, with noise bursts for consonants. A voice is its pitch range
and a formant scale: ``extract_voice`` measures both from a recording, and
the synthesiser sings inside that range with those formants.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import cast

import numpy as np
from scipy import fft as sfft
from scipy.linalg import solve_toeplitz
from scipy.ndimage import uniform_filter1d
from scipy.signal import lfilter, resample_poly

from songlab.sandbox.engine._types import VoiceDict
from songlab.sandbox.engine.synth import SR, bandlimit, model_params

# Formants (F1, F2, F3 in Hz) of sung vowels, adult male (Peterson & Barney 1952 averages).
VOWELS = {
    "a": (730.0, 1090.0, 2440.0),
    "e": (530.0, 1840.0, 2480.0),
    "i": (300.0, 2250.0, 3000.0),
    "o": (570.0, 840.0, 2410.0),
    "u": (320.0, 900.0, 2240.0),
    "@": (500.0, 1500.0, 2500.0),
}
VOWEL_ORDER = tuple(VOWELS)
NEUTRAL = np.mean([VOWELS[v] for v in "aeiou"], axis=0)  # what a speaker averages to
BANDWIDTHS = (90.0, 110.0, 170.0)
FORMANT_GAINS = (1.0, 0.6, 0.35)

DEFAULT_VOICES: dict[str, VoiceDict] = {
    "male": {
        "f0_low": 98.0,
        "f0_high": 262.0,
        "f0_median": 147.0,
        "formants": tuple(NEUTRAL),
        "gender": "male",
    },
    "female": {
        "f0_low": 196.0,
        "f0_high": 523.0,
        "f0_median": 294.0,
        "formants": tuple(NEUTRAL * 1.17),
        "gender": "female",
    },
}


@dataclass(frozen=True, slots=True)
class SungNote:
    onset: float  # s
    dur: float  # s
    midi: float
    vowel: str  # key of VOWELS
    consonant: str  # "", "s" (fricative), "t" (plosive), "n" (nasal/liquid)


def formant_scale(formants: tuple[float, ...] | list[float]) -> float:
    f = np.asarray(formants[:3], dtype=np.float64)
    if len(f) < 3 or not np.all(f > 0):
        return 1.0
    return float(np.clip(np.mean(f / NEUTRAL), 0.7, 1.45))


def _envelopes(scale: float, band: float, n_bins: int) -> np.ndarray:
    """(len(VOWEL_ORDER), n_bins) magnitude envelopes of the vowels for one singer."""
    f = np.linspace(0, SR / 2, n_bins)
    out = []
    for v in VOWEL_ORDER:
        e = np.full_like(f, 0.015)
        for fc, bw, g in zip(VOWELS[v], BANDWIDTHS, FORMANT_GAINS, strict=True):
            fc *= scale
            e += g / (1.0 + ((f - fc) / (bw * scale / 2)) ** 2)
        e += 0.08 / (1.0 + ((f - 3300 * scale) / 400) ** 2)  # singer's formant cluster
        e *= f <= band
        out.append(e)
    return np.array(out, dtype=np.float32)


NFFT, HOP = 1024, 512
_WIN = np.sqrt(np.hanning(NFFT + 1)[:-1]).astype(np.float32)  # sqrt periodic Hann, both ways


def _shape(x: np.ndarray, gains: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
    """Filter ``x`` by a time-varying magnitude response: ``gains(frame_starts) -> (frames, bins)``.

    Weighted overlap-add STFT (square-root Hann analysis and synthesis windows at
    50 % overlap, whose products sum to one), float32 throughout.
    """
    m = len(x)
    pad = np.concatenate(
        [np.zeros(NFFT, np.float32), x.astype(np.float32), np.zeros(NFFT + HOP, np.float32)]
    )
    frames = np.lib.stride_tricks.sliding_window_view(pad, NFFT)[::HOP] * _WIN
    starts = np.arange(len(frames)) * HOP - NFFT
    spec = sfft.rfft(frames, axis=1)
    spec *= gains(np.maximum(starts, 0))
    out_frames = sfft.irfft(spec, NFFT, axis=1) * _WIN
    y = np.zeros(len(pad) + NFFT, dtype=np.float32)
    r = NFFT // HOP
    for k in range(r):  # frames k, k+r, ... tile without overlap
        blk = out_frames[k::r].reshape(-1)
        y[k * HOP : k * HOP + len(blk)] += blk
    return y[NFFT : NFFT + m]


CTRL = 64  # samples per control step (pitch, gate, vowel)


@lru_cache(maxsize=64)
def _glottal(kmax: int) -> np.ndarray:
    k = np.arange(1, kmax + 1)
    ph_tab = np.arange(2048) / 2048
    table = ((1.0 / k[:, None]) * np.sin(2 * np.pi * k[:, None] * ph_tab)).sum(axis=0)
    return cast(np.ndarray, (table / np.abs(table).max()).astype(np.float32))


_BREATH = np.random.default_rng(99).standard_normal(1 << 16).astype(np.float32)
LEVEL = 0.55  # fixed output scale (no per-call normalisation: renders stay time-local)


def sing(
    phrases: list[list[SungNote]],
    voice: VoiceDict,
    model: str,
    n: int,
    seed: int,
    t0: float = 0.0,
) -> np.ndarray:
    """Render phrases of sung notes (onsets in score seconds) into ``n`` samples starting at ``t0``.

    Each phrase is synthesised on its own, anchored to the absolute sample grid,
    so any time range of a song renders exactly as it does in the whole song.
    """
    out = np.zeros(n, dtype=np.float32)
    base = int(round(t0 * SR))
    for notes in phrases:
        if not notes:
            continue
        start, y = _phrase(notes, voice, model, seed)
        a, b = start - base, start - base + len(y)
        lo, hi = max(a, 0), min(b, n)
        if hi > lo:
            out[lo:hi] += y[lo - a : hi - a]
    return out


def _phrase(
    notes: list[SungNote], voice: VoiceDict, model: str, seed: int
) -> tuple[int, np.ndarray]:
    band = model_params(model)[0]
    first = int(np.floor((notes[0].onset - 0.1) * SR / HOP)) * HOP  # absolute sample index
    last = int(round((notes[-1].onset + notes[-1].dur + 0.25) * SR))
    m = last - first
    rng = np.random.default_rng([seed % (1 << 32), first % (1 << 32)])
    # control signals at 1/CTRL of the sample rate, on the absolute grid (first % HOP == 0)
    mc = -(-m // CTRL)
    f0 = np.zeros(mc)
    gate = np.zeros(mc, dtype=np.float32)
    vowel_at = np.full(mc, VOWEL_ORDER.index("@"), dtype=np.intp)
    for k, nt in enumerate(notes):
        a = int(round(nt.onset * SR)) - first
        end_t = nt.onset + nt.dur
        if k + 1 < len(notes):
            end_t = min(end_t, notes[k + 1].onset - 0.025)
        b = min(m, int(round(end_t * SR)) - first)
        if b <= a or a >= m:
            continue
        ca, cb = a // CTRL, max(a // CTRL + 1, b // CTRL)
        f0[ca:cb] = 440.0 * 2 ** ((nt.midi - 69) / 12)
        gate[ca:cb] = 1.0
        vowel_at[ca:cb] = VOWEL_ORDER.index(nt.vowel)
    if not np.any(f0 > 0):
        return first, np.zeros(m, dtype=np.float32)
    # forward-fill the pitch through rests, then glide (one-pole smoothing of log f0)
    idx = np.where(f0 > 0, np.arange(mc), 0)
    np.maximum.accumulate(idx, out=idx)
    f0 = f0[idx]
    f0[f0 <= 0] = f0[f0 > 0][0]
    alpha = np.exp(-CTRL / (0.025 * SR))
    logf = lfilter([1 - alpha], [1, -alpha], np.log(f0), zi=[np.log(f0[0]) * alpha])[0]
    tc = (first + np.arange(mc) * CTRL) / SR
    logf += np.log(2) * (0.22 / 12) * np.sin(2 * np.pi * 5.4 * tc)  # vibrato
    # glottal source: band-limited 1/k pulse from a wavetable; partials fit under the model band
    kmax = int(max(4, min(80, band / max(float(voice.get("f0_high", 400.0)) * 1.1, 60.0))))
    table = _glottal(kmax)
    phase = np.cumsum(np.repeat(np.exp(logf) / SR, CTRL)[:m])
    src = table[((phase - np.floor(phase)) * 2048).astype(np.intp)]
    src += 0.04 * _BREATH[(first + np.arange(m)) & 0xFFFF]  # breath
    kk = max(1, int(0.02 * SR) // CTRL)
    env_c = uniform_filter1d(uniform_filter1d(gate, kk, mode="constant"), kk, mode="constant")
    src *= np.repeat(env_c, CTRL)[:m]
    # vowel formants, frame by frame in the STFT domain (vowels cross-fade over ~30 ms)
    scale = formant_scale(cast("list[float]", voice.get("formants", NEUTRAL)))
    envs = _envelopes(scale, band, NFFT // 2 + 1)
    onehot = np.eye(len(VOWEL_ORDER), dtype=np.float32)[vowel_at]
    onehot = uniform_filter1d(onehot, max(1, int(0.03 * SR) // CTRL), axis=0, mode="nearest")

    def gains(starts: np.ndarray) -> np.ndarray:
        return cast(np.ndarray, onehot[np.minimum((starts + NFFT // 2) // CTRL, mc - 1)] @ envs)

    y = _shape(src, gains) * LEVEL
    # consonants: short noise bursts at syllable onsets
    burst = {
        "s": bandlimit(rng.standard_normal(int(0.07 * SR)), 3800, band)
        * np.hanning(int(0.07 * SR)),
        "t": bandlimit(rng.standard_normal(int(0.02 * SR)), 1500, band)
        * np.exp(-np.arange(int(0.02 * SR)) / 200),
    }
    for nt in notes:
        noise = burst.get(nt.consonant)
        if noise is not None:
            start = (
                int(round(nt.onset * SR)) - first - (len(noise) if nt.consonant == "s" else 0) // 2
            )
            lo, hi = max(start, 0), min(start + len(noise), m)
            if hi > lo:
                y[lo:hi] += 0.12 * noise[lo - start : hi - start].astype(np.float32)
    return first, y


# --------------------------------------------------------------------- analysis


def f0_track(
    x: np.ndarray,
    sr: int = SR,
    *,
    fmin: float = 60.0,
    fmax: float = 1000.0,
    hop_s: float = 0.01,
    threshold: float = 0.15,
) -> tuple[np.ndarray, np.ndarray]:
    """YIN pitch track (de Cheveigné & Kawahara 2002) of a mono signal.

    Returns ``(times_s, f0_hz)``; unvoiced or silent frames have f0 = 0.
    Vectorised over frames: the difference function comes from an FFT correlation.
    """
    x = np.asarray(x, dtype=np.float64)
    if x.ndim > 1:
        x = x.mean(axis=0)
    if sr != 16000:
        from math import gcd

        g = gcd(sr, 16000)
        x = resample_poly(x, 16000 // g, sr // g)
        sr = 16000
    w = 1024
    half = w // 2
    hop = int(hop_s * sr)
    if len(x) < w:
        return np.zeros(0), np.zeros(0)
    frames = np.lib.stride_tricks.sliding_window_view(x, w)[::hop]
    nf = len(frames)
    big = np.fft.rfft(frames, 2 * w, axis=1)
    small = np.fft.rfft(frames[:, :half], 2 * w, axis=1)
    r = np.fft.irfft(big * np.conj(small), 2 * w, axis=1)[:, :half]
    sq = np.cumsum(np.pad(frames**2, ((0, 0), (1, 0))), axis=1)
    e1 = sq[:, half][:, None]
    e2 = sq[:, np.arange(half) + half] - sq[:, np.arange(half)]
    d = np.maximum(e1 + e2 - 2 * r, 0)
    tau = np.arange(half)
    cm = np.cumsum(d[:, 1:], axis=1)
    dn = np.ones_like(d)
    dn[:, 1:] = d[:, 1:] * tau[1:] / np.maximum(cm, 1e-12)
    tmin, tmax = int(sr / fmax), min(int(sr / fmin), half - 2)
    seg = dn[:, tmin:tmax]
    # the first dip close to the deepest one: YIN's absolute threshold alone takes a strong
    # formant-boosted harmonic for the fundamental (an octave or a twelfth too high)
    gmin = seg.min(axis=1, keepdims=True)
    below = seg < np.minimum(threshold, gmin + 0.04)
    has = below.any(axis=1)
    first = np.where(has, below.argmax(axis=1), seg.argmin(axis=1))
    # walk to the local minimum after the first dip below the threshold
    look = np.clip(first[:, None] + np.arange(24)[None, :], 0, seg.shape[1] - 1)
    vals = np.take_along_axis(seg, look, axis=1)
    best = look[np.arange(nf), vals.argmin(axis=1)]
    # parabolic interpolation
    b = np.clip(best, 1, seg.shape[1] - 2)
    y0, y1, y2 = (seg[np.arange(nf), b + o] for o in (-1, 0, 1))
    den = y0 - 2 * y1 + y2
    # divide only where the parabola is curved: a near-zero (subnormal) denominator
    # elsewhere would overflow even though np.where would discard the quotient
    shift = np.divide(0.5 * (y0 - y2), den, out=np.zeros_like(den), where=np.abs(den) > 1e-12)
    lag = tmin + b + np.clip(shift, -1, 1)
    rms = np.sqrt(e1[:, 0] / half)
    voiced = (seg[np.arange(nf), best] < 0.3) & (rms > 0.01 * max(rms.max(), 1e-9)) & (rms > 1e-4)
    f0 = np.where(voiced, sr / lag, 0.0)
    times = (np.arange(nf) * hop + half) / sr
    return times, f0


def lpc_formants(
    x: np.ndarray, sr: int = SR, *, order: int = 12, max_frames: int = 200
) -> tuple[float, float, float]:
    """Median F1-F3 (Hz) of the voiced frames, from LPC roots (autocorrelation method)."""
    x = np.asarray(x, dtype=np.float64)
    if x.ndim > 1:
        x = x.mean(axis=0)
    from math import gcd

    g = gcd(sr, 10000)
    y = resample_poly(x, 10000 // g, sr // g)
    fs = 10000
    y = lfilter([1, -0.63], [1], y)  # pre-emphasis
    w, hop = 250, 100
    if len(y) < w:
        return tuple(float(f) for f in NEUTRAL)  # type: ignore[return-value]
    frames = np.lib.stride_tricks.sliding_window_view(y, w)[::hop] * np.hamming(w)
    energy = (frames**2).mean(axis=1)
    keep = np.flatnonzero(energy > 0.1 * np.percentile(energy, 90))
    if len(keep) > max_frames:
        keep = keep[np.linspace(0, len(keep) - 1, max_frames).astype(int)]
    found = []
    spec = np.fft.rfft(frames[keep], 512, axis=1)
    ac = np.fft.irfft(np.abs(spec) ** 2, 512, axis=1)[:, : order + 1]
    for r in ac:
        if r[0] <= 0:
            continue
        r = r.copy()
        r[0] *= 1.0001
        try:
            a = solve_toeplitz(r[:order], r[1 : order + 1])
        except np.linalg.LinAlgError:
            continue
        roots = np.roots(np.concatenate([[1.0], -a]))
        roots = roots[(np.imag(roots) > 0) & (np.abs(roots) > 1e-9)]  # a root at 0 has no bandwidth
        freqs = np.angle(roots) * fs / (2 * np.pi)
        bws = -np.log(np.abs(roots)) * fs / np.pi
        ok = np.sort(freqs[(freqs > 180) & (freqs < 4200) & (bws < 500)])
        if len(ok) >= 3:
            found.append(ok[:3])
    if not found:
        return tuple(float(f) for f in NEUTRAL)  # type: ignore[return-value]
    med = np.median(np.array(found), axis=0)
    return float(med[0]), float(med[1]), float(med[2])


def analyse_voice(x: np.ndarray, sr: int = SR) -> VoiceDict | None:
    """Pitch range, median, formants and gender of a voice recording, or None if unvoiced."""
    _, f0 = f0_track(x, sr)
    v = f0[f0 > 0]
    if len(v) < 10:
        return None
    med = float(np.median(v))
    # discard octave errors: keep the frames within an octave of the median
    v = v[(v > med / 1.9) & (v < med * 1.9)]
    low, high = float(np.percentile(v, 5)), float(np.percentile(v, 95))
    formants = lpc_formants(x, sr)
    scale = formant_scale(formants)
    gender = "female" if med > 175 or (med > 150 and scale > 1.08) else "male"
    return {
        "f0_low": round(low, 2),
        "f0_high": round(high, 2),
        "f0_median": round(med, 2),
        "formants": tuple(round(f, 1) for f in formants),
        "gender": gender,
    }
