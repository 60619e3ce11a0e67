"""Matplotlib figures of audio: waveform, spectrogram, and stems side by side.

Figures are built by :func:`songlab.figures.figure` (a ``matplotlib.figure.Figure``: no
pyplot state, no open-figure warnings) and show as a picture in any notebook. Every
function also draws into a caller's ``ax`` so widgets can reuse one figure.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from scipy.signal import spectrogram as _stft_power

from songlab.audio._audio_error import AudioError
from songlab.audio._clips import as_audio
from songlab.figures import figure

_KINDS = ("waveform", "spectrogram")
# Beyond this many points per channel a waveform is drawn as a min/max envelope.
_MAX_POINTS = 4000


def _envelope(x: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Min and max of ``x`` over ``n`` equal bins, and each bin's start index."""
    edges = np.linspace(0, x.shape[-1], n + 1).astype(int)
    lo = np.minimum.reduceat(x, edges[:-1])
    hi = np.maximum.reduceat(x, edges[:-1])
    return edges[:-1], lo, hi


def waveform(
    audio: Any, /, *, sr: int | None = None, ax: Axes | None = None, title: str | None = None
) -> Figure:
    """Amplitude against time, one trace per channel (full scale = +-1).

    ``audio``: bytes, ``(array, sr)`` or an array with ``sr=``. Long clips are
    drawn as a min/max envelope. Returns the figure holding ``ax``.
    """
    arr, rate = as_audio(audio, sr=sr, argument="audio")
    fig, ax = _axes(ax, (8, 2.2))
    for ch, x in enumerate(arr):
        label = f"ch {ch}" if arr.shape[0] > 1 else None
        if x.size > _MAX_POINTS:
            start, lo, hi = _envelope(x, _MAX_POINTS // 2)
            ax.fill_between(start / rate, lo, hi, alpha=0.6, linewidth=0, label=label, step="post")
        else:
            ax.plot(np.arange(x.size) / rate, x, linewidth=0.8, label=label)
    ax.set_xlim(0, arr.shape[1] / rate)
    ax.set_ylim(-1.05, 1.05)
    ax.set_xlabel("time (s)")
    ax.set_ylabel("amplitude")
    if arr.shape[0] > 1:
        ax.legend(loc="upper right", fontsize="small")
    if title:
        ax.set_title(title)
    return fig


def spectrogram(
    audio: Any,
    /,
    *,
    sr: int | None = None,
    ax: Axes | None = None,
    title: str | None = None,
    n_fft: int = 2048,
    hop: int = 512,
    db_range: float = 80.0,
) -> Figure:
    """Power spectrogram (dB re the clip's maximum, channels averaged), Hann window.

    ``n_fft`` samples per frame, ``hop`` samples between frames; colours span
    ``db_range`` dB below the maximum.
    """
    arr, rate = as_audio(audio, sr=sr, argument="audio")
    if not isinstance(n_fft, int) or n_fft < 16:
        raise AudioError("n_fft", f"must be an int >= 16; got {n_fft!r}")
    if not isinstance(hop, int) or not 0 < hop <= n_fft:
        raise AudioError("hop", f"must be an int in 1..n_fft; got {hop!r}")
    nperseg = min(n_fft, arr.shape[1])
    freqs, times, power = _stft_power(
        arr, fs=rate, window="hann", nperseg=nperseg, noverlap=nperseg - min(hop, nperseg), axis=-1
    )
    power = power.mean(axis=0)
    db = 10.0 * np.log10(np.maximum(power, 1e-20))
    top = float(db.max())
    fig, ax = _axes(ax, (8, 3))
    mesh = ax.pcolormesh(
        times, freqs, db, shading="auto", vmin=top - db_range, vmax=top, cmap="magma"
    )
    fig.colorbar(mesh, ax=ax, label="dB")
    ax.set_xlabel("time (s)")
    ax.set_ylabel("frequency (Hz)")
    if title:
        ax.set_title(title)
    return fig


def stems(
    sources: Mapping[str, Any], /, *, sr: int | None = None, kind: str = "waveform", **options: Any
) -> Figure:
    """One panel per stem (or model), side by side in a row, sharing the time axis."""
    if not isinstance(sources, Mapping) or not sources:
        raise AudioError("sources", "must be a non-empty mapping of name -> audio")
    if kind not in _KINDS:
        raise AudioError("kind", f"must be one of {', '.join(_KINDS)}; got {kind!r}")
    n = len(sources)
    fig = figure(figsize=(3.2 * n, 2.6 if kind == "waveform" else 3.0), layout="constrained")
    axes = fig.subplots(1, n, sharex=True, sharey=True, squeeze=False)[0]
    draw = waveform if kind == "waveform" else spectrogram
    for ax, (name, src) in zip(axes, sources.items(), strict=True):
        draw(src, sr=sr, ax=ax, title=str(name), **options)
    for ax in axes[1:]:
        ax.set_ylabel("")
    return fig


def _axes(ax: Axes | None, size: tuple[float, float]) -> tuple[Figure, Axes]:
    if ax is None:
        fig = figure(figsize=size, layout="constrained")
        return fig, fig.add_subplot()
    owner = ax.get_figure(root=True)
    if not isinstance(owner, Figure):
        raise AudioError("ax", "must belong to a matplotlib Figure")
    return owner, ax
