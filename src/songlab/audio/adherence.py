"""Prompt adherence per clip: what a request asked for against what its audio says.

``asked(request)`` reads what a create request asked for (an explicit ``NNN bpm``
and key in the prompt, ``duration_seconds``, ``lyrics``, the melody or MIDI file);
``heard(data)`` measures the audio once (:mod:`songlab.audio.measures`);
``score(asked, heard)`` applies each measure's published rule. What the request
did not ask for is not scored (its score is NaN, never a guess); loudness, true
peak and clipping are reported for every clip and never scored.

Rules (the provenance of each is in :data:`songlab.audio.measures.PROVENANCE`):

==========  ===============================================================
tempo       ``mir_eval.tempo.detection``, 8 % tolerance: 1 or 0
key         ``mir_eval.key.weighted_score``: 1, 0.5 (fifth), 0.3 (relative), 0.2
            (parallel), 0
duration    1 within 5 % of ``duration_seconds``, else 0
melody      ``mir_eval.melody.raw_chroma_accuracy`` at the best time offset, 0-1
lyrics      word error rate (jiwer), 0 best (:mod:`songlab.audio.lyrics`)
==========  ===============================================================
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

import songlab.audio.measures as ms
from songlab.audio._audio_error import AudioError
from songlab.audio._clips import as_channels

__all__ = [
    "Asked",
    "Heard",
    "MEASURE_COLUMNS",
    "MELODY_OPERATIONS",
    "asked",
    "heard",
    "melody_score",
    "parse_prompt",
    "score",
]

MELODY_OPERATIONS: Final = {"melody_to_song": "melody", "midi_to_song": "midi"}
# the score column of each measure (the scorecard's adherence columns, in this order)
MEASURE_COLUMNS: Final = {
    "tempo": "tempo_score",
    "key": "key_score",
    "duration": "duration_score",
    "melody": "melody_score",
    "lyrics": "lyrics_wer",
}
TEMPO_TOL: Final = 0.08  # mir_eval's default, the MIREX tempo tolerance
DURATION_TOL: Final = 0.05
MAX_OFFSET_S: Final = 12.0

_BPM = re.compile(r"(?<![\d.])(\d{2,3}(?:\.\d+)?)\s*(?:bpm|beats per minute)\b", re.I)
_KEY = re.compile(
    r"(?P<pre>\b[Kk]ey\s+of\s+)?\b(?P<letter>[A-G])"
    r"(?P<acc>#|♯|♭|b(?![A-Za-z])|\s+(?:sharp|flat)\b)?"
    r"(?:\s*(?P<mode>[Mm]ajor|[Mm]inor|[Mm]aj\b|[Mm]in\b))?(?![\w#♯])"
)
_PC: Final = {"c": 0, "d": 2, "e": 4, "f": 5, "g": 7, "a": 9, "b": 11}


@dataclass(frozen=True, slots=True)
class Asked:
    """What one request asked for; None where it asked nothing. ``key`` is mir_eval's
    spelling (``"A minor"``), or a bare tonic (``"A"``) when the prompt named no mode."""

    operation: str | None = None
    model: str | None = None
    tempo_bpm: float | None = None
    key: str | None = None
    duration_s: float | None = None
    lyrics: str | None = None
    melody: str | None = None  # the payload field of the melody or MIDI input


def _tonic(letter: str, accidental: str) -> int:
    acc = accidental.strip().lower()
    shift = 1 if acc in ("#", "♯", "sharp") else -1 if acc in ("b", "♭", "flat") else 0
    return (_PC[letter.lower()] + shift) % 12


def parse_prompt(prompt: object, /) -> tuple[float | None, str | None]:
    """``(tempo_bpm, key)`` a prompt asks for explicitly, else None for each.

    A tempo is a number followed by ``bpm``; a key is a letter with an optional
    accidental and a mode word (``A minor``, ``in F# major``, ``E flat minor``) or
    ``key of D`` (a tonic without a mode). Mood words ("sad") ask for nothing: the
    service may read them as it likes, so they are not scored.
    """
    if not isinstance(prompt, str):
        return None, None
    tempo = None
    m = _BPM.search(prompt)
    if m:
        tempo = float(m.group(1))
    found = None
    for k in _KEY.finditer(prompt):
        letter, acc, mode = k.group("letter"), k.group("acc") or "", k.group("mode")
        if mode is None and not k.group("pre"):
            continue  # a bare capital letter ("A cappella") asks for no key
        name = ms.KEY_NAMES[_tonic(letter, acc)]
        if mode is None:
            found = name
        else:
            found = f"{name} {'major' if mode.lower().startswith('maj') else 'minor'}"
        break
    return tempo, found


def asked(request: Mapping[str, Any], /) -> Asked:
    """What a create request (``generations.create``'s arguments: ``operation``, ``model``,
    ``payload``) asked for. Raises :class:`AudioError` naming ``request`` if it is not one."""
    if not isinstance(request, Mapping):
        raise AudioError("request", "must be a mapping of create arguments (operation, payload)")
    payload = request.get("payload") or {}
    if not isinstance(payload, Mapping):
        raise AudioError("request.payload", "must be a mapping of the tool's input fields")
    op = request.get("operation")
    prompt = payload.get("prompt") or payload.get("styleOfMusic") or ""
    tempo, key = parse_prompt(str(prompt))
    dur = payload.get("duration_seconds")
    if op in ("extend_song", "extend_music"):
        dur = None  # the length of an extension is the input's plus the new part
    lyrics = payload.get("lyrics")
    return Asked(
        operation=None if op is None else str(op),
        model=None if request.get("model") is None else str(request.get("model")),
        tempo_bpm=tempo,
        key=key,
        duration_s=None if dur is None else float(dur),
        lyrics=str(lyrics) if isinstance(lyrics, str) and lyrics.strip() else None,
        melody=MELODY_OPERATIONS.get(str(op)) if op is not None else None,
    )


@dataclass(frozen=True, slots=True)
class Heard:
    """What one clip's audio says (every estimate, none scored yet)."""

    duration_s: float
    sr: int
    channels: int
    tempo_bpm: float
    key: str
    key_strength: float
    loudness_lufs: float
    true_peak_dbtp: float
    clipped_samples: int
    melody: tuple[NDArray[np.float64], NDArray[np.float64]] | None = field(
        default=None, compare=False
    )

    def as_dict(self) -> dict[str, Any]:
        return {
            "duration_s": self.duration_s,
            "sr": self.sr,
            "channels": self.channels,
            "tempo_bpm": self.tempo_bpm,
            "key": self.key,
            "key_strength": self.key_strength,
            "loudness_lufs": self.loudness_lufs,
            "true_peak_dbtp": self.true_peak_dbtp,
            "clipped_samples": self.clipped_samples,
        }


def heard(audio: Any, /, *, sr: int, melody: bool = False) -> Heard:
    """Measure a decoded clip (float32 ``(channels, samples)``): length, tempo, key,
    loudness, true peak, clipping, and the predominant melody when ``melody=True``."""
    arr = as_channels(audio)
    feat = ms.features(arr, sr=sr)
    k, strength = ms.key(feat)
    contour = ms.melody_from_mono(feat.mono) if melody else None  # resampled once
    lv = ms.levels(arr, sr=sr)
    return Heard(
        duration_s=arr.shape[1] / sr,
        sr=int(sr),
        channels=int(arr.shape[0]),
        tempo_bpm=ms.tempo(feat),
        key=k,
        key_strength=strength,
        loudness_lufs=lv.loudness_lufs,
        true_peak_dbtp=lv.true_peak_dbtp,
        clipped_samples=lv.clipped_samples,
        melody=contour,
    )


def _tempo_score(asked_bpm: float, bpm: float) -> float:
    import mir_eval

    if not bpm > 0:
        return 0.0
    p, _, _ = mir_eval.tempo.detection(
        np.array([asked_bpm, 0.0]), 1.0, np.array([bpm, bpm]), tol=TEMPO_TOL
    )
    return float(p)


def _key_score(asked_key: str, key: str) -> float:
    import mir_eval

    if " " not in asked_key:  # a tonic without a mode: the better of its two modes
        return max(_key_score(f"{asked_key} major", key), _key_score(f"{asked_key} minor", key))
    return float(mir_eval.key.weighted_score(asked_key, key))


def melody_score(
    reference: tuple[NDArray[np.float64], NDArray[np.float64]],
    estimate: tuple[NDArray[np.float64], NDArray[np.float64]],
    /,
    *,
    max_offset_s: float = MAX_OFFSET_S,
) -> float:
    """Raw chroma accuracy (mir_eval.melody) of ``estimate`` against ``reference`` (both
    ``(times_s, f0_hz)``, 0 Hz unvoiced) at the best single time offset of the estimate
    within ``[-max_offset_s, +max_offset_s]``. NaN when the reference has no voiced frame."""
    import mir_eval

    ref_t, ref_f = (np.asarray(a, dtype=np.float64) for a in reference)
    est_t, est_f = (np.asarray(a, dtype=np.float64) for a in estimate)
    if ref_t.size == 0 or not np.any(ref_f > 0) or est_t.size == 0:
        return float("nan")
    step = ms.MELODY_HOP / ms.ANALYSIS_SR
    grid = np.arange(0.0, max(ref_t[-1], est_t[-1]) + step, step)
    ref_on = np.interp(grid, ref_t, ref_f, left=0.0, right=0.0)
    ref_on = np.where(np.interp(grid, ref_t, (ref_f > 0).astype(float)) >= 0.5, ref_on, 0.0)
    est_on = np.interp(grid, est_t, est_f, left=0.0, right=0.0)
    # the best offset by pitch-class agreement (12-channel cross-correlation, FFT)
    pc_ref = _pitch_classes(ref_on)
    pc_est = _pitch_classes(est_on)
    n = grid.size
    size = 1 << int(np.ceil(np.log2(2 * n)))
    corr = np.zeros(size)
    for c in range(12):
        a, b = (pc_ref == c).astype(float), (pc_est == c).astype(float)
        corr += np.fft.irfft(np.conj(np.fft.rfft(a, size)) * np.fft.rfft(b, size), size)
    lags = np.concatenate((np.arange(0, n), np.arange(-n + 1, 0)))
    vals = np.concatenate((corr[:n], corr[size - n + 1 :]))
    reach = int(round(max_offset_s / step))
    ok = np.abs(lags) <= reach
    lag = int(lags[ok][int(np.argmax(vals[ok]))])
    shifted = np.roll(est_on, -lag)
    if lag > 0:
        shifted[n - lag :] = 0.0
    elif lag < 0:
        shifted[:-lag] = 0.0
    ref_c, ref_v = mir_eval.melody.freq_to_voicing(ref_on)
    est_c, est_v = mir_eval.melody.freq_to_voicing(shifted)
    ref_cent = mir_eval.melody.hz2cents(ref_c)
    est_cent = mir_eval.melody.hz2cents(est_c)
    return float(mir_eval.melody.raw_chroma_accuracy(ref_v, ref_cent, est_v, est_cent))


def _pitch_classes(f0: NDArray[np.float64]) -> NDArray[np.int64]:
    out = np.full(f0.shape, -1, dtype=np.int64)
    on = f0 > 0
    out[on] = np.round(69 + 12 * np.log2(f0[on] / 440.0)).astype(np.int64) % 12
    return out


def score(
    ask: Asked,
    got: Heard,
    /,
    *,
    reference: tuple[NDArray[np.float64], NDArray[np.float64]] | None = None,
    transcript: str | None = None,
) -> dict[str, Any]:
    """One row: every estimate beside what was asked and the score of each asked measure
    (NaN where nothing was asked). ``reference`` is the asked melody's contour (melody and
    MIDI to song); ``transcript`` the service's transcription of the clip (lyrics WER)."""
    nan = float("nan")
    row: dict[str, Any] = {
        "asked_tempo_bpm": ask.tempo_bpm,
        "tempo_bpm": got.tempo_bpm,
        "tempo_ratio": got.tempo_bpm / ask.tempo_bpm if ask.tempo_bpm else nan,
        "tempo_score": _tempo_score(ask.tempo_bpm, got.tempo_bpm) if ask.tempo_bpm else nan,
        "asked_key": ask.key,
        "key": got.key,
        "key_score": _key_score(ask.key, got.key) if ask.key else nan,
        "asked_duration_s": ask.duration_s,
        "duration_s": got.duration_s,
        "duration_error": (got.duration_s - ask.duration_s) / ask.duration_s
        if ask.duration_s
        else nan,
        "duration_score": float(
            abs(got.duration_s - ask.duration_s) <= DURATION_TOL * ask.duration_s
        )
        if ask.duration_s
        else nan,
        "melody_score": nan,
        "asked_lyrics": ask.lyrics,
        "lyrics_wer": nan,
        "transcript": transcript,
        "loudness_lufs": got.loudness_lufs,
        "true_peak_dbtp": got.true_peak_dbtp,
        "clipped_samples": got.clipped_samples,
        "channels": got.channels,
    }
    if ask.melody and reference is not None and got.melody is not None:
        row["melody_score"] = melody_score(reference, got.melody)
    if ask.lyrics and transcript is not None:
        import songlab.audio.lyrics as ly

        row["lyrics_wer"] = ly.wer(ask.lyrics, transcript)
    return row
