"""Listening campaigns: one blind design per rater, rater pages, collected answer files, and
which raters to trust.

``campaign(kind, clips, raters=N, seed=...)`` builds one session of protocol ``kind``
(one of :data:`~songlab.listening.registry.PROTOCOLS`) per rater: the same clips, brought
to one format and loudness-matched once, each rater with their own trial order, label
positions, rater checks (gold clips and trapping questions, at random places) and page
encoding. Everything a rater could use to tell a model without listening is drawn from the
campaign's **secret** (32 random bytes, kept in the organiser's campaign file, never in a
page): the designs (from the seed *and* the secret, so knowing the seed is not enough),
the lead-ins of the clips, the campaign id and the raters' public ids. The answer key stays
in the campaign; pages and answer files carry labels only. ``export`` writes the pages,
``collect`` validates and merges answer files (each bad one refused by name, the rest
kept), ``exclusions`` applies the rejection rules (:mod:`songlab.listening.raters`),
``results`` is one frame of every answer with rater, model and whether the rater is
excluded, and ``stats`` the panel statistics of the kept raters (or of all of them).
"""

from __future__ import annotations

import hmac
import json
import math
import secrets
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, cast

import numpy as np
import pandas as pd

import songlab.listening._answers as ans
import songlab.listening.controls as controls
import songlab.listening.page as pg
import songlab.listening.raters as rules
from songlab.listening._errors import ListeningError
from songlab.listening._intake import CollectError, Received, rater_ids, shown, sources
from songlab.listening._simulate import simulate
from songlab.listening.registry import protocol
from songlab.listening.session import ANSWERS, ListeningSession
from songlab.localfiles import write_atomic

__all__ = ["CAMPAIGN_FORMAT", "Campaign", "CollectError", "campaign", "load_campaign"]

CAMPAIGN_FORMAT = "songlab.campaign/2"
#: the minimum heard, in words (each page states it in seconds, from ``need_ms``)
MINIMUM_RULE = (
    "min_heard: Music Arena's 5 s by default, or the whole clip less a quarter second when shorter"
)
RATERS = ("kept", "all", "excluded")
_BY = {"person": "person", "scripted": "scripted listener", "all": "person and scripted"}


def _keyed_int(secret: bytes, *parts: object) -> int:
    return int.from_bytes(ans.keyed(secret, *parts)[:8], "big") % (2**63)


class Campaign:
    """A blind listening campaign over many raters (build it with :func:`campaign`)."""

    def __init__(
        self,
        kind: str,
        clips: Mapping[str, Sequence[Any]],
        /,
        *,
        raters: int | Sequence[str],
        seed: int | None = None,
        secret: bytes | None = None,
        title: str = "Listening test",
        bitrate: int = pg.DEFAULT_BITRATE,
        gold: int = 2,
        traps: int = 2,
        headphone_check: bool = False,
        fail_limit: int = rules.FAIL_LIMIT,
        **options: Any,
    ) -> None:
        make = protocol(kind)
        if seed is None:
            seed = cast(int, np.random.SeedSequence().entropy) % (2**63)  # fresh: an int
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            raise ListeningError("seed", f"must be a non-negative int or None; got {seed!r}")
        if secret is not None and (not isinstance(secret, bytes) or len(secret) < 16):
            raise ListeningError("secret", "must be at least 16 random bytes (or None)")
        if (
            isinstance(bitrate, bool)
            or not isinstance(bitrate, int)
            or not 32_000 <= bitrate <= 320_000
        ):
            raise ListeningError("bitrate", f"must be bits/s in 32000..320000; got {bitrate!r}")
        if not isinstance(title, str) or not title.strip():
            raise ListeningError("title", "must be a non-empty string")
        if not isinstance(headphone_check, bool):
            raise ListeningError("headphone_check", f"must be a bool; got {headphone_check!r}")
        if isinstance(fail_limit, bool) or not isinstance(fail_limit, int) or fail_limit < 1:
            raise ListeningError("fail_limit", f"must be an int >= 1; got {fail_limit!r}")
        self.kind, self.title, self.bitrate = kind, title, bitrate
        self.headphone_check, self.fail_limit = headphone_check, fail_limit
        self.raters = tuple(rater_ids(raters))
        self._seed, self._secret = seed, secret or secrets.token_bytes(32)
        key = self._secret
        self._rater_seeds = {r: _keyed_int(key, "design", seed, r) for r in self.raters}
        self._public = {r: "p" + ans.keyed(key, "rater", r)[:6].hex() for r in self.raters}
        self._by_public = {p: r for r, p in self._public.items()}
        first = self._rater_seeds[self.raters[0]]
        base = make(clips, seed=first, gold=gold, traps=traps, **options)  # matched once
        self._sessions = {
            r: base.sibling(s, key=ans.keyed(key, "key", r)) for r, s in self._rater_seeds.items()
        }
        self.models, self.prompts = base.models, base.prompts
        self.options = dict(base.options)
        ident = json.dumps(
            [CAMPAIGN_FORMAT, kind, seed, list(self.raters), base._fingerprint],
            default=str,
        )
        self.id = "cmp-" + ans.keyed(key, "campaign", ident)[:8].hex()
        self._made_with = dict(
            options,
            title=title,
            bitrate=bitrate,
            gold=gold,
            traps=traps,
            headphone_check=headphone_check,
            fail_limit=fail_limit,
        )
        self._designs: dict[str, str] = {}
        self._digests: dict[str, str] = {}
        self._audio = pg.PageAudio(key, bitrate=bitrate)
        self._audio_texts: dict[str, str] = {}
        self.received: dict[str, Received] = {}
        self._filled: dict[str, ListeningSession] = {}
        self._seen: dict[str, str] = {}  # MAC of every file collected -> where it came from

    def __repr__(self) -> str:
        return (
            f"Campaign({self.kind}, id={self.id}, models={len(self.models)}, "
            f"prompts={len(self.prompts)}, raters={len(self.raters)}, "
            f"collected={len(self.received)})"
        )

    # -- pages ---------------------------------------------------------------------------
    def _rater(self, rater: str) -> str:
        if rater not in self._sessions:
            raise ListeningError("rater", f"is not a rater of this campaign: {rater!r}")
        return rater

    def public_id(self, rater: str, /) -> str:
        """The id ``rater``'s page and answer files show (drawn from the secret: it tells no
        one the organiser's name for the rater, nor how many raters there are)."""
        return self._public[self._rater(rater)]

    def _headphones(self, rater: str) -> list[list[int]] | None:
        return pg.headphone_orders(self._secret, rater) if self.headphone_check else None

    def design(self, rater: str, /) -> str:
        """The design text embedded in ``rater``'s page (built once, deterministic)."""
        rater = self._rater(rater)
        if rater not in self._designs:
            self._designs[rater] = pg.design_text(
                self._sessions[rater],
                campaign=self.id,
                rater=self._public[rater],
                headphones=self.headphone_check,
            )
        return self._designs[rater]

    def _token(self, rater: str) -> str:
        return ans.token(self._secret, self.id, self._public[rater], self._digest(rater))

    def _digest(self, rater: str) -> str:
        if rater not in self._digests:
            self._digests[rater] = ans.design_digest(self.design(rater))
        return self._digests[rater]

    def page(self, rater: str, /) -> str:
        """``rater``'s self-contained HTML page."""
        if rater not in self._audio_texts:  # encoded once, each element for itself
            self._audio_texts[rater] = pg.audio_text(
                self._sessions[rater],
                rater=self._public[rater],
                audio=self._audio,
                headphones=self._headphones(rater),
            )
        audio = self._audio_texts[rater]
        return pg.render(
            self.design(rater), audio=audio, token=self._token(rater), title=self.title
        )

    def export(
        self, directory: str | Path, /, *, raters: Iterable[str] | None = None
    ) -> list[Path]:
        """Write ``rater-<id>.html`` for each rater (or those given) into ``directory``."""
        from songlab.localfiles import private_dir, write_atomic  # a page holds its token

        out = private_dir(directory)  # 0700 where made; each page 0600, written whole
        paths = []
        for r in raters if raters is not None else self.raters:
            path = out / f"rater-{self._rater(r)}.html"
            paths.append(write_atomic(path, self.page(r)))
        return paths

    # -- answers -------------------------------------------------------------------------
    def answer_file(
        self,
        rater: str,
        answers: Mapping[int, Any],
        /,
        *,
        heard: Mapping[int, Mapping[str, float]] | None = None,
        headphones: list[int] | None = None,
        scripted: bool = False,
    ) -> dict[str, Any]:
        """The answer file ``rater``'s page would save for ``answers`` ({trial: session
        answer}): ``heard`` gives the seconds heard of each clip (default: every clip whole),
        ``headphones`` the intervals chosen in the headphone check. For scripted raters
        (``scripted=True``) and tests."""
        session = self._sessions[self._rater(rater)]
        whole = session.seconds
        rows = []
        for t, a in sorted(answers.items()):
            trial = session.trials[t]
            given = (heard or {}).get(t)
            ms = {
                label: round(1000 * (given[label] if given is not None else whole))
                for label in session._playable(trial)
                if given is None or label in given
            }
            rows.append(
                [t, controls.to_file(session.controls(t), a), sorted(map(list, ms.items()))]
            )
        if headphones is None and self.headphone_check:
            headphones = self._right_headphones(rater)
        return ans.document(
            campaign=self.id,
            rater=self._public[rater],
            kind=self.kind,
            design=self._digest(rater),
            answers=rows,
            tok=self._token(rater),
            scripted=scripted,
            headphones=headphones,
            secret=self._secret if scripted else None,
        )

    def _right_headphones(self, rater: str) -> list[int]:
        """The headphone check's right answers for ``rater`` (the quiet tone's interval)."""
        return [order.index(1) for order in pg.headphone_orders(self._secret, rater)]

    def _check(self, doc: dict[str, Any]) -> tuple[str, ListeningSession]:
        """Validate one parsed answer file; returns its rater and a filled copy of the session."""
        rater = self._identify(doc)
        if doc["scripted"] and not _same(
            doc.get("organiser"), ans.organiser_mark(self._secret, doc["mac"])
        ):
            raise ans.Refused(
                f"marks rater {rater}'s answers as a scripted rater's; only the organiser's "
                "scripted raters are marked so (a rater's page never is)"
            )
        self._check_headphones(doc)
        session = self._sessions[rater].sibling(
            self._rater_seeds[rater], key=ans.keyed(self._secret, "key", rater)
        )
        for t, value, heard in doc["answers"]:
            self._check_answer(rater, session, t, value, dict(heard), scripted=doc["scripted"])
        return rater, session

    def _identify(self, doc: dict[str, Any]) -> str:
        """The rater whose page made ``doc``, its campaign, kind, design and MAC checked (a
        failure is a forgery: one sentence for a sender, whichever rule it broke)."""
        if doc["campaign"] != self.id:
            raise ans.Refused(
                f"belongs to campaign {doc['campaign']!r}, not to {self.id!r}", forged=True
            )
        rater = self._by_public.get(doc["rater"])
        if rater is None:
            ans.check_mac(doc, "0" * 64)  # as long as a real rater's check: ids stay unguessable
            raise ans.Refused(
                f"names rater {doc['rater']!r}, who is not a rater of this campaign", forged=True
            )
        if doc["kind"] != self.kind:
            raise ans.Refused(
                f"is a {doc['kind']!r} answer file; this campaign is {self.kind!r}", forged=True
            )
        if doc["design"] != self._digest(rater):
            raise ans.Refused(
                f"tampered: made with a page whose design differs from the one issued to "
                f"rater {rater} (the page was edited, or is another rater's page renamed)",
                forged=True,
            )
        if not ans.check_mac(doc, self._token(rater)):
            raise ans.Refused(
                f"tampered: the answers or the rater id changed after rater {rater}'s page "
                "saved them (the MAC does not match)",
                forged=True,
            )
        return rater

    def _check_headphones(self, doc: dict[str, Any]) -> None:
        phones = doc["headphones"]
        if (
            self.headphone_check
            and doc["answers"]
            and (
                not isinstance(phones, list)
                or len(phones) != pg.HEADPHONE_TRIALS
                or any(i > 2 for i in phones)
            )
        ):
            raise ans.Refused("the headphone check was not answered (every round, tones 1-3)")

    def _check_answer(
        self,
        rater: str,
        session: ListeningSession,
        t: int,
        value: Any,
        ms: dict[str, int],
        *,
        scripted: bool,
    ) -> None:
        """One answer of ``rater``'s file into ``session``: its trial, the clips heard (at
        least the minimum, at most what the page could play), the answer itself."""
        if not 0 <= t < len(session.trials):
            raise ans.Refused(f"answers trial {t}, which rater {rater} was not given")
        trial = session.trials[t]
        need_ms, most = session.need_ms, self.most_heard_ms
        for label, got in ms.items():
            if label not in session._playable(trial):
                raise ans.Refused(f"trial {t}: heard label {label!r} is not in that trial")
            if got > most:
                raise ans.Refused(
                    f"trial {t}: clip {label} claims {_secs(got)} s heard, more than its page "
                    f"could play ({_secs(most)} s: the clip's length)"
                )
        short = [label for label in trial.labels if ms.get(label, 0) < need_ms]
        if short:
            label = short[0]
            raise ans.Refused(
                f"trial {t}: clip {label} was heard for {_secs(ms.get(label, 0))} s, "
                f"less than the {_secs(need_ms)} s every clip must be heard before an "
                f"answer counts ({MINIMUM_RULE})"
            )
        for label, got in ms.items():
            session.mark_played(t, label, seconds=got / 1000)
        try:
            answer = controls.from_file(session.controls(t), value)
            session._answer(t, answer, replace=False, scripted=scripted)
        except (ValueError, RuntimeError) as exc:
            raise ans.Refused(f"trial {t}: {exc}") from None

    @property
    def need_ms(self) -> int:
        """Milliseconds of each clip a rater must hear before an answer counts: what every
        page states and waits for, and what ``collect`` and the server enforce."""
        return self._sessions[self.raters[0]].need_ms

    @property
    def most_heard_ms(self) -> int:
        """The most milliseconds of one clip a page can report heard: the clip's length (its
        MP3 a frame or two longer), time at a faster playback rate never counted."""
        return math.ceil(1000 * self._sessions[self.raters[0]].seconds) + 100

    def collect(self, source: Any, /) -> pd.DataFrame:
        """Validate and merge answer files; returns :meth:`results` (every answer so far).

        ``source``: a path (a file, or a directory of ``*.json``), a list of paths,
        dicts or bytes, or a served campaign's :class:`~songlab.listening.crowd.CrowdServer`
        (the answer files of the raters who finished). Refused, each by name with the reason, the others kept:
        an entry that is not a regular file (a directory, a symbolic link, a device),
        one over 1 MB or nested too deep, not JSON, not an answer file; another
        campaign's file, an unknown rater, an edited page or edited answers (forged); a
        copy of a file already collected from elsewhere (replayed); a second, different
        file of a rater already collected (a later file that only adds answers replaces
        it); an answer whose clips were not heard for the minimum. A file collected
        before from the same place is passed over. Refused files are listed in one
        :class:`CollectError`, raised after the accepted ones were kept.
        """
        refused, accepted, unchanged = [], 0, 0
        for name, raw in sources(source):
            try:
                doc = ans.parse(raw)
                # checked first: a file edited after its page signed it is "tampered", even
                # when it carries the MAC of a file already collected
                rater, session = self._check(doc)
                seen = self._seen.get(doc["mac"])
                if seen == name:
                    unchanged += 1
                    continue
                if seen is not None:
                    raise ans.Refused(
                        f"replayed: the same answer file as {seen}, already collected"
                    )
                self._keep(rater, session, Received(name, doc))
                self._seen[doc["mac"]] = name
                accepted += 1
            except ans.Refused as exc:
                refused.append((name, str(exc)))
        if refused:
            raise CollectError(refused, accepted, unchanged)
        return self.results()

    def _keep(self, rater: str, session: ListeningSession, received: Received) -> None:
        old = self.received.get(rater)
        if old is not None:
            before = {a[0]: a for a in old.doc["answers"]}
            now = {a[0]: a for a in received.doc["answers"]}
            if not (
                set(before) < set(now)
                and all(now[t][:2] == a[:2] for t, a in before.items())
                and old.doc["headphones"] == received.doc["headphones"]
            ):
                raise ans.Refused(
                    f"duplicate rater {rater}: a different answer file was already collected "
                    f"from {old.source} (kept; only a file that adds answers replaces it)"
                )
        self.received[rater] = received
        self._filled[rater] = session

    # -- who to trust, and the results ---------------------------------------------------
    def exclusions(self) -> pd.DataFrame:
        """One row per collected rater: checks failed, flat-lining, the headphone check, the
        protocol's screening, whether the rater is ``excluded`` and the ``reason``, each rule
        with its source (:mod:`songlab.listening.raters`)."""
        collected = [r for r in self.raters if r in self._filled]
        screening = None
        frame = self._frame(collected)
        if not frame.empty:
            screening = protocol(self.kind).screen(frame, options=self.options)
        return rules.exclusions(
            [
                rules.Rater(
                    r,
                    self._filled[r],
                    self.received[r].doc,
                    self._right_headphones(r) if self.headphone_check else None,
                )
                for r in collected
            ],
            screening=screening,
            fail_limit=self.fail_limit,
        )

    def _frame(self, raters: Sequence[str]) -> pd.DataFrame:
        frames = []
        for rater in raters:
            session = self._filled[rater]
            session._revealed = True  # the organiser's copy; pages never see it
            f = session.results()
            f.insert(0, "rater", pd.Series(rater, index=f.index, dtype="string"))
            frames.append(f)
        if not frames:
            empty = self._sessions[self.raters[0]].sibling(0)
            empty._revealed = True
            f = empty.results()
            f.insert(0, "rater", pd.Series([], index=f.index, dtype="string"))
            return f
        return pd.concat(frames, ignore_index=True)

    def results(self, *, raters: str = "all", answers: str = "all") -> pd.DataFrame:
        """One row per answer (preference/MUSHRA: per label) of the collected raters, with
        models, ``scripted`` (a scripted rater's) and ``excluded`` (see :meth:`exclusions`);
        the rater checks are left out. ``raters``: ``"all"``, ``"kept"`` or ``"excluded"``;
        ``answers``: ``"all"``, ``"person"`` or ``"scripted"``."""
        if raters not in RATERS:
            raise ListeningError("raters", f"must be one of {', '.join(RATERS)}; got {raters!r}")
        if answers not in ANSWERS:
            raise ListeningError("answers", f"must be one of {', '.join(ANSWERS)}; got {answers!r}")
        frame = self._frame([r for r in self.raters if r in self._filled])
        out = set(self.exclusions().query("excluded")["rater"]) if len(frame) else set()
        frame.insert(2, "excluded", frame["rater"].isin(out).astype("boolean"))
        if raters != "all":
            frame = frame[frame["excluded"] == (raters == "excluded")]
        if answers != "all":
            frame = frame[frame["scripted"] == (answers == "scripted")]
        return frame.reset_index(drop=True)

    def stats(
        self,
        *,
        raters: str = "kept",
        answers: str | None = None,
        baseline: str | None = None,
        confidence: float = 0.95,
    ) -> dict[str, pd.DataFrame]:
        """Panel statistics (the protocol's ``panel_stats``) of the ``raters`` kept (default)
        or ``"all"`` of them, with the ``"exclusions"`` table beside them.

        ``answers``: a person's, the scripted raters' or ``"all"``; by default the only kind
        there is (a mix of the two is refused unless asked for). Every frame says whose
        answers and which raters it counts (``answered_by`` column; ``attrs``).
        preference: ``{"shares", "ranking"}``; abx: ``{"raters", "pooled"}``; mushra:
        ``{"screening" (with a reference), "models", "pairs"}``; acr: ``{"models", "pairs"}``.
        """
        if raters not in ("kept", "all"):
            raise ListeningError("raters", f"must be 'kept' or 'all'; got {raters!r}")
        everything = self.results()
        if everything.empty:
            raise ListeningError("answers", "none collected yet (call collect first)")
        kinds = {bool(x) for x in everything["scripted"]}
        if answers is None:
            if len(kinds) > 1:
                raise ListeningError(
                    "answers",
                    "the campaign holds answers of people and of scripted raters; pass "
                    "answers='person', 'scripted' or 'all' (mixed)",
                )
            answers = "scripted" if kinds == {True} else "person"
        frame = self.results(raters=raters, answers=answers)
        exclusions = self.exclusions()
        if frame.empty:
            raise ListeningError(
                "raters",
                f"no {answers} answers of {raters} raters: {int(exclusions['excluded'].sum())} "
                "of the raters were excluded (see exclusions())",
            )
        out = protocol(self.kind).panel_stats(
            frame, options=self.options, baseline=baseline, confidence=confidence
        )
        counted = frame["rater"].nunique()
        for f in out.values():
            f.insert(0, "answered_by", pd.Series(_BY[answers], index=f.index, dtype="string"))
            f.attrs.update(answers=answers, raters=raters, counted=counted)
        out["exclusions"] = exclusions
        return out

    def simulate(self, rater: str, /, **behaviour: Any) -> dict[str, Any]:
        """The answer file of a scripted ``rater`` (:func:`~songlab.listening.simulate`'s
        options: ``prefer``, ``p``, ``p_correct``, ``scores``, ``noise``, ``attentive``,
        ``seed``...), marked scripted. An inattentive one (``attentive`` < 1) also guesses
        the headphone check."""
        session = self._sessions[self._rater(rater)].sibling(self._rater_seeds[rater])
        simulate(session, **behaviour)
        phones = None
        if self.headphone_check:
            phones = self._right_headphones(rater)
            rng = np.random.default_rng(behaviour.get("seed", 0))
            attentive = float(behaviour.get("attentive", 1.0))
            phones = [p if rng.random() < attentive else int(rng.integers(3)) for p in phones]
        return self.answer_file(rater, session.answers, headphones=phones, scripted=True)

    def save(self, path: str | Path, /) -> Path:
        """Save the campaign (its secret, seed, options and every collected file) as JSON,
        a file only its owner can read (0600).

        Keep this file on the organiser's machine: its secret makes rater tokens, and
        draws the designs and lead-ins. Reopen with :func:`load_campaign` and the same clips.
        """
        doc = {
            "format": CAMPAIGN_FORMAT,
            "id": self.id,
            "kind": self.kind,
            "seed": self._seed,
            "raters": list(self.raters),
            "models": list(self.models),
            "options": self._made_with,
            "secret": self._secret.hex(),
            "digests": {r: self._digest(r) for r in self.raters},
            "received": [{"source": r.source, "doc": r.doc} for r in self.received.values()],
            "seen": self._seen,
        }
        return write_atomic(Path(path), json.dumps(doc).encode("utf-8"))

    def to_csv(self, path: str | Path, /) -> Path:
        """Write :meth:`results` (every rater, ``excluded`` and ``scripted`` marked) to CSV,
        every text cell inert (a prompt like ``=HYPERLINK(...)`` is written
        ``'=HYPERLINK(...)``, as the ledger's exports do); returns the path."""
        from songlab.ledger.export import inert
        from songlab.localfiles import replace_atomically

        frame = self.results().map(lambda v: inert(v) if isinstance(v, str) else v)
        # private (0600) and whole: a temporary file beside it, renamed over it
        return replace_atomically(path, lambda tmp: frame.to_csv(tmp, index=False))

    def progress(self) -> pd.DataFrame:
        """Per rater: their public id, trials, answered, source of the collected file (None if
        not yet)."""
        rows = []
        for r in self.raters:
            got = self.received.get(r)
            rows.append(
                {
                    "rater": r,
                    "public_id": self._public[r],
                    "trials": len(self._sessions[r].trials),
                    "answered": len(got.doc["answers"]) if got else 0,
                    "source": got.source if got else None,
                }
            )
        return pd.DataFrame(rows).astype(
            {"rater": "string", "public_id": "string", "source": "string"}
        )


def load_campaign(path: str | Path, clips: Mapping[str, Sequence[Any]], /) -> Campaign:
    """Reopen a saved campaign with the clips it was made with; collected files are re-checked."""
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ListeningError("path", f"is not a readable campaign file ({exc})") from None
    if not isinstance(doc, dict) or doc.get("format") != CAMPAIGN_FORMAT:
        raise ListeningError("path", f"is not a {CAMPAIGN_FORMAT} file")
    order = doc.get("models", list(clips))  # the designs were drawn over the models in order
    if sorted(order) != sorted(clips):
        raise ListeningError("clips", f"must be the models {order}; got {list(clips)}")
    clips = {m: clips[m] for m in order}
    c = Campaign(
        doc["kind"],
        clips,
        raters=doc["raters"],
        seed=doc["seed"],
        secret=bytes.fromhex(doc["secret"]),
        **doc["options"],
    )
    if c.id != doc["id"]:
        raise ListeningError("clips", "are not the clips this campaign was made with")
    c._digests.update(doc["digests"])  # the pages issued; re-encoding them is not needed
    for item in doc["received"]:
        rater, session = c._check(item["doc"])
        c.received[rater] = Received(shown(item["source"]), item["doc"])
        c._filled[rater] = session
    c._seen.update(doc.get("seen", {}))
    return c


def campaign(
    kind: str,
    clips: Mapping[str, Sequence[Any]],
    /,
    *,
    raters: int | Sequence[str],
    seed: int | None = None,
    **options: Any,
) -> Campaign:
    """A blind campaign of ``kind`` over ``raters`` (a count or a list of ids).

    Options: those of the protocol (``design``, ``allow_tie``, ``both_bad``, ``reference``,
    ``anchor``, ``mid_anchor``, ...) and of every session (``repeats``, ``prompts``, ``sr``,
    ``seconds``: the common length, ``min_heard``: seconds of each clip a rater must hear
    before answering, default 5, or the whole clip), plus ``title``, ``bitrate`` (page
    MP3, default 96 kbit/s), ``gold`` and ``traps`` (rater checks per rater, default 2
    each), ``headphone_check`` (default False), ``fail_limit`` (checks failed that exclude
    a rater, default 2) and ``secret`` (bytes; default 32 random bytes: give the same seed
    and secret to rebuild a campaign).
    """
    return Campaign(kind, clips, raters=raters, seed=seed, **options)


def _same(given: Any, expected: str) -> bool:
    return isinstance(given, str) and hmac.compare_digest(given, expected)


def _secs(ms: int) -> str:
    """Milliseconds as seconds, to the millisecond, without trailing zeros: 0.0, 0.4, 0.749
    (the rater page's ``seconds`` words them the same)."""
    text = f"{ms / 1000:.3f}".rstrip("0")
    return text + "0" if text.endswith(".") else text
