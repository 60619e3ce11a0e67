"""A served campaign under a crowd, killed and restarted: nothing acknowledged is lost, nothing
is stored twice, no slot is given twice (issue 40, "What it must show").

1,000 simulated raters (async httpx) arrive from Prolific within a minute; each reads their
page, waits as long as its clips take to hear and posts each answer, retrying until it is
acknowledged, as the page does. ``songlab campaign serve`` (two worker processes) is SIGKILLed
twice under that load, its whole process group, and started again on the same database. Then
every acknowledged answer is in the database exactly once, on SQLite and on a real PostgreSQL
server. And two replicas on one PostgreSQL database behind the test's own round-robin give no
slot twice and lose no answer.
"""

from __future__ import annotations

import asyncio
import itertools
import threading
import time

import pytest
import sqlalchemy as sa

from songlab.listening.crowd.store import answers, assignments, open_store
from tests.reliability._crowd_load import CampaignProcess, Tally, crowd, saved_campaign
from tests.reliability._postgres import postgres_server

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

RATERS = 1000


def _killer(server: CampaignProcess, at: list[float], kills: list[float]) -> threading.Thread:
    def run() -> None:
        started = time.monotonic()
        for when in at:
            time.sleep(max(0.0, when - (time.monotonic() - started)))
            server.kill()
            kills.append(time.monotonic() - started)
            server.start()  # the same port and database

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def _logs(servers: list[CampaignProcess]) -> str:
    return "\n".join(f"--- {s.log.name}\n{s.log_tail()}" for s in servers)


def _check_store(db: str, campaign_id: str, tally: Tally, raters: int) -> None:
    store = open_store(db)
    with store.reads.connect() as conn:
        ids = (
            conn.execute(sa.select(answers.c.id).where(answers.c.campaign == campaign_id))
            .scalars()
            .all()
        )
        held = conn.execute(
            sa.select(assignments.c.rater, sa.func.count())
            .where(
                assignments.c.campaign == campaign_id,
                assignments.c.status.in_(["active", "complete"]),
            )
            .group_by(assignments.c.rater)
        ).all()
    store.close()
    assert len(ids) == len(set(ids))  # nothing twice
    assert tally.acknowledged <= set(ids), len(tally.acknowledged - set(ids))  # nothing lost
    assert all(n == 1 for _, n in held), [r for r, n in held if n > 1]  # no slot given twice
    assert tally.finished == raters and not tally.refused, (tally.finished, tally.refused[:3])


def _load(tmp_path, db: str, raters: int = RATERS) -> None:
    c, _ = saved_campaign(tmp_path, raters=raters + 50)
    server = CampaignProcess(tmp_path, db, workers=2).start()
    tally, kills = Tally(), []
    try:
        killer = _killer(server, [20.0, 45.0], kills)
        asyncio.run(crowd(lambda: server.url, raters, within=60.0, tally=tally))
        killer.join(120)
    finally:
        server.kill()
    print(
        f"\n{len(tally.acknowledged)} answers acknowledged, {tally.finished} raters finished, "
        f"{tally.retries} retries, kills at {[round(k, 1) for k in kills]} s"
    )
    assert len(kills) == 2
    assert not tally.refused, (tally.refused[:5], _logs([server]))
    _check_store(db, c.id, tally, raters)


def test_a_thousand_raters_and_two_sigkills_on_sqlite(tmp_path) -> None:
    _load(tmp_path, f"sqlite:///{tmp_path}/campaign.sqlite")


def test_a_thousand_raters_and_two_sigkills_on_postgresql(tmp_path) -> None:
    with postgres_server() as url:
        _load(tmp_path, url)


def test_two_replicas_on_one_postgresql_behind_a_round_robin(tmp_path) -> None:
    c, _ = saved_campaign(tmp_path, raters=330)
    with postgres_server() as url:
        replicas = [CampaignProcess(tmp_path, url, workers=1).start() for _ in range(2)]
        turn = itertools.cycle(range(2))
        tally = Tally()
        try:
            asyncio.run(crowd(lambda: replicas[next(turn)].url, 300, within=20.0, tally=tally))
        finally:
            for r in replicas:
                r.kill()
        assert not tally.refused, (tally.refused[:5], _logs(replicas))
        _check_store(url, c.id, tally, 300)
