"""Answer files of a campaign (pure): their format, the per-rater token, the MAC, the checks.

An answer file is the small JSON a rater's page downloads (or posts)::

    {"format": "songlab.campaign.answers/1", "campaign": ID, "rater": R, "kind": KIND,
     "design": SHA-256 of the design text the page was built from (computed by the page),
     "answers": [[trial, answer, [played labels]], ...],   # ascending trial
     "mac": HMAC-SHA256(token, canonical([format, campaign, rater, kind, design, answers]))}

``token = HMAC-SHA256(secret, "songlab-campaign-token/1|" + campaign + "|" + rater + "|" + design)``:
the campaign's secret stays with the organiser; the token sits in that rater's page
only (never in the answer file). Answers: what the trial's controls give
(:mod:`songlab.listening.controls`): a choice's value (a label, ``null``, an int), or a
scale's ``[[label, integer], ...]`` sorted by label.
The canonical form is ``JSON.stringify`` of arrays of ASCII strings, integers and
null, which Python's ``json.dumps(separators=(",", ":"))`` reproduces byte for byte.
What this detects and what it cannot: docs/listening.md, "Tamper evidence".
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
from typing import Any

ANSWERS_FORMAT = "songlab.campaign.answers/1"
PAGE_FORMAT = "songlab.campaign.page/1"
RATER_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,39}$")
MAX_ANSWER_BYTES = 1_000_000


class Refused(Exception):
    """One answer file is refused; the message says why (the campaign keeps everything else)."""


def canonical(value: Any) -> bytes:
    """The bytes both the page (``JSON.stringify``) and Python MAC and hash."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def design_digest(design_text: str) -> str:
    """SHA-256 (hex) of the exact design text embedded in a page."""
    return hashlib.sha256(design_text.encode("utf-8")).hexdigest()


def token(secret: bytes, campaign: str, rater: str, design: str) -> str:
    msg = f"songlab-campaign-token/1|{campaign}|{rater}|{design}".encode()
    return hmac.new(secret, msg, hashlib.sha256).hexdigest()


def mac(tok: str, campaign: str, rater: str, kind: str, design: str, answers: list[Any]) -> str:
    body = canonical([ANSWERS_FORMAT, campaign, rater, kind, design, answers])
    return hmac.new(tok.encode("ascii"), body, hashlib.sha256).hexdigest()


def document(
    *, campaign: str, rater: str, kind: str, design: str, answers: list[Any], tok: str
) -> dict[str, Any]:
    """An answer file as the page writes it (used by scripted raters and tests)."""
    return {
        "format": ANSWERS_FORMAT,
        "campaign": campaign,
        "rater": rater,
        "kind": kind,
        "design": design,
        "answers": answers,
        "mac": mac(tok, campaign, rater, kind, design, answers),
    }


def parse(data: bytes | str | dict[str, Any] | OSError) -> dict[str, Any]:
    """The answer file as a dict, its shape checked (not yet against a campaign)."""
    if isinstance(data, OSError):
        raise Refused(f"cannot be read ({data.strerror or data})")
    if isinstance(data, bytes | str):
        if len(data) > MAX_ANSWER_BYTES:
            raise Refused(f"is larger than {MAX_ANSWER_BYTES} bytes; not an answer file")
        try:
            data = json.loads(data)
        except ValueError as exc:
            raise Refused(f"is not JSON ({exc})") from None
    if not isinstance(data, dict) or data.get("format") != ANSWERS_FORMAT:
        raise Refused(f"is not a songlab answer file (format must be {ANSWERS_FORMAT!r})")
    for key in ("campaign", "rater", "kind", "design", "mac"):
        if not isinstance(data.get(key), str):
            raise Refused(f"field {key!r} is missing or not a string")
    answers = data.get("answers")
    if not isinstance(answers, list) or not all(
        isinstance(a, list)
        and len(a) == 3
        and isinstance(a[0], int)
        and not isinstance(a[0], bool)
        and isinstance(a[2], list)
        and all(isinstance(x, str) for x in a[2])
        for a in answers
    ):
        raise Refused("field 'answers' must be a list of [trial, answer, [played labels]]")
    trials = [a[0] for a in answers]
    if len(set(trials)) != len(trials):
        raise Refused("answers a trial twice")
    return data


def check_mac(doc: dict[str, Any], tok: str) -> bool:
    expected = mac(tok, doc["campaign"], doc["rater"], doc["kind"], doc["design"], doc["answers"])
    return hmac.compare_digest(expected, doc["mac"])
