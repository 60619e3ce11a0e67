"""A realistic six weeks of work, so every chart of a cost report has a shape (``songlab report --demo``).

On a sandbox (an admin handle given) the demo moves the sandbox clock
(``POST /_sandbox/clock``) to the 1st of the next month and then through
:data:`DAYS` days, a few work sessions a day (fewer at weekends, a busier
launch week, steady growth). Three API keys of the demo account (two made
with the admin route) work for four projects with tags; the work covers songs
in v5/v6/v7 in all five license tiers, music, lyrics, sound effects, stems,
karaoke workflows, song translations, Agent One runs in all three tiers and,
on two days, tasks failed on purpose with the ``fail_tasks`` fault (released,
not billed). Everything goes through the songlab client; a ``labels`` store
records who asked for what (the labels never reach the service).

Against a real service (no admin handle) it sends one job of each kind (one
song, music, lyrics, a sound effect, stems, karaoke, a translation and an Agent
One run per tier: about $2), in the present, and moves no clock.

The plan is pure (:func:`plan`, seeded) and tested on its own; :func:`run_demo` sends it.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any, Final, Protocol

import numpy as np

from songlab.ledger.labels import attribution

__all__ = [
    "COVERAGE",
    "DAYS",
    "DEMO_BUDGETS",
    "Job",
    "PROJECTS",
    "one_of_each",
    "plan",
    "run_demo",
    "tone_mp3",
]

# Budgets ``songlab report --demo`` reports against when none is given (jingles has a launch
# week: over).
DEMO_BUDGETS: Final[dict[str | None, Decimal]] = {
    None: Decimal("25"),
    "jingles": Decimal("2"),
    "podcast": Decimal("4"),
}

DAYS: Final[int] = 45
# project -> (key index that mostly works on it, tags it uses)
PROJECTS: Final[dict[str, tuple[int, tuple[str, ...]]]] = {
    "jingles": (0, ("client-acme", "radio")),
    "podcast": (1, ("intro", "episode")),
    "game-audio": (2, ("level-1", "boss", "ui")),
    "research": (2, ("ab-test", "agent")),
}
LAUNCH: Final[range] = range(36, 43)  # a launch push for jingles in the second month
_SONG_MODELS = ("v5", "v6", "v7")
# Sent on these days whatever the random plan holds, so every report has all of them:
# (day, project, kind, model, license): Agent One in its three tiers, two translations of
# one source (the second hits the transcription cache), workflows, and all five tiers.
COVERAGE: Final[tuple[tuple[int, str, str, str | None, int], ...]] = (
    (0, "jingles", "lyrics", None, 1),
    (2, "research", "agent", "flash", 1),
    (12, "research", "agent", "standard", 1),
    (26, "research", "agent", "pro", 1),
    (5, "podcast", "translation", None, 2),
    (33, "podcast", "translation", None, 1),
    (8, "jingles", "karaoke", None, 3),
    (20, "game-audio", "stems", None, 1),
    (15, "jingles", "song", "v6", 5),
    (23, "jingles", "song", "v7", 4),
    (30, "jingles", "song", "v5", 3),
)


@dataclass(frozen=True, slots=True)
class Job:
    """One create of the plan."""

    day: int  # 0-based day of the demo
    hour: float  # UTC hour of the day it is sent at
    key: int  # which API key (0: the client given)
    project: str
    tags: tuple[str, ...]
    kind: str  # song, music, lyrics, sfx, stems, karaoke, translation, agent
    model: str | None = None
    license: int = 1
    fail: bool = False  # sent under the fail_tasks fault


def _kind(rng: np.random.Generator, project: str) -> tuple[str, str | None, int]:
    if project == "research":
        if rng.random() < 0.5:
            return "agent", str(rng.choice(["flash", "standard", "pro"], p=[0.6, 0.3, 0.1])), 1
        return "song", str(rng.choice(_SONG_MODELS)), int(rng.integers(1, 6))
    kinds = {
        "jingles": (["song", "music", "lyrics", "karaoke"], [0.4, 0.2, 0.3, 0.1]),
        "podcast": (
            ["music", "sfx", "lyrics", "translation", "stems"],
            [0.35, 0.3, 0.25, 0.05, 0.05],
        ),
        "game-audio": (["sfx", "music", "song", "stems"], [0.5, 0.25, 0.2, 0.05]),
    }[project]
    kind = str(rng.choice(kinds[0], p=kinds[1]))
    lic = int(rng.choice([1, 2, 3, 4, 5], p=[0.35, 0.3, 0.15, 0.12, 0.08]))
    model = str(rng.choice(_SONG_MODELS, p=[0.2, 0.3, 0.5])) if kind in ("song", "music") else None
    return kind, model, lic


def plan(
    *,
    days: int = DAYS,
    seed: int = 0,
    start_weekday: int = 0,
    failure_days: tuple[int, ...] = (9, 31),
) -> list[Job]:
    """The demo's jobs, in send order. ``start_weekday``: 0 if day 0 is a Monday."""
    rng = np.random.default_rng(seed)
    jobs: list[Job] = []
    for day in range(days):
        weekend = (start_weekday + day) % 7 >= 5
        growth = 1.0 + day / days  # the team uses the service more each week
        base = 0.3 if weekend else 1.1
        n = int(rng.poisson(base * growth))
        launch = day in LAUNCH
        n += 2 if launch else 0  # launch week: jingles for a campaign
        for i in range(n):
            if launch and i < 2:
                project = "jingles"
            else:
                project = str(rng.choice(list(PROJECTS), p=[0.35, 0.25, 0.25, 0.15]))
            owner, tags = PROJECTS[project]
            key = owner if rng.random() < 0.85 else int(rng.integers(0, 3))
            kind, model, lic = _kind(rng, project)
            chosen = tuple(sorted(set(rng.choice(tags, size=int(rng.integers(0, 3))).tolist())))
            session = 9.0 if i % 2 == 0 else 14.0  # a morning and an afternoon session
            hour = session + float(rng.random()) * 0.5
            jobs.append(Job(day, hour, key, project, chosen, kind, model, lic))
    for day, project, kind, model, lic in COVERAGE:  # whatever the dice said, each of these
        if day < days:
            owner, tags = PROJECTS[project]
            jobs.append(Job(day, 14.75, owner, project, tags[:1], kind, model, lic))
    jobs.sort(key=lambda j: (j.day, j.hour))
    for fd in failure_days:  # one task failed on purpose on (or just after) each of these days
        k = next(
            (
                k
                for k, j in enumerate(jobs)
                if j.day >= fd and not j.fail and j.kind in ("song", "music", "lyrics")
            ),
            None,
        )
        if k is not None:
            jobs[k] = replace(jobs[k], fail=True)
    return jobs


def one_of_each(jobs: list[Job]) -> list[Job]:
    """The first job of each (kind, model) that is not a planned failure."""
    seen: dict[tuple[str, str | None], Job] = {}
    for j in jobs:
        if not j.fail:
            seen.setdefault((j.kind, j.model if j.kind == "agent" else None), j)
    return list(seen.values())


def tone_mp3(seconds: float = 3.0, *, freq: float = 220.0, sr: int = 22050) -> bytes:
    """A short MP3 (a plucked tone with a little vibrato) to upload as a source song."""
    import soundfile as sf

    t = np.arange(int(seconds * sr)) / sr
    audio = 0.3 * np.sin(2 * np.pi * freq * t + 0.3 * np.sin(2 * np.pi * 5 * t)) * np.exp(-t / 2)
    buf = io.BytesIO()
    sf.write(buf, audio.astype(np.float32), sr, format="MP3")
    return buf.getvalue()


_PROMPTS = {
    "jingles": "a bright 5-second jingle for a coffee brand",
    "podcast": "a warm podcast intro bed with soft drums",
    "game-audio": "an 8-bit boss battle loop",
    "research": "an upbeat synth-pop song about a night drive",
}


def _send(c: Any, job: Job, source_file: str, seed: int) -> Any:
    prompt = _PROMPTS[job.project]
    gen = c.generations
    if job.kind == "song":
        return gen.create(
            operation="generate_song",
            model=job.model,
            license=job.license,
            payload={"prompt": prompt, "duration_seconds": 5, "seed": seed},
        )
    if job.kind == "music":
        return gen.create(
            operation="generate_music",
            model=job.model,
            license=job.license,
            payload={"prompt": prompt, "duration_seconds": 5, "seed": seed},
        )
    if job.kind == "lyrics":
        return gen.create(operation="write_lyrics", model="v5", payload={"prompt": prompt})
    if job.kind == "sfx":
        return gen.create(
            operation="sfx_gen",
            model="v5",
            payload={"prompt": "door slam", "duration_seconds": 1.0},
        )
    if job.kind == "stems":
        return gen.create(
            operation="separate_stems", model="2stem", payload={"audio": f"file_id:{source_file}"}
        )
    if job.kind == "karaoke":
        return c.workflows.karaoke_track(song_file_id=source_file, license=job.license)
    if job.kind == "translation":
        return c.song_translations.create(
            song_file_id=source_file,
            target_language="Spanish",
            song_style="warm female pop vocal",
            license=job.license,
        )
    if job.kind == "agent":
        return c.agent.start(
            tier=job.model, prompt="write lyrics and make a short song", max_steps=3, max_budget=100
        )
    raise ValueError(f"kind: unknown demo job kind {job.kind!r}")


def _clock(admin: Any, seconds: float) -> datetime:
    r = admin.post("/_sandbox/clock", json={"advance_seconds": max(0.0, seconds)})
    r.raise_for_status()
    return datetime.fromisoformat(r.json()["now"].replace("Z", "+00:00"))


def _extra_keys(client: Any, admin: Any, account_id: str, n: int) -> list[Any]:
    keys = []
    for _ in range(n):
        r = admin.post(f"/_sandbox/accounts/{account_id}/keys")
        r.raise_for_status()
        keys.append(type(client)(r.json()["api_key"], base_url=client.base_url, reuse=False))
    return keys


def _session(
    clients: list[Any],
    admin: Any,
    jobs: list[Job],
    day0: datetime,
    now: datetime,
    source: str,
    seed: int,
    created: list[str],
    timeout: float,
) -> datetime:
    """Send one work session's jobs (the clock moved to each one's time), then wait for all:
    the tasks of a session run side by side, as a team's would."""
    sent: list[tuple[Any, str]] = []
    for job in sorted(jobs, key=lambda j: j.hour):
        if admin is not None:
            now = _clock(admin, (day0 + timedelta(hours=job.hour) - now).total_seconds())
            if job.fail:  # let the session's earlier tasks finish first: only this one fails
                for c, task_id in sent:
                    c.generations.wait(task_id, timeout=timeout, raise_on_failure=False)
                admin.put("/_sandbox/faults", json={"fail_tasks": 1.0}).raise_for_status()
        c = clients[job.key % len(clients)]
        try:
            with attribution(project=job.project, tags=job.tags):
                handle = _send(c, job, source, seed * 10_000 + job.day * 100 + len(sent))
            if job.fail:  # the fault fails tasks in the worker: wait while it is on
                c.generations.wait(handle.task_id, timeout=timeout, raise_on_failure=False)
        finally:
            if job.fail:
                admin.delete("/_sandbox/faults")
        sent.append((c, handle.task_id))
    for c, task_id in sent:
        c.generations.wait(task_id, timeout=timeout, raise_on_failure=False)
        created.append(task_id)
    return now


class _Labels(Protocol):
    """What the demo needs of a label store: a ``LedgerStore`` (it tracks the demo's clients)."""

    def track(self, client: Any) -> object: ...

    def untrack(self) -> None: ...


def run_demo(
    client: Any,
    *,
    admin: Any = None,
    account_id: str = "acct_demo",
    labels: _Labels | None = None,
    days: int = DAYS,
    seed: int = 0,
    timeout: float = 300.0,
    log: Callable[[str], object] = print,
) -> list[str]:
    """Send the plan; returns the ids of the tasks it created.

    ``admin``: an ``httpx.Client`` with the sandbox admin header (moves the
    clock, makes two more keys of ``account_id``, the client's account, injects
    ``fail_tasks``); without it (a real service) one job of each kind is sent
    today. ``labels``: a store that records every create's project, tags and key.
    """
    if admin is None:
        clients = [client]
        now = datetime.now(UTC)
    else:
        clients = [client, *_extra_keys(client, admin, account_id, 2)]
        now = _clock(admin, 0)
        first = (
            now.replace(day=1, hour=0, minute=0, second=0, microsecond=0) + timedelta(days=32)
        ).replace(day=1)
        now = _clock(admin, (first - now).total_seconds())
    if labels is not None:
        for c in clients:
            labels.track(c)
    day0 = now.replace(hour=0, minute=0, second=0, microsecond=0)
    jobs = plan(days=days, seed=seed, start_weekday=day0.weekday())
    if admin is None:  # a real service: one job of each kind, today, on the one key
        jobs = [replace(j, day=0, key=0) for j in one_of_each(jobs)]
        days = 1
    source = client.files.upload(tone_mp3(), filename="source.mp3").file_id
    created: list[str] = []
    # every job of the plan is its own task (a team's repeated work), never a re-attach
    reuse, client.reuse = getattr(client, "reuse", False), False
    try:
        for day in range(days):
            for session in (9.0, 14.0):
                todays = [j for j in jobs if j.day == day and session <= j.hour < session + 5]
                now = _session(
                    clients,
                    admin,
                    todays,
                    day0 + timedelta(days=day),
                    now,
                    source,
                    seed,
                    created,
                    timeout,
                )
            if day % 7 == 6 or day == days - 1:
                log(f"demo: day {day + 1}/{days}, {len(created)} tasks so far")
    finally:
        client.reuse = reuse
        if labels is not None:
            labels.untrack()
        for c in clients[1:]:
            c.close()
    return created
