"""Measurements of foreign audio: tempo, key and mode, loudness-free spectral summaries.

Used when an input was not made by the sandbox (no recipe): similar-song,
remix and extend keep the tempo and key the analysis finds.
"""

from __future__ import annotations

import numpy as np
from scipy.signal import stft

from songlab.sandbox.engine.theory import estimate_key

SR = 44100


def mono(x: np.ndarray) -> np.ndarray:
    return x.mean(axis=0) if x.ndim > 1 else x


def spectrogram(
    x: np.ndarray, *, nfft: int = 2048, hop: int = 512
) -> tuple[np.ndarray, np.ndarray]:
    """Magnitude STFT of a mono signal: ``(freqs, |S| (bins, frames))``.

    A signal shorter than one frame is zero-padded to it (scipy would shrink the
    frame and warn, and a shrunk frame changes the bin grid).
    """
    m = mono(x)
    if len(m) < nfft:
        m = np.pad(m, (0, nfft - len(m)))
    f, _, s = stft(m, fs=SR, nperseg=nfft, noverlap=nfft - hop, boundary=None, padded=False)
    return f, np.abs(s)


def tempo(x: np.ndarray, *, lo: float = 60.0, hi: float = 180.0) -> float:
    """BPM from the autocorrelation of the spectral-flux onset envelope."""
    hop = 512
    _, mag = spectrogram(x[..., : SR * 60], hop=hop)
    if mag.shape[1] < 16:
        return 120.0
    flux = np.maximum(np.diff(np.log1p(100 * mag), axis=1), 0).sum(axis=0)
    flux -= flux.mean()
    ac = np.fft.irfft(np.abs(np.fft.rfft(flux, 2 * len(flux))) ** 2)[: len(flux)]
    fps = SR / hop
    lags = np.arange(len(ac))
    bpm = 60.0 * fps / np.maximum(lags, 1)
    ok = (bpm >= lo) & (bpm <= hi)
    if not ok.any():
        return 120.0
    # weight towards 120 BPM (log-Gaussian prior) to settle octave ambiguity
    w = ac * np.exp(-0.5 * (np.log2(bpm / 120.0) / 0.9) ** 2)
    k = lags[ok][np.argmax(w[ok])]
    return float(round(60.0 * fps / k, 1))


def chroma(x: np.ndarray) -> np.ndarray:
    """12-bin pitch-class energy profile (40 Hz - 2 kHz; 1.3 Hz bins keep bass semitones apart)."""
    f, mag = spectrogram(x[..., : SR * 60], nfft=32768, hop=16384)
    sel = (f > 40) & (f < 2000)
    pc = np.round(12 * np.log2(f[sel] / 440.0) + 69).astype(int) % 12
    e = (mag[sel] ** 2).sum(axis=1)
    return np.bincount(pc, weights=e, minlength=12)


def key(x: np.ndarray) -> tuple[int, str]:
    root, mode, _ = estimate_key(chroma(x))
    return root, mode


def band_energy(x: np.ndarray, lo: float, hi: float) -> float:
    """Share of the spectral energy between ``lo`` and ``hi`` Hz."""
    f, mag = spectrogram(x)
    p = (mag**2).sum(axis=1)
    tot = p.sum()
    return float(p[(f >= lo) & (f < hi)].sum() / tot) if tot > 0 else 0.0
