"""Rater pages: one self-contained HTML file per rater, audio embedded as compact MP3.

Blindness of the page: it holds labels, prompts, the trials' controls and audio, never a
model name, tool, task or file id, and nothing from which one could be worked out without
the campaign's secret. Every clip is in the session's common format (48 kHz stereo, one
length, the same fades, loudness matched), encoded the same way (constant-bitrate MP3, no
tag: every file the same size, every frame header alike), after a lead-in of digital
silence of 1-1151 samples drawn from the campaign's secret and the element: no two audio
elements share bytes, on a page or across pages (X is not a copy of A, the hidden
reference not a copy of the open one), and the lead-in says nothing of the model, nor of
which elements hold the same clip. The design a page hashes (trials, labels, controls)
holds no audio: answers are bound to it, and a scripted rater's file needs no encoding. (Decoding the audio and listening, or
correlating, can tell X from A: that is the test. See docs/listening.md, "What a rater
can and cannot learn from a page".)

Every text of the page is escaped once, where it is placed: the title as HTML, the design
(prompts included) as JSON whose ``<``, ``>`` and ``&`` are ``\\u`` escapes, so no text can
end the script element or open a comment; the template's placeholders are filled in one
pass, so no placeholder inside a text is ever replaced.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import re
from typing import Any

import numpy as np

import songlab.listening._format as fmt
from songlab.listening._answers import PAGE_FORMAT, design_digest
from songlab.listening._errors import ListeningError
from songlab.listening._page_template import TEMPLATE
from songlab.listening.heard import HEARD_JS
from songlab.listening.session import ListeningSession

DEFAULT_BITRATE = fmt.DEFAULT_BITRATE
HEADPHONE_TRIALS = 6  # Woods et al. (2017)
_PLACEHOLDER = re.compile(r"__(TITLE|DESIGN|AUDIO|TOKEN|SHA_K|SHA_H|SERVED|HEARD|ANSWERS_NAME)__")
_JSON_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026"}


def _primes(n: int) -> list[int]:
    out: list[int] = []
    k = 2
    while len(out) < n:
        if all(k % p for p in out if p * p <= k):
            out.append(k)
        k += 1
    return out


def _iroot(x: int, n: int) -> int:
    r = int(round(x ** (1.0 / n)))
    while r**n > x:
        r -= 1
    while (r + 1) ** n <= x:
        r += 1
    return r


# FIPS 180-4 sec. 4.2.2 and 5.3.3: first 32 bits of the fractional parts of the cube
# (square) roots of the first 64 (8) primes, computed exactly with integer roots.
SHA_K = [_iroot(p << 96, 3) & 0xFFFFFFFF for p in _primes(64)]
SHA_H = [_iroot(p << 64, 2) & 0xFFFFFFFF for p in _primes(8)]


def encode_mp3(audio: np.ndarray, /, *, sr: int, bitrate: int = DEFAULT_BITRATE) -> bytes:
    """Constant-bitrate MP3 (LAME through PyAV) of ``audio`` (float ``(channels, samples)``)
    in the common format: 48 kHz stereo (resampled and upmixed if need be)."""
    return fmt.encode_mp3(fmt.conform(audio, sr), bitrate=bitrate)


def _uri(data: bytes) -> str:
    return "data:audio/mpeg;base64," + base64.b64encode(data).decode("ascii")


class PageAudio:
    """The encoded audio of rater pages: every element its own encoding.

    Each element (a rater, a trial, a label) gets a lead-in of 1-1151 samples drawn from the
    campaign's secret and the element, and is encoded for itself: no two elements of any
    page of the campaign share bytes, not X and A, not the hidden reference and the open
    one, not two raters' copies of one clip, and no lead-in says anything of another (two
    elements of one clip on a page never get the same lead-in).
    """

    def __init__(self, secret: bytes, *, bitrate: int = DEFAULT_BITRATE) -> None:
        self._secret, self.bitrate = secret, bitrate
        self._used: dict[tuple[object, ...], set[int]] = {}
        # digests of every encoding handed out: two different clips can encode to the same
        # bytes at one lead-in (a sine and its 7 kHz low-pass anchor do), so the bytes
        # themselves are checked, not only the lead-ins of one clip
        self._made: set[bytes] = set()

    def __repr__(self) -> str:
        return f"PageAudio(bitrate={self.bitrate})"

    def uri(self, clip: tuple[object, ...], element: tuple[object, ...], core: np.ndarray) -> str:
        """``core`` (a common-format clip) as a ``data:`` URI for ``element`` of a page."""
        used = self._used.setdefault(clip, set())
        for n in range(8 * fmt.LEAD_MAX):
            lead = fmt.lead(self._secret, "element", *element, n)
            if lead in used:
                continue
            data = fmt.encode_mp3(fmt.shape(core, lead=lead), bitrate=self.bitrate)
            digest = hashlib.blake2b(data, digest_size=16).digest()
            if digest in self._made:
                continue
            used.add(lead)
            self._made.add(digest)
            return _uri(data)
        raise ListeningError(  # over a thousand elements of one clip on one page
            "clips", f"one clip is on a page more than {fmt.LEAD_MAX} times: no lead-in left"
        )


def headphone_orders(secret: bytes, rater: str) -> list[list[int]]:
    """Per headphone-check trial, which tone (0 normal, 1 quiet, 2 antiphase) plays in each
    of the three intervals: drawn from the secret, so only the organiser knows them."""
    import songlab.listening._answers as ans

    seed = int.from_bytes(ans.keyed(secret, "headphones", rater)[:8], "big")
    rng = np.random.default_rng(seed)
    return [[int(i) for i in rng.permutation(3)] for _ in range(HEADPHONE_TRIALS)]


def design_text(
    session: ListeningSession,
    *,
    campaign: str,
    rater: str,
    headphones: bool = False,
) -> str:
    """The exact JSON text a rater's page embeds and hashes (deterministic): its trials,
    labels and controls, no audio. ``rater`` is the rater's public id; ``headphones``:
    whether the page opens with the headphone check."""
    trials: list[dict[str, Any]] = [
        {
            "trial": t.index,
            "prompt": t.prompt,
            "labels": list(t.labels),
            "play": list(session._playable(t)),
            "controls": session.controls(t.index).to_json(),
        }
        for t in session.trials
    ]
    rules = []
    if session.options["traps"] and session.trap_rule:
        rules.append(session.trap_rule)
    doc: dict[str, Any] = {
        "format": PAGE_FORMAT,
        "campaign": campaign,
        "rater": rater,
        "kind": session.kind,
        "need_ms": session.need_ms,
        "rules": rules,
        "headphones": HEADPHONE_TRIALS if headphones else 0,
        "trials": trials,
    }
    return _script_json(doc)


def audio_text(
    session: ListeningSession,
    *,
    rater: str,
    audio: PageAudio,
    headphones: list[list[int]] | None = None,
) -> str:
    """The page's audio as JSON: ``{"trials": {trial: {label: data URI}}, "headphones":
    [[three URIs] per round]}``, every element its own encoding (see :class:`PageAudio`)."""
    plans = session._unseal()["plans"]
    trials: dict[str, dict[str, str]] = {}
    for t in session.trials:
        trials[str(t.index)] = {}
        for label in session._playable(t):
            model, prompt = session._model_of(t, label), plans[t.index].prompt
            core = session._core(model, prompt)
            trials[str(t.index)][label] = audio.uri(
                (rater, model, prompt), (rater, t.index, label), core
            )
    rounds = []
    if headphones is not None:
        tones = fmt.headphone_tones()
        for n, order in enumerate(headphones):
            rounds.append(
                [
                    audio.uri((rater, "tone", i), (rater, "headphones", n, i), tones[i])
                    for i in order
                ]
            )
    return _script_json({"trials": trials, "headphones": rounds})


def _script_json(doc: Any) -> str:
    text = json.dumps(doc, separators=(",", ":"), ensure_ascii=False)
    # inside <script>: no "<" (no "</script>", no "<!--"), ">" or "&": the same JSON string
    return re.sub("[<>&]", lambda m: _JSON_ESCAPES[m.group(0)], text)


def answers_name(title: str) -> str:
    """The name a page saves its answers under: from the title the rater sees, so they know
    the file (``answers - Rate each clip.json``), never an id they were not shown."""
    words = re.sub(r"[^A-Za-z0-9 _.-]+", " ", title).split()
    return "answers - " + (" ".join(words)[:60].strip() or "listening test") + ".json"


def render(
    design: str,
    *,
    audio: str,
    token: str,
    title: str,
    served: dict[str, Any] | None = None,
) -> str:
    """The whole page: the template with the title (HTML-escaped), the design text, its
    audio and this rater's token, filled in one pass (a placeholder inside a text is never
    replaced). ``served``: a served page's assignment and routes (None: the offline page)."""
    if not isinstance(title, str) or not title.strip():
        raise ListeningError("title", "must be a non-empty string")
    if not re.fullmatch(r"[0-9a-f]{64}", token):
        raise ListeningError("token", "must be 64 hex digits")
    values = {
        "TITLE": html.escape(title),
        "DESIGN": design,
        "AUDIO": audio,
        "TOKEN": token,
        "SHA_K": ",".join(f"0x{k:08x}" for k in SHA_K),
        "SHA_H": ",".join(f"0x{h:08x}" for h in SHA_H),
        "SERVED": _script_json(served) if served is not None else "null",
        "HEARD": HEARD_JS,
        "ANSWERS_NAME": _script_json(answers_name(title)),
    }
    return _PLACEHOLDER.sub(lambda m: values[m.group(1)], TEMPLATE)


__all__ = [
    "HEADPHONE_TRIALS",
    "PageAudio",
    "answers_name",
    "audio_text",
    "design_digest",
    "design_text",
    "encode_mp3",
    "headphone_orders",
    "render",
]
