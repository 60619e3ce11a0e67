"""The one format every clip reaches a listener in, whatever model made it.

A rater must learn nothing about a clip but its sound. So every clip of a session is
brought to one format before anyone hears it (:func:`conform`, :func:`fit`): 48 kHz, two
channels (a mono clip is heard in both ears, as it would be anyway), its leading and
trailing digital silence cut whatever their length, one common length (the shortest clip's
sound, or ``seconds``: a clip with less sound than that is refused, never padded with
silence), the same fade-in and fade-out (:func:`shape`), and loudness matched per prompt
(:mod:`._match`). So neither a silent intro nor a short clip's padding tells its model apart. A page or a
panel then gets it as constant-bitrate MP3 (:func:`encode_mp3`: plain stereo, no tag of
any kind, so every frame header and every file size is the same), after a lead-in of
digital silence of 1-1151 samples drawn from a secret key (:func:`lead`): no two elements
share bytes, and the lead-in says nothing to anyone without the key.

The signals of the rater checks live here too: the gold clip's degradation
(:func:`degrade`), the trapping question's beeps (:func:`beeps`) and the headphone check's
tones (:func:`headphone_tones`).
"""

from __future__ import annotations

import hashlib
import hmac
import math

import numpy as np
import scipy  # scipy.signal (and the scipy.stats it imports) load on first use

from songlab.codec import encode

__all__ = [
    "CHANNELS",
    "DEFAULT_BITRATE",
    "LEAD_MAX",
    "RATE",
    "beeps",
    "conform",
    "degrade",
    "encode_mp3",
    "fit",
    "headphone_tones",
    "lead",
    "shape",
]

RATE = 48_000  # every MP3 bitrate gives whole frames at 48 kHz (144 x bitrate / rate bytes)
CHANNELS = 2
DEFAULT_BITRATE = 96_000
FADE_IN, FADE_OUT = 0.010, 0.250  # seconds, the same for every clip
SILENCE = 10 ** (-60 / 20)  # leading and trailing samples below -60 dBFS on every channel are cut
LEAD_MAX = 1151  # a prime: variants 1 + (h + 97 v) mod 1151 never coincide for v < 1151


def conform(audio: np.ndarray, sr: int, /) -> np.ndarray:
    """``audio`` (float ``(channels, samples)`` at ``sr``) at 48 kHz, in two channels, its
    leading and trailing digital silence (below -60 dBFS on every channel) cut, however long:
    the common format, before the common length. A silent clip comes back empty."""
    a = np.atleast_2d(np.asarray(audio, dtype=np.float32))
    if sr != RATE:
        g = math.gcd(int(sr), RATE)
        a = scipy.signal.resample_poly(a, RATE // g, int(sr) // g, axis=-1).astype(np.float32)
    if a.shape[0] == 1:
        a = np.repeat(a, CHANNELS, axis=0)
    elif a.shape[0] > CHANNELS:  # more than stereo: its first two channels
        a = a[:CHANNELS]
    loud = np.flatnonzero(np.max(np.abs(a), axis=0) >= SILENCE)
    if not loud.size:
        return np.zeros((CHANNELS, 0), dtype=np.float32)
    return np.ascontiguousarray(a[:, int(loud[0]) : int(loud[-1]) + 1])


def fit(audio: np.ndarray, samples: int, /) -> np.ndarray:
    """``audio`` cut to its first ``samples`` (an excerpt). Never padded: a clip shorter than
    ``samples`` is refused with ``ValueError`` (silence added to one model's clips would tell
    them apart)."""
    if audio.shape[-1] < samples:
        raise ValueError(
            f"has {audio.shape[-1] / RATE:.3f} s of sound, less than the common length "
            f"{samples / RATE:.3f} s"
        )
    return np.ascontiguousarray(audio[:, :samples])


def shape(core: np.ndarray, /, *, lead: int = 0) -> np.ndarray:
    """What a listener hears: ``lead`` samples of silence, then the clip, cut to the common
    length, with the common fade-in (after the lead-in) and fade-out (at the end)."""
    n = core.shape[-1]
    out = np.zeros_like(core)
    out[:, lead:] = core[:, : n - lead]
    fi = min(int(FADE_IN * RATE), n - lead)
    fo = min(int(FADE_OUT * RATE), n)
    out[:, lead : lead + fi] *= np.linspace(0.0, 1.0, fi, endpoint=False, dtype=np.float32)
    out[:, n - fo :] *= np.linspace(1.0, 0.0, fo, dtype=np.float32)
    return out


def lead(key: bytes, *parts: object, variant: int = 0) -> int:
    """A lead-in of 1-1151 samples drawn from ``key`` (a secret) and ``parts``: unrelated to
    anything a listener can see without the key; variants of one clip never coincide."""
    msg = "|".join(map(str, parts)).encode("utf-8")
    h = int.from_bytes(hmac.new(key, msg, hashlib.sha256).digest()[:4], "big")
    return 1 + (h + 97 * variant) % LEAD_MAX


def encode_mp3(audio: np.ndarray, /, *, bitrate: int = DEFAULT_BITRATE) -> bytes:
    """Constant-bitrate MP3 of common-format ``audio`` (48 kHz stereo), LAME through PyAV:
    full band (no encoder low-pass), plain L/R stereo, no ID3 or Xing tag."""
    a = np.ascontiguousarray(np.atleast_2d(np.asarray(audio, dtype=np.float32)))
    return encode(a, "mp3", sr=RATE, bitrate=bitrate)


def degrade(core: np.ndarray, /) -> np.ndarray:
    """The gold clip: ``core`` made plainly bad (low-passed at 1 kHz, clipped hard and
    noisy), the "very bad quality" P.808's gold standard questions ask for."""
    sos = scipy.signal.butter(4, 1000.0, btype="lowpass", fs=RATE, output="sos")
    x = scipy.signal.sosfiltfilt(sos, np.asarray(core, dtype=np.float64), axis=-1)
    peak = float(np.max(np.abs(x))) or 1.0
    x = np.clip(6.0 * x / peak, -1.0, 1.0)  # hard clipping: a harsh distortion
    rng = np.random.default_rng(808)
    noise = rng.normal(0.0, 1.0, x.shape) * 0.25 * float(np.sqrt(np.mean(x**2)))
    out: np.ndarray = (0.5 * (x + noise)).astype(np.float32)
    return out


def beeps(core: np.ndarray, /, *, count: int) -> np.ndarray:
    """The trapping question's clip: ``core`` interrupted by ``count`` loud 1 kHz beeps in
    its middle part (each as long as the pause after it; all of them within 60 % of the clip)."""
    n = core.shape[-1]
    span = 0.6 * n
    step = int(min(0.4 * RATE, span / (2 * count)))  # beep length = pause length
    start = int((n - 2 * step * count) / 2)
    t = np.arange(step) / RATE
    ramp = np.minimum(1.0, np.minimum(t, t[::-1]) / 0.005)
    tone = (np.sin(2 * np.pi * 1000.0 * t) * ramp).astype(np.float32)
    rms = float(np.sqrt(np.mean(core**2))) or 0.1
    out = core.copy()
    for i in range(count):
        at = start + 2 * i * step
        out[:, at : at + step] = 0.3 * out[:, at : at + step] + 4.0 * rms * tone
    return out


def headphone_tones(seconds: float = 1.0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The headphone check of Woods et al. (2017): three 200 Hz tones, ``(normal, quiet,
    antiphase)``. The quiet one is 6 dB down; the antiphase one is as loud as the normal
    one but its channels are in opposite phase, so over loudspeakers it partly cancels and
    sounds quieter: a listener on loudspeakers picks it, one on headphones the quiet one."""
    n = int(seconds * RATE)
    t = np.arange(n) / RATE
    ramp = np.minimum(1.0, np.minimum(t, t[::-1]) / 0.1)
    tone = (0.25 * np.sin(2 * np.pi * 200.0 * t) * ramp).astype(np.float32)
    normal = np.stack([tone, tone])
    quiet = normal * np.float32(10 ** (-6 / 20))
    antiphase = np.stack([tone, -tone])
    return normal, quiet, antiphase
