"""Answer files of a campaign (pure): their format, the per-rater token, the MAC, the checks.

An answer file is the small JSON a rater's page downloads (or posts)::

    {"format": "songlab.campaign.answers/2", "campaign": ID, "rater": PUBLIC_ID, "kind": KIND,
     "design": SHA-256 of the design text the page was built from (computed by the page),
     "scripted": false (true only for the organiser's scripted raters),
     "headphones": [the interval chosen in each headphone-check trial] or null,
     "answers": [[trial, answer, [[label, milliseconds heard], ...]], ...],   # ascending trial
     "mac": HMAC-SHA256(token, canonical([format, campaign, rater, kind, design, scripted,
                                          headphones, answers])),
     "organiser": a scripted rater's file only: HMAC-SHA256(secret, mac)}

``PUBLIC_ID`` is the rater's id as pages show it: drawn from the campaign's secret, so it
says nothing of the organiser's names for raters, nor how many there are.
``token = HMAC-SHA256(secret, "songlab-campaign-token/2|" + campaign + "|" + rater + "|" + design)``:
the campaign's secret stays with the organiser; the token sits in that rater's page
only (never in the answer file). Answers: what the trial's controls give
(:mod:`songlab.listening.controls`): a choice's value (a label, ``null``, an int), or a
scale's ``[[label, integer], ...]`` sorted by label. The milliseconds heard of each clip
are the page's own measure (its ``played`` ranges), signed with the rest.
The canonical form is ``JSON.stringify`` of arrays of strings, integers, booleans and
null, which Python's ``json.dumps(separators=(",", ":"), ensure_ascii=False)`` reproduces
byte for byte. What this detects and what it cannot: docs/listening.md, "Tamper evidence".
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
from typing import Any

ANSWERS_FORMAT = "songlab.campaign.answers/2"
PAGE_FORMAT = "songlab.campaign.page/2"
RATER_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,39}$")
MAX_ANSWER_BYTES = 1_000_000
MAX_DEPTH = 16  # an answer file nests 5 deep; JSON deeper than this is refused unread
_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)


class Refused(Exception):
    """One answer file is refused; the message says why (the campaign keeps everything else).

    ``forged``: the refusal says the file was not made by a page of this campaign as
    issued (another campaign, an unknown rater, an edited page, edited answers), which
    a server tells a sender in one sentence, whichever it was.
    """

    def __init__(self, message: str, *, forged: bool = False) -> None:
        super().__init__(message)
        self.forged = forged


def canonical(value: Any) -> bytes:
    """The bytes both the page (``JSON.stringify``) and Python MAC and hash."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def design_digest(design_text: str) -> str:
    """SHA-256 (hex) of the exact design text embedded in a page."""
    return hashlib.sha256(design_text.encode("utf-8")).hexdigest()


def keyed(secret: bytes, *parts: object) -> bytes:
    """HMAC-SHA256 of ``parts`` under the campaign's ``secret`` (ids, seeds, lead-ins)."""
    return hmac.new(secret, "|".join(map(str, parts)).encode("utf-8"), hashlib.sha256).digest()


def token(secret: bytes, campaign: str, rater: str, design: str) -> str:
    return keyed(secret, "songlab-campaign-token/2", campaign, rater, design).hex()


def mac(tok: str, doc: dict[str, Any]) -> str:
    body = canonical(
        [
            ANSWERS_FORMAT,
            doc["campaign"],
            doc["rater"],
            doc["kind"],
            doc["design"],
            doc["scripted"],
            doc["headphones"],
            doc["answers"],
        ]
    )
    return hmac.new(tok.encode("ascii"), body, hashlib.sha256).hexdigest()


def organiser_mark(secret: bytes, file_mac: str) -> str:
    """What makes a file a scripted rater's: HMAC of its MAC under the campaign's secret,
    which only the organiser holds (a rater's page has its token, never the secret)."""
    return keyed(secret, "songlab-campaign-scripted/1", file_mac).hex()


def document(
    *,
    campaign: str,
    rater: str,
    kind: str,
    design: str,
    answers: list[Any],
    tok: str,
    scripted: bool = False,
    headphones: list[int] | None = None,
    secret: bytes | None = None,
) -> dict[str, Any]:
    """An answer file as the page writes it (used by scripted raters and tests). A scripted
    file (``scripted=True``) is marked with the campaign's ``secret`` (:func:`organiser_mark`):
    without the mark, ``scripted`` is a claim a rater cannot make."""
    doc: dict[str, Any] = {
        "format": ANSWERS_FORMAT,
        "campaign": campaign,
        "rater": rater,
        "kind": kind,
        "design": design,
        "scripted": scripted,
        "headphones": headphones,
        "answers": answers,
    }
    doc["mac"] = mac(tok, doc)
    if scripted and secret is not None:
        doc["organiser"] = organiser_mark(secret, doc["mac"])
    return doc


def depth(data: bytes) -> int:
    """How deep the arrays and objects of JSON text ``data`` nest (strings skipped)."""
    import numpy as np

    b = np.frombuffer(_STRING.sub(b'""', data), dtype=np.uint8)
    step = np.isin(b, (0x5B, 0x7B)).astype(np.int64) - np.isin(b, (0x5D, 0x7D))
    return int(np.cumsum(step).max()) if step.size else 0


class Unreadable:
    """A source that is not a file one may read (a directory, a symlink, too large, ...)."""

    def __init__(self, reason: str) -> None:
        self.reason = reason


def parse(data: bytes | str | dict[str, Any] | Unreadable | OSError) -> dict[str, Any]:
    """The answer file as a dict, its shape checked (not yet against a campaign)."""
    if isinstance(data, Unreadable):
        raise Refused(data.reason)
    if isinstance(data, OSError):
        raise Refused(f"cannot be read ({data.strerror or data})")
    if isinstance(data, str):
        data = data.encode("utf-8")
    if isinstance(data, bytes):
        if len(data) > MAX_ANSWER_BYTES:
            raise Refused(
                f"is {len(data):,} bytes, larger than an answer file can be "
                f"({MAX_ANSWER_BYTES:,}); not read"
            )
        if depth(data) > MAX_DEPTH:
            raise Refused(f"nests deeper than {MAX_DEPTH} levels; not an answer file")
        try:
            data = json.loads(data)
        except (ValueError, RecursionError) as exc:
            raise Refused(f"is not JSON ({exc})") from None
    if not isinstance(data, dict) or data.get("format") != ANSWERS_FORMAT:
        raise Refused(f"is not a songlab answer file (format must be {ANSWERS_FORMAT!r})")
    try:
        canonical(data)
    except (UnicodeEncodeError, TypeError, ValueError):
        raise Refused(
            "holds text that is not valid Unicode (an escaped lone surrogate such as \\ud800) "
            "or a value JSON cannot hold; not an answer file a page makes"
        ) from None
    for key in ("campaign", "rater", "kind", "design", "mac"):
        if not isinstance(data.get(key), str):
            raise Refused(f"field {key!r} is missing or not a string")
    if not isinstance(data.get("scripted"), bool):
        raise Refused("field 'scripted' is missing or not true/false")
    phones = data.get("headphones", "missing")
    if phones is not None and not (
        isinstance(phones, list) and all(_whole(i) for i in phones) and len(phones) <= 20
    ):
        raise Refused("field 'headphones' must be null or a list of interval numbers")
    _check_answers(data.get("answers"))
    return data


def _check_answers(answers: Any) -> None:
    """Refuse an ``answers`` field that is not ``[[trial, answer, [[label, ms], ...]], ...]``
    with each trial once."""
    if not isinstance(answers, list) or not all(
        isinstance(a, list)
        and len(a) == 3
        and _whole(a[0])
        and isinstance(a[2], list)
        and all(
            isinstance(h, list) and len(h) == 2 and isinstance(h[0], str) and _whole(h[1])
            for h in a[2]
        )
        for a in answers
    ):
        raise Refused("field 'answers' must be a list of [trial, answer, [[label, ms heard], ...]]")
    trials = [a[0] for a in answers]
    if len(set(trials)) != len(trials):
        raise Refused("answers a trial twice")


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def check_mac_text(body: bytes, tok: str, given: str) -> bool:
    """Whether ``given`` is the HMAC of ``body`` under ``tok`` (one served answer's MAC)."""
    expected = hmac.new(tok.encode("ascii"), body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, given)


def check_mac(doc: dict[str, Any], tok: str) -> bool:
    return hmac.compare_digest(mac(tok, doc), doc["mac"])
