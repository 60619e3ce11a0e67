"""The engine's data types (re-exported by the package; see its docstring for the contract)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, TypedDict


class VoiceDict(TypedDict):
    """A singer's timbre as a score stores it (:class:`Voice` as JSON)."""

    f0_low: float
    f0_high: float
    f0_median: float
    formants: Sequence[float]
    gender: str  # "female" | "male"


# [onset s, length s, midi pitch]: a fixed melody's note
MelodyNote = list[float]
# [onset s, length s, pitch, velocity, program, channel]: a note of a MIDI file
MidiNote = list[float]


class Score(TypedDict):
    """What a song is made from (``song.new_score``), the unit a recipe's layer stores."""

    plan: dict[str, Any]  # prompt.Plan as a dict (Plan.to_dict / Plan.from_dict)
    model: str
    seed: int
    duration_s: float
    lyrics: str
    language: str
    voice: VoiceDict | None
    melody: list[MelodyNote] | None
    midi: list[MidiNote] | None
    parts: list[str]  # of "drums", "bass", "harmony", "lead", "vocal"
    vocal_start_s: float


class Layer(TypedDict):
    """One score placed in a file: where it sounds (output seconds), its gain, the stems
    it keeps (None: all) and the effects applied to each stem ([name, amount, semitones])."""

    score: Score
    offset_s: float
    start_s: float
    end_s: float
    fade_in_s: float
    fade_out_s: float
    gain: float
    stems: list[str] | None
    effects: list[list[object]]


class Recipe(TypedDict, total=False):
    """How a sandbox file was made (``recipe.make``: layers; ``recipe.foreign``: audio the
    engine cannot re-render, with the stem or effect words it came from); ``{}`` unknown."""

    engine: int
    kind: str  # "layers" or "foreign"
    model: str
    channels: int
    duration_s: float
    layers: list[Layer]
    stem: str
    sfx: list[str]


# what an operation says of its output (``output.metadata_json``): JSON values by name
Metadata = dict[str, object]


class EngineInputError(ValueError):
    """An input file is not usable; ``field`` names the request field."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


class RenderError(RuntimeError):
    """Generation failed (the task fails and its reservation is released)."""


@dataclass(frozen=True, slots=True)
class AudioIn:
    data: bytes
    mime_type: str
    recipe: Recipe | None = None  # provenance of a sandbox-made file


@dataclass(frozen=True, slots=True)
class AudioInfo:
    format: str  # "mp3", "m4a", "wav", "flac", "ogg", "mid"
    mime_type: str
    duration_s: float
    sample_rate: int
    channels: int


@dataclass(frozen=True, slots=True)
class Voice:
    f0_low: float
    f0_high: float
    f0_median: float
    formants: tuple[float, ...]
    gender: str  # "female" | "male"

    def to_dict(self) -> VoiceDict:
        return {
            "f0_low": self.f0_low,
            "f0_high": self.f0_high,
            "f0_median": self.f0_median,
            "formants": list(self.formants),
            "gender": self.gender,
        }

    @classmethod
    def from_dict(cls, d: VoiceDict) -> Voice:
        return cls(d["f0_low"], d["f0_high"], d["f0_median"], tuple(d["formants"]), d["gender"])


@dataclass(slots=True)
class Asset:
    name: str  # "mix", "vocals", "drums", ...
    data: bytes
    mime_type: str
    duration_s: float
    recipe: Recipe = field(default_factory=lambda: Recipe())


@dataclass(slots=True)
class RenderResult:
    assets: list[Asset] = field(default_factory=list)
    metadata: Metadata = field(default_factory=dict)
    text: str | None = None
