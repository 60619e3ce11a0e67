"""Read a prompt into a musical plan: genre, mood, tempo, key, mode and instruments.

Words win over defaults: an explicit BPM, key ("in A minor"), mode words
("sad", "happy"), tempo words ("slow", "fast") and instrument words ("piano",
"no drums") override the genre's defaults; what the prompt leaves open is drawn
from a seeded generator, so the same prompt and seed give the same plan.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from songlab.sandbox.engine.theory import PROGRESSIONS, parse_key

# How closely each model follows an explicit "NNN bpm" and key of the prompt (what a prompt
# leaves open is drawn alike for every model). Tempo: the rendered BPM is the asked one times
# (1 + d), |d| drawn uniformly in the range, its sign by a coin. Key: the share of requests
# rendered in the asked key; the rest in the relative key or the key a fifth above, half each.
# v7 also writes the harmonic minor's V in an asked minor key (the cadence that names it).
FOLLOW: dict[str, tuple[tuple[float, float], float]] = {
    "v5": ((0.04, 0.12), 0.5),
    "v6": ((0.01, 0.04), 1.0),
    "v7": ((0.0, 0.0), 1.0),
}
_ASKED_BPM = re.compile(r"(\d{2,3})\s*bpm")

HARMONY = ("piano", "guitar", "synth", "strings", "other")

# genre -> (bpm low, bpm high, preferred mode or None, harmony instruments, drums, drum style)
GENRES: dict[str, tuple[int, int, str | None, tuple[str, ...], bool, str]] = {
    "pop": (100, 124, "major", ("piano", "synth", "guitar"), True, "pop"),
    "rock": (112, 140, None, ("guitar", "other"), True, "rock"),
    "metal": (140, 176, "minor", ("guitar",), True, "rock"),
    "ballad": (62, 76, None, ("piano", "strings"), True, "soft"),
    "jazz": (96, 140, None, ("piano", "other"), True, "swing"),
    "electronic": (120, 130, None, ("synth", "other"), True, "four"),
    "hiphop": (80, 96, "minor", ("piano", "synth"), True, "hiphop"),
    "lofi": (70, 88, None, ("piano", "other"), True, "hiphop"),
    "folk": (90, 118, "major", ("guitar", "strings"), True, "soft"),
    "classical": (66, 100, None, ("strings", "piano"), False, "none"),
    "ambient": (60, 76, None, ("other", "strings"), False, "none"),
    "rnb": (70, 96, None, ("piano", "synth"), True, "hiphop"),
    "funk": (100, 118, None, ("guitar", "synth"), True, "pop"),
    "reggae": (70, 90, "major", ("guitar", "other"), True, "pop"),
    "blues": (70, 100, None, ("guitar", "piano"), True, "swing"),
    "latin": (96, 120, None, ("guitar", "piano"), True, "pop"),
    "cinematic": (70, 100, "minor", ("strings", "other", "piano"), True, "soft"),
}
_GENRE_WORDS = {
    "pop": "pop",
    "rock": "rock",
    "punk": "rock",
    "grunge": "rock",
    "metal": "metal",
    "ballad": "ballad",
    "jazz": "jazz",
    "swing": "jazz",
    "bossa": "latin",
    "latin": "latin",
    "salsa": "latin",
    "electronic": "electronic",
    "edm": "electronic",
    "house": "electronic",
    "techno": "electronic",
    "trance": "electronic",
    "dance": "electronic",
    "disco": "funk",
    "synthwave": "electronic",
    "hip": "hiphop",
    "hiphop": "hiphop",
    "hip-hop": "hiphop",
    "rap": "hiphop",
    "trap": "hiphop",
    "lofi": "lofi",
    "lo-fi": "lofi",
    "chillhop": "lofi",
    "folk": "folk",
    "acoustic": "folk",
    "country": "folk",
    "indie": "folk",
    "classical": "classical",
    "orchestral": "classical",
    "piano solo": "classical",
    "ambient": "ambient",
    "drone": "ambient",
    "meditation": "ambient",
    "rnb": "rnb",
    "r&b": "rnb",
    "soul": "rnb",
    "funk": "funk",
    "reggae": "reggae",
    "blues": "blues",
    "cinematic": "cinematic",
    "epic": "cinematic",
    "soundtrack": "cinematic",
}
_MINOR_WORDS = (
    "sad",
    "melanchol",
    "dark",
    "somber",
    "sombre",
    "gloomy",
    "tragic",
    "lonely",
    "heartbreak",
    "mournful",
    "moody",
    "haunting",
    "minor",
    "grief",
    "tears",
)
_MAJOR_WORDS = (
    "happy",
    "joy",
    "bright",
    "cheer",
    "upbeat",
    "sunny",
    "uplifting",
    "hopeful",
    "triumph",
    "playful",
    "fun",
    "love song",
    "summer",
    "major",
)
_SLOW_WORDS = (
    "slow",
    "calm",
    "chill",
    "relax",
    "peaceful",
    "gentle",
    "sleepy",
    "lullaby",
    "ballad",
    "soft",
    "mellow",
    "dreamy",
)
_FAST_WORDS = (
    "fast",
    "uptempo",
    "up-tempo",
    "energetic",
    "upbeat",
    "intense",
    "driving",
    "aggressive",
    "frantic",
    "party",
    "hype",
    "dance",
)
_INSTRUMENTS = {
    "piano": "piano",
    "keys": "piano",
    "rhodes": "piano",
    "organ": "piano",
    "guitar": "guitar",
    "acoustic": "guitar",
    "ukulele": "guitar",
    "banjo": "guitar",
    "synth": "synth",
    "synthesizer": "synth",
    "808": "synth",
    "arp": "synth",
    "strings": "strings",
    "violin": "strings",
    "cello": "strings",
    "orchestra": "strings",
    "orchestral": "strings",
    "pad": "other",
    "brass": "other",
    "sax": "other",
    "saxophone": "other",
    "flute": "other",
    "bells": "other",
    "trumpet": "other",
}


@dataclass(slots=True)
class Plan:
    """What to play: every field is JSON-able (a score carries ``asdict(plan)``)."""

    genre: str = "pop"
    tempo: float = 110.0
    root: int = 0  # pitch class of the tonic
    mode: str = "major"
    harmony: list[str] = field(default_factory=lambda: ["piano"])
    drums: bool = True
    drum_style: str = "pop"
    bass: bool = True
    progression: list[int] = field(default_factory=lambda: [0, 4, 5, 3])
    energy: float = 0.6  # 0..1: loudness of the drums, density of parts
    gender: str | None = None  # "male" / "female" if the prompt says so
    swing: float = 0.0
    leading_tone: bool = False  # minor keys: V of the harmonic minor (model v7, asked key)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Plan:
        return cls(**{k: d[k] for k in cls.__dataclass_fields__ if k in d})


def _has(text: str, words: tuple[str, ...]) -> bool:
    return any(re.search(r"\b" + re.escape(w), text) for w in words)


def _genre(text: str, rng: np.random.Generator, base: Plan | None) -> str:
    """The genre the prompt names, else the input song's, else a common one at random."""
    genre = next(
        (g for w, g in _GENRE_WORDS.items() if re.search(r"\b" + re.escape(w) + r"\b", text)), None
    )
    if genre is not None:
        return genre
    return base.genre if base else str(rng.choice(["pop", "rock", "folk", "electronic", "lofi"]))


def _tempo(text: str, lo: int, hi: int, rng: np.random.Generator, base: Plan | None) -> float:
    """The genre's range, pulled down or up by slow or fast words; the input song's tempo;
    an asked bpm (40-220) over all of them."""
    tempo = float(rng.integers(lo, hi + 1))
    if _has(text, _SLOW_WORDS) and not _has(text, _FAST_WORDS):
        tempo = min(tempo, float(rng.integers(62, 80)))
    elif _has(text, _FAST_WORDS) and not _has(text, _SLOW_WORDS):
        tempo = max(tempo, float(rng.integers(128, 150)))
    if base is not None:
        tempo = base.tempo
    m = _ASKED_BPM.search(text)
    if m:
        tempo = float(np.clip(int(m.group(1)), 40, 220))
    return tempo


def _key(
    prompt: str, text: str, genre_mode: str | None, rng: np.random.Generator, base: Plan | None
) -> tuple[int, str]:
    """(root, mode): the genre's mode or minor/major words, a random root; the input song's
    key; a key the prompt names over all of them."""
    mode = genre_mode or str(rng.choice(["major", "minor"]))
    if _has(text, _MINOR_WORDS) and not _has(text, _MAJOR_WORDS):
        mode = "minor"
    elif _has(text, _MAJOR_WORDS) and not _has(text, _MINOR_WORDS):
        mode = "major"
    root = int(rng.integers(0, 12))
    if base is not None:
        root, mode = base.root, base.mode
    key = parse_key(prompt)
    if key is not None:
        root = key[0]
        mode = key[1] or mode
    return root, mode


def _instruments(text: str, genre_harmony: tuple[str, ...]) -> list[str]:
    """The harmony instruments the prompt names (in its order), else the genre's."""
    named: list[str] = []
    for w, inst in _INSTRUMENTS.items():
        if re.search(r"\b" + re.escape(w), text) and inst not in named:
            named.append(inst)
    return named or list(genre_harmony)


def _with_drums(text: str, genre_drums: bool) -> bool:
    if re.search(r"\b(no|without) drums\b|a cappella|acapella|drumless", text):
        return False
    if re.search(r"\bdrums?\b|\bbeat\b|percussion", text):
        return True
    return genre_drums


def _energy(text: str) -> float:
    if _has(text, _SLOW_WORDS):
        return 0.4
    return 0.85 if _has(text, _FAST_WORDS) else 0.6


def _gender(text: str) -> str | None:
    if _has(text, ("female", "woman", "girl", "soprano")):
        return "female"
    return "male" if _has(text, ("male", " man", "boy", "baritone", "bass voice")) else None


def plan_from_prompt(prompt: str, rng: np.random.Generator, *, base: Plan | None = None) -> Plan:
    """The plan a prompt asks for; ``base`` (an input song's plan) supplies tempo and key
    unless the prompt names them."""
    text = (prompt or "").lower()
    genre = _genre(text, rng, base)
    lo, hi, genre_mode, harmony, genre_drums, style = GENRES[genre]
    tempo = _tempo(text, lo, hi, rng, base)
    root, mode = _key(prompt or "", text, genre_mode, rng, base)
    drums = _with_drums(text, genre_drums)
    progs = PROGRESSIONS[mode]
    prog = list(progs[int(rng.integers(0, len(progs)))])
    return Plan(
        genre=genre,
        tempo=tempo,
        root=root,
        mode=mode,
        harmony=_instruments(text, harmony),
        drums=drums,
        drum_style=style if drums else "none",
        bass=not re.search(r"a cappella|acapella", text),
        progression=prog,
        energy=_energy(text),
        gender=_gender(text),
        swing=0.12 if style == "swing" else 0.0,
    )


def follow(plan: Plan, model: str, prompt: str, rng: np.random.Generator) -> Plan:
    """The plan as ``model`` renders it: an explicit tempo and key of ``prompt`` followed to
    the model's degree (:data:`FOLLOW`); an unknown model, or nothing asked, changes nothing.
    Deterministic in ``rng`` (seed it from the request and the model)."""
    spec = FOLLOW.get(model)
    if spec is None:
        return plan
    (lo, hi), keep = spec
    text = (prompt or "").lower()
    out = Plan.from_dict(plan.to_dict())
    if _ASKED_BPM.search(text) and hi > 0:
        d = float(rng.uniform(lo, hi)) * (1.0 if rng.random() < 0.5 else -1.0)
        out.tempo = float(np.clip(round(plan.tempo * (1.0 + d), 1), 40, 220))
    asked = parse_key(prompt or "")
    if asked is not None:
        if rng.random() >= keep:  # heard elsewhere: the relative key or a fifth above
            if rng.random() < 0.5:
                out.root, out.mode = (
                    ((plan.root + 3) % 12, "major")
                    if plan.mode == "minor"
                    else ((plan.root + 9) % 12, "minor")
                )
            else:
                out.root = (plan.root + 7) % 12
            progs = PROGRESSIONS[out.mode]
            out.progression = list(progs[int(rng.integers(0, len(progs)))])
        elif model == "v7" and plan.mode == "minor":
            out.leading_tone = True
            if 4 not in plan.progression:  # a progression with a cadence on V
                with_v = [p for p in PROGRESSIONS["minor"] if 4 in p]
                out.progression = list(with_v[int(rng.integers(0, len(with_v)))])
    return out
