"""Synthetic clips for listening tests: sines and noise at different levels, short (1-2 s)."""

from __future__ import annotations

import base64
import re

import numpy as np

SR = 16000
# Distinctive names, so a leak of the answer key shows up as a plain substring.
MODELS = ("model-alpha-7f3", "model-bravo-91c", "model-charlie-2de")


def make_clips(n_prompts: int = 4, *, models=MODELS, seconds: float = 1.0, seed: int = 0) -> dict:
    """One clip per prompt per model; each model at its own level, so matching has work to do."""
    rng = np.random.default_rng(seed)
    t = np.arange(int(SR * seconds)) / SR
    clips = {}
    for m, name in enumerate(models):
        level = [0.5, 0.1, 0.25, 0.05, 0.3][m % 5]
        out = []
        for p in range(n_prompts):
            if m % 2 == 0:
                x = level * np.sin(2 * np.pi * (220 + 55 * p + 30 * m) * t)
            else:
                x = level * rng.normal(0.0, 0.3, t.size).clip(-1, 1)
            out.append((x.astype(np.float32), SR))
        clips[name] = out
    return clips


def scan(blob: bytes, *, long: list[str], short: list[str]) -> list[str]:
    """Names found in a page or answer file: long ids anywhere (raw bytes, base64 text and
    the decoded audio); short names (v5, anchor, ...) in the text outside the audio
    payloads (a two-letter string turns up in random base64 by chance)."""
    payloads = re.findall(rb"base64,([A-Za-z0-9+/=]+)", blob)
    audio = b"".join(base64.b64decode(m) for m in payloads)
    text = re.sub(rb"base64,[A-Za-z0-9+/=]+", b"base64,", blob)
    found = [n for n in long if n.encode() in blob or n.encode() in audio]
    return found + [n for n in short if n.encode() in text]


SHORT = ["v5", "v6", "v7", "anchor", "low-pass", "kHz", "model"]
