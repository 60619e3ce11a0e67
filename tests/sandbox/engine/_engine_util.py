"""Helpers of the engine tests (imported by the test modules)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

import songlab.sandbox.engine as engine

DATA = Path(__file__).resolve().parents[3] / "data"
SR = 44100


def read(name: str) -> bytes:
    return (DATA / name).read_bytes()


def audio_of(asset_or_bytes) -> np.ndarray:
    """Decoded float32 (channels, samples) at 44.1 kHz."""
    data = getattr(asset_or_bytes, "data", asset_or_bytes)
    x, sr = engine.decode(data)
    assert sr == SR
    return x


def as_input(asset) -> engine.AudioIn:
    """An asset handed back as a later input, as the worker does (recipe included)."""
    return engine.AudioIn(asset.data, asset.mime_type, asset.recipe)


def as_foreign(asset) -> engine.AudioIn:
    """The same bytes without provenance: the engine must treat them as foreign audio."""
    return engine.AudioIn(asset.data, asset.mime_type, None)


def band_share(x: np.ndarray, lo: float, hi: float) -> float:
    m = x.mean(axis=0)
    p = np.abs(np.fft.rfft(m)) ** 2
    f = np.fft.rfftfreq(len(m), 1 / SR)
    return float(p[(f >= lo) & (f < hi)].sum() / p.sum())
