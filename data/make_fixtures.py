"""Make the small committed audio fixtures of data/ (run: python data/make_fixtures.py).

Independent of the engine's own singer, so voice-clone tests are not circular:
a classic cascade formant synthesiser (Klatt 1980 style: an impulse-train
glottal source through a glottal low-pass and three second-order resonators
per vowel) speaks a short vowel sequence with a falling-rising intonation.

- voice_male.mp3    ~5 s, f0 ~ 95-150 Hz, adult-male formants
- voice_female.mp3  ~5 s, f0 ~ 190-300 Hz, formants x1.17
- hum.mp3           ~4 s, a hummed melody (MIDI 57 60 62 64 62 60 59 57, 0.45 s each)
- melody.mid        8 bars at 120 BPM: a piano melody (C major) and a bass line
"""

from __future__ import annotations

import io
from pathlib import Path

import mido
import numpy as np
import soundfile as sf
from scipy.signal import lfilter

SR = 44100
HERE = Path(__file__).parent
VOWELS = {
    "a": (730, 1090, 2440),
    "e": (530, 1840, 2480),
    "i": (300, 2250, 3000),
    "o": (570, 840, 2410),
    "u": (320, 900, 2240),
    "m": (280, 1100, 2300),
}
HUM_NOTES = (57, 60, 62, 64, 62, 60, 59, 57)
MELODY = [
    (0, 1, 60),
    (1, 1, 64),
    (2, 1, 67),
    (3, 1, 64),
    (4, 2, 65),
    (6, 2, 62),
    (8, 1, 64),
    (9, 1, 67),
    (10, 1, 72),
    (11, 1, 67),
    (12, 2, 69),
    (14, 2, 67),
    (16, 1, 65),
    (17, 1, 64),
    (18, 1, 62),
    (19, 1, 60),
    (20, 4, 60),
]
BASS = [(4 * i, 4, p) for i, p in enumerate((36, 41, 43, 36, 36, 41, 43, 36))]


def resonator(x: np.ndarray, f: float, bw: float) -> np.ndarray:
    """Second-order digital resonator (Klatt 1980, eq. 1), unity gain at DC."""
    c = -np.exp(-2 * np.pi * bw / SR)
    b = 2 * np.exp(-np.pi * bw / SR) * np.cos(2 * np.pi * f / SR)
    a = 1 - b - c
    return lfilter([a], [1, -b, -c], x)


def speak(f0: np.ndarray, vowels: str, scale: float) -> np.ndarray:
    """Formant-synthesised voice following the per-sample ``f0`` through ``vowels``."""
    n = len(f0)
    phase = np.cumsum(f0 / SR)
    pulses = np.diff(np.floor(phase), prepend=0.0)  # one impulse per glottal period
    src = lfilter([1.0], [1, -0.97], pulses)  # glottal roll-off
    src = lfilter([1.0], [1, -0.9], src)
    src += 0.002 * np.random.default_rng(0).standard_normal(n)
    seg = n // len(vowels)
    out = np.zeros(n)
    for i, v in enumerate(vowels):
        a, b = max(0, i * seg - 800), min(n, (i + 1) * seg + 800)
        y = src[a:b]
        for f, bw in zip(VOWELS[v], (80, 100, 150), strict=True):
            y = resonator(y, f * scale, bw * scale)
        w = np.ones(b - a)
        ramp = np.linspace(0, 1, min(1600, b - a))
        if a > 0:
            w[: len(ramp)] = ramp
        if b < n:
            w[-len(ramp) :] = ramp[::-1]
        out[a:b] += y * w
    env = np.minimum(1, np.minimum(np.arange(n), n - np.arange(n)) / (0.05 * SR))
    out *= env
    return (0.5 * out / np.abs(out).max()).astype(np.float32)


def voice(lo: float, hi: float, scale: float, seconds: float = 5.0) -> np.ndarray:
    t = np.arange(int(seconds * SR)) / SR
    # intonation: two phrases, each rising then falling between lo and hi
    contour = 0.5 - 0.5 * np.cos(2 * np.pi * t / (seconds / 2))
    f0 = lo * (hi / lo) ** contour
    return speak(f0, "aeiouaeio", scale)


def hum() -> np.ndarray:
    per = 0.45
    f0 = np.concatenate([np.full(int(per * SR), 440 * 2 ** ((m - 69) / 12)) for m in HUM_NOTES])
    f0 = lfilter([0.02], [1, -0.98], f0, zi=[f0[0] * 0.98])[0]  # gentle glides
    x = speak(f0, "m" * len(HUM_NOTES), 1.1)
    gate = np.ones(len(f0))
    for i in range(1, len(HUM_NOTES)):  # short breaks between the notes
        s = int(i * per * SR)
        gate[s - 900 : s + 300] = 0.15
    return (x * lfilter([0.05], [1, -0.95], gate)).astype(np.float32)


def midi_file() -> bytes:
    mf = mido.MidiFile(type=1, ticks_per_beat=480)
    meta = mido.MidiTrack([mido.MetaMessage("set_tempo", tempo=mido.bpm2tempo(120), time=0)])
    mf.tracks.append(meta)
    for channel, program, notes in ((0, 0, MELODY), (1, 33, BASS)):
        tr = mido.MidiTrack(
            [mido.Message("program_change", channel=channel, program=program, time=0)]
        )
        events = sorted(
            [(b * 480, 1, p) for b, _, p in notes]
            + [((b + d) * 480 - 10, 0, p) for b, d, p in notes],
            key=lambda e: (e[0], e[1]),
        )
        now = 0
        for tick, on, p in events:
            tr.append(
                mido.Message(
                    "note_on" if on else "note_off",
                    channel=channel,
                    note=p,
                    velocity=90 if on else 0,
                    time=tick - now,
                )
            )
            now = tick
        mf.tracks.append(tr)
    buf = io.BytesIO()
    mf.save(file=buf)
    return buf.getvalue()


def mp3(x: np.ndarray) -> bytes:
    buf = io.BytesIO()
    sf.write(buf, x, SR, format="MP3", bitrate_mode="VARIABLE", compression_level=0.7)
    return buf.getvalue()


def main() -> None:
    files = {
        "voice_male.mp3": mp3(voice(95, 150, 1.0)),
        "voice_female.mp3": mp3(voice(190, 300, 1.17)),
        "hum.mp3": mp3(hum()),
        "melody.mid": midi_file(),
    }
    for name, data in files.items():
        (HERE / name).write_bytes(data)
        print(f"{name}: {len(data)} bytes")


if __name__ == "__main__":
    main()
