"""Listening campaigns: one blind design per rater, rater pages, collected answer files.

``campaign(kind, clips, raters=N, seed=...)`` builds one session of ``kind``
(``"preference"``, ``"abx"``, ``"mushra"``) per rater: the same loudness-matched
clips (matched once), each rater with its own trial order, label positions and
page encoding, drawn from the campaign seed (``SeedSequence(seed).spawn``). The
answer key stays in the campaign (on the organiser's machine); pages and answer
files carry labels only. ``export`` writes the pages, ``collect`` validates and
merges answer files, ``results`` is one frame of every answer with rater and model.
"""

from __future__ import annotations

import hashlib
import json
import secrets
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, cast

import numpy as np
import pandas as pd

import songlab.listening._answers as ans
import songlab.listening.page as pg
import songlab.listening.panel as panel
from songlab.listening._errors import ListeningError
from songlab.listening._intake import CollectError, Received, rater_ids, sources
from songlab.listening._protocols import MID_ANCHOR
from songlab.listening._simulate import simulate
from songlab.listening.session import KINDS, ListeningSession

__all__ = ["CAMPAIGN_FORMAT", "Campaign", "CollectError", "campaign", "load_campaign"]

CAMPAIGN_FORMAT = "songlab.campaign/1"


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
        min_play: float = 2.0,
        bitrate: int = pg.DEFAULT_BITRATE,
        **options: Any,
    ) -> None:
        if kind not in KINDS:
            raise ListeningError("kind", f"must be one of {', '.join(KINDS)}; got {kind!r}")
        if seed is None:
            seed = cast(int, np.random.SeedSequence().entropy) % (2**63)  # fresh: an int
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            raise ListeningError("seed", f"must be a non-negative int or None; got {seed!r}")
        if secret is not None and (not isinstance(secret, bytes) or len(secret) < 16):
            raise ListeningError("secret", "must be at least 16 random bytes (or None)")
        if not isinstance(min_play, int | float) or not 0 < min_play <= 60:
            raise ListeningError("min_play", f"must be seconds in (0, 60]; got {min_play!r}")
        if (
            isinstance(bitrate, bool)
            or not isinstance(bitrate, int)
            or not 32_000 <= bitrate <= 320_000
        ):
            raise ListeningError("bitrate", f"must be bits/s in 32000..320000; got {bitrate!r}")
        if not isinstance(title, str) or not title.strip():
            raise ListeningError("title", "must be a non-empty string")
        self.kind, self.title, self.min_play, self.bitrate = kind, title, float(min_play), bitrate
        self.raters = tuple(rater_ids(raters))
        children = np.random.SeedSequence(seed).spawn(len(self.raters))
        seeds = [int(c.generate_state(1, np.uint64)[0] % (2**63)) for c in children]
        base = KINDS[kind](clips, seed=seeds[0], **options)  # matches loudness once
        self._rater_seeds = dict(zip(self.raters, seeds, strict=False))
        self._sessions = {r: base.sibling(s) for r, s in self._rater_seeds.items()}
        self.models, self.prompts = base.models, base.prompts
        self.options = {k: v for k, v in base.options.items()}
        ident = json.dumps(
            [
                CAMPAIGN_FORMAT,
                kind,
                seed,
                list(self.raters),
                base._fingerprint,
                sorted(self.options.items()),
            ],
            default=str,
        )
        self.id = "cmp-" + hashlib.sha256(ident.encode()).hexdigest()[:16]
        self._seed, self._secret = seed, secret or secrets.token_bytes(32)
        self._made_with = dict(options, title=title, min_play=self.min_play, bitrate=bitrate)
        self._designs: dict[str, str] = {}
        self._digests: dict[str, str] = {}
        self._pool = pg.AudioPool(f"{self.id}|{seed}", bitrate=bitrate)
        self.received: dict[str, Received] = {}
        self._filled: dict[str, ListeningSession] = {}

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

    def design(self, rater: str, /) -> str:
        """The design text embedded in ``rater``'s page (built once, deterministic)."""
        rater = self._rater(rater)
        if rater not in self._designs:
            self._designs[rater] = pg.design_text(
                self._sessions[rater],
                campaign=self.id,
                rater=rater,
                min_play=self.min_play,
                pool=self._pool,
            )
        return self._designs[rater]

    def _token(self, rater: str) -> str:
        return ans.token(self._secret, self.id, rater, self._digest(rater))

    def _digest(self, rater: str) -> str:
        if rater not in self._digests:
            self._digests[rater] = ans.design_digest(self.design(rater))
        return self._digests[rater]

    def page(self, rater: str, /) -> str:
        """``rater``'s self-contained HTML page."""
        return pg.render(self.design(rater), token=self._token(rater), title=self.title)

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
    def answer_file(self, rater: str, answers: Mapping[int, Any], /) -> dict[str, Any]:
        """The answer file ``rater``'s page would save for ``answers`` ({trial: session answer});
        every clip counts as played. For scripted raters and tests."""
        session = self._sessions[self._rater(rater)]
        rows = [
            [t, ans.encode_answer(self.kind, a), sorted(session._playable(session.trials[t]))]
            for t, a in sorted(answers.items())
        ]
        digest = self._digest(rater)
        return ans.document(
            campaign=self.id,
            rater=rater,
            kind=self.kind,
            design=digest,
            answers=rows,
            tok=self._token(rater),
        )

    def _check(self, doc: dict[str, Any]) -> tuple[str, ListeningSession]:
        """Validate one parsed answer file; returns its rater and a filled copy of the session."""
        if doc["campaign"] != self.id:
            raise ans.Refused(f"belongs to campaign {doc['campaign']!r}, not to {self.id!r}")
        rater = doc["rater"]
        if rater not in self._sessions:
            raise ans.Refused(f"names rater {rater!r}, who is not a rater of this campaign")
        if doc["kind"] != self.kind:
            raise ans.Refused(f"is a {doc['kind']!r} answer file; this campaign is {self.kind!r}")
        if doc["design"] != self._digest(rater):
            raise ans.Refused(
                f"tampered: made with a page whose design differs from the one issued to "
                f"rater {rater} (the page was edited, or is another rater's page renamed)"
            )
        if not ans.check_mac(doc, self._token(rater)):
            raise ans.Refused(
                f"tampered: the answers or the rater id changed after rater {rater}'s page "
                "saved them (the MAC does not match)"
            )
        session = self._sessions[rater].sibling(self._rater_seeds[rater])
        for t, value, played in doc["answers"]:
            if not 0 <= t < len(session.trials):
                raise ans.Refused(f"answers trial {t}, which rater {rater} was not given")
            for label in played:
                if label not in session._playable(session.trials[t]):
                    raise ans.Refused(f"trial {t}: played label {label!r} is not in that trial")
                session.mark_played(t, label)
            try:
                session.answer(t, ans.decode_answer(self.kind, value))
            except (ListeningError, RuntimeError) as exc:
                raise ans.Refused(f"trial {t}: {exc}") from None
        return rater, session

    def collect(self, source: Any, /) -> pd.DataFrame:
        """Validate and merge answer files; returns :meth:`results` (every answer so far).

        ``source``: a path (a file, or a directory of ``*.json``), a list of paths,
        dicts or bytes, or a :class:`~songlab.listening.server.CampaignServer`
        (its received files). Refused: another campaign's file, an unknown rater,
        an edited page or answers (tampered), a second different file of a rater
        already collected (a later file that only adds answers replaces it), an
        answer before every clip was played. Refused files are listed in one
        :class:`CollectError`, raised after the accepted ones were kept.
        """
        refused, accepted = [], 0
        for name, raw in sources(source):
            try:
                doc = ans.parse(raw)
                rater, session = self._check(doc)
                self._keep(rater, session, Received(name, doc))
                accepted += 1
            except ans.Refused as exc:
                refused.append((name, str(exc)))
        if refused:
            raise CollectError(refused, accepted)
        return self.results()

    def _keep(self, rater: str, session: ListeningSession, received: Received) -> None:
        old = self.received.get(rater)
        if old is not None:
            if old.doc["mac"] == received.doc["mac"]:
                raise ans.Refused(
                    f"duplicate: rater {rater} was already collected from {old.source}"
                )
            before = {a[0]: a for a in old.doc["answers"]}
            now = {a[0]: a for a in received.doc["answers"]}
            if not (set(before) < set(now) and all(now[t] == a for t, a in before.items())):
                raise ans.Refused(
                    f"duplicate rater {rater}: a different answer file was already collected "
                    f"from {old.source} (kept; only a file that adds answers replaces it)"
                )
        self.received[rater] = received
        self._filled[rater] = session

    def results(self) -> pd.DataFrame:
        """One row per answer (preference/MUSHRA: per label) of every collected rater, with models."""
        frames = []
        for rater in self.raters:
            session = self._filled.get(rater)
            if session is None:
                continue
            session._revealed = True  # the organiser's copy; pages never see it
            f = session.results()
            f.insert(0, "rater", pd.array([rater] * len(f), dtype="string"))
            frames.append(f)
        if not frames:
            empty = self._sessions[self.raters[0]].sibling(0)
            empty._revealed = True
            f = empty.results()
            f.insert(0, "rater", pd.array([], dtype="string"))
            return f
        return pd.concat(frames, ignore_index=True)

    def simulate(self, rater: str, /, **behaviour: Any) -> dict[str, Any]:
        """The answer file of a scripted ``rater`` (:func:`~songlab.listening.simulate`'s
        options: ``prefer``, ``p``, ``p_correct``, ``scores``, ``noise``, ``seed``...)."""
        session = self._sessions[self._rater(rater)].sibling(self._rater_seeds[rater])
        simulate(session, **behaviour)
        return self.answer_file(rater, session.answers)

    def save(self, path: str | Path, /) -> Path:
        """Save the campaign (its secret, seed, options and every collected file) as JSON.

        Keep this file on the organiser's machine: its secret makes rater tokens.
        Reopen with :func:`load_campaign` and the same clips.
        """
        doc = {
            "format": CAMPAIGN_FORMAT,
            "id": self.id,
            "kind": self.kind,
            "seed": self._seed,
            "raters": list(self.raters),
            "options": self._made_with,
            "secret": self._secret.hex(),
            "digests": {r: self._digest(r) for r in self.raters},
            "received": [{"source": r.source, "doc": r.doc} for r in self.received.values()],
        }
        path = Path(path)
        tmp = path.with_name(path.name + ".part")
        tmp.write_text(json.dumps(doc), encoding="utf-8")
        tmp.replace(path)
        return path

    def stats(self, *, baseline: str | None = None, confidence: float = 0.95) -> dict[str, Any]:
        """Panel statistics of every collected answer (:mod:`songlab.listening.panel`).

        preference: ``{"shares", "ranking"}``; abx: ``{"raters", "pooled"}``;
        mushra: ``{"screening" (with a reference), "models", "pairs"}``.
        """
        frame = self.results()
        if frame.empty:
            raise ListeningError("answers", "none collected yet (call collect first)")
        if self.kind == "preference":
            return {
                "shares": panel.preference_shares(frame, confidence=confidence),
                "ranking": panel.bradley_terry(frame, baseline=baseline, confidence=confidence),
            }
        if self.kind == "abx":
            return panel.abx_panel(frame, confidence=confidence)
        mid = MID_ANCHOR if self.options.get("mid_anchor") else None
        return panel.mushra_panel(
            frame, reference=self.options.get("reference"), mid_anchor=mid, confidence=confidence
        )

    def progress(self) -> pd.DataFrame:
        """Per rater: trials, answered, source of the collected file (None if not yet)."""
        rows = []
        for r in self.raters:
            got = self.received.get(r)
            rows.append(
                {
                    "rater": r,
                    "trials": len(self._sessions[r].trials),
                    "answered": len(got.doc["answers"]) if got else 0,
                    "source": got.source if got else None,
                }
            )
        return pd.DataFrame(rows).astype({"rater": "string", "source": "string"})


def load_campaign(path: str | Path, clips: Mapping[str, Sequence[Any]], /) -> Campaign:
    """Reopen a saved campaign with the clips it was made with; collected files are re-checked."""
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ListeningError("path", f"is not a readable campaign file ({exc})") from None
    if not isinstance(doc, dict) or doc.get("format") != CAMPAIGN_FORMAT:
        raise ListeningError("path", f"is not a {CAMPAIGN_FORMAT} file")
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
        c.received[rater] = Received(item["source"], item["doc"])
        c._filled[rater] = session
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

    Options: those of the session kind (``design``, ``allow_tie``, ``reference``,
    ``anchor``, ``mid_anchor``, ``repeats``, ``prompts``, ``sr``, ...) plus
    ``title``, ``min_play`` (seconds a clip must play before it counts as played,
    default 2; a shorter clip must play to its end), ``bitrate`` (page MP3,
    default 96 kbit/s) and ``secret`` (bytes; default 32 random bytes).
    """
    return Campaign(kind, clips, raters=raters, seed=seed, **options)
