"""Rater pages: one self-contained HTML file per rater, audio embedded as compact MP3.

Blindness of the page: it holds labels, prompts and audio, never a model name,
tool, task or file id. Every audio element of a page gets its own encoding of
its clip, shifted by a lead-in of digital silence (1-1151 samples, under 27 ms
at 44.1 kHz: inaudible, but no two MP3 frames line up), so no two elements of a
page share bytes: a rater cannot match X to A, the hidden reference to the open
one, or one trial's clip to another's, by comparing the page source. (Decoding
the audio and correlating it can: no offline page can prevent that; see
docs/listening.md.)
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import math
from typing import Any

import numpy as np

from songlab.codec import encode
from songlab.listening._answers import PAGE_FORMAT, design_digest
from songlab.listening._errors import ListeningError
from songlab.listening._page_template import TEMPLATE
from songlab.listening.session import ListeningSession

MP3_RATES = (32000, 44100, 48000)
DEFAULT_BITRATE = 96_000


def _primes(n: int) -> list[int]:
    out: list[int] = []
    k = 2
    while len(out) < n:
        if all(k % p for p in out if p * p <= k):
            out.append(k)
        k += 1
    return out


def _iroot(x: int, n: int) -> int:
    r = int(round(x ** (1.0 / n)))
    while r**n > x:
        r -= 1
    while (r + 1) ** n <= x:
        r += 1
    return r


# FIPS 180-4 sec. 4.2.2 and 5.3.3: first 32 bits of the fractional parts of the cube
# (square) roots of the first 64 (8) primes, computed exactly with integer roots.
SHA_K = [_iroot(p << 96, 3) & 0xFFFFFFFF for p in _primes(64)]
SHA_H = [_iroot(p << 64, 2) & 0xFFFFFFFF for p in _primes(8)]


def encode_mp3(audio: np.ndarray, /, *, sr: int, bitrate: int = DEFAULT_BITRATE) -> bytes:
    """Constant-bitrate MP3 (LAME through PyAV), full band (no encoder low-pass).

    ``audio`` float ``(channels, samples)``, 1 or 2 channels; ``sr`` 32, 44.1 or 48 kHz
    (other rates are resampled to 48 kHz by the caller, :func:`page_audio`).
    """
    a = np.ascontiguousarray(np.atleast_2d(np.asarray(audio, dtype=np.float32)))
    return encode(a[:2], "mp3", sr=sr, bitrate=bitrate)


def page_audio(audio: np.ndarray, sr: int, *, lead: int, bitrate: int = DEFAULT_BITRATE) -> str:
    """One element's audio as a ``data:`` URI: ``lead`` samples of silence, then CBR MP3."""
    a = np.atleast_2d(np.asarray(audio, dtype=np.float32))
    if sr not in MP3_RATES:
        from scipy.signal import resample_poly

        g = math.gcd(int(sr), 48000)
        a = resample_poly(a, 48000 // g, int(sr) // g, axis=-1).astype(np.float32)
        sr = 48000
    silence = np.zeros((a.shape[0], int(lead)), dtype=np.float32)
    data = encode_mp3(np.concatenate([silence, a], axis=-1), sr=sr, bitrate=bitrate)
    return "data:audio/mpeg;base64," + base64.b64encode(data).decode("ascii")


class AudioPool:
    """Encoded variants of each clip, shared by the pages of one campaign.

    Variant v of a clip has a lead-in of ``1 + (h + 97 v) mod 1151`` samples (h from
    the campaign id and the clip): distinct for every v < 1151, as 1151 is prime.
    A page uses variants 0, 1, ... of a clip in the order its elements need them,
    so no two elements of a page share bytes, and a campaign encodes each clip
    only as many times as one page plays it (not once per rater).
    """

    def __init__(self, salt: str, *, bitrate: int = DEFAULT_BITRATE) -> None:
        self.salt, self.bitrate = salt, bitrate
        self._cache: dict[tuple[str, int, int], str] = {}

    def uri(self, key: tuple[str, int], variant: int, clip: tuple[np.ndarray, int]) -> str:
        k = (key[0], key[1], variant)
        if k not in self._cache:
            h = int.from_bytes(hashlib.sha256(f"{self.salt}|{key}".encode()).digest()[:4], "big")
            lead = 1 + (h + 97 * variant) % 1151
            self._cache[k] = page_audio(clip[0], clip[1], lead=lead, bitrate=self.bitrate)
        return self._cache[k]


def design_text(
    session: ListeningSession,
    *,
    campaign: str,
    rater: str,
    min_play: float,
    pool: AudioPool,
) -> str:
    """The exact JSON text a rater's page embeds (and hashes); deterministic."""
    trials: list[dict[str, Any]] = []
    uses: dict[tuple[str, int], int] = {}
    for t in session.trials:
        playable = session._playable(t)
        audio = {}
        for label in playable:
            key = (session._model_of(t, label), session.prompts.index(t.prompt))
            variant = uses[key] = uses.get(key, -1) + 1
            audio[label] = pool.uri(key, variant, session.clip(t.index, label))
        trials.append(
            {
                "trial": t.index,
                "prompt": t.prompt,
                "labels": list(t.labels),
                "play": list(playable),
                "audio": audio,
                "controls": session.controls(t.index).to_json(),
            }
        )
    doc: dict[str, Any] = {
        "format": PAGE_FORMAT,
        "campaign": campaign,
        "rater": rater,
        "kind": session.kind,
        "min_play": float(min_play),
        "trials": trials,
    }
    # "</" cannot appear inside <script>; "<\/" is the same string to a JSON parser.
    return json.dumps(doc, separators=(",", ":"), ensure_ascii=False).replace("</", "<\\/")


def render(design: str, *, token: str, title: str) -> str:
    """The whole page: template + design text + this rater's token."""
    if not isinstance(title, str) or not title.strip():
        raise ListeningError("title", "must be a non-empty string")
    out = TEMPLATE.replace("__SHA_K__", ",".join(f"0x{k:08x}" for k in SHA_K))
    out = out.replace("__SHA_H__", ",".join(f"0x{h:08x}" for h in SHA_H))
    out = out.replace("__TITLE__", html.escape(title)).replace("__TOKEN__", token)
    return out.replace("__DESIGN__", design)


__all__ = ["AudioPool", "design_digest", "design_text", "encode_mp3", "page_audio", "render"]
