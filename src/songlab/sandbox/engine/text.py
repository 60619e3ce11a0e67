"""Words: syllables of lyrics, lyric writing, pseudo-translation, web-search answers.

Everything is deterministic from its inputs (a seeded generator or a hash of
the text): the same prompt writes the same lyrics, the same line translates
the same way.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata

import numpy as np

_VOWELS = "aeiouyàáâãäåæèéêëìíîïòóôõöøùúûüýœ"
_WORD = re.compile(r"[^\W\d_]+(?:'[^\W\d_]+)?", re.UNICODE)


def _h(*parts: str) -> int:
    return int.from_bytes(hashlib.sha256("\x1f".join(parts).encode()).digest()[:8], "little")


def lyric_lines(lyrics: str | None) -> list[str]:
    """The sung lines: blank lines and ``[Section]`` tags dropped."""
    out = []
    for line in (lyrics or "").splitlines():
        s = line.strip()
        if (
            s
            and not (s.startswith("[") and s.endswith("]"))
            and not (s.startswith("(") and s.endswith(")"))
        ):
            out.append(s)
    return out


def words(line: str) -> list[str]:
    return _WORD.findall(line)


def syllables(word: str, lang: str = "en") -> list[str]:
    """Split a word at its vowel groups ("morning" -> ["mor", "ning"]); at least one piece."""
    w = word.lower()
    groups = [m.span() for m in re.finditer(f"[{_VOWELS}]+", w)]
    if (
        lang == "en"
        and len(groups) > 1
        and w.endswith("e")
        and groups[-1][0] == len(w) - 1
        and not w.endswith(("le", "ee"))
    ):
        groups = groups[:-1]  # silent final e ("love", "time")
    if len(groups) <= 1:
        return [word]
    cuts = [0]
    for (_, end_prev), (start_next, _) in zip(groups, groups[1:], strict=False):
        gap = start_next - end_prev
        cuts.append(end_prev + (gap + 1) // 2 if gap > 1 else end_prev + gap)
    cuts.append(len(word))
    return [word[a:b] for a, b in zip(cuts, cuts[1:], strict=False) if b > a]


def line_syllables(line: str, lang: str = "en") -> list[str]:
    return [s for w in words(line) for s in syllables(w, lang)]


def vowel_of(syl: str) -> str:
    for ch in unicodedata.normalize("NFKD", syl.lower()):
        if ch in "aeiou":
            return ch
        if ch == "y":
            return "i"
    return "@"


def consonant_of(syl: str) -> str:
    c = unicodedata.normalize("NFKD", syl.lower())[:1]
    if c in "szfhcxjvç" and c:
        return "s"
    if c in "tkpdbgq" and c:
        return "t"
    if c and c.isalpha() and c not in "aeiouy":
        return "n"
    return ""


# ----------------------------------------------------------------- lyric writing

_THEMES = {
    "sad": (
        ["rain", "empty room", "fading light", "cold window", "broken letter", "last train"],
        ["I still hear", "I let go of", "I'm holding on to", "I can't forget"],
        [
            "the night you left",
            "your silent goodbye",
            "the words we never said",
            "an echo of your name",
        ],
    ),
    "happy": (
        [
            "sunlight",
            "open road",
            "summer sky",
            "golden morning",
            "dancing street",
            "bright horizon",
        ],
        ["we're chasing", "I'm singing to", "we're running through", "I can feel"],
        [
            "the best days of our lives",
            "a heart that's wide awake",
            "the rhythm of the day",
            "the colours all around",
        ],
    ),
    "love": (
        ["your eyes", "midnight call", "slow dance", "candle glow", "warm embrace", "city lights"],
        ["I'm falling for", "I'm dreaming of", "I'm waiting for", "I'm reaching for"],
        [
            "the way you say my name",
            "a love that never fades",
            "the fire in your heart",
            "forever in your arms",
        ],
    ),
    "energy": (
        ["thunder", "neon fire", "heartbeat", "wild night", "electric sky", "racing pulse"],
        ["we're breaking through", "we're burning up", "we're rising up to", "we own"],
        [
            "the edge of the night",
            "the sound of the crowd",
            "a world without end",
            "the lights up high",
        ],
    ),
    "calm": (
        [
            "quiet river",
            "morning mist",
            "soft wind",
            "starlit field",
            "ocean breeze",
            "sleeping town",
        ],
        ["I'm drifting on", "I'm resting in", "I'm floating through", "I'm breathing in"],
        [
            "the peace of the evening",
            "a slow and gentle tide",
            "the hush before the dawn",
            "a world that softly turns",
        ],
    ),
}
_THEME_WORDS = {
    "sad": ("sad", "melanchol", "lonely", "heartbreak", "dark", "tears", "blue", "somber", "minor"),
    "love": ("love", "romance", "romantic", "heart", "valentine"),
    "energy": ("energetic", "rock", "edm", "dance", "party", "metal", "hype", "fast", "electronic"),
    "calm": ("calm", "chill", "ambient", "lofi", "lo-fi", "relax", "sleep", "peaceful", "slow"),
    "happy": ("happy", "joy", "summer", "upbeat", "sunny", "bright", "pop"),
}


def theme_of(prompt: str) -> str:
    text = (prompt or "").lower()
    for theme, keys in _THEME_WORDS.items():
        if any(k in text for k in keys):
            return theme
    return ("happy", "love", "calm", "energy", "sad")[_h(text) % 5]


def write_lyrics(prompt: str, *, seed: int = 0, verses: int = 1) -> str:
    """A short song text (verse and chorus) in the mood of the prompt."""
    rng = np.random.default_rng([_h(prompt or ""), seed])
    images, verbs, tails = _THEMES[theme_of(prompt)]
    topic = next((w for w in words(prompt or "") if len(w) > 4 and w.lower() not in _STOP), None)

    def line() -> str:
        return f"{rng.choice(verbs)} {rng.choice(tails)}"

    blocks = []
    for v in range(verses):
        a, b = rng.choice(images, 2, replace=False)
        verse = [
            f"In the {a} I walk alone"
            if theme_of(prompt) == "sad"
            else f"In the {a} we come alive",
            line(),
            f"Every {b} tells me so",
            line(),
        ]
        blocks.append(f"[Verse {v + 1}]\n" + "\n".join(s[0].upper() + s[1:] for s in verse))
    hook = f"Oh, {topic.lower()}" if topic else f"Oh, {rng.choice(images)}"
    chorus = [hook + ", stay with me", line(), hook + ", don't let go", line()]
    blocks.append("[Chorus]\n" + "\n".join(s[0].upper() + s[1:] for s in chorus))
    return "\n\n".join(blocks)


_STOP = {
    "about",
    "song",
    "songs",
    "music",
    "with",
    "style",
    "tempo",
    "minor",
    "major",
    "female",
    "male",
    "vocals",
    "voice",
    "ballad",
    "slow",
    "fast",
    "piano",
    "guitar",
    "drums",
    "track",
    "beat",
    "genre",
    "upbeat",
    "their",
    "there",
    "which",
    "sounds",
    "sound",
    "trending",
}

# ----------------------------------------------------------------- translation

LANGS = {
    "en": ("english", "en", "inglés", "anglais"),
    "es": ("spanish", "es", "español", "espanol", "castellano"),
    "fr": ("french", "fr", "français", "francais"),
    "de": ("german", "de", "deutsch"),
    "it": ("italian", "it", "italiano"),
    "pt": ("portuguese", "pt", "português", "portugues", "brazilian portuguese"),
    "ja": ("japanese", "ja", "日本語", "nihongo"),
    "ko": ("korean", "ko", "한국어"),
    "zh": ("chinese", "zh", "mandarin", "中文"),
}
_INVENTORY = {
    "es": "la me so ra ta co de mi no sa lo ve ci to da re po ma cie lu ne ca mo ri go",
    "fr": "le la mon toi je ne sur ciel mour tu re vi de pas son ma vous lu mi ce jou",
    "de": "ich du der lie be herz nacht mein ein traum licht zeit al les wie so da ma",
    "it": "la mo re ti vo glio cuo re not te so le ma ri ca to ne da mi",
    "pt": "a mor co ra ção noi te ti so la me do ver mar lu ca mi ne",
    "ja": "ko ro ka na shi mi to yo ra su ki wa no de ma ta hi ka ze so",
    "ko": "sa rang hae na neun da ri gu mi yo ha nal ba ram ma eum",
    "zh": "ai ni wo de xin tian yue liang meng feng hua qing ye xing yu",
    "xx": "ka lo mi na te su ra vo di le sa no be ri ta ma",
}
_DICT = {
    "es": {
        "love": "amor",
        "heart": "corazón",
        "night": "noche",
        "day": "día",
        "you": "tú",
        "i": "yo",
        "my": "mi",
        "sky": "cielo",
        "light": "luz",
        "dream": "sueño",
        "fire": "fuego",
        "rain": "lluvia",
        "home": "hogar",
        "forever": "siempre",
        "together": "juntos",
        "the": "el",
        "and": "y",
        "oh": "oh",
    },
    "fr": {
        "love": "amour",
        "heart": "cœur",
        "night": "nuit",
        "day": "jour",
        "you": "tu",
        "i": "je",
        "my": "mon",
        "sky": "ciel",
        "light": "lumière",
        "dream": "rêve",
        "fire": "feu",
        "rain": "pluie",
        "home": "maison",
        "forever": "toujours",
        "together": "ensemble",
        "the": "le",
        "and": "et",
        "oh": "oh",
    },
    "de": {
        "love": "Liebe",
        "heart": "Herz",
        "night": "Nacht",
        "day": "Tag",
        "you": "du",
        "i": "ich",
        "my": "mein",
        "sky": "Himmel",
        "light": "Licht",
        "dream": "Traum",
        "fire": "Feuer",
        "rain": "Regen",
        "home": "Heim",
        "forever": "immer",
        "together": "zusammen",
        "the": "der",
        "and": "und",
        "oh": "oh",
    },
}


def language_code(name: str | None) -> str:
    n = (name or "").strip().lower()
    for code, names in LANGS.items():
        if n in names:
            return code
    return "xx" if n else "en"


def _pseudo_word(word: str, n_syl: int, lang: str) -> str:
    inv = _INVENTORY.get(lang, _INVENTORY["xx"]).split()
    h = _h(lang, word.lower())
    cons_first = [s for s in inv if s[0] not in _VOWELS]
    parts = []
    for i in range(max(1, n_syl)):
        pool = inv if i == 0 else cons_first  # no vowel-vowel junction: keeps the count
        parts.append(pool[(h >> (5 * i)) % len(pool)])
    return "".join(parts)


def translate(lyrics: str, target_language: str, *, syllable_matched: bool = True) -> str:
    """Deterministic pseudo-translation, line by line (``[Section]`` tags kept).

    With ``syllable_matched`` every word keeps its syllable count, so each line
    does; otherwise common words take their dictionary form and the rest vary.
    """
    lang = language_code(target_language)
    d = _DICT.get(lang, {})
    out_lines = []
    for line in (lyrics or "").splitlines():
        s = line.strip()
        if not s or (s.startswith("[") and s.endswith("]")):
            out_lines.append(s)
            continue
        out = []
        for w in words(s):
            n = len(syllables(w))
            tr = d.get(w.lower())
            if tr is not None and (not syllable_matched or len(syllables(tr, lang)) == n):
                out.append(tr)
            else:
                if not syllable_matched:
                    n = max(1, n + (_h("len", w) % 3) - 1)
                out.append(_pseudo_word(w, n, lang))
        t = " ".join(out)
        out_lines.append(t[:1].upper() + t[1:])
    return "\n".join(out_lines)


def pseudo_lyrics(seed: int, n_lines: int) -> list[str]:
    """Plausible English lines for audio whose lyrics the engine never knew."""
    rng = np.random.default_rng(seed)
    theme = list(_THEMES)[seed % len(_THEMES)]
    images, verbs, tails = _THEMES[theme]
    return [f"{rng.choice(verbs)} {rng.choice(tails)}".capitalize() for _ in range(n_lines)]


# ----------------------------------------------------------------- web search

_GENRES_TRENDING = (
    "afrobeats",
    "hyperpop",
    "amapiano",
    "drill",
    "synthwave",
    "lofi hip hop",
    "indie folk",
    "latin pop",
    "k-pop",
    "phonk",
    "bedroom pop",
    "country pop",
)


def web_search(query: str) -> tuple[str, list[dict[str, str]]]:
    """Five deterministic, plausible results for a query (``text``, ``results``)."""
    q = (query or "").strip()
    rng = np.random.default_rng(_h(q.lower()))
    slug = re.sub(r"[^a-z0-9]+", "-", q.lower()).strip("-") or "music"
    results = []
    if "trend" in q.lower():
        picks = rng.choice(_GENRES_TRENDING, 5, replace=False)
        for i, g in enumerate(picks):
            results.append(
                {
                    "title": f"{g.title()} is trending this week",
                    "url": f"https://charts.example.com/trending/{g.replace(' ', '-')}",
                    "snippet": f"{g.title()} climbs to #{i + 1} in streaming charts, driven by short-form video.",
                }
            )
    else:
        sites = (
            "musicwiki.example.org",
            "soundnews.example.com",
            "producerforum.example.net",
            "lyricsdb.example.com",
            "charts.example.com",
        )
        for i, site in enumerate(sites):
            results.append(
                {
                    "title": f"{q.title() or 'Music'} - {('overview', 'latest news', 'discussion', 'lyrics and meaning', 'chart history')[i]}",
                    "url": f"https://{site}/{slug}",
                    "snippet": f"What listeners and producers say about {q or 'music'}: "
                    f"{int(rng.integers(2, 98))}% more plays this month.",
                }
            )
    text = "\n".join(f"{r['title']} ({r['url']}): {r['snippet']}" for r in results)
    return text, results
