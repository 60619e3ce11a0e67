"""Arrangement: the notes each instrument plays, bar by bar, from a plan.

Everything is computed per bar from ``(seed, bar index)``, so a bar sounds the
same whichever range of the song is rendered (extensions continue seamlessly).
Events are plain tuples: tonal ``(onset_s, dur_s, midi, velocity, instrument)``
and drums ``(onset_s, sound, velocity)``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from songlab.sandbox.engine._types import MelodyNote
from songlab.sandbox.engine.prompt import Plan
from songlab.sandbox.engine.theory import SCALES, chord

# drum style -> {sound: [(sixteenth step, velocity), ...]}
DRUM_PATTERNS = {
    "pop": {
        "kick": [(0, 1.0), (8, 0.95), (10, 0.6)],
        "snare": [(4, 0.9), (12, 0.9)],
        "hihat": [(s, 0.55 if s % 4 else 0.7) for s in range(0, 16, 2)],
        "shaker": [],
    },
    "rock": {
        "kick": [(0, 1.0), (6, 0.8), (8, 1.0)],
        "snare": [(4, 1.0), (12, 1.0)],
        "hihat": [(s, 0.75) for s in range(0, 16, 2)],
        "shaker": [],
    },
    "four": {
        "kick": [(0, 1.0), (4, 1.0), (8, 1.0), (12, 1.0)],
        "clap": [(4, 0.8), (12, 0.8)],
        "openhat": [(2, 0.5), (6, 0.5), (10, 0.5), (14, 0.5)],
        "shaker": [(s, 0.3) for s in range(16)],
    },
    "hiphop": {
        "kick": [(0, 1.0), (7, 0.8), (10, 0.9)],
        "snare": [(4, 0.95), (12, 0.95)],
        "hihat": [(s, 0.45 + 0.2 * (s % 4 == 0)) for s in range(16)],
        "shaker": [],
    },
    "soft": {
        "kick": [(0, 0.7), (8, 0.55)],
        "snare": [(12, 0.45)],
        "hihat": [(s, 0.35) for s in range(0, 16, 4)],
        "shaker": [(s, 0.25) for s in range(2, 16, 4)],
    },
    "swing": {
        "kick": [(0, 0.55), (8, 0.45)],
        "snare": [(12, 0.35)],
        "hihat": [(0, 0.5), (4, 0.55), (6, 0.4), (8, 0.5), (12, 0.55), (14, 0.4)],
        "shaker": [],
    },
}
# sound -> fine stem
DRUM_STEM = {
    "kick": "kick",
    "snare": "snare",
    "clap": "perc",
    "hihat": "hihat",
    "openhat": "hihat",
    "shaker": "perc",
    "crash": "perc",
    "tom": "perc",
}


def bar_len(plan: Plan) -> float:
    return 4 * 60.0 / plan.tempo


def step_time(plan: Plan, bar: int, step: float) -> float:
    """Onset of sixteenth ``step`` of ``bar`` in seconds (swing delays off-beat eighths)."""
    six = 60.0 / plan.tempo / 4
    swing = plan.swing * 2 * six if (int(step) % 4 == 2) else 0.0
    return bar * bar_len(plan) + step * six + swing


def chord_degree(plan: Plan, bar: int) -> int:
    prog = plan.progression or [0]
    return prog[bar % len(prog)]


# Below this tempo an even eighth-note layer is heard as the beat (a 70 BPM ballad heard at
# 140): off-beat eighths of the cymbals and shaker drop to OFFBEAT_SLOW of their level, the
# ballad piano arpeggiates in quarters and the soft kit's snare marks beats 2 and 4.
SLOW_BPM = 90.0
# a note of an arrangement: (onset s, length s, midi pitch, velocity, instrument)
Note = tuple[float, float, float, float, str]
OFFBEAT_SLOW = 0.3


def chord_of(plan: Plan, degree: int, *, octave: int = 4, seventh: bool = False) -> list[int]:
    """The chord of ``degree`` in the plan's key (with the plan's leading tone)."""
    return chord(
        plan.root, plan.mode, degree, leading_tone=plan.leading_tone, octave=octave, seventh=seventh
    )


def drums(plan: Plan, bars: range, seed: int) -> list[tuple[float, str, float]]:
    if not plan.drums or plan.drum_style == "none":
        return []
    pat = DRUM_PATTERNS.get(plan.drum_style, DRUM_PATTERNS["pop"])
    slow = plan.tempo < SLOW_BPM
    if slow and plan.drum_style == "soft":
        pat = {**pat, "snare": [(4, 0.4), (12, 0.45)]}
    out = []
    amp = 0.55 + 0.45 * plan.energy
    for b in bars:
        rng = np.random.default_rng([seed, 11, b % 100000 + 100000])
        fill = b % 8 == 7
        for sound, hits in pat.items():
            for step, vel in hits:
                if fill and step >= 12 and sound in ("snare", "hihat"):
                    continue
                v = vel * amp * (0.9 + 0.1 * rng.random())
                if slow and step % 4 and sound in ("hihat", "openhat", "shaker"):
                    v *= OFFBEAT_SLOW
                out.append((step_time(plan, b, step), sound, v))
        if fill:
            for step in (12, 13, 14, 15):
                out.append((step_time(plan, b, step), "tom" if step < 14 else "snare", 0.7 * amp))
        if b % 8 == 0:
            out.append((step_time(plan, b, 0), "crash", 0.6 * amp))
    return out


def bass(plan: Plan, bars: range, seed: int) -> list[Note]:
    if not plan.bass:
        return []
    out: list[Note] = []
    six = 60.0 / plan.tempo / 4
    for b in bars:
        deg = chord_degree(plan, b)
        tones = chord_of(plan, deg, octave=1)
        root = tones[0] + (12 if tones[0] < 33 else 0)
        fifth = root + 7
        style = plan.drum_style
        if style in ("pop", "rock"):
            steps = [(s, 2, root) for s in range(0, 16, 2)]
        elif style == "four":
            steps = [(s, 2, root) for s in (2, 6, 10, 14)]
        elif style == "hiphop":
            steps = [(0, 6, root), (7, 3, root), (10, 5, fifth if b % 2 else root)]
        elif style == "swing":
            walk = [root, tones[1] % 12 + root // 12 * 12, fifth, root + 12 - 1]
            steps = [(4 * i, 4, walk[i]) for i in range(4)]
        else:
            steps = [(0, 8, root), (8, 8, fifth)]
        for st, ln, p in steps:
            out.append((step_time(plan, b, st), ln * six * 0.92, p, 0.9, "bass"))
    return out


@dataclass(frozen=True, slots=True)
class _Bar:
    """One bar of one harmony instrument: its plan, index, chord tones, sixteenth (s), rng."""

    plan: Plan
    index: int
    tones: list[int]
    six: float
    rng: np.random.Generator

    def at(self, step: int) -> float:
        return step_time(self.plan, self.index, step)


def _soft_piano(bar: _Bar) -> list[Note]:
    """Arpeggios (quarters when slow, eighths else) over a held bass note."""
    tones, six = bar.tones, bar.six
    arp = tones + [tones[0] + 12, tones[1] + 12]
    notes: list[Note]
    if bar.plan.tempo < SLOW_BPM:  # quarters: the beat, not its eighths
        notes = [(bar.at(4 * i), 4 * six, arp[i % len(arp)], 0.55, "piano") for i in range(4)]
    else:
        notes = [
            (bar.at(2 * i), 4 * six, arp[(i * 2 + (i > 3)) % len(arp)], 0.55, "piano")
            for i in range(8)
        ]
    notes.append((bar.at(0), 16 * six, tones[0] - 12, 0.6, "piano"))
    return notes


def _piano(bar: _Bar) -> list[Note]:
    plan = bar.plan
    if plan.drum_style in ("soft", "none") or plan.genre in ("ballad", "classical"):
        return _soft_piano(bar)
    if plan.genre in _JAZZ:
        return [(bar.at(st), 3 * bar.six, p, 0.5, "piano") for st in (0, 6) for p in bar.tones]
    return [
        (bar.at(st), 3.5 * bar.six, p, 0.45, "piano") for st in (0, 4, 8, 12) for p in bar.tones
    ]


def _guitar(bar: _Bar) -> list[Note]:
    tones = bar.tones
    if bar.plan.genre in ("rock", "metal"):
        voicing = [tones[0], tones[0] + 7, tones[0] + 12]
        strum = [(s, 0.8) for s in range(0, 16, 2)]
    else:
        voicing = tones + [tones[0] + 12, tones[1] + 12]
        strum = [(0, 0.8), (4, 0.6), (6, 0.5), (10, 0.55), (12, 0.6), (14, 0.5)]
    notes: list[Note] = []
    for st, v in strum:
        up = bar.rng.random() < 0.3
        for i, p in enumerate(voicing[::-1] if up else voicing):
            notes.append((bar.at(st) + 0.012 * i, 2 * bar.six, p, v, "guitar"))
    return notes


def _synth(bar: _Bar) -> list[Note]:
    if bar.plan.drum_style == "four":
        return [
            (bar.at(st), 1.5 * bar.six, p + 12, 0.45, "synth")
            for st in (2, 6, 10, 14)
            for p in bar.tones
        ]
    return [(bar.at(i), 0.9 * bar.six, bar.tones[i % 3] + 12, 0.35, "synth") for i in range(16)]


def _strings(bar: _Bar) -> list[Note]:
    return [(bar.at(0), 16 * bar.six, p, 0.45, "strings") for p in bar.tones + [bar.tones[0] + 12]]


def _pads(bar: _Bar) -> list[Note]:
    """Pads, brass: "other"."""
    return [(bar.at(0), 16 * bar.six, p + 12, 0.3, "other") for p in bar.tones]


_JAZZ = ("jazz", "blues", "rnb", "lofi")
_HARMONY_PARTS: dict[str, Callable[[_Bar], list[Note]]] = {
    "piano": _piano,
    "guitar": _guitar,
    "synth": _synth,
    "strings": _strings,
}


def harmony(plan: Plan, bars: range, seed: int) -> list[Note]:
    out: list[Note] = []
    six = 60.0 / plan.tempo / 4
    jazz = plan.genre in _JAZZ
    for b in bars:
        deg = chord_degree(plan, b)
        rng = np.random.default_rng([seed, 23, b % 100000 + 100000])
        for inst in plan.harmony:
            tones = chord_of(
                plan, deg, octave=3 if inst in ("guitar", "strings") else 4, seventh=jazz
            )
            out += _HARMONY_PARTS.get(inst, _pads)(_Bar(plan, b, tones, six, rng))
    return out


def melody_line(
    plan: Plan,
    bar0: int,
    n_notes: int,
    n_bars: int,
    seed: int,
    *,
    low: float,
    high: float,
    center: float,
    lift: int = 0,
) -> list[tuple[float, float, float]]:
    """A singable phrase: ``n_notes`` notes over ``n_bars`` bars starting at ``bar0``.

    Returns ``(onset_s, dur_s, midi)``; pitches are scale tones near ``center``
    inside ``[low, high]``; strong beats land on chord tones.
    """
    rng = np.random.default_rng([seed, 37, bar0 % 100000 + 100000])
    six = 60.0 / plan.tempo / 4
    slots = n_bars * 16 - 4  # end the phrase with a breath
    n_notes = max(1, n_notes)
    unit = max(1, min(4, slots // n_notes))
    if unit >= 2:
        unit = 2 * (unit // 2)
    lens = np.full(n_notes, unit)
    spare = slots - lens.sum()
    if spare > 0:  # lengthen some notes (the last most)
        lens[-1] += min(spare, 6)
        spare -= min(spare, 6)
        for i in rng.permutation(n_notes)[: max(0, spare // 2)]:
            lens[i] += 2
    sc = SCALES[plan.mode]
    lo, hi = int(np.ceil(low)), int(np.floor(high))
    pitches = (
        np.array([p for p in range(lo, hi + 1) if (p - plan.root) % 12 in sc])
        if hi > lo
        else np.array([round(center)])
    )
    if len(pitches) == 0:
        pitches = np.array([round(center)])
    idx = int(np.argmin(np.abs(pitches - center))) + lift
    out = []
    pos = 0
    for i in range(n_notes):
        bar = bar0 + pos // 16
        step = pos % 16
        if step % 4 == 0:
            tones = {p % 12 for p in chord_of(plan, chord_degree(plan, bar))}
            cands = [
                j
                for j in range(max(0, idx - 2), min(len(pitches), idx + 3))
                if pitches[j] % 12 in tones
            ]
            if cands:
                idx = int(rng.choice(cands))
        else:
            idx += int(rng.choice([-2, -1, -1, 0, 1, 1, 2]))
        # pull back towards the centre, stay in range
        if abs(pitches[np.clip(idx, 0, len(pitches) - 1)] - center) > 6:
            idx += -1 if pitches[np.clip(idx, 0, len(pitches) - 1)] > center else 1
        idx = int(np.clip(idx, 0, len(pitches) - 1))
        onset = bar0 * bar_len(plan) + pos * six
        out.append((onset, lens[i] * six * 0.95, float(pitches[idx])))
        pos += int(lens[i])
    return out


def chords_for_melody(plan: Plan, melody: list[MelodyNote], n_bars: int) -> list[int]:
    """Per bar, the diatonic triad that covers the most melody time (a harmonisation)."""
    bl = bar_len(plan)
    prog = []
    prev = 0
    for b in range(n_bars):
        weight = np.zeros(12)
        for onset, dur, midi in melody:
            ov = min(onset + dur, (b + 1) * bl) - max(onset, b * bl)
            if ov > 0:
                weight[int(round(midi)) % 12] += ov
        if weight.sum() == 0:
            prog.append(prev)
            continue
        scores = [
            sum(weight[p % 12] for p in chord_of(plan, d)) + (0.01 if d == 0 else 0)
            for d in range(7)
        ]
        prev = int(np.argmax(scores))
        prog.append(prev)
    return prog
