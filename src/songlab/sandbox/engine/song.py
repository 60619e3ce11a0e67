"""A score (plan + lyrics + voice + fixed notes) rendered into fine-grained mono stems.

A *score* is a JSON-able dict, the unit a recipe stores::

    {"plan": Plan dict, "model", "seed", "duration_s", "lyrics", "language",
     "voice": voice dict or None, "melody": [[onset, dur, midi]] or None,
     "midi": [[onset, dur, pitch, vel, program, channel]] or None,
     "parts": ["drums", "bass", "harmony", "lead", "vocal"], "vocal_start_s"}

:func:`render` turns any time range of a score into the stems of
:data:`FINE_STEMS`; :func:`sung_lines` lays the lyrics out on the melody
(the same layout serves the renderer and transcription).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

import songlab.sandbox.engine.arrange as arrange
import songlab.sandbox.engine.synth as synth
from songlab.sandbox.engine._types import MelodyNote, MidiNote, Score, VoiceDict
from songlab.sandbox.engine.prompt import Plan
from songlab.sandbox.engine.text import consonant_of, line_syllables, vowel_of
from songlab.sandbox.engine.theory import SCALES, hz_to_midi
from songlab.sandbox.engine.voice import DEFAULT_VOICES, SungNote, sing

SR = synth.SR
FINE_STEMS = (
    "lead_vocals",
    "backing_vocals",
    "kick",
    "snare",
    "hihat",
    "perc",
    "bass",
    "guitar",
    "piano",
    "synth",
    "strings",
    "other",
)
ALL_PARTS = ("drums", "bass", "harmony", "lead", "vocal")
# mix balance (linear gain per stem before the score's loudness gain)
LEVELS = {
    "lead_vocals": 1.6,
    "backing_vocals": 0.5,
    "kick": 0.5,
    "snare": 0.32,
    "hihat": 0.14,
    "perc": 0.12,
    "bass": 0.14,
    "guitar": 0.08,
    "piano": 0.1,
    "synth": 0.06,
    "strings": 0.08,
    "other": 0.1,
    "lead": 0.17,
}
_GM_DRUMS = {
    35: "kick",
    36: "kick",
    38: "snare",
    40: "snare",
    37: "clap",
    39: "clap",
    42: "hihat",
    44: "hihat",
    46: "openhat",
    49: "crash",
    57: "crash",
    41: "tom",
    43: "tom",
    45: "tom",
    47: "tom",
    48: "tom",
    50: "tom",
    70: "shaker",
    82: "shaker",
}


def new_score(
    plan: Plan,
    *,
    model: str,
    seed: int,
    duration_s: float,
    lyrics: str = "",
    language: str = "en",
    voice: VoiceDict | None = None,
    melody: list[MelodyNote] | None = None,
    midi: list[MidiNote] | None = None,
    parts: tuple[str, ...] = ALL_PARTS,
    vocal_start_s: float | None = None,
) -> Score:
    if voice is None and "vocal" in parts:
        rng = np.random.default_rng([seed, 5])
        gender = plan.gender or ("female" if rng.random() < 0.5 else "male")
        voice = DEFAULT_VOICES[gender].copy()
    if vocal_start_s is None:
        vocal_start_s = 2 * arrange.bar_len(plan) if (melody is None and midi is None) else 0.0
    return {
        "plan": plan.to_dict(),
        "model": model,
        "seed": int(seed),
        "duration_s": float(duration_s),
        "lyrics": lyrics or "",
        "language": language,
        "voice": None if voice is None else {**voice, "formants": list(voice["formants"])},
        "melody": melody,
        "midi": midi,
        "parts": list(parts),
        "vocal_start_s": float(vocal_start_s),
    }


def plan_of(score: Score) -> Plan:
    return Plan.from_dict(score["plan"])


@dataclass(frozen=True, slots=True)
class Line:
    start: float
    end: float
    text: str
    chorus: bool
    notes: tuple[SungNote, ...]


def _voice_range(voice: VoiceDict) -> tuple[float, float, float]:
    lo = float(hz_to_midi(voice["f0_low"])) + 0.5
    hi = float(hz_to_midi(voice["f0_high"])) - 0.5
    c = float(hz_to_midi(voice["f0_median"]))
    if hi - lo < 5:
        lo, hi = c - 2.5, c + 2.5
    return lo, hi, float(np.clip(c, lo, hi))


def _fit(midi: float, lo: float, hi: float) -> float:
    while midi > hi and midi - 12 >= lo - 0.01:
        midi -= 12
    while midi < lo and midi + 12 <= hi + 0.01:
        midi += 12
    return float(np.clip(midi, lo, hi))


def _sections(lyrics: str) -> list[tuple[str, bool]]:
    out, chorus = [], False
    for raw in lyrics.splitlines():
        s = raw.strip()
        if not s:
            continue
        if s.startswith("[") and s.endswith("]"):
            chorus = "chorus" in s.lower() or "hook" in s.lower()
            continue
        if s.startswith("(") and s.endswith(")"):
            continue
        out.append((s, chorus))
    return out


def sung_lines(score: Score) -> list[Line]:
    """The lyric lines as sung: times in score seconds, one SungNote per syllable."""
    voice, midi = score.get("voice"), score.get("midi")
    if "vocal" not in score["parts"] or voice is None:
        return []
    plan, lang = plan_of(score), score.get("language", "en")
    lo, hi, center = _voice_range(voice)
    lines = _sections(score["lyrics"])
    fixed = score.get("melody")
    if fixed is None and midi:
        fixed = skyline(midi)
    out: list[Line] = []
    if fixed:
        shift = 12 * round((center - float(np.median([m for _, _, m in fixed]))) / 12)
        notes = [(o, d, _fit(m + shift, lo, hi)) for o, d, m in fixed]
        sylls = [
            (s, ln, ch) for ln, (text, ch) in enumerate(lines) for s in line_syllables(text, lang)
        ]
        if not sylls:
            sylls = [("oh", 0, False)] * len(notes)
            lines = [("", False)]
        by_line: dict[int, list[SungNote]] = {}
        for (o, d, m), (syl, ln, _) in zip(notes, sylls, strict=False):
            by_line.setdefault(ln, []).append(SungNote(o, d, m, vowel_of(syl), consonant_of(syl)))
        for ln, ns in sorted(by_line.items()):
            out.append(
                Line(ns[0].onset, ns[-1].onset + ns[-1].dur, lines[ln][0], lines[ln][1], tuple(ns))
            )
        return out
    bl = arrange.bar_len(plan)
    bar = int(round(score["vocal_start_s"] / bl))
    if not lines:
        lines = [("oh", False)] * 4
    for i, (text, chorus) in enumerate(lines):
        syllables = line_syllables(text, lang) or ["oh"]
        n_bars = 2 if len(syllables) <= 14 else 4
        mel = arrange.melody_line(
            plan,
            bar,
            len(syllables),
            n_bars,
            score["seed"],
            low=lo,
            high=hi,
            center=center,
            lift=2 if chorus else 0,
        )
        sung = tuple(
            SungNote(o, d, m, vowel_of(s), consonant_of(s))
            for (o, d, m), s in zip(mel, syllables, strict=True)
        )
        out.append(Line(sung[0].onset, sung[-1].onset + sung[-1].dur, text, chorus, sung))
        bar += n_bars + (2 if i % 4 == 3 else 0)
    return out


def skyline(midi: list[MidiNote]) -> list[MelodyNote]:
    """The top melodic line of MIDI notes (no drums): highest note sounding at each onset."""
    tonal = [n for n in midi if n[5] != 9 and not (32 <= n[4] <= 39)]
    out: list[list[float]] = []
    for onset, dur, pitch, *_ in sorted(tonal, key=lambda n: (n[0], -n[2])):
        if out and abs(out[-1][0] - onset) < 0.02:
            continue
        if out and out[-1][0] + out[-1][1] > onset:
            out[-1][1] = max(0.05, onset - out[-1][0])
        out.append([onset, dur, float(pitch)])
    return out


def _family(program: int, channel: int) -> str:
    if channel == 9:
        return "drums"
    if 24 <= program <= 31:
        return "guitar"
    if 32 <= program <= 39:
        return "bass"
    if 40 <= program <= 51:
        return "strings"
    if 80 <= program <= 103:
        return "synth"
    if program <= 7:
        return "piano"
    return "other"


Note = arrange.Note  # (onset s, length s, midi pitch, velocity, instrument)


@dataclass
class _Window:
    """The stems being rendered for score time ``[t0, t1)``: ``n`` samples each, made on
    first use (so silent stems are never made), in the order they are first written."""

    plan: Plan
    model: str
    seed: int
    t0: float
    t1: float
    n: int
    stems: dict[str, np.ndarray] = field(default_factory=dict)

    def buf(self, name: str) -> np.ndarray:
        if name not in self.stems:
            self.stems[name] = np.zeros(self.n, dtype=np.float32)
        return self.stems[name]

    def drum(self, sound: str, onset: float, velocity: float) -> None:
        stem = self.buf(arrange.DRUM_STEM[sound])
        place_drum(stem, sound, self.model, self.seed, onset - self.t0, velocity)

    def drum_pattern(self, bars: range) -> None:
        for onset, sound, v in arrange.drums(self.plan, bars, self.seed):
            self.drum(sound, onset, v)


def _midi_events(w: _Window, midi: list[MidiNote], parts: set[str], bars: range) -> list[Note]:
    """A MIDI score: its drum notes placed, its other notes as events; the plan's drums when
    the file has none."""
    events: list[Note] = []
    for onset, dur, pitch, vel, prog, ch in midi:
        if onset + dur + 2.5 < w.t0 or onset > w.t1:
            continue
        fam = _family(int(prog), int(ch))
        if fam == "drums":
            w.drum(_GM_DRUMS.get(int(pitch), "shaker"), onset, vel / 127)
        else:
            inst = "bass" if fam == "bass" else fam
            events.append((onset, dur, pitch, 0.4 + vel / 200, inst))
    if not any(nt[5] == 9 for nt in midi) and "drums" in parts:
        w.drum_pattern(bars)
    return events


def _arranged_events(w: _Window, parts: set[str], bars: range) -> list[Note]:
    """An arranged score: its drums placed; its bass and harmony as events."""
    if "drums" in parts:
        w.drum_pattern(bars)
    events: list[Note] = []
    if "bass" in parts:
        events += arrange.bass(w.plan, bars, w.seed)
    if "harmony" in parts:
        events += arrange.harmony(w.plan, bars, w.seed)
    return events


def _place(w: _Window, events: list[Note]) -> None:
    for onset, dur, pitch, vel, inst in events:
        if onset + dur + 1.0 < w.t0 or onset > w.t1:
            continue
        stem = "other" if inst == "lead" else inst
        synth.place(
            w.buf(stem),
            synth.tone(inst, w.model, pitch, dur, vel),
            int(round((onset - w.t0) * SR)),
            LEVELS[inst],
        )


def _backing_lines(voice: VoiceDict, plan: Plan, lines: list[Line]) -> list[list[SungNote]]:
    """The chorus lines a third above, inside the voice's range (the backing vocals)."""
    lo, hi, _ = _voice_range(voice)
    return [
        [
            SungNote(
                nt.onset,
                nt.dur,
                _fit(_third_above(plan, nt.midi), lo, hi),
                "u" if nt.vowel in "ou" else "a",
                "",
            )
            for nt in ln.notes
        ]
        for ln in lines
        if ln.chorus
    ]


def _vocals(w: _Window, score: Score, voice: VoiceDict) -> None:
    lines = [ln for ln in sung_lines(score) if ln.end > w.t0 - 0.5 and ln.start < w.t1 + 0.5]
    if lines:
        vocal = sing([list(ln.notes) for ln in lines], voice, w.model, w.n, w.seed, w.t0)
        w.buf("lead_vocals")[:] += LEVELS["lead_vocals"] * vocal
    backing = _backing_lines(voice, w.plan, lines)
    if backing:
        w.buf("backing_vocals")[:] += LEVELS["backing_vocals"] * sing(
            backing, voice, w.model, w.n, w.seed + 1, w.t0
        )


def render(score: Score, t0: float, t1: float) -> dict[str, np.ndarray]:
    """Mono float32 stems (only the non-silent ones) for score time ``[t0, t1)``."""
    plan = plan_of(score)
    n = max(0, int(round((t1 - t0) * SR)))
    w = _Window(plan, score["model"], int(score["seed"]), t0, t1, n)
    parts = set(score["parts"])
    bl = arrange.bar_len(plan)
    bars = range(int(np.floor((t0 - 2.5) / bl)), int(np.ceil(t1 / bl)) + 1)
    midi = score.get("midi")
    events = _midi_events(w, midi, parts, bars) if midi else _arranged_events(w, parts, bars)
    voice = score.get("voice") if "vocal" in parts else None
    if "lead" in parts and voice is None:
        events += lead_events(score, plan, bars)
    _place(w, events)
    if voice is not None:
        _vocals(w, score, voice)
    return w.stems


def _third_above(plan: Plan, midi: float) -> float:
    """The scale tone a third above ``midi`` (a backing-vocal harmony)."""
    scale = SCALES[plan.mode]
    for d in (3, 4, 5, 2):
        if (round(midi) + d - plan.root) % 12 in scale:
            return float(midi + d)
    return midi + 4


def place_drum(
    dst: np.ndarray, sound: str, model: str, seed: int, onset: float, vel: float
) -> None:
    synth.place(
        dst,
        synth.drum(sound, model, seed % 1000),
        int(round(onset * SR)),
        vel * LEVELS[arrange.DRUM_STEM[sound]],
    )


def lead_events(score: Score, plan: Plan, bars: range) -> list[Note]:
    """The lead instrument: the fixed melody, else a generated phrase every four bars."""
    fixed = score.get("melody")
    if fixed:
        return [(o, d, m, 0.8, "lead") for o, d, m in fixed]
    if score.get("midi"):
        return []
    out: list[Note] = []
    center = 12 * 5 + plan.root + 7
    for b in bars:
        if b % 4 == 0 and b >= 2:
            rng = np.random.default_rng([score["seed"], 41, b])
            for o, d, m in arrange.melody_line(
                plan,
                b,
                int(rng.integers(6, 12)),
                4,
                score["seed"],
                low=center - 7,
                high=center + 9,
                center=center,
            ):
                out.append((o, d, m, 0.75, "lead"))
    return out
