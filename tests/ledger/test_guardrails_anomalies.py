"""Anomalies (``songlab.ledger.anomalies``): a spike planted on a known day and project is found,
with its size and its cause; flat years raise none; a new project's first days are new, not
anomalous; the thresholds work as AWS's do; today is judged on its spend so far."""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal
from typing import Any

import pandas as pd
import pyarrow.compute as pc
import pytest

from songlab.ledger import anomalies, guardrails
from tests.ledger._guardrails_data import Year, joint_cube, synthetic_year

SPIKE_DAY = 200
SPIKE_PROJECT = "research"
SPIKE_KEY = "key_fedcba987654"


def _end(y: Year) -> datetime:
    return datetime.combine(y.start + timedelta(days=y.days - 1), time(23, 59), UTC)


def _spike_cost(y: Year) -> Decimal:
    ids = set(y.spike_ids)
    costs = [
        Decimal(c)
        for t, c in zip(
            y.table["task_id"].to_pylist(), y.table["cost_usd"].to_pylist(), strict=True
        )
        if t in ids and c is not None
    ]
    return sum(costs, Decimal(0))


@pytest.fixture(scope="module")
def spiked() -> Year:
    """A year of ~300 tasks a weekday; on day 200, 150 more of project research, one key."""
    return synthetic_year(seed=1, drift=0.0, spike=(SPIKE_DAY, SPIKE_PROJECT, 150))


def test_the_planted_spike_is_found_with_its_size_and_cause(spiked: Year) -> None:
    found = guardrails.find_anomalies(spiked.table, as_of=_end(spiked), since=spiked.start)
    day = spiked.start + timedelta(days=SPIKE_DAY)
    assert {(a.dimension, a.value, a.day) for a in found} >= {
        ("project", SPIKE_PROJECT, day),
        ("key", SPIKE_KEY, day),
    }
    assert {a.day for a in found} == {day}  # nothing else all year
    a = next(a for a in found if a.dimension == "project")
    planted = _spike_cost(spiked)
    # the size: what the spike added, within the day's own noise (its usual is a median)
    assert abs(a.impact_usd - planted) < Decimal("0.2") * planted, (a.impact_usd, planted)
    daily = guardrails.daily_series(spiked.table, as_of=_end(spiked))
    assert a.actual_usd == guardrails.series(daily, "project", SPIKE_PROJECT)[day]
    assert a.impact_percent is not None and a.impact_percent > 200
    assert a.history_days == SPIKE_DAY
    assert not a.partial
    # the cause: the key it came from first, carrying (almost) all of the excess
    keys = [d for d in a.drivers if d.dimension == "key"]
    assert keys[0].value == SPIKE_KEY
    assert keys[0].excess_usd > Decimal("0.9") * a.impact_usd
    assert a.tasks >= 150


def test_the_check_names_the_spike_tasks(spiked: Year) -> None:
    """Through ``guardrails.check``: the anomaly's costliest tasks are planted ones."""
    as_of = datetime.combine(spiked.start + timedelta(days=SPIKE_DAY + 1), time(6), UTC)
    report = guardrails.check(spiked.table, as_of=as_of, paths=200, forecast_scopes=0)
    a = next(a for a in report.anomalies if a.dimension == "project")
    assert a.value == SPIKE_PROJECT
    assert a.top_tasks and all(t.startswith("spike_") for t, _ in a.top_tasks)
    assert [c for _, c in a.top_tasks] == sorted((c for _, c in a.top_tasks), reverse=True)
    alert = next(x for x in report.alerts if x.id == a.key)
    assert alert.line().startswith(f"ANOMALY project {SPIKE_PROJECT}: spent $")
    assert f"made by key {SPIKE_KEY} +$" in alert.line()
    assert alert.since == datetime.combine(a.day, time(), UTC)
    assert alert.to_json()["details"]["top_tasks"][0]["task_id"].startswith("spike_")


@pytest.mark.parametrize(
    "seed", [1, pytest.param(2, marks=pytest.mark.slow), pytest.param(3, marks=pytest.mark.slow)]
)
def test_a_flat_year_raises_none(seed: int) -> None:
    """Weekly pattern and growth, no spike: not one anomaly in any monitor all year."""
    y = synthetic_year(seed=seed, drift=0.0)
    assert guardrails.find_anomalies(y.table, as_of=_end(y), since=y.start) == []


def test_a_new_project_is_new_not_anomalous() -> None:
    """A project first seen on day 300 with a big first week raises nothing for its first 7
    days: the first of its kind. Its first week is then its usual, so a later day at the same
    level raises nothing either; a day 3x its usual after that does."""
    y = synthetic_year(seed=4, drift=0.0, days=330)
    rows = []
    for day in range(300, 330):
        usd = "60" if day != 320 else "180"
        rows.append(_row(y.start + timedelta(days=day), project="launch-x", usd=usd))
    cube = pd.concat([joint_cube(y.table), pd.DataFrame(rows)])
    found = [
        a
        for a in anomalies.detect(cube, as_of=_end(y), since=y.start, monitors=["project"])
        if a.value == "launch-x"
    ]
    assert [(a.day, a.history_days) for a in found] == [(y.start + timedelta(days=320), 20)]
    assert found[0].impact_usd == Decimal("120.00")


def _row(
    day: date, *, project: str | None = None, usd: str = "1", tasks: int = 1
) -> dict[str, Any]:
    return {
        "day": day,
        "project": project,
        "tags": None,
        "key_id": "key_000000000001",
        "tool_id": "tool_generate_song_v7",
        "tier": "standard",
        "tasks": tasks,
        "cost_usd": Decimal(usd),
        "estimated_tasks": 0,
        "unknown_tasks": 0,
    }


def _steady(days: int, start: date = date(2026, 9, 1), usd: str = "100") -> list[dict[str, Any]]:
    """``days`` days of ``usd`` a day (+-5% by weekday), one project."""
    return [
        _row(
            start + timedelta(days=i),
            project="p",
            usd=str(Decimal(usd) * (1 + Decimal(i % 7) / 100)),
        )
        for i in range(days)
    ]


def test_thresholds_absolute_and_or_percentage() -> None:
    """A day $40 (+39%) above a steady $103: out of the ordinary (z about 8); an anomaly when
    the thresholds allow it ("and": both; "or": either)."""
    rows = _steady(60)
    rows[-1]["cost_usd"] += Decimal("40")
    cube = pd.DataFrame(rows)
    as_of = datetime.combine(rows[-1]["day"] + timedelta(days=1), time(), UTC)
    since = rows[-1]["day"]

    def found(**kw: Any) -> bool:
        th = anomalies.Thresholds(**kw)
        return bool(anomalies.detect(cube, as_of=as_of, since=since, thresholds=th))

    assert found(min_usd=Decimal("20"), min_percent=Decimal("25"))
    assert not found(min_usd=Decimal("20"), min_percent=Decimal("45"))  # and: both
    assert found(min_usd=Decimal("20"), min_percent=Decimal("45"), combine="or")
    assert not found(min_usd=Decimal("50"), min_percent=Decimal("45"), combine="or")
    assert found(min_usd=Decimal("50"), min_percent=Decimal("25"), combine="or")
    assert not found(min_usd=Decimal("20"), min_percent=Decimal("25"), z=9.0)  # ordinary
    # the default absolute threshold: 20% of the account's usual day ($20.60 here)
    rows[-1]["cost_usd"] -= Decimal("25")  # +$15
    cube = pd.DataFrame(rows)
    assert not found(min_percent=Decimal("10"), z=2.0)
    assert found(min_usd=Decimal("10"), min_percent=Decimal("10"), z=2.0)


def test_today_is_judged_on_its_spend_so_far() -> None:
    rows = _steady(60)
    today = rows[-1]["day"]
    rows[-1]["cost_usd"] = Decimal("95")  # by 09:00, most of a usual day: not anomalous yet
    as_of = datetime.combine(today, time(9), UTC)
    assert anomalies.detect(pd.DataFrame(rows), as_of=as_of) == []
    rows[-1]["cost_usd"] = Decimal("400")  # by 09:00, four days' worth: it is already
    (a,) = [x for x in anomalies.detect(pd.DataFrame(rows), as_of=as_of) if x.dimension == "total"]
    assert a.partial and a.day == today
    assert "so far" in a.describe()


def test_a_dormant_key_waking_up_is_an_anomaly() -> None:
    """A key with 20 days of history, silent for 11 weeks, then spending $200 in a day: it has a
    history (of nothing), so it is judged, and its usual is $0 (percentage: from nothing)."""
    rows = _steady(100)
    for r in rows[:20]:
        r["key_id"] = "key_00000000000b"
    wake = _row(rows[-1]["day"], project="p", usd="200")
    wake["key_id"] = "key_00000000000b"
    cube = pd.DataFrame([*rows, wake])
    as_of = datetime.combine(rows[-1]["day"] + timedelta(days=1), time(), UTC)
    (a,) = [x for x in anomalies.detect(cube, as_of=as_of) if x.dimension == "key"]
    assert (a.value, a.usual_usd, a.impact_percent) == ("key_00000000000b", Decimal("0.00"), None)


def test_unlabelled_work_is_its_own_series_and_named() -> None:
    rows = _steady(60)
    for r in rows:
        r["project"] = None
    rows[-1]["cost_usd"] = Decimal("500")
    as_of = datetime.combine(rows[-1]["day"] + timedelta(days=1), time(), UTC)
    a = next(
        x for x in anomalies.detect(pd.DataFrame(rows), as_of=as_of) if x.dimension == "project"
    )
    assert a.value == "(no project)"
    assert a.scope == "project (no project)"


def test_bad_input_is_named() -> None:
    cube = pd.DataFrame(_steady(10))
    as_of = datetime(2026, 9, 12, tzinfo=UTC)
    with pytest.raises(ValueError, match="as_of: must be timezone-aware"):
        anomalies.detect(cube, as_of=datetime(2026, 9, 12))
    with pytest.raises(ValueError, match="monitors: each one of total, project, key, tool, tier"):
        anomalies.detect(cube, as_of=as_of, monitors=["team"])
    with pytest.raises(ValueError, match="since: must not be after"):
        anomalies.detect(cube, as_of=as_of, since=date(2026, 10, 1))
    with pytest.raises(ValueError, match="combine: 'and' or 'or'"):
        anomalies.Thresholds(combine="xor")
    with pytest.raises(ValueError, match="min_usd: a non-negative amount"):
        anomalies.Thresholds(min_usd=Decimal("-1"))
    with pytest.raises(ValueError, match="z: a positive number"):
        anomalies.Thresholds(z=0)


def test_unknown_cost_tasks_are_counted_not_summed() -> None:
    rows = _steady(60)
    rows[-1]["cost_usd"] = Decimal("400")
    rows[-1]["unknown_tasks"] = 7
    as_of = datetime.combine(rows[-1]["day"] + timedelta(days=1), time(), UTC)
    a = next(x for x in anomalies.detect(pd.DataFrame(rows), as_of=as_of) if x.dimension == "total")
    assert a.unknown_tasks == 7 and a.actual_usd == Decimal("400")


def test_spike_ids_are_in_the_table(spiked: Year) -> None:
    """The data helper plants what it says (a guard on the other tests)."""
    assert len(spiked.spike_ids) == 150
    day = spiked.start + timedelta(days=SPIKE_DAY)
    rows = spiked.table.filter(pc.starts_with(spiked.table["task_id"], "spike_"))
    assert set(rows["project"].to_pylist()) == {SPIKE_PROJECT}
    assert {t.date() for t in rows["created_at"].to_pylist()} == {day}
