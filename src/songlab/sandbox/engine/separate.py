"""Stem separation: exact for sandbox files (re-rendered from the recipe), spectral otherwise.

Fine stems (what a sandbox song is made of) group into each model's stems
(``songlab.spec.STEMS``). In the 12-stem model ``drums`` is the rest of the
kit (cymbals, claps, shaker, toms) next to ``kick``, ``snare`` and ``hihat``,
so the twelve stems still add up to the mix.

Foreign audio is split with soft STFT masks that add up to one in every bin
(so the stems add up to the input): harmonic/percussive separation by median
filtering (Fitzgerald 2010), a vocal mask from harmonic energy in the voice
band that sits in the centre of the stereo image, and frequency bands for the
rest. It is crude but keeps vocals mostly out of the instrumental.
"""

from __future__ import annotations

from typing import cast

import numpy as np
from scipy.ndimage import median_filter
from scipy.signal import istft, stft

SR = 44100

GROUPS: dict[str, dict[str, tuple[str, ...]]] = {
    "2stem": {
        "vocals": ("lead_vocals", "backing_vocals"),
        "instrumental": (
            "kick",
            "snare",
            "hihat",
            "perc",
            "bass",
            "guitar",
            "piano",
            "synth",
            "strings",
            "other",
        ),
    },
    "6-stem": {
        "vocals": ("lead_vocals", "backing_vocals"),
        "drums": ("kick", "snare", "hihat", "perc"),
        "bass": ("bass",),
        "guitar": ("guitar",),
        "piano": ("piano",),
        "other": ("synth", "strings", "other"),
    },
    "12stem": {
        "lead_vocals": ("lead_vocals",),
        "backing_vocals": ("backing_vocals",),
        "drums": ("perc",),
        "kick": ("kick",),
        "snare": ("snare",),
        "hihat": ("hihat",),
        "bass": ("bass",),
        "guitar": ("guitar",),
        "piano": ("piano",),
        "synth": ("synth",),
        "strings": ("strings",),
        "other": ("other",),
    },
}


def group(fine: dict[str, np.ndarray], model: str, shape: tuple[int, int]) -> dict[str, np.ndarray]:
    """Sum fine stems into the model's stems (silent arrays for absent ones)."""
    out = {}
    for name, members in GROUPS[model].items():
        acc = np.zeros(shape, dtype=np.float32)
        for m in members:
            if m in fine:
                acc += fine[m]
        out[name] = acc
    return out


def _smooth_band(f: np.ndarray, lo: float, hi: float, soft: float = 1.3) -> np.ndarray:
    """~1 inside [lo, hi], rolling off over a factor ``soft`` in frequency."""
    f = np.maximum(f, 1.0)
    up = 1 / (1 + (lo / f) ** (8 / np.log2(soft * 2)))
    down = 1 / (1 + (f / hi) ** (8 / np.log2(soft * 2)))
    return cast(np.ndarray, up * down)


def spectral(x: np.ndarray, model: str) -> dict[str, np.ndarray]:
    """Separate foreign audio ``(channels, samples)`` into the model's stems by soft masks."""
    nfft, hop = 2048, 512
    n = x.shape[1]
    f, _, S = stft(x, fs=SR, nperseg=nfft, noverlap=nfft - hop)
    mag = np.abs(S).mean(axis=0)  # (bins, frames)
    harm = median_filter(mag, size=(1, 13), mode="nearest")
    perc = median_filter(mag, size=(13, 1), mode="nearest")
    hm = harm**2 / (harm**2 + perc**2 + 1e-12)
    if x.shape[0] == 2:
        centre = 1 - np.abs(np.abs(S[0]) - np.abs(S[1])) / (np.abs(S[0]) + np.abs(S[1]) + 1e-12)
        centre = centre**4
    else:
        centre = np.full_like(mag, 0.6)
    fb = f[:, None]
    voice_band = _smooth_band(fb, 160, 5500)
    vocal = np.clip(hm * voice_band * centre * 1.3, 0, 1)
    rest = 1 - vocal
    drums = (1 - hm) * rest
    tonal = hm * rest
    masks: dict[str, np.ndarray] = {}
    if model == "2stem":
        masks = {"vocals": vocal, "instrumental": rest}
    else:
        low = _smooth_band(fb, 1, 180)
        mid_lo = _smooth_band(fb, 180, 1100)
        mid_hi = _smooth_band(fb, 1100, 4200)
        tot = low + mid_lo + mid_hi + 1e-12
        high = np.clip(1 - (low + mid_lo + mid_hi), 0, None)
        tot = low + mid_lo + mid_hi + high
        b_low, b_ml, b_mh, b_hi = low / tot, mid_lo / tot, mid_hi / tot, high / tot
        if model == "6-stem":
            masks = {
                "vocals": vocal,
                "drums": drums,
                "bass": tonal * b_low,
                "guitar": tonal * b_mh,
                "piano": tonal * b_ml,
                "other": tonal * b_hi,
            }
        else:
            k_lo = _smooth_band(fb, 1, 150)
            h_hi = _smooth_band(fb, 6000, 22050)
            s_mid = np.clip(1 - k_lo - h_hi, 0, None)
            dt = k_lo + h_hi + s_mid + 1e-12
            masks = {
                "lead_vocals": vocal * centre,
                "backing_vocals": vocal * (1 - centre),
                "drums": drums * 0.0,
                "kick": drums * k_lo / dt,
                "snare": drums * s_mid / dt,
                "hihat": drums * h_hi / dt,
                "bass": tonal * b_low,
                "guitar": tonal * b_mh * 0.5,
                "piano": tonal * b_ml,
                "synth": tonal * b_mh * 0.5,
                "strings": tonal * b_hi * 0.5,
                "other": tonal * b_hi * 0.5,
            }
    out = {}
    for name, mk in masks.items():
        _, y = istft(S * mk[None], fs=SR, nperseg=nfft, noverlap=nfft - hop)
        y = y[:, :n]
        if y.shape[1] < n:
            y = np.pad(y, ((0, 0), (0, n - y.shape[1])))
        out[name] = y.astype(np.float32)
    return out
