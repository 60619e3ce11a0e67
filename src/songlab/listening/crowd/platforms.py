"""How raters arrive from a crowd platform and how they go back: each platform's conventions.

* **Prolific** sends a participant to the study URL with ``PROLIFIC_PID``, ``STUDY_ID`` and
  ``SESSION_ID`` in the query (set the study URL to ``.../join?PROLIFIC_PID={{%PROLIFIC_PID%}}
  &STUDY_ID={{%STUDY_ID%}}&SESSION_ID={{%SESSION_ID%}}``). A finished participant is sent to
  ``https://app.prolific.com/submissions/complete?cc=CODE`` with the study's completion code; one
  screened out (the headphone check failed) with the screened-out code set up for that.
* **Mechanical Turk** (an ExternalQuestion) loads the page with ``assignmentId``, ``hitId``,
  ``workerId`` and ``turkSubmitTo``; while a worker only previews the HIT, ``assignmentId`` is
  ``ASSIGNMENT_ID_NOT_AVAILABLE`` (nothing is assigned). A finished worker submits a form by
  POST to ``{turkSubmitTo}/mturk/externalSubmit`` holding ``assignmentId`` and one more field.
* **A link** (no platform): each arrival is a new participant; the page shows a completion code.

A participant is known to songlab by a **pseudonym** only, ``HMAC(secret, platform | id)``:
results, answer files, the live view and every export of answers carry it. The platform's own
ids are kept in one table (``platform_ids``) for the one thing that needs them, the payments
export.
"""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode, urlsplit

from songlab.listening._answers import keyed

__all__ = ["Arrival", "arrival", "completion", "pseudonym"]

PROLIFIC_DONE = "https://app.prolific.com/submissions/complete"
MTURK_HOSTS = ("https://www.mturk.com", "https://workersandbox.mturk.com")
MTURK_PREVIEW = "ASSIGNMENT_ID_NOT_AVAILABLE"
_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


@dataclass(frozen=True)
class Arrival:
    """Who arrived: the platform, their id there (None for a link), the platform's fields,
    and whether they only preview (Mechanical Turk)."""

    platform: str
    participant_id: str | None
    fields: dict[str, str] = field(default_factory=dict)
    preview: bool = False
    problem: str | None = None


def arrival(query: dict[str, str]) -> Arrival:
    """The arrival a join URL's ``query`` describes (``problem`` says what is wrong with it)."""
    if "PROLIFIC_PID" in query:
        fields = {k: query.get(k, "") for k in ("PROLIFIC_PID", "STUDY_ID", "SESSION_ID")}
        bad = [k for k, v in fields.items() if not _ID.match(v)]
        problem = f"{bad[0]} must be 1-64 of A-Z a-z 0-9 _ -" if bad else None
        return Arrival("prolific", fields["PROLIFIC_PID"], fields, problem=problem)
    if "assignmentId" in query or "workerId" in query:
        if query.get("assignmentId") == MTURK_PREVIEW:
            return Arrival("mturk", None, preview=True)
        fields = {k: query.get(k, "") for k in ("workerId", "assignmentId", "hitId")}
        submit = query.get("turkSubmitTo", "").rstrip("/")
        bad = [k for k, v in fields.items() if not _ID.match(v)]
        problem = f"{bad[0]} must be 1-64 of A-Z a-z 0-9 _ -" if bad else None
        if problem is None and submit not in MTURK_HOSTS:
            problem = f"turkSubmitTo must be one of {', '.join(MTURK_HOSTS)}"
        fields["turkSubmitTo"] = submit
        return Arrival("mturk", fields["workerId"], fields, problem=problem)
    return Arrival("link", None)


def pseudonym(secret: bytes, arrived: Arrival) -> str:
    """The participant's pseudonym (the same person on the same platform, the same one); a
    link's arrival is a new participant each time."""
    who = arrived.participant_id or secrets.token_hex(16)
    return "u" + keyed(secret, "participant", arrived.platform, who)[:12].hex()


def completion(
    platform: str,
    fields: dict[str, str],
    settings: dict[str, Any],
    *,
    screened_out: bool,
    code: str,
) -> dict[str, Any]:
    """What a finished (or screened-out) page shows: a title, a text, and the way back."""
    if screened_out:
        title, text = (
            "Thank you",
            (
                "The headphone check found that this study needs headphones you do not seem to be "
                "using, so it ends here."
            ),
        )
    else:
        title, text = "Thank you: every answer was received", "You have finished the study."
    done: dict[str, Any] = {"title": title, "text": text, "stop": True}
    if platform == "prolific":
        codes = settings.get("prolific") or {}
        cc = codes.get("screened_out" if screened_out else "complete")
        if cc:
            done.update(
                code=cc, url=f"{PROLIFIC_DONE}?{urlencode({'cc': cc})}", link="Back to Prolific"
            )
        return done
    if platform == "mturk":
        submit = fields.get("turkSubmitTo", "")
        if urlsplit(submit).scheme == "https" and submit in MTURK_HOSTS:
            done["form"] = {
                "action": f"{submit}/mturk/externalSubmit",
                "fields": {
                    "assignmentId": fields.get("assignmentId", ""),
                    "completion": "screened_out" if screened_out else code,
                },
            }
            done["link"] = "Submit the HIT"
        return done
    done["code"] = code
    return done
