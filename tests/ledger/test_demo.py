"""The demo's plan (pure, seeded) and its real-service path (no admin handle: no clock moved)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from songlab.ledger import LedgerStore
from songlab.ledger.demo import COVERAGE, DAYS, LAUNCH, PROJECTS, one_of_each, plan, run_demo


@pytest.mark.parametrize("weekday", range(7), ids=lambda d: f"starts-on-{d}")
def test_the_plan_covers_every_kind_tier_and_agent_tier(weekday: int) -> None:
    jobs = plan(start_weekday=weekday)
    assert jobs == plan(start_weekday=weekday)  # seeded: the same plan every time
    assert jobs != plan(start_weekday=weekday, seed=1)
    assert 60 <= len(jobs) <= 130
    assert {j.kind for j in jobs} == {
        "song",
        "music",
        "lyrics",
        "sfx",
        "stems",
        "karaoke",
        "translation",
        "agent",
    }
    assert {j.license for j in jobs} == {1, 2, 3, 4, 5}
    assert {j.model for j in jobs if j.kind == "agent"} == {"flash", "standard", "pro"}
    assert {j.model for j in jobs if j.kind == "song"} == {"v5", "v6", "v7"}
    assert sum(j.kind == "translation" for j in jobs) >= 2
    assert sum(j.fail for j in jobs) == 2
    assert {j.project for j in jobs} == set(PROJECTS) and {j.key for j in jobs} == {0, 1, 2}
    assert max(j.day for j in jobs) >= DAYS - 7 and min(j.day for j in jobs) == 0
    for day, project, kind, model, lic in COVERAGE:
        assert any(
            (j.day, j.project, j.kind, j.model, j.license) == (day, project, kind, model, lic)
            for j in jobs
        )
    assert [(j.day, j.hour) for j in jobs] == sorted((j.day, j.hour) for j in jobs)


def test_the_plan_has_weekends_growth_and_a_launch_week() -> None:
    jobs = plan(start_weekday=0, days=DAYS)
    per_day = Counter(
        j.day
        for j in jobs
        if (j.day, j.project, j.kind) not in {(c[0], c[1], c[2]) for c in COVERAGE}
    )
    weekend = [per_day[d] for d in range(DAYS) if d % 7 >= 5]
    weekday = [per_day[d] for d in range(DAYS) if d % 7 < 5]
    assert sum(weekend) / len(weekend) < sum(weekday) / len(weekday)
    launch = Counter(j.project for j in jobs if j.day in LAUNCH)
    assert launch["jingles"] >= 2 * len(LAUNCH)
    first, last = [sum(per_day[d] for d in w) for w in (range(0, 14), range(28, 42))]
    assert last > first


def test_against_a_real_service_it_sends_one_of_each_and_moves_no_clock(
    sandbox: Any, new_account: Callable[..., Any], tmp_path: Path
) -> None:
    from songlab.client import Client

    acct = new_account()
    store = LedgerStore(tmp_path)
    with Client(acct.api_key, base_url=sandbox.base_url) as c:
        created = run_demo(c, labels=store, log=lambda _: None)  # no admin handle
        store.refresh(c)
        key = c.key_id
    expected = one_of_each(plan())
    assert len(created) == len(expected)
    frame = store.read()
    top = frame[frame["parent_task_id"].isna()]
    assert set(top["task_id"]) == set(created)
    assert set(top["status"]) == {"completed"}
    assert set(top["key_id"]) == {key}  # no other key was made
    assert set(top["project"]) == {j.project for j in expected}
    spread = top["created_at"].max() - top["created_at"].min()
    assert spread.total_seconds() < 600  # all sent now, no clock moved
