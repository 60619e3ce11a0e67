"""What a clip's audio says, measured by outside libraries: tempo, key, loudness, peaks, melody.

Pure estimators on arrays (no request, no client, no network, no model weights):
each returns plain numbers, and :data:`PROVENANCE` says for each measure which
library computed it, at which version and with which settings. The scoring
rules (what a request asked against what was heard) are
:mod:`songlab.audio.adherence`'s.

Arrays are float32 ``(channels, samples)`` or 1-D (mono) with time on the last
axis, at any rate; the rhythm, key and melody estimators run on a mono mix
resampled to :data:`ANALYSIS_SR` (soxr, librosa's default resampler) once, and one
power STFT of it (:func:`features`) serves tempo and key together; loudness and true
peak read the clip as decoded (its own rate and channels).

librosa, mir_eval and soxr are the ``score`` extra (``pip install
'songlab[score]'``); they are imported inside the functions, so ``import
songlab.audio`` does not pay for them.
"""

from __future__ import annotations

import importlib.metadata
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

from songlab.audio._audio_error import AudioError
from songlab.audio._clips import _check_sr, as_channels
from songlab.audio.loudness import BLOCK_SECONDS, integrated_loudness

__all__ = [
    "ANALYSIS_SR",
    "Features",
    "KEY_NAMES",
    "Levels",
    "PROVENANCE",
    "Provenance",
    "clipped_samples",
    "features",
    "key",
    "key_from_chroma",
    "levels",
    "library_version",
    "loudness",
    "melody_contour",
    "melody_from_mono",
    "midi_contour",
    "pitch_contour",
    "tempo",
    "true_peak",
]

ANALYSIS_SR: Final = 22050  # librosa's default rate: tempo, key and melody run here
N_FFT: Final = 2048  # 93 ms at 22.05 kHz
HOP: Final = 512  # 23 ms: librosa's default onset and chroma hop
N_MELS: Final = 128
TP_BLOCK: Final = 64  # samples per block of the true-peak search
OVERSAMPLE: Final = 4  # ITU-R BS.1770-4 Annex 2: true peak at 4x the rate (192 kHz for 48 kHz)
CLIP_LEVEL: Final = 0.999  # a sample at or over this magnitude (about -0.01 dBFS) is at full scale
CLIP_RUN: Final = 3  # ... and three such samples in a row in one channel are a clip
MELODY_HOP: Final = 256  # 11.6 ms frames for melody contours
MELODY_FMIN: Final = 65.4  # C2
MELODY_FMAX: Final = 1046.5  # C6
# a song's melody is searched for from F3 up: below it the bass line's harmonic sum wins the
# salience (a sandbox melody_to_song song scored 0.18 searched from C2, 0.67 from A2 and
# 0.97 from F3); the score ignores octaves, so a line below F3 is found an octave up
MELODY_SEARCH_FMIN: Final = 174.6
BINS_PER_OCTAVE: Final = 36  # a third of a semitone per constant-Q bin
KEY_NAMES: Final = ("C", "C#", "D", "Eb", "E", "F", "F#", "G", "Ab", "A", "Bb", "B")
# Albrecht & Shanahan (2013), "The use of large corpora to train a new type of key-finding
# algorithm", Music Perception 31(1): 59-67 -- pitch-class distributions of 490 pieces;
# index 0 is the tonic. Chosen over Krumhansl-Kessler (1982), which heard 15 of 24 sandbox
# songs and 18 of 24 synthetic cadences in their key against 15 and 23 with these.
AS_MAJOR: Final = (
    0.238,
    0.006,
    0.111,
    0.006,
    0.137,
    0.094,
    0.016,
    0.214,
    0.009,
    0.080,
    0.008,
    0.081,
)
AS_MINOR: Final = (
    0.220,
    0.006,
    0.104,
    0.123,
    0.019,
    0.103,
    0.012,
    0.214,
    0.062,
    0.022,
    0.061,
    0.052,
)


def library_version(name: str) -> str:
    """The installed version of a distribution (``"absent"`` if it is not installed)."""
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return "absent"


@dataclass(frozen=True, slots=True)
class Provenance:
    """Where a measure comes from: the library that computes it, its version, the settings
    songlab passes, the scoring rule and the published source. ``version`` is the measure's
    own: it changes when songlab changes how the measure is computed, so cached results of
    an older version are computed again."""

    measure: str
    version: int
    library: str
    settings: dict[str, Any] = field(default_factory=dict)
    rule: str = ""
    source: str = ""
    libraries: tuple[str, ...] = ()

    def versions(self) -> dict[str, str]:
        """``{distribution: installed version}`` of every library the measure runs."""
        return {name: library_version(name) for name in self.libraries}

    def as_dict(self) -> dict[str, Any]:
        return {
            "measure": self.measure,
            "version": self.version,
            "library": self.library,
            "library_versions": self.versions(),
            "settings": dict(self.settings),
            "rule": self.rule,
            "source": self.source,
        }


PROVENANCE: Final[dict[str, Provenance]] = {
    p.measure: p
    for p in (
        Provenance(
            "tempo",
            1,
            "librosa.feature.tempo (autocorrelation tempogram, log-normal prior), mir_eval.tempo",
            {
                "sr": ANALYSIS_SR,
                "hop_length": HOP,
                "n_fft": N_FFT,
                "onset": "librosa.onset.onset_strength on a 128-band mel spectrogram",
                "start_bpm": 120.0,
                "std_bpm": 1.0,
                "tol": 0.08,
            },
            "mir_eval.tempo.detection(reference_tempi=[asked, 0], reference_weight=1, "
            "estimated_tempi=[heard, heard], tol=0.08): 1 when the heard tempo is within 8 % "
            "of the asked one, else 0 (half or double time scores 0)",
            "McKinney et al., 'Evaluation of audio beat tracking and music tempo extraction "
            "algorithms', JNMR 36(1), 2007 (the MIREX tempo rule); Raffel et al., mir_eval, "
            "ISMIR 2014",
            ("librosa", "mir_eval", "soxr"),
        ),
        Provenance(
            "key",
            1,
            "librosa.feature.chroma_stft + Albrecht-Shanahan key profiles, mir_eval.key",
            {
                "sr": ANALYSIS_SR,
                "hop_length": HOP,
                "n_fft": N_FFT,
                "chroma": "librosa.feature.chroma_stft (tuning A440), summed over the clip",
                "profiles": "Albrecht & Shanahan 2013, Pearson correlation over the 24 keys",
            },
            "mir_eval.key.weighted_score(asked, heard): same key 1.0, the heard key a fifth "
            "above 0.5, relative major/minor 0.3, parallel 0.2, else 0; a request naming a "
            "tonic without a mode takes the better of its major and minor",
            "MIREX Audio Key Detection; Albrecht & Shanahan, Music Perception 31(1), 2013; "
            "Raffel et al., mir_eval, ISMIR 2014",
            ("librosa", "mir_eval", "soxr"),
        ),
        Provenance(
            "duration",
            1,
            "songlab.codec (soundfile / PyAV): decoded samples / sample rate",
            {"tol": 0.05},
            "1 when the decoded length is within 5 % of duration_seconds, else 0",
            "the request's duration_seconds (songlab's payload table)",
            ("soundfile", "av"),
        ),
        Provenance(
            "loudness",
            1,
            "pyloudnorm.Meter (ITU-R BS.1770-4 integrated loudness)",
            {"filter_class": "K-weighting", "block_size": BLOCK_SECONDS},
            "reported, not scored (no request asks for a loudness)",
            "ITU-R BS.1770-4; Steinmetz & Reiss, pyloudnorm, AES 2021",
            ("pyloudnorm",),
        ),
        Provenance(
            "true_peak",
            1,
            "numpy: 4x oversampling by ITU-R BS.1770-4 Annex 2's 48-tap interpolation filter "
            "(evaluated wherever the true peak can be: exact), on the decoded samples at "
            "their own rate; clipped samples counted on the decoded samples",
            {
                "oversample": OVERSAMPLE,
                "filter": "BS.1770-4 Annex 2, 48 taps, 4 phases",
                "clip_level": CLIP_LEVEL,
                "clip_run": CLIP_RUN,
            },
            "reported, not scored: true peak in dBTP (above -1 dBTP misses EBU R 128's "
            "delivery limit), and clipped samples (runs of 3 or more at full scale)",
            "ITU-R BS.1770-4 Annex 2; EBU R 128 (2020)",
            ("scipy",),
        ),
        Provenance(
            "melody",
            2,
            "librosa.pyin (the asked melody, monophonic), a harmonic-sum constant-Q salience "
            "(librosa.cqt, librosa.salience; the song's predominant pitch) or the MIDI file's "
            "top line (mido), mir_eval.melody",
            {
                "sr": ANALYSIS_SR,
                "hop_length": MELODY_HOP,
                "fmin_hz": MELODY_FMIN,
                "fmax_hz": MELODY_FMAX,
                "song_search_fmin_hz": MELODY_SEARCH_FMIN,
                "bins_per_octave": BINS_PER_OCTAVE,
                "harmonics": [1, 2, 3, 4, 5],
                "cent_tolerance": 50,
                "max_offset_s": 12.0,
            },
            "mir_eval.melody.raw_chroma_accuracy: the share of the asked melody's voiced "
            "frames whose heard pitch class is within 50 cents (octaves ignored), at the best "
            "single time offset",
            "MIREX Audio Melody Extraction; Mauch & Dixon, pYIN, ICASSP 2014; Salamon & "
            "Gomez, IEEE TASLP 20(6), 2012 (salience); Raffel et al., mir_eval, ISMIR 2014",
            ("librosa", "mir_eval", "mido"),
        ),
        Provenance(
            "lyrics",
            1,
            "the service's transcription tool (whisper-transcribe-v1), jiwer",
            {
                "normalise": "lower case, punctuation removed, whitespace collapsed "
                "(jiwer.Compose of ToLowerCase, RemovePunctuation, RemoveMultipleSpaces, "
                "Strip, ReduceToListOfListOfWords)",
            },
            "word error rate jiwer.wer(asked lyrics, transcript): (substitutions + deletions "
            "+ insertions) / asked words; 0 is every word heard",
            "Morris et al., 'From WER and RIL to MER and WIL', Interspeech 2004; jiwer",
            ("jiwer",),
        ),
    )
}


@dataclass(frozen=True, slots=True)
class Features:
    """One mono mix at :data:`ANALYSIS_SR` and its power STFT (shared by tempo and key)."""

    mono: NDArray[np.float32]
    power: NDArray[np.float32]
    sr: int = ANALYSIS_SR


def _mono_at(audio: Any, sr: int, target: int = ANALYSIS_SR) -> NDArray[np.float32]:
    import soxr

    arr = as_channels(audio)
    mono = arr.mean(axis=0, dtype=np.float32) if arr.shape[0] > 1 else arr[0]
    if sr == target:
        return np.ascontiguousarray(mono, dtype=np.float32)
    out: NDArray[np.float32] = soxr.resample(mono, sr, target, quality="HQ").astype(np.float32)
    return out


@lru_cache(maxsize=4)
def _mel_basis(sr: int) -> NDArray[np.float32]:
    import librosa

    basis: NDArray[np.float32] = librosa.filters.mel(sr=sr, n_fft=N_FFT, n_mels=N_MELS)
    return basis


@lru_cache(maxsize=4)
def _chroma_basis(sr: int) -> NDArray[np.float32]:
    import librosa

    basis: NDArray[np.float32] = librosa.filters.chroma(sr=sr, n_fft=N_FFT, tuning=0.0)
    return basis


def features(audio: Any, /, *, sr: int) -> Features:
    """The mono mix at 22.05 kHz and its power STFT (``n_fft`` 2048, hop 512).

    Raises :class:`AudioError` naming ``audio`` for a clip shorter than one STFT frame.
    """
    return _features(_mono_at(audio, _check_sr(sr)))


def _features(mono: NDArray[np.float32]) -> Features:
    import librosa

    if mono.size < N_FFT:
        raise AudioError("audio", f"must be at least {N_FFT / ANALYSIS_SR:.2f} s long to analyse")
    spec = librosa.stft(mono, n_fft=N_FFT, hop_length=HOP)
    power = np.square(spec.real, dtype=np.float32) + np.square(spec.imag, dtype=np.float32)
    return Features(mono=mono, power=power)


def tempo(feat: Features, /) -> float:
    """The tempo heard, in BPM: librosa's global tempo estimate (the one its beat tracker
    starts from) on the onset strength of a 128-band mel spectrogram. 0.0 for a clip with
    no onsets (silence).

    The mel spectrogram is ``librosa.feature.melspectrogram(S=power)``'s product, taken
    as one matrix product with librosa's (cached) mel filter bank."""
    import librosa

    mel = _mel_basis(feat.sr) @ feat.power
    env = librosa.onset.onset_strength(S=librosa.power_to_db(mel, ref=np.max), sr=feat.sr)
    if not np.any(env > 0):
        return 0.0
    bpm = librosa.feature.tempo(
        onset_envelope=env, sr=feat.sr, hop_length=HOP, start_bpm=120.0, std_bpm=1.0
    )
    return float(np.atleast_1d(bpm)[0])


def key_from_chroma(chroma: Any, /) -> tuple[str, float]:
    """``("A minor", r)``: the key whose Albrecht-Shanahan profile correlates best (Pearson
    ``r``) with a 12-bin pitch-class profile (index 0 = C). ``("X", 0.0)`` when the profile
    is flat (silence, noise): mir_eval's "no key"."""
    c = np.asarray(chroma, dtype=np.float64).reshape(12)
    if not np.all(np.isfinite(c)) or np.ptp(c) <= 1e-12:
        return "X", 0.0
    best, best_r = "X", -2.0
    for mode, prof in (("major", AS_MAJOR), ("minor", AS_MINOR)):
        p = np.asarray(prof)
        rows = np.stack([np.roll(p, k) for k in range(12)])
        rows = rows - rows.mean(axis=1, keepdims=True)
        cc = c - c.mean()
        r = rows @ cc / (np.linalg.norm(rows, axis=1) * np.linalg.norm(cc))
        k = int(np.argmax(r))
        if r[k] > best_r:
            best, best_r = f"{KEY_NAMES[k]} {mode}", float(r[k])
    return best, best_r


def key(feat: Features, /) -> tuple[str, float]:
    """The key heard (``"A minor"``, mir_eval's spelling) and the profile correlation.

    The chroma is ``librosa.feature.chroma_stft(S=power, tuning=0)``'s: librosa's chroma
    filter bank (cached) times the power spectrogram, each frame scaled to its largest
    bin (``librosa.util.normalize``, the infinity norm), summed over the clip."""
    import librosa

    if not np.any(feat.power > 0):
        return "X", 0.0
    chroma = librosa.util.normalize(_chroma_basis(feat.sr) @ feat.power, norm=np.inf, axis=0)
    return key_from_chroma(chroma.sum(axis=1))


def loudness(audio: Any, /, *, sr: int) -> float:
    """Integrated loudness in LUFS (:func:`songlab.audio.integrated_loudness`); nan for a
    clip shorter than one 400 ms block, -inf for silence."""
    arr = as_channels(audio)
    if arr.shape[1] <= BLOCK_SECONDS * _check_sr(sr):
        return float("nan")
    return integrated_loudness(arr, sr=sr)


@dataclass(frozen=True, slots=True)
class Levels:
    """Integrated loudness (LUFS), true peak (dBTP) and clipped samples of one clip."""

    loudness_lufs: float
    true_peak_dbtp: float
    clipped_samples: int


def levels(audio: Any, /, *, sr: int) -> Levels:
    """:func:`loudness`, :func:`true_peak` and :func:`clipped_samples` of a clip at its own
    rate, from one check of the samples and one pass of their magnitudes."""
    arr = as_channels(audio)
    sr = _check_sr(sr)
    mag = np.abs(arr)
    lufs = float("nan") if arr.shape[1] <= BLOCK_SECONDS * sr else integrated_loudness(arr, sr=sr)
    return Levels(lufs, _true_peak(arr, mag), _clipped(mag))


def true_peak(audio: Any, /, *, sr: int, block: int = TP_BLOCK) -> float:
    """True peak in dBTP (ITU-R BS.1770-4 Annex 2): the largest magnitude of the signal
    upsampled 4x by the Annex's 48-tap polyphase interpolation filter; never below the
    sample peak. -inf for silence. (The Annex tabulates the filter for 48 kHz; it is
    applied unchanged at 44.1 kHz, as libebur128 does.)

    Exact, without upsampling the whole clip: an output of phase ``k`` is a sum of 12
    input samples weighted by that phase's taps, so it is at most ``sum |taps|`` (2.02 for
    the widest phase) times the largest of those samples. The clip is cut into ``block``
    samples; a block whose inputs are too quiet to beat the peak found so far (the sample
    peak to start with) cannot hold the true peak and is skipped, and the others are
    interpolated, loudest first, until none is left that could beat it (typically 3-15 %
    of a song is interpolated)."""
    arr = as_channels(audio)
    _check_sr(sr)
    if isinstance(block, bool) or not isinstance(block, int) or block < _TP_TAPS:
        raise AudioError("block", f"must be a whole number of samples >= {_TP_TAPS}; got {block!r}")
    return _true_peak(arr, np.abs(arr), block)


def _true_peak(arr: NDArray[np.float32], mag: NDArray[np.float32], block: int = TP_BLOCK) -> float:
    """:func:`true_peak` of a checked ``(channels, samples)`` array and its magnitudes."""
    from numpy.lib.stride_tricks import sliding_window_view

    peak = float(mag.max())
    if peak == 0.0:
        return float("-inf")
    channels, n = arr.shape
    blocks = -(-(n + _TP_TAPS - 1) // block)  # outputs 0 .. n + 10 (the filter's tail)
    full = n // block
    loudest = np.zeros((channels, blocks), dtype=np.float32)
    loudest[:, :full] = mag[:, : full * block].reshape(channels, full, block).max(axis=2)
    if full * block < n:
        loudest[:, full] = mag[:, full * block :].max(axis=1)
    # outputs of block b read inputs of blocks b - 1 and b (11 samples back)
    reach = loudest.copy()
    reach[:, 1:] = np.maximum(loudest[:, 1:], loudest[:, :-1])
    ch, at = np.nonzero(reach * _TP_GAIN > peak)
    if ch.size == 0:
        return float(20.0 * np.log10(peak))
    order = np.argsort(-reach[ch, at], kind="stable")
    ch, at = ch[order], at[order]
    xp = np.zeros((channels, _TP_TAPS - 1 + blocks * block), dtype=np.float32)
    xp[:, _TP_TAPS - 1 : _TP_TAPS - 1 + n] = arr
    windows = sliding_window_view(xp, _TP_TAPS, axis=1)  # windows[c, i] = x[c, i-11 .. i]
    offsets = np.arange(block)
    for first in range(0, ch.size, _TP_CHUNK):
        if reach[ch[first], at[first]] * _TP_GAIN <= peak:
            break  # this block and every later one are too quiet to beat the peak
        c, b = ch[first : first + _TP_CHUNK], at[first : first + _TP_CHUNK]
        pos = b[:, np.newaxis] * block + offsets
        out = windows[c[:, np.newaxis], pos].astype(np.float64) @ _TP_MATRIX  # (., block, 4)
        peak = max(peak, float(np.abs(out).max()))
    return float(20.0 * np.log10(peak))


# ITU-R BS.1770-4 Annex 2: the 48-tap, 4-phase interpolating FIR (phases interleaved)
_TP_PHASES: Final = (
    (
        0.0017089843750,
        0.0109863281250,
        -0.0196533203125,
        0.0332031250000,
        -0.0594482421875,
        0.1373291015625,
        0.9721679687500,
        -0.1022949218750,
        0.0476074218750,
        -0.0266113281250,
        0.0148925781250,
        -0.0083007812500,
    ),
    (
        -0.0291748046875,
        0.0292968750000,
        -0.0517578125000,
        0.0891113281250,
        -0.1665039062500,
        0.4650878906250,
        0.7797851562500,
        -0.2003173828125,
        0.1015625000000,
        -0.0582275390625,
        0.0330810546875,
        -0.0189208984375,
    ),
    (
        -0.0189208984375,
        0.0330810546875,
        -0.0582275390625,
        0.1015625000000,
        -0.2003173828125,
        0.7797851562500,
        0.4650878906250,
        -0.1665039062500,
        0.0891113281250,
        -0.0517578125000,
        0.0292968750000,
        -0.0291748046875,
    ),
    (
        -0.0083007812500,
        0.0148925781250,
        -0.0266113281250,
        0.0476074218750,
        -0.1022949218750,
        0.9721679687500,
        0.1373291015625,
        -0.0594482421875,
        0.0332031250000,
        -0.0196533203125,
        0.0109863281250,
        0.0017089843750,
    ),
)
_TP_FILTER: Final = np.asarray(_TP_PHASES, dtype=np.float32).T.reshape(-1)  # upfirdn's layout
_TP_TAPS: Final = len(_TP_PHASES[0])  # 12 input samples per output
# column k holds phase k's taps, last tap first, so that a window x[i-11 .. i] times the
# matrix gives the four outputs between input samples i and i + 1
_TP_MATRIX: Final = np.asarray(_TP_PHASES, dtype=np.float64)[:, ::-1].T.copy()
_TP_GAIN: Final = float(np.abs(_TP_MATRIX).sum(axis=0).max())  # the widest phase's sum |taps|
_TP_CHUNK: Final = 64  # blocks interpolated at once


def clipped_samples(audio: Any, /) -> int:
    """Samples at full scale (|x| >= 0.999) in runs of at least three in one channel: what
    a clipping stage leaves (a lone full-scale sample is a peak, not a clip)."""
    arr = as_channels(audio)
    return _clipped(np.abs(arr))


def _clipped(mag: NDArray[np.float32]) -> int:
    if not mag.max() >= CLIP_LEVEL:
        return 0
    hot = mag >= CLIP_LEVEL
    total = 0
    for row in hot:
        if not row.any():
            continue
        edges = np.diff(np.concatenate(([0], row.view(np.int8), [0])))
        starts, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
        runs = ends - starts
        total += int(runs[runs >= CLIP_RUN].sum())
    return total


def pitch_contour(audio: Any, /, *, sr: int) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """``(times_s, f0_hz)`` of a monophonic recording (a hum, a sung line) by probabilistic
    YIN (``librosa.pyin``, C2-C6, 11.6 ms frames); unvoiced frames are 0 Hz."""
    import librosa

    mono = _mono_at(audio, _check_sr(sr))
    if mono.size < 2048:
        raise AudioError("audio", "is too short to follow a melody")
    f0, voiced, _ = librosa.pyin(
        mono,
        fmin=MELODY_FMIN,
        fmax=MELODY_FMAX,
        sr=ANALYSIS_SR,
        frame_length=2048,
        hop_length=MELODY_HOP,
    )
    f0 = np.where(voiced & np.isfinite(f0), f0, 0.0)
    times = librosa.times_like(f0, sr=ANALYSIS_SR, hop_length=MELODY_HOP)
    return np.asarray(times, dtype=np.float64), np.asarray(f0, dtype=np.float64)


def melody_contour(audio: Any, /, *, sr: int) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """``(times_s, f0_hz)`` of the predominant pitch of a polyphonic mix: per 11.6 ms frame
    the constant-Q bin (a third of a semitone, F3-C6: above the bass, see
    :data:`MELODY_SEARCH_FMIN`) with the largest harmonic sum over five harmonics
    (``librosa.salience`` on ``librosa.cqt`` from C2), smoothed by a 5-frame median.
    Every frame with energy is voiced (no voicing detection): melody adherence is scored
    on the asked melody's voiced frames only."""
    return melody_from_mono(_mono_at(audio, _check_sr(sr)))


def melody_from_mono(mono: Any, /) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """:func:`melody_contour` of a mono mix already at :data:`ANALYSIS_SR` (the one
    :func:`features` made: the clip is resampled once for every measure)."""
    import librosa
    from scipy.ndimage import median_filter

    mono = np.ascontiguousarray(mono, dtype=np.float32)
    if mono.ndim != 1 or mono.size < 2048:
        raise AudioError("audio", "is too short to follow a melody")
    n_octaves = np.log2(MELODY_FMAX * 5 / MELODY_FMIN)
    n_bins = int(np.ceil(n_octaves * BINS_PER_OCTAVE))
    freqs = librosa.cqt_frequencies(n_bins, fmin=MELODY_FMIN, bins_per_octave=BINS_PER_OCTAVE)
    C = np.abs(
        librosa.cqt(
            mono,
            sr=ANALYSIS_SR,
            hop_length=MELODY_HOP,
            fmin=MELODY_FMIN,
            n_bins=n_bins,
            bins_per_octave=BINS_PER_OCTAVE,
        )
    )
    sal = librosa.salience(
        C,
        freqs=freqs,
        harmonics=[1, 2, 3, 4, 5],
        weights=[1.0, 0.8, 0.6, 0.4, 0.3],
        fill_value=0.0,
    )
    keep = (freqs >= MELODY_SEARCH_FMIN) & (freqs <= MELODY_FMAX)
    sal = np.nan_to_num(sal[keep], nan=0.0)
    best = np.argmax(sal, axis=0)
    f0 = freqs[keep][best]
    energy = sal.max(axis=0)
    f0 = np.where(energy > 1e-3 * max(float(energy.max()), 1e-12), f0, 0.0)
    midi = np.where(f0 > 0, 69 + 12 * np.log2(np.maximum(f0, 1e-9) / 440.0), 0.0)
    midi = median_filter(midi, size=5, mode="nearest")
    f0 = np.where(midi > 0, 440.0 * 2.0 ** ((midi - 69) / 12.0), 0.0)
    times = librosa.times_like(f0, sr=ANALYSIS_SR, hop_length=MELODY_HOP)
    return np.asarray(times, dtype=np.float64), np.asarray(f0, dtype=np.float64)


def midi_contour(data: bytes, /) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """``(times_s, f0_hz)`` of a MIDI file's top line (the highest sounding note of every
    channel but the drums' 10th, tempo map applied by mido) on the melody frame grid."""
    import io

    import mido

    try:
        mid = mido.MidiFile(file=io.BytesIO(data))
    except Exception as exc:  # noqa: BLE001 - mido raises many types on bad files
        raise AudioError("midi", f"is not a readable MIDI file ({type(exc).__name__})") from None
    notes: list[tuple[float, float, int]] = []
    on: dict[tuple[int, int], float] = {}
    now = 0.0
    for msg in mid:  # iterating a MidiFile yields times in seconds (the tempo map applied)
        now += float(msg.time)
        if msg.type not in ("note_on", "note_off") or msg.channel == 9:
            continue
        k = (msg.channel, msg.note)
        if msg.type == "note_on" and msg.velocity > 0:
            on.setdefault(k, now)
        elif k in on:
            notes.append((on.pop(k), now, msg.note))
    if not notes:
        raise AudioError("midi", "has no pitched notes")
    step = MELODY_HOP / ANALYSIS_SR
    end = max(n[1] for n in notes)
    times = np.arange(int(np.ceil(end / step)) + 1) * step
    top = np.zeros(times.size)
    for start, stop, pitch in notes:
        a, b = int(np.ceil(start / step)), int(np.floor(stop / step))
        top[a : b + 1] = np.maximum(top[a : b + 1], pitch)
    f0 = np.where(top > 0, 440.0 * 2.0 ** ((top - 69) / 12.0), 0.0)
    return times.astype(np.float64), f0.astype(np.float64)
