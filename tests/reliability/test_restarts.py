"""Real processes, no mocks: the sandbox is SIGKILLed and restarted on the same port and
database twice while 60 generations are created and waited through one songlab client.

``python -m songlab.sandbox --db FILE --port PORT`` runs as a child process. Generation
``i`` starts ``i * 0.1`` s in (so creates keep arriving during the outages); each is
create -> ``wait(on_event=...)``. Every create and every wait must return normally; the
account then holds exactly 60 tasks and 60 ledger lines (one per task, at its price), each
task's events arrived once and in order (compared with the sandbox's own SQLite file), and
the balance moved by exactly the sum of the lines. The transport counts prove the outages
hit both creates and waits (connections refused mid-flight). The client runs with the
default ``RetryPolicy()``, as a new user would.
"""

from __future__ import annotations

import asyncio

import pytest

from songlab.client import RetryPolicy
from tests.reliability._restarts import RestartingSandbox, restarts
from tests.reliability._storm import events_from_db, run_storm

N = 60
SPEED = 1.0  # write_lyrics takes ~1 s of simulated work, 8 workers: tasks stay in flight


@pytest.fixture(scope="module")
def sandbox_proc(tmp_path_factory):
    db = str(tmp_path_factory.mktemp("restarts") / "restarts.sqlite3")
    with RestartingSandbox(db, speed=SPEED) as sp:
        yield sp


def _assert_nothing_lost(res, sp, before_restarts):
    assert res.problems == [], res.problems[:5]
    assert res.completed == res.billed_once == res.streams_exact == N
    assert res.tasks_listed == N and res.ledger_lines == N
    assert res.balance_moved_usd == res.prices_usd > 0
    assert len(sp.restarts) == before_restarts + 2
    errors = {k for k, v in res.counts.items() if v and not k.split(":")[1].isdigit()}
    assert any(k.startswith("create:") for k in errors), res.counts  # creates hit an outage
    assert any(k.startswith(("stream:", "get:")) for k in errors), res.counts  # waits too


@pytest.mark.parametrize("mode", ["async", "threads"])
def test_two_sigkill_restarts_mid_flight_lose_and_repeat_nothing(sandbox_proc, mode, capsys):
    sp = sandbox_proc
    done_before = len(sp.restarts)
    res = asyncio.run(
        run_storm(
            sp.base_url,
            sp.admin_token,
            N,
            stored_events=events_from_db(sp.db),
            faults={},
            per_account=N,
            wait=True,
            concurrency=N,
            threads=12 if mode == "threads" else 0,
            stagger_s=0.1,
            retry=RetryPolicy(),  # the defaults, as a new user has them
            disrupt=restarts(sp, first_after_s=1.0, between_s=1.5, down_s=1.5),
        )
    )
    with capsys.disabled():
        print(
            f"\nrestarts ({mode}): {res.summary()} | dark for "
            f"{', '.join(f'{s:.1f}s' for s in sp.restarts[done_before:])}"
        )
    _assert_nothing_lost(res, sp, done_before)
