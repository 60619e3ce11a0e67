"""The served campaign's store: one schema and one code path over SQLite and PostgreSQL.

``open_store(url)`` takes ``sqlite:///PATH`` (the embedded default: WAL, ``synchronous=NORMAL``
(every commit survives a killed process; a power cut can lose the last ones),
the file made 0600 through :mod:`songlab.localfiles`, every write transaction ``BEGIN
IMMEDIATE`` so writers from several worker processes queue instead of failing) or
``postgresql://...`` (psycopg 3; several replicas may share one database). Everything is
SQLAlchemy Core: the same statements run on both.

What makes it lossless and exact under concurrency, whatever the database:

* a slot (one rater's design) is taken by a compare-and-set, ``UPDATE slots SET holder = :a
  WHERE holder IS NULL``: of two arrivals racing for one slot, exactly one changes a row
  (PostgreSQL re-checks the condition after the first commits), so no slot is given twice;
* an answer is a row keyed by the id its page made (``answers`` primary key), and one per
  assignment and trial (a unique constraint): a retried POST finds its row and is
  acknowledged again, a different answer to an answered trial is refused, nothing is
  stored twice;
* every write to an assignment first locks its row (``FOR UPDATE``; SQLite's ``BEGIN
  IMMEDIATE`` already serialises writers), so two answers completing it at once see each
  other;
* a page's audio tokens are inserted ``ON CONFLICT DO NOTHING``: a token another replica
  made known after this one looked is skipped, and the page's other tokens are still kept.

Times are seconds since the epoch, from the caller (tests pass their own clock).
"""

from __future__ import annotations

import contextlib
import json
import secrets
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from songlab.listening._errors import ListeningError
from songlab.localfiles import ensure_private_file, private_dir

__all__ = ["ACTIVE", "Assignment", "COMPLETE", "SCREENED_OUT", "Store", "TIMED_OUT", "open_store"]

ACTIVE, COMPLETE, TIMED_OUT, SCREENED_OUT = "active", "complete", "timed_out", "screened_out"

metadata = sa.MetaData()
campaigns = sa.Table(
    "campaigns",
    metadata,
    sa.Column("id", sa.String(40), primary_key=True),
    sa.Column("kind", sa.String(40), nullable=False),
    sa.Column("state", sa.String(16), nullable=False),  # open, closed
    sa.Column("settings", sa.Text, nullable=False),  # JSON: quotas, timeout, platform codes
    sa.Column("created_at", sa.Float, nullable=False),
)
slots = sa.Table(
    "slots",
    metadata,
    sa.Column("campaign", sa.String(40), primary_key=True),
    sa.Column("rater", sa.String(40), primary_key=True),
    sa.Column("position", sa.Integer, nullable=False),
    sa.Column("holder", sa.String(40), nullable=True),  # the assignment holding it
    sa.Column("done", sa.Boolean, nullable=False, default=False),
)
assignments = sa.Table(
    "assignments",
    metadata,
    sa.Column("id", sa.String(40), primary_key=True),
    sa.Column("campaign", sa.String(40), nullable=False),
    sa.Column("rater", sa.String(40), nullable=False),
    sa.Column("participant", sa.String(64), nullable=False),  # a pseudonym, never a platform id
    sa.Column("platform", sa.String(16), nullable=False),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("started_at", sa.Float, nullable=False),
    sa.Column("last_seen", sa.Float, nullable=False),
    sa.Column("finished_at", sa.Float, nullable=True),
    sa.Column("headphones", sa.Text, nullable=True),  # JSON list, once answered
    sa.Column("kept", sa.Boolean, nullable=True),  # passed the checks (set at completion)
    sa.Column("reason", sa.Text, nullable=True),
    sa.Index("assignments_by_participant", "campaign", "participant"),
    sa.Index("assignments_by_status", "campaign", "status"),
)
answers = sa.Table(
    "answers",
    metadata,
    sa.Column("campaign", sa.String(40), primary_key=True),
    sa.Column("id", sa.String(80), primary_key=True),  # made by the page
    sa.Column("assignment", sa.String(40), nullable=False),
    sa.Column("trial", sa.Integer, nullable=False),
    sa.Column("value", sa.Text, nullable=False),  # canonical JSON of the answer
    sa.Column("heard", sa.Text, nullable=False),  # canonical JSON [[label, ms], ...]
    sa.Column("scripted", sa.Boolean, nullable=False),
    sa.Column("received_at", sa.Float, nullable=False),
    sa.UniqueConstraint("assignment", "trial", name="one_answer_per_trial"),
)
platform_ids = sa.Table(  # the only place a platform's own ids are kept (payments need them)
    "platform_ids",
    metadata,
    sa.Column("campaign", sa.String(40), primary_key=True),
    sa.Column("participant", sa.String(64), primary_key=True),
    sa.Column("platform", sa.String(16), nullable=False),
    sa.Column("fields", sa.Text, nullable=False),  # JSON: the platform's ids of this person
)
audio = sa.Table(
    "audio",
    metadata,
    sa.Column("campaign", sa.String(40), primary_key=True),
    sa.Column("token", sa.String(64), primary_key=True),
    sa.Column("element", sa.Text, nullable=False),  # JSON: condition, prompt, variant
    sa.Column("data", sa.LargeBinary, nullable=True),  # the MP3, once encoded
)


@dataclass(frozen=True)
class Assignment:
    """One participant's hold on one slot (a rater's design)."""

    id: str
    campaign: str
    rater: str
    participant: str
    platform: str
    status: str
    started_at: float
    last_seen: float
    finished_at: float | None
    headphones: list[int] | None
    kept: bool | None
    reason: str | None

    @classmethod
    def of(cls, row: Any) -> Assignment:
        phones = json.loads(row.headphones) if row.headphones else None
        return cls(
            row.id,
            row.campaign,
            row.rater,
            row.participant,
            row.platform,
            row.status,
            row.started_at,
            row.last_seen,
            row.finished_at,
            phones,
            row.kept,
            row.reason,
        )


def _engines(url: str) -> tuple[Engine, Engine]:
    """Engines for ``url`` (``sqlite:///PATH`` or ``postgresql://...``): one for write
    transactions, one for reads. On SQLite a write transaction starts ``BEGIN IMMEDIATE`` (it
    takes the write lock first, so two writers queue instead of one failing on upgrade) and a
    read a plain ``BEGIN`` (WAL readers never wait). Two pools on PostgreSQL too: a
    transaction never waits for a second connection from the pool it holds one of (that
    deadlocked a full pool: every thread in a transaction, waiting for a read)."""
    if url.startswith("sqlite:///"):
        path = url.removeprefix("sqlite:///")
        if path in ("", ":memory:"):
            raise ListeningError("db", "must be a file (sqlite:///PATH): a campaign is kept")
        target = Path(path).expanduser()
        private_dir(target.parent)
        ensure_private_file(target)  # 0600; SQLite gives its -wal and -shm files its mode
        made = []
        for begin in ("BEGIN IMMEDIATE", "BEGIN"):
            engine = sa.create_engine(
                f"sqlite:///{target}",
                connect_args={"timeout": 60, "check_same_thread": False},
                pool_size=20,
                max_overflow=20,
                pool_timeout=120,
            )
            sa.event.listen(engine, "connect", _sqlite_connect)
            sa.event.listen(engine, "begin", _begin(begin))
            made.append(engine)
        return made[0], made[1]
    if url.startswith(("postgresql://", "postgresql+psycopg://", "postgres://")):
        rest = url.split("://", 1)[1]
        writes, reads = (
            sa.create_engine(
                f"postgresql+psycopg://{rest}",
                pool_size=10,
                max_overflow=20,
                pool_timeout=120,
                pool_pre_ping=True,
            )
            for _ in range(2)
        )
        return writes, reads
    raise ListeningError("db", f"must be sqlite:///PATH or postgresql://...; got {url!r}")


def _begin(statement: str) -> Any:
    def begin(conn: Connection) -> None:
        conn.exec_driver_sql(statement)

    return begin


def _sqlite_connect(dbapi: Any, _record: Any) -> None:
    dbapi.isolation_level = None  # SQLAlchemy's begin event issues BEGIN IMMEDIATE itself
    for pragma in ("journal_mode=WAL", "synchronous=NORMAL", "busy_timeout=60000"):
        dbapi.execute(f"PRAGMA {pragma}")


def _insert_missing(conn: Connection, table: sa.Table) -> Any:
    """``INSERT ... ON CONFLICT DO NOTHING`` in ``conn``'s dialect (SQLite or PostgreSQL)."""
    from sqlalchemy.dialects import postgresql, sqlite

    if conn.dialect.name == "postgresql":
        return postgresql.insert(table).on_conflict_do_nothing()
    return sqlite.insert(table).on_conflict_do_nothing()


def open_store(url: str) -> Store:
    """The store at ``url``, its tables made if they are missing."""
    if not isinstance(url, str):
        raise ListeningError("db", f"must be a database URL; got {url!r}")
    engine, reads = _engines(url)
    metadata.create_all(engine, checkfirst=True)
    return Store(engine, reads, url)


class Store:
    """The campaign's tables and the few transactions the service runs on them."""

    def __init__(self, engine: Engine, reads: Engine, url: str) -> None:
        self.engine, self.reads, self.url = engine, reads, url
        # SQLite: one writer at a time in this process. Threads that all wait on SQLite's own
        # lock poll it with sleeps of up to 100 ms, and throughput collapses into those sleeps
        # (15 answers/s with 400 raters at once); queued here, they take turns at once.
        sqlite = engine.dialect.name == "sqlite"
        self._writer: Any = threading.Lock() if sqlite else contextlib.nullcontext()

    def __repr__(self) -> str:
        return f"Store({self.engine.dialect.name})"

    def close(self) -> None:
        self.engine.dispose()
        self.reads.dispose()

    @contextmanager
    def transaction(self) -> Iterator[Connection]:
        with self._writer, self.engine.begin() as conn:
            yield conn

    # -- the campaign and its slots ------------------------------------------------------
    def prepare(
        self, campaign: str, kind: str, raters: Sequence[str], settings: dict[str, Any], now: float
    ) -> dict[str, Any]:
        """Record ``campaign`` and its slots once (a restart finds them); ``settings`` given
        again replace the stored ones. Returns the settings in force."""
        with self.transaction() as conn:
            row = conn.execute(sa.select(campaigns).where(campaigns.c.id == campaign)).first()
            if row is None:
                conn.execute(
                    campaigns.insert().values(
                        id=campaign,
                        kind=kind,
                        state="open",
                        settings=json.dumps(settings),
                        created_at=now,
                    )
                )
                conn.execute(
                    slots.insert(),
                    [
                        {
                            "campaign": campaign,
                            "rater": r,
                            "position": i,
                            "holder": None,
                            "done": False,
                        }
                        for i, r in enumerate(raters)
                    ],
                )
            elif settings:
                conn.execute(
                    campaigns.update()
                    .where(campaigns.c.id == campaign)
                    .values(settings=json.dumps(settings))
                )
            else:
                settings = json.loads(row.settings)
        return settings

    def settings(self, campaign: str) -> dict[str, Any]:
        with self.reads.connect() as conn:
            text = conn.execute(
                sa.select(campaigns.c.settings).where(campaigns.c.id == campaign)
            ).scalar_one()
        loaded: dict[str, Any] = json.loads(text)
        return loaded

    def state(self, campaign: str) -> str:
        with self.reads.connect() as conn:
            value: str = conn.execute(
                sa.select(campaigns.c.state).where(campaigns.c.id == campaign)
            ).scalar_one()
        return value

    def close_campaign(self, campaign: str) -> None:
        with self.transaction() as conn:
            conn.execute(
                campaigns.update().where(campaigns.c.id == campaign).values(state="closed")
            )

    # -- arrivals ------------------------------------------------------------------------
    def find(self, campaign: str, participant: str) -> Assignment | None:
        """The participant's latest assignment, if any."""
        with self.reads.connect() as conn:
            row = conn.execute(
                sa.select(assignments)
                .where(assignments.c.campaign == campaign, assignments.c.participant == participant)
                .order_by(assignments.c.started_at.desc())
                .limit(1)
            ).first()
        return Assignment.of(row) if row is not None else None

    def get(self, assignment: str) -> Assignment | None:
        with self.reads.connect() as conn:
            row = conn.execute(sa.select(assignments).where(assignments.c.id == assignment)).first()
        return Assignment.of(row) if row is not None else None

    def assign(
        self,
        campaign: str,
        participant: str,
        platform: str,
        now: float,
        fields: dict[str, str] | None = None,
        rater: str | None = None,
    ) -> Assignment | None:
        """Give ``participant`` the first free slot (or ``rater``'s, for a fixed link); None
        when every slot is held or done. Never one slot to two assignments (compare-and-set)."""
        ident = secrets.token_hex(16)
        for _ in range(50):
            with self.transaction() as conn:
                query = sa.select(slots.c.rater).where(
                    slots.c.campaign == campaign, slots.c.holder.is_(None), slots.c.done.is_(False)
                )
                if rater is not None:
                    query = query.where(slots.c.rater == rater)
                free = conn.execute(query.order_by(slots.c.position).limit(8)).scalars().all()
                if not free:
                    return None
                pick = free[secrets.randbelow(len(free))]
                taken = conn.execute(
                    slots.update()
                    .where(
                        slots.c.campaign == campaign,
                        slots.c.rater == pick,
                        slots.c.holder.is_(None),
                    )
                    .values(holder=ident)
                ).rowcount
                if taken != 1:
                    continue  # another arrival took it first: try again
                values = dict(
                    id=ident,
                    campaign=campaign,
                    rater=pick,
                    participant=participant,
                    platform=platform,
                    status=ACTIVE,
                    started_at=now,
                    last_seen=now,
                )
                conn.execute(assignments.insert().values(**values))
                if fields is not None:
                    self._keep_ids(conn, campaign, participant, platform, fields)
                return self._locked(conn, ident)
        return None

    def _keep_ids(
        self,
        conn: Connection,
        campaign: str,
        participant: str,
        platform: str,
        fields: dict[str, str],
    ) -> None:
        exists = conn.execute(
            sa.select(platform_ids.c.participant).where(
                platform_ids.c.campaign == campaign, platform_ids.c.participant == participant
            )
        ).first()
        if exists is None:
            conn.execute(
                platform_ids.insert().values(
                    campaign=campaign,
                    participant=participant,
                    platform=platform,
                    fields=json.dumps(fields),
                )
            )

    def expire(self, campaign: str, now: float, timeout: float) -> int:
        """Free the slots of assignments idle for ``timeout`` seconds; how many."""
        query = sa.select(assignments.c.id).where(
            assignments.c.campaign == campaign,
            assignments.c.status == ACTIVE,
            assignments.c.last_seen < now - timeout,
        )
        with self.reads.connect() as conn:  # the common case, nothing stale: no write lock
            if conn.execute(query.limit(1)).first() is None:
                return 0
        with self.transaction() as conn:
            stale = conn.execute(
                sa.select(assignments.c.id, assignments.c.rater)
                .where(
                    assignments.c.campaign == campaign,
                    assignments.c.status == ACTIVE,
                    assignments.c.last_seen < now - timeout,
                )
                .with_for_update(skip_locked=True)
            ).all()
            for ident, rater in stale:
                conn.execute(
                    assignments.update()
                    .where(assignments.c.id == ident)
                    .values(
                        status=TIMED_OUT,
                        finished_at=now,
                        reason=f"no sign of the page for {timeout:.0f} s",
                    )
                )
                conn.execute(
                    slots.update()
                    .where(
                        slots.c.campaign == campaign,
                        slots.c.rater == rater,
                        slots.c.holder == ident,
                    )
                    .values(holder=None)
                )
        return len(stale)

    # -- one assignment's answers --------------------------------------------------------
    def _locked(self, conn: Connection, assignment: str) -> Assignment | None:
        row = conn.execute(
            sa.select(assignments).where(assignments.c.id == assignment).with_for_update()
        ).first()
        return Assignment.of(row) if row is not None else None

    @contextmanager
    def holding(self, assignment: str) -> Iterator[tuple[Connection, Assignment | None]]:
        """A transaction with ``assignment``'s row locked (None when there is no such)."""
        with self.transaction() as conn:
            yield conn, self._locked(conn, assignment)

    @staticmethod
    def answered(conn: Connection, assignment: str) -> dict[int, Any]:
        rows = conn.execute(
            sa.select(
                answers.c.trial, answers.c.id, answers.c.value, answers.c.heard, answers.c.scripted
            ).where(answers.c.assignment == assignment)
        ).all()
        return {r.trial: r for r in rows}

    def answered_trials(self, assignment: str) -> list[int]:
        with self.reads.connect() as conn:
            trials = conn.execute(
                sa.select(answers.c.trial).where(answers.c.assignment == assignment)
            ).scalars()
            return sorted(trials)

    @staticmethod
    def answer_by_id(conn: Connection, campaign: str, answer: str) -> Any:
        return conn.execute(
            sa.select(answers).where(answers.c.campaign == campaign, answers.c.id == answer)
        ).first()

    @staticmethod
    def add_answer(conn: Connection, campaign: str, row: dict[str, Any]) -> None:
        conn.execute(answers.insert().values(campaign=campaign, **row))

    @staticmethod
    def update(conn: Connection, assignment: Assignment, **values: Any) -> None:
        if "headphones" in values and values["headphones"] is not None:
            values["headphones"] = json.dumps(values["headphones"])
        conn.execute(assignments.update().where(assignments.c.id == assignment.id).values(**values))
        if values.get("status") in (COMPLETE, SCREENED_OUT, TIMED_OUT):
            conn.execute(
                slots.update()
                .where(
                    slots.c.campaign == assignment.campaign,
                    slots.c.rater == assignment.rater,
                    slots.c.holder == assignment.id,
                )
                .values(holder=None, done=values["status"] == COMPLETE)
            )

    def touch(self, assignment: str, now: float) -> None:
        with self.transaction() as conn:
            conn.execute(
                assignments.update()
                .where(assignments.c.id == assignment, assignments.c.status == ACTIVE)
                .values(last_seen=now)
            )

    # -- what the organiser reads --------------------------------------------------------
    def assignments(self, campaign: str) -> list[Assignment]:
        with self.reads.connect() as conn:
            rows = conn.execute(
                sa.select(assignments)
                .where(assignments.c.campaign == campaign)
                .order_by(assignments.c.started_at, assignments.c.id)
            ).all()
        return [Assignment.of(r) for r in rows]

    def answers_of(self, campaign: str, status: str | None = COMPLETE) -> dict[str, list[Any]]:
        """Answer rows by assignment (of assignments in ``status``, or all)."""
        query = (
            sa.select(answers)
            .join(assignments, assignments.c.id == answers.c.assignment)
            .where(answers.c.campaign == campaign)
            .order_by(answers.c.assignment, answers.c.trial)
        )
        if status is not None:
            query = query.where(assignments.c.status == status)
        out: dict[str, list[Any]] = {}
        with self.reads.connect() as conn:
            for row in conn.execute(query):
                out.setdefault(row.assignment, []).append(row)
        return out

    def fields_of(
        self, campaign: str, participant: str, conn: Connection | None = None
    ) -> dict[str, str]:
        """The platform's ids of one participant ({} for none), in ``conn``'s transaction
        when given."""
        query = sa.select(platform_ids.c.fields).where(
            platform_ids.c.campaign == campaign, platform_ids.c.participant == participant
        )
        if conn is not None:
            text = conn.execute(query).scalar()
        else:
            with self.reads.connect() as reader:
                text = reader.execute(query).scalar()
        found: dict[str, str] = json.loads(text) if text else {}
        return found

    def kept(self, campaign: str) -> int:
        """How many finished and were kept (passed the per-rater checks)."""
        with self.reads.connect() as conn:
            n = conn.execute(
                sa.select(sa.func.count()).where(
                    assignments.c.campaign == campaign,
                    assignments.c.status == COMPLETE,
                    assignments.c.kept.is_(True),
                )
            ).scalar_one()
        return int(n)

    def platform_fields(self, campaign: str) -> dict[str, tuple[str, dict[str, str]]]:
        with self.reads.connect() as conn:
            rows = conn.execute(
                sa.select(platform_ids).where(platform_ids.c.campaign == campaign)
            ).all()
        return {r.participant: (r.platform, json.loads(r.fields)) for r in rows}

    # -- the audio pool ------------------------------------------------------------------
    def register_audio(self, campaign: str, elements: dict[str, str]) -> None:
        """Make known ``{token: element JSON}`` (the audio a page links to), once each."""
        query = sa.select(audio.c.token).where(
            audio.c.campaign == campaign, audio.c.token.in_(list(elements))
        )
        with self.reads.connect() as conn:  # pages share one pool: most tokens are known
            if set(conn.execute(query).scalars()) == set(elements):
                return
        with self.transaction() as conn:
            known = set(conn.execute(query).scalars())
            new = [
                {"campaign": campaign, "token": t, "element": e, "data": None}
                for t, e in sorted(elements.items())  # one order: two inserts never deadlock
                if t not in known
            ]
            if new:  # a token another replica made known meanwhile is skipped, the rest kept
                conn.execute(_insert_missing(conn, audio), new)

    def audio(self, campaign: str, token: str) -> tuple[str, bytes | None] | None:
        with self.reads.connect() as conn:
            row = conn.execute(
                sa.select(audio.c.element, audio.c.data).where(
                    audio.c.campaign == campaign, audio.c.token == token
                )
            ).first()
        return (row.element, row.data) if row is not None else None

    def keep_audio(self, campaign: str, token: str, data: bytes) -> None:
        with self.transaction() as conn:
            conn.execute(
                audio.update()
                .where(audio.c.campaign == campaign, audio.c.token == token, audio.c.data.is_(None))
                .values(data=data)
            )
