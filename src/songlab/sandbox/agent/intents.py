"""Read a prompt: which tools it asks for, in what order, and with which parameters.

The sandbox planner understands plain English keywords (case-insensitive,
whole words); ``docs/agent-one.md`` lists them with examples. The reading is a
pure function of the prompt, so the same prompt always gives the same
:class:`Intents` (and the same plan).
"""

from __future__ import annotations

import re
import zlib
from dataclasses import dataclass

from songlab.spec import LIMITS

__all__ = ["AudioOp", "Intents", "read_prompt"]

GENRES = (
    "pop",
    "rock",
    "jazz",
    "lofi",
    "lo-fi",
    "hip hop",
    "hip-hop",
    "rap",
    "edm",
    "folk",
    "country",
    "ambient",
    "metal",
    "blues",
    "reggae",
    "classical",
    "r&b",
    "techno",
    "house",
    "disco",
    "funk",
    "soul",
    "punk",
    "trap",
    "k-pop",
    "synthwave",
    "gospel",
    "latin",
    "bossa nova",
    "indie",
    "orchestral",
    "cinematic",
)
MOODS = (
    "happy",
    "sad",
    "upbeat",
    "chill",
    "calm",
    "dark",
    "energetic",
    "melancholic",
    "dreamy",
    "epic",
    "romantic",
    "angry",
    "hopeful",
    "relaxing",
    "uplifting",
)

_I = re.IGNORECASE
_SEARCH = re.compile(r"\b(search|look up|lookup|research|trending|what'?s popular|find out)\b", _I)
_WRITE_LYRICS = re.compile(
    r"\b(write|writes|writing|compose|pen|draft)\b[^.;]*?\blyrics\b|\blyrics\s+(about|for|on)\b", _I
)
_SINGING = re.compile(r"\b(a ?cappella|vocals? only|sung vocals?)\b", _I)
_INSTRUMENTAL = re.compile(r"\b(instrumental|no vocals|without vocals|backing track)\b", _I)
_SONG = re.compile(r"\b(song|track|tune)\b", _I)
_MUSIC = re.compile(r"\b(music|beat|soundtrack)\b", _I)
_AUDIO_OPS = {
    "extend": re.compile(r"\b(extend\w*|extension|longer|lengthen|continue it)\b", _I),
    "stems": re.compile(r"\b(stems?|separat\w*|split|isolate)\b", _I),
    "transcribe": re.compile(r"\btranscri\w*\b", _I),
    "copyright": re.compile(r"\b(copyright\w*|plagiari\w*|originality)\b", _I),
    "remix": re.compile(r"\bremix\w*\b", _I),
    "effect": re.compile(
        r"\b(reverb|echo|lowpass|low-pass|highpass|high-pass|pitch[ -]?shift\w*|normali[sz]\w*)\b",
        _I,
    ),
}
_SFX = re.compile(r"\b(sound effects?|sfx|foley)\b", _I)
_SFX_OF = re.compile(
    r"\b(?:sound effects?|sfx|foley|sound)\s+of\s+(.+?)(?=\s*(?:[,.;!?]|\band\b|\bthen\b|\bunder\b|\bmix\w*\b)|$)",
    _I,
)
_MIX = re.compile(r"\b(mix|mixed|mixing|mixdown|combine|layer)\b", _I)
_TRANSLATE = re.compile(r"\btranslat\w*\b[^.;]*?\b(?:in)?to\s+([A-Za-z]+)", _I)
_TOPIC = re.compile(
    r"\babout\s+(.+?)(?=\s*(?:[,.;!?]|\bthen\b|\band\s+(?:then|make|turn|split|check|add|mix|"
    r"extend|sing|transcribe|translate|separate|remix)\b)|$)",
    _I,
)
_SECONDS = re.compile(r"(\d+(?:\.\d+)?)\s*(?:-\s*)?(?:s|sec|secs|second|seconds)\b", _I)
_SFX_SECONDS = re.compile(
    r"(\d+(?:\.\d+)?)\s*(?:-\s*)?(?:s|sec|secs|second|seconds)\b(?:\s+long)?\s+(?:\w+\s+)?"
    r"(?:sound effects?|sfx|foley)\b",
    _I,
)
_VERSION = re.compile(r"\bv([567])\b", _I)
_FILE = re.compile(r"\bfile_id:([A-Za-z0-9_\-]+)")
_PERCENT = re.compile(r"(\d{1,3})\s*%")
_HEAD = re.compile(r"\b(prepend|intro|at the (start|beginning))\b", _I)
_LANG_IN = re.compile(r"\btranscri\w*\b[^.;]*?\bin\s+([A-Z][a-z]+)\b")

DEFAULT_SONG_SECONDS = 8.0  # keeps sandbox runs short; "N seconds" in the prompt overrides
DEFAULT_SFX_SECONDS = 3.0
# the ranges of duration_seconds in the spec registry (generate_song, sfx_gen)
SONG_RANGE = (float(LIMITS["song_seconds_min"]), float(LIMITS["song_seconds_max"]))
SFX_RANGE = (float(LIMITS["sfx_seconds_min"]), float(LIMITS["sfx_seconds_max"]))


@dataclass(frozen=True, slots=True)
class AudioOp:
    """An operation on audio the prompt asks for, at its position in the prompt."""

    name: str  # extend | stems | transcribe | copyright | remix | effect
    position: int


@dataclass(frozen=True, slots=True)
class Intents:
    """Everything the planner needs from a prompt."""

    prompt: str
    search: bool
    write_lyrics: bool
    generate: str | None  # "song" | "music" | "singing" | None
    generate_position: int
    sources: tuple[str, ...]  # file ids named as file_id:<id>
    audio_ops: tuple[AudioOp, ...]  # in prompt order
    sfx: bool
    sfx_prompt: str
    mix: bool
    translate_to: str | None
    translate_position: int
    topic: str | None
    genre: str | None
    mood: str | None
    version: str
    song_seconds: float
    sfx_seconds: float
    stems_model: str
    effect: str
    effect_amount: float
    extend_type: str
    language: str | None
    seed: int

    @property
    def style(self) -> str:
        """A short style phrase for generation prompts ("upbeat jazz", else the topic)."""
        words = [w for w in (self.mood, self.genre) if w]
        if words:
            return " ".join(words)
        return self.topic or _clip(self.prompt, 120)


def _clip(text: str, n: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1].rstrip() + "…"


_PRONOUNS = frozenset({"it", "them", "that", "this", "those", "these"})


def _topic(raw: str) -> str | None:
    """The subject after "about", unless it is only a pronoun ("write lyrics about it")."""
    return None if raw.strip().lower() in _PRONOUNS else _clip(raw, 120)


def _first(words: tuple[str, ...], text: str) -> str | None:
    best: tuple[int, str] | None = None
    for w in words:
        m = re.search(rf"(?<![\w-]){re.escape(w)}(?![\w-])", text, _I)
        if m and (best is None or m.start() < best[0]):
            best = (m.start(), w)
    return best[1] if best else None


def _pos(rx: re.Pattern[str], text: str) -> int:
    m = rx.search(text)
    return m.start() if m else -1


def _seconds(text: str, lo: float, hi: float, default: float, *, sfx: bool) -> float:
    """The first "N seconds" of the song (``sfx=False``) or of the sound effect (``sfx=True``)."""
    owned = _SFX_SECONDS.search(text)
    if sfx:
        return min(hi, max(lo, float(owned.group(1)))) if owned else default
    for m in _SECONDS.finditer(text):
        if owned is None or m.start() != owned.start():
            return min(hi, max(lo, float(m.group(1))))
    return default


def _generate(text: str) -> tuple[str | None, int]:
    for kind, rx in (("music", _INSTRUMENTAL), ("singing", _SINGING), ("song", _SONG)):
        if m := rx.search(text):
            return kind, m.start()
    music = _MUSIC.search(text)
    if music:
        return "music", music.start()
    return None, -1


def _effect(text: str) -> str:
    m = _AUDIO_OPS["effect"].search(text)
    if not m:
        return "normalize"
    word = m.group(1).lower()
    for name, stem in (
        ("pitch_shift", "pitch"),
        ("normalize", "normali"),
        ("lowpass", "low"),
        ("highpass", "high"),
        ("reverb", "reverb"),
        ("echo", "echo"),
    ):
        if word.startswith(stem):
            return name
    return "normalize"  # pragma: no cover - every match starts with one of the stems


def _stems_model(text: str) -> str:
    if re.search(r"\b12[ -]?stems?\b|\btwelve stems\b", text, _I):
        return "12stem"
    if re.search(r"\b6[ -]?stems?\b|\bsix stems\b", text, _I):
        return "6-stem"
    return "2stem"


def read_prompt(prompt: str) -> Intents:
    """The :class:`Intents` of ``prompt`` (pure and deterministic)."""
    text = " ".join(prompt.split())
    sources = tuple(dict.fromkeys(_FILE.findall(text)))
    # file ids are names, not words: keep them out of the keyword matching
    plain = _FILE.sub(" ", text)
    generate, gen_pos = _generate(plain)
    if sources and generate is not None and not re.search(r"\bnew (song|track|tune)\b", plain, _I):
        generate, gen_pos = (
            None,
            -1,
        )  # "the song file_id:x" names the source, it asks for no new one
    ops = sorted(
        (AudioOp(name, m.start()) for name, rx in _AUDIO_OPS.items() if (m := rx.search(plain))),
        key=lambda op: op.position,
    )
    translate = _TRANSLATE.search(plain)
    topic = _TOPIC.search(plain)
    sfx_of = _SFX_OF.search(plain)
    version = _VERSION.search(plain)
    amount = _PERCENT.search(plain)
    language = _LANG_IN.search(plain)
    return Intents(
        prompt=text,
        search=bool(_SEARCH.search(plain)),
        write_lyrics=bool(_WRITE_LYRICS.search(plain)),
        generate=generate,
        generate_position=gen_pos,
        sources=sources,
        audio_ops=tuple(ops),
        sfx=bool(_SFX.search(plain)),
        sfx_prompt=_clip(sfx_of.group(1), 120) if sfx_of else "ambient texture",
        mix=bool(_MIX.search(plain)),
        translate_to=translate.group(1).capitalize() if translate else None,
        translate_position=translate.start() if translate else -1,
        topic=_topic(topic.group(1)) if topic else None,
        genre=_first(GENRES, plain),
        mood=_first(MOODS, plain),
        version=f"v{version.group(1)}" if version else "v5",
        song_seconds=_seconds(plain, *SONG_RANGE, DEFAULT_SONG_SECONDS, sfx=False),
        sfx_seconds=_seconds(plain, *SFX_RANGE, DEFAULT_SFX_SECONDS, sfx=True),
        stems_model=_stems_model(plain),
        effect=_effect(plain),
        effect_amount=min(100, int(amount.group(1))) / 100 if amount else 0.5,
        extend_type="head" if _HEAD.search(plain) else "tail",
        language=language.group(1) if language else None,
        seed=zlib.crc32(text.encode()) & 0x7FFFFFFF,
    )
