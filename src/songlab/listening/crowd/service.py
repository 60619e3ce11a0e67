"""The served campaign's rules, between the web routes and the store: who gets which slot,
what a page shows, which answer is received, when the campaign closes.

Everything a rater sends is checked here with the campaign's own rules before anything is
stored (the same MAC, design, minimum heard and answer checks as ``collect``; time heard at
most the clip's length; no answer faster than its clips can be heard since the page was
served), and "Received" is only said after the store committed it. A rater reaches this
through :mod:`songlab.listening.crowd.app`; the organiser reads it through
:meth:`Service.received_files` (what ``Campaign.collect`` takes) and
:mod:`songlab.listening.crowd.live`.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import songlab.listening._answers as ans
import songlab.listening._format as fmt
import songlab.listening.crowd.platforms as platforms
import songlab.listening.raters as rules
from songlab.listening._errors import ListeningError
from songlab.listening.campaign import Campaign
from songlab.listening.crowd.store import (
    ACTIVE,
    COMPLETE,
    SCREENED_OUT,
    TIMED_OUT,
    Assignment,
    Store,
)

__all__ = ["ANSWER_FORMAT", "DEFAULTS", "FORGED", "Reply", "Service", "check_settings"]

ANSWER_FORMAT = "songlab.campaign.answer/1"
MAX_ITEM_BYTES = 64_000
FORGED = (
    "Refused: this answer was not made by the page the organiser served you, or it was changed "
    "after the page made it. Reload the page and answer again."
)
DEFAULTS: dict[str, Any] = {
    "raters": None,  # raters wanted (who finished and passed the checks); None: every slot
    "ratings": None,  # ratings wanted per clip; None: no such quota
    "timeout": 1800.0,  # seconds without a sign of the page before its slot is freed
    "prolific": None,  # {"complete": CODE, "screened_out": CODE}
    "screen_headphones": True,  # a failed headphone check ends the study (screened out)
}


def check_settings(settings: dict[str, Any]) -> dict[str, Any]:
    """``settings`` over :data:`DEFAULTS`, each checked (``ListeningError`` naming it)."""
    unknown = sorted(set(settings) - set(DEFAULTS))
    if unknown:
        raise ListeningError(
            unknown[0], f"is not a setting of a served campaign ({', '.join(DEFAULTS)})"
        )
    out = dict(DEFAULTS, **settings)
    for name in ("raters", "ratings"):
        value = out[name]
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, int) or value < 1
        ):
            raise ListeningError(name, f"must be a whole number >= 1 or None; got {value!r}")
    timeout = out["timeout"]
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not timeout > 0:
        raise ListeningError("timeout", f"must be seconds > 0; got {timeout!r}")
    out["timeout"] = float(timeout)
    codes = out["prolific"]
    if codes is not None and (
        not isinstance(codes, dict)
        or not isinstance(codes.get("complete"), str)
        or not all(isinstance(v, str) and v.isalnum() for v in codes.values())
    ):
        raise ListeningError(
            "prolific", "must be {'complete': CODE, 'screened_out': CODE} (letters and digits)"
        )
    return out


@dataclass(frozen=True)
class Reply:
    """An HTTP status and the JSON body the page reads (``message`` always)."""

    status: int
    body: dict[str, Any] = field(default_factory=dict)


class Service:
    """A campaign served to arriving raters, its state in ``store``."""

    def __init__(
        self,
        campaign: Campaign,
        store: Store,
        /,
        *,
        settings: dict[str, Any] | None = None,
        clock: Callable[[], float] = time.time,
        base_url: str = "",
    ) -> None:
        self.campaign, self.store, self.clock, self.base_url = campaign, store, clock, base_url
        given = check_settings(settings) if settings else {}
        stored = store.prepare(campaign.id, campaign.kind, campaign.raters, given, clock())
        self.settings = check_settings(stored)
        slug = {ans.keyed(campaign._secret, "slug", r)[:12].hex(): r for r in campaign.raters}
        self._slugs = slug
        self._audio: dict[str, bytes] = {}
        self._copies = _copies_per_clip(campaign)

    def __repr__(self) -> str:
        return f"Service({self.campaign.id}, {self.store!r})"

    def links(self) -> dict[str, str]:
        """``{rater: path of their own page}`` (a fixed slot each: a panel invited by email)."""
        return {r: f"/r/{slug}" for slug, r in self._slugs.items()}

    # -- arrivals ------------------------------------------------------------------------
    def join(self, query: dict[str, str]) -> tuple[str, str]:
        """``("page", assignment id)`` for who arrived, or ``("message", text)``."""
        arrived = platforms.arrival(query)
        if arrived.problem:
            return "message", f"This link is not complete: {arrived.problem}."
        if arrived.preview:
            return "message", (
                "This is a listening test: you will hear short clips and answer a question about "
                "each. Accept the HIT to begin."
            )
        participant = platforms.pseudonym(self.campaign._secret, arrived)
        before = self.store.find(self.campaign.id, participant)
        if before is not None and before.status in (ACTIVE, COMPLETE, SCREENED_OUT):
            return "page", before.id
        return self._assign(participant, arrived.platform, arrived.fields)

    def fixed(self, slug: str) -> tuple[str, str] | None:
        """The page of the rater whose own link ends in ``slug`` (None: no such link)."""
        rater = self._slugs.get(slug)
        if rater is None:
            return None
        participant = self._own_participant(rater)
        before = self.store.find(self.campaign.id, participant)
        if before is not None and before.status in (ACTIVE, COMPLETE, SCREENED_OUT):
            return "page", before.id
        return self._assign(participant, "link", None, rater=rater)

    def _own_participant(self, rater: str) -> str:
        """The pseudonym of whoever holds ``rater``'s own link."""
        return "u" + ans.keyed(self.campaign._secret, "participant", "rater", rater)[:12].hex()

    def _assign(
        self,
        participant: str,
        platform: str,
        fields: dict[str, str] | None,
        rater: str | None = None,
    ) -> tuple[str, str]:
        cid, now = self.campaign.id, self.clock()
        self.store.expire(cid, now, self.settings["timeout"])
        if self.store.state(cid) != "open":
            return "message", "This study is full: thank you for coming. Please return it."
        given = self.store.assign(cid, participant, platform, now, fields, rater=rater)
        if given is None:
            return "message", (
                "Every place in this study is taken just now; places free up when someone "
                "leaves. Please try again in a few minutes, or return the study."
            )
        return "page", given.id

    # -- the page ------------------------------------------------------------------------
    def page(self, assignment: str) -> str | None:
        """The rater page of ``assignment`` (None when there is no such assignment)."""
        a = self.store.get(assignment)
        if a is None or a.campaign != self.campaign.id:
            return None
        if a.status == ACTIVE and self.clock() - a.last_seen > 60:  # a reload, later on
            self.store.touch(a.id, self.clock())
        c = self.campaign
        audio_json, elements = self._audio_refs(a.rater)
        self.store.register_audio(c.id, elements)
        answered = self.store.answered_trials(a.id)
        served = {
            "assignment": a.id,
            "answers": "../api/answers",
            "headphones": "../api/answers",
            "alive": "../api/alive",
            "answered": answered,
            "complete": self._completion(a) if a.status in (COMPLETE, SCREENED_OUT) else None,
        }
        import songlab.listening.page as pg

        return pg.render(
            c.design(a.rater),
            audio=audio_json,
            token=c._token(a.rater),
            title=c.title,
            served=served,
        )

    def _audio_refs(self, rater: str) -> tuple[str, dict[str, str]]:
        """The page's audio as links into the pool: each element of the page its own
        variant of its clip (no two elements of a page share bytes), drawn from the secret."""
        import songlab.listening.page as pg

        c = self.campaign
        session = c._sessions[rater]
        plans = session._unseal()["plans"]
        seen: dict[tuple[str, int], int] = {}
        trials: dict[str, dict[str, str]] = {}
        elements: dict[str, str] = {}
        for t in session.trials:
            trials[str(t.index)] = {}
            for label in sorted(session._playable(t)):
                clip = (session._model_of(t, label), plans[t.index].prompt)
                token, element = self._element(rater, clip, seen)
                trials[str(t.index)][label] = f"../a/{token}"
                elements[token] = element
        rounds = []
        for order in c._headphones(rater) or []:
            refs = []
            for i in order:
                token, element = self._element(rater, (f"tone:{i}", -1), seen)
                refs.append(f"../a/{token}")
                elements[token] = element
            rounds.append(refs)
        return pg._script_json({"trials": trials, "headphones": rounds}), elements

    def _element(
        self, rater: str, clip: tuple[str, int], seen: dict[tuple[str, int], int]
    ) -> tuple[str, str]:
        secret = self.campaign._secret
        pool = max(self._copies, seen.get(clip, 0) + 1)
        offset = int.from_bytes(ans.keyed(secret, "pool-offset", rater, *clip)[:4], "big")
        variant = (offset + seen.get(clip, 0)) % pool
        seen[clip] = seen.get(clip, 0) + 1
        token = ans.keyed(secret, "audio", clip[0], clip[1], variant)[:16].hex()
        return token, json.dumps([clip[0], clip[1], variant])

    def audio(self, token: str) -> bytes | None:
        """The MP3 of one element of the pool (encoded on first use, then kept)."""
        if token in self._audio:
            return self._audio[token]
        found = self.store.audio(self.campaign.id, token)
        if found is None:
            return None
        element, data = found
        if data is None:
            condition, prompt, variant = json.loads(element)
            data = self._encode(condition, prompt, variant)
            self.store.keep_audio(self.campaign.id, token, data)
        self._audio[token] = data
        return data

    def _encode(self, condition: str, prompt: int, variant: int) -> bytes:
        c = self.campaign
        if condition.startswith("tone:"):
            core = fmt.headphone_tones()[int(condition.removeprefix("tone:"))]
        else:
            core = c._sessions[c.raters[0]]._core(condition, prompt)
        lead = fmt.lead(c._secret, "pool", condition, prompt, variant=variant)
        return fmt.encode_mp3(fmt.shape(core, lead=lead), bitrate=c.bitrate)

    # -- answers -------------------------------------------------------------------------
    def alive(self, body: bytes) -> Reply:
        try:
            item = json.loads(body)
            assignment = str(item["assignment"])
        except (ValueError, KeyError, TypeError):
            return Reply(400, {"message": "an alive call names its assignment"})
        self.store.touch(assignment, self.clock())
        return Reply(200, {"message": "ok"})

    def answer(self, body: bytes) -> Reply:
        """One answer (or the headphone check) from a served page, stored once."""
        try:
            item = _item(body)
        except ans.Refused as exc:
            return Reply(400, {"message": f"Refused: the answer {exc}"})
        with self.store.holding(item["assignment"]) as (conn, a):
            if a is None or a.campaign != self.campaign.id:
                return Reply(404, {"message": "Refused: no such assignment (reload the page)."})
            reply = self._take(conn, a, item)
        if reply.status == 200 and reply.body.get("complete") and not reply.body.get("again"):
            self._close_if_met()
        return reply

    def _take(self, conn: Any, a: Assignment, item: dict[str, Any]) -> Reply:
        c, now = self.campaign, self.clock()
        before = self.store.answer_by_id(conn, c.id, item["id"])
        if before is not None:
            same = before.assignment == a.id and before.trial == item["trial"]
            if same and before.value == ans.canonical(item["value"]).decode():
                return Reply(200, {"message": "Received.", "again": True, **self._done(a, conn)})
            return Reply(
                409,
                {"message": "Refused: this answer id was used for another answer.", "keep": True},
            )
        if a.status != ACTIVE:
            return Reply(410, {"message": _over(a), "keep": True, **self._done(a, conn)})
        if not ans.check_mac_text(_item_text(c, a, item), c._token(a.rater), item["mac"]):
            return Reply(400, {"message": FORGED})
        if item["trial"] == -1:
            return self._headphones(conn, a, item["value"], now)
        answered = self.store.answered(conn, a.id)
        try:
            self._check(a, item, answered, now)
        except ans.Refused as exc:
            keep = "already answered" in str(exc)
            return Reply(409 if keep else 400, {"message": f"Refused: {exc}", "keep": keep})
        self.store.add_answer(
            conn,
            c.id,
            {
                "id": item["id"],
                "assignment": a.id,
                "trial": item["trial"],
                "value": ans.canonical(item["value"]).decode(),
                "heard": ans.canonical(item["heard"]).decode(),
                "scripted": False,
                "received_at": now,
            },
        )
        self.store.update(conn, a, last_seen=now)
        if len(answered) + 1 < len(c._sessions[a.rater].trials):
            return Reply(200, {"message": "Received."})
        return self._complete(conn, a, now)

    def _check(
        self, a: Assignment, item: dict[str, Any], answered: dict[int, Any], now: float
    ) -> None:
        """Refuse (``ans.Refused``) an answer ``collect`` would refuse, or one that comes
        faster than its clips can be heard since the page was first served."""
        c = self.campaign
        session = c._sessions[a.rater]
        t = item["trial"]
        if t in answered:
            raise ans.Refused(f"trial {t} was already answered; your first answer was kept")
        scratch = session.sibling(c._rater_seeds[a.rater], key=b"0" * 32)
        c._check_answer(a.rater, scratch, t, item["value"], dict(item["heard"]), scripted=False)
        trials = [*answered, t]
        least = sum(session.need * len(session.trials[k].labels) for k in trials)
        elapsed = now - a.started_at
        if elapsed + 1.0 < least:
            raise ans.Refused(
                f"these {len(trials)} answers came {elapsed:.0f} s after your page was opened, "
                f"but hearing their clips takes at least {least:.0f} s. Listen to every clip, "
                "then answer again"
            )

    def _headphones(self, conn: Any, a: Assignment, value: Any, now: float) -> Reply:
        c = self.campaign
        if not c.headphone_check or a.headphones is not None:
            return Reply(200, {"message": "Received."})
        if not (isinstance(value, list) and len(value) == 6 and all(v in (0, 1, 2) for v in value)):
            return Reply(400, {"message": "Refused: the headphone check needs one tone per round."})
        right = c._right_headphones(a.rater)
        passed = (
            sum(int(v == r) for v, r in zip(value, right, strict=True)) >= rules.HEADPHONES_PASS
        )
        if passed or not self.settings["screen_headphones"]:
            self.store.update(conn, a, headphones=value, last_seen=now)
            return Reply(200, {"message": "Received."})
        self.store.update(
            conn,
            a,
            headphones=value,
            status=SCREENED_OUT,
            finished_at=now,
            kept=False,
            reason="headphone check failed (Woods et al. 2017)",
        )
        return Reply(200, {"message": "Received.", **self._done(_as(a, SCREENED_OUT), conn)})

    def _complete(self, conn: Any, a: Assignment, now: float) -> Reply:
        """Every trial answered: the assignment is done; whether its rater is kept (the
        campaign's per-rater rules: checks, flat answers, headphones)."""
        c = self.campaign
        rows = list(self.store.answered(conn, a.id).values())
        doc = self._file(a, rows, scripted=all(r.scripted for r in rows))
        rater, session = c._check(doc)
        right = c._right_headphones(rater) if c.headphone_check else None
        verdict = rules.exclusions(
            [rules.Rater(rater, session, doc, right)], fail_limit=c.fail_limit
        )
        excluded = bool(verdict["excluded"].iloc[0])
        reason = str(verdict["reason"].iloc[0]) if excluded else None
        self.store.update(
            conn,
            a,
            status=COMPLETE,
            finished_at=now,
            last_seen=now,
            kept=not excluded,
            reason=reason,
        )
        return Reply(
            200,
            {"message": "Received: that was the last one.", **self._done(_as(a, COMPLETE), conn)},
        )

    def _done(self, a: Assignment, conn: Any = None) -> dict[str, Any]:
        if a.status not in (COMPLETE, SCREENED_OUT):
            return {}
        return {"complete": self._completion(a, conn)}

    def _completion(self, a: Assignment, conn: Any = None) -> dict[str, Any]:
        fields = self.store.fields_of(self.campaign.id, a.participant, conn)
        return platforms.completion(
            a.platform,
            fields,
            self.settings,
            screened_out=a.status == SCREENED_OUT,
            code=completion_code(self.campaign._secret, a.id),
        )

    def _close_if_met(self) -> None:
        """Close the campaign once its quotas are met (raters kept, ratings per clip)."""
        wanted, per_clip = self.settings["raters"], self.settings["ratings"]
        if wanted is None and per_clip is None:
            return
        kept = self.store.kept(self.campaign.id)
        met = (wanted is None or kept >= wanted) and (
            per_clip is None or kept * self._ratings_per_rater() >= per_clip
        )
        if met:
            self.store.close_campaign(self.campaign.id)

    def _ratings_per_rater(self) -> int:
        """How often each clip (model and prompt) is rated in one rater's design (the least)."""
        session = self.campaign._sessions[self.campaign.raters[0]]
        plans = session._unseal()["plans"]
        counts: dict[tuple[str, int], int] = {}
        for t in session.trials:
            if plans[t.index].check is None:
                for label in t.labels:
                    clip = (session._model_of(t, label), plans[t.index].prompt)
                    counts[clip] = counts.get(clip, 0) + 1
        return min(counts.values())

    # -- whole answer files (the offline page's file, the organiser's scripted raters) --
    def answer_file(self, body: bytes) -> Reply:
        """A whole answer file posted (``POST /answers``): checked as ``collect`` checks it,
        its answers stored once each."""
        c = self.campaign
        try:
            doc = ans.parse(body)
            rater, _ = c._check(doc)
        except ans.Refused as exc:
            if exc.forged:
                return Reply(
                    400,
                    {
                        "message": "Refused: this file was not made by a page of this campaign as it was sent to you, or it was changed after the page saved it. Send the file your page saved, unchanged."
                    },
                )
            return Reply(400, {"message": f"Refused: the answer file {exc}"})
        served = self.store.find(c.id, self._own_participant(rater)) is not None
        kind, ident = self.fixed(next(s for s, r in self._slugs.items() if r == rater)) or ("", "")
        if kind != "page":
            return Reply(409, {"message": f"Refused: {ident}"})
        with self.store.holding(ident) as (conn, a):
            assert a is not None
            reply = self._take_file(conn, a, doc, served=served)
        if reply.body.get("complete"):
            self._close_if_met()
        return reply

    def _take_file(self, conn: Any, a: Assignment, doc: dict[str, Any], *, served: bool) -> Reply:
        """A whole file's answers, each stored once; refused when they came faster than
        their clips can be heard since this server served the rater's page (``served``)."""
        now, c = self.clock(), self.campaign
        answered = self.store.answered(conn, a.id)
        new = []
        for t, value, heard in doc["answers"]:
            row = answered.get(t)
            text = ans.canonical(value).decode()
            if row is not None and row.value != text:
                return Reply(
                    409,
                    {
                        "message": (
                            "Refused: you already sent answers that these change. Your first answers "
                            "were kept; if they were a mistake, tell the organiser."
                        ),
                        "keep": True,
                    },
                )
            if row is None:
                new.append(
                    {
                        "id": "f" + hashlib.sha256(f"{a.id}|{t}|{text}".encode()).hexdigest()[:39],
                        "assignment": a.id,
                        "trial": t,
                        "value": text,
                        "heard": ans.canonical(heard).decode(),
                        "scripted": doc["scripted"],
                        "received_at": now,
                    }
                )
        if not new:
            return Reply(
                200, {"message": f"Already received: {len(doc['answers'])} answers. Thank you."}
            )
        if a.status != ACTIVE:
            return Reply(410, {"message": _over(a), "keep": True})
        slow = self._too_fast(a, doc["answers"], now) if served else None
        if slow is not None:
            return Reply(
                400, {"message": f"Refused: {slow}. Listen to every clip, then send again."}
            )
        for row in new:
            self.store.add_answer(conn, c.id, row)
        values: dict[str, Any] = {"last_seen": now}
        if doc["headphones"] is not None:
            values["headphones"] = doc["headphones"]
        self.store.update(conn, a, **values)
        if len(answered) + len(new) == len(c._sessions[a.rater].trials):
            self._complete(conn, a, now)
            return Reply(
                200,
                {
                    "message": f"Received {len(doc['answers'])} answers. Thank you.",
                    "complete": True,
                },
            )
        return Reply(200, {"message": f"Received {len(doc['answers'])} answers. Thank you."})

    def _too_fast(self, a: Assignment, rows: list[Any], now: float) -> str | None:
        """Why ``rows`` came faster than their clips can be heard since ``a``'s page was
        served (None when they did not)."""
        session = self.campaign._sessions[a.rater]
        least = sum(session.need * len(session.trials[t].labels) for t, _, _ in rows)
        elapsed = now - a.started_at
        if not rows or elapsed + 1.0 >= least:
            return None
        return (
            f"these {len(rows)} answers came {elapsed:.0f} s after your page was opened, but "
            f"hearing their clips takes at least {least:.0f} s"
        )

    # -- what the organiser reads --------------------------------------------------------
    def _file(self, a: Assignment, rows: list[Any], *, scripted: bool) -> dict[str, Any]:
        """The answer file of ``a``'s answers as its page would save it (signed with its
        rater's token; a scripted rater's also with the organiser's mark)."""
        c = self.campaign
        return ans.document(
            campaign=c.id,
            rater=c.public_id(a.rater),
            kind=c.kind,
            design=c._digest(a.rater),
            answers=[
                [r.trial, json.loads(r.value), json.loads(r.heard)]
                for r in sorted(rows, key=lambda r: r.trial)
            ],
            tok=c._token(a.rater),
            scripted=scripted,
            headphones=a.headphones,
            secret=c._secret if scripted else None,
        )

    def received_files(self) -> Iterator[tuple[str, dict[str, Any]]]:
        """One answer file per finished assignment (what ``Campaign.collect`` takes)."""
        rows = self.store.answers_of(self.campaign.id)
        for a in self.store.assignments(self.campaign.id):
            if a.status == COMPLETE and a.id in rows:
                mine = rows[a.id]
                scripted = all(r.scripted for r in mine)
                yield (
                    f"{self.base_url}/answers ({a.participant})",
                    self._file(a, mine, scripted=scripted),
                )


def completion_code(secret: bytes, assignment: str) -> str:
    """The code a finished rater of a link is shown (the organiser can recompute it)."""
    return ans.keyed(secret, "completion", assignment)[:5].hex().upper()


def _as(a: Assignment, status: str) -> Assignment:
    from dataclasses import replace

    return replace(a, status=status)


def _over(a: Assignment) -> str:
    if a.status == TIMED_OUT:
        return (
            "Refused: your time on this study ran out (no sign of your page for a while) and "
            "your place went to someone else. Thank you for your time."
        )
    if a.status == SCREENED_OUT:
        return "Refused: the study ended after the headphone check."
    return "Refused: you have finished this study already; nothing more is needed."


def _item(body: bytes) -> dict[str, Any]:
    """One posted answer, its shape checked: ``{assignment, id, trial, value, heard, mac}``."""
    if len(body) > MAX_ITEM_BYTES:
        raise ans.Refused(f"is {len(body):,} bytes; an answer is at most {MAX_ITEM_BYTES:,}")
    if ans.depth(body) > ans.MAX_DEPTH:
        raise ans.Refused(f"nests deeper than {ans.MAX_DEPTH} levels")
    try:
        item = json.loads(body)
        ans.canonical(item)
    except (ValueError, UnicodeEncodeError, RecursionError):
        raise ans.Refused("is not JSON text of valid Unicode") from None
    if not isinstance(item, dict):
        raise ans.Refused("is not a JSON object")
    for key in ("assignment", "id", "mac"):
        if not isinstance(item.get(key), str) or not 1 <= len(item[key]) <= 80:
            raise ans.Refused(f"field {key!r} is missing or not a short string")
    trial, heard = item.get("trial"), item.get("heard")
    if isinstance(trial, bool) or not isinstance(trial, int) or trial < -1:
        raise ans.Refused("field 'trial' must be a trial number")
    if not isinstance(heard, list) or not all(
        isinstance(h, list) and len(h) == 2 and isinstance(h[0], str) and ans._whole(h[1])
        for h in heard
    ):
        raise ans.Refused("field 'heard' must be [[label, milliseconds heard], ...]")
    if "value" not in item:
        raise ans.Refused("field 'value' is missing")
    return item


def _item_text(c: Campaign, a: Assignment, item: dict[str, Any]) -> bytes:
    """What a served page's MAC covers (its script signs the same array)."""
    return ans.canonical(
        [
            ANSWER_FORMAT,
            c.id,
            c.public_id(a.rater),
            c._digest(a.rater),
            a.id,
            item["id"],
            item["trial"],
            item["value"],
            item["heard"],
        ]
    )


def _copies_per_clip(campaign: Campaign) -> int:
    """Variants of each clip in the served pool: twice the most copies of one clip on the
    first rater's page (every page is drawn from one pool; no page holds a variant twice)."""
    session = campaign._sessions[campaign.raters[0]]
    plans = session._unseal()["plans"]
    counts: dict[tuple[str, int], int] = {}
    for t in session.trials:
        for label in session._playable(t):
            clip = (session._model_of(t, label), plans[t.index].prompt)
            counts[clip] = counts.get(clip, 0) + 1
    return 2 * max(counts.values())
