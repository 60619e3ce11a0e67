"""``Ledger.rows``: the relation over some of the tasks (taken by Arrow's kernels from an
in-memory table) holds exactly the tasks of its bounds, whatever the chunks' dictionaries,
null times and operations; a Parquet ledger falls back to the relation itself."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import songlab.ledger.month as month
from songlab.ledger import LedgerStore
from songlab.ledger._arrow_rows import Order
from songlab.ledger.dialects import text_sql, ts_sql
from songlab.ledger.engine import Ledger, open_ledger
from songlab.ledger.synthetic import synthetic_table, write_synthetic_dataset

START = datetime(2026, 1, 1, tzinfo=UTC)


def _tasks() -> pa.Table:
    """Three chunks of different dictionaries (one without Agent One runs), some undated."""
    parts = [
        synthetic_table(400, seed=1, days=20, labels=True, compact=True, start=START),
        synthetic_table(300, seed=2, days=5, labels=True, compact=True, start=START, offset=400),
        synthetic_table(200, seed=3, days=20, labels=True, start=START, offset=700),
    ]
    agentless = parts[1].filter(pc.not_equal(parts[1]["operation"].cast(pa.string()), "agent"))
    undated = pc.equal(pc.bit_wise_and(pa.array(range(agentless.num_rows)), 7), 0)
    at = pc.if_else(undated, pa.scalar(None, agentless["created_at"].type), agentless["created_at"])
    parts[1] = agentless.set_column(
        agentless.schema.get_field_index("created_at"), "created_at", at
    )
    parts[2] = parts[2].cast(parts[0].schema)  # the plain strings as dictionaries of their own
    return pa.concat_tables(parts)


TASKS = _tasks()
OPERATIONS = sorted(set(TASKS["operation"].cast(pa.string()).to_pylist()) - {None})
# tasks newest first, as a ledger holds them (two chunks of their own dictionaries): their
# rows are taken as a slice, not a mask
NEWEST_FIRST = pa.concat_tables(
    [
        synthetic_table(500, seed=5, days=10, compact=True, start=START + timedelta(days=10)),
        synthetic_table(400, seed=6, days=10, compact=True, start=START, offset=500),
    ]
)
TIMES = sorted(set(NEWEST_FIRST["created_at"].to_pylist()))


@pytest.fixture(scope="module", params=["as given", "newest first"])
def lg(request: pytest.FixtureRequest) -> Iterator[Ledger]:
    with open_ledger(TASKS if request.param == "as given" else NEWEST_FIRST) as opened:
        order = Order.of(opened.backend._kept["tasks"])  # type: ignore[attr-defined]
        assert (order is not None) == (request.param == "newest first")
        yield opened


def _ids(lg: Ledger, sql: str) -> list[Any]:
    return sorted(lg.arrow(sql)["task_id"].to_pylist())


def _instants() -> st.SearchStrategy[datetime]:
    """Any time around the tasks', or exactly one of theirs (a bound is inclusive)."""
    return st.sampled_from(TIMES) | st.builds(
        lambda m: START + timedelta(minutes=m), st.integers(-3000, 30 * 24 * 60)
    )


@settings(max_examples=40, deadline=None)
@given(
    created_from=st.none() | _instants(),
    created_to=st.none() | _instants(),
    operation=st.none() | st.sampled_from([*OPERATIONS, "no such operation"]),
)
def test_rows_hold_exactly_the_tasks_of_their_bounds(
    lg: Ledger,
    created_from: datetime | None,
    created_to: datetime | None,
    operation: str | None,
) -> None:
    where = ["TRUE"]
    if created_from is not None:
        where.append(f"created_at >= {ts_sql(created_from)}")
    if created_to is not None:
        where.append(f"created_at <= {ts_sql(created_to)}")
    if operation is not None:
        where.append(f"operation = {text_sql(operation)}")
    source = lg.rows(created_from, created_to, operation=operation)
    assert (source == "ledger") == (created_from is None and created_to is None and not operation)
    want = _ids(lg, f"SELECT task_id FROM ledger WHERE {' AND '.join(where)}")
    assert _ids(lg, f"SELECT task_id FROM {source}") == want
    # the same relation: its measures and derived columns as the whole one's
    cols = "task_id, day, tier, tier_order, top_level, cost_usd, estimated_usd, status"
    got = lg.arrow(f"SELECT {cols} FROM {source} ORDER BY task_id")
    assert got.equals(
        lg.arrow(f"SELECT {cols} FROM ledger WHERE {' AND '.join(where)} ORDER BY task_id")
    )


def test_a_parquet_ledger_reads_the_relation_itself(tmp_path: Path) -> None:
    root = write_synthetic_dataset(tmp_path / "ledger", 500, seed=4, days=10)
    with open_ledger(LedgerStore(root)) as lg:
        assert lg.rows(START, operation="agent") == "ledger"
        lg.precompute()
        (newest,) = lg.one("SELECT max(created_at) FROM ledger")
        assert lg.newest() == newest


@settings(max_examples=25, deadline=None)
@given(hours=st.integers(0, 24 * 40), minute=st.integers(0, 59))
def test_the_month_window_from_the_cube_is_the_tasks_own(hours: int, minute: int) -> None:
    """month.window with the cube (the month's whole days from it, the week's tasks read)
    gives what the tasks alone give, to the cent, for any as-of time (the 1st, mid-month,
    before the first task and after the last)."""
    as_of = START + timedelta(days=-3, hours=hours, minutes=minute)
    with open_ledger(TASKS) as plain:
        want = month.window(plain, as_of)
    with open_ledger(TASKS) as cubed:
        cubed.precompute()
        assert month.window(cubed, as_of) == want


def _with_refunds(t: pa.Table, every: int) -> pa.Table:
    """``t`` with every ``every``-th task's cost made negative (a refund); 0: none."""
    if not every:
        return t
    cost = t["cost_usd"].combine_chunks()
    refund = pc.equal(pc.bit_wise_and(pa.array(range(t.num_rows)), every - 1), 0)
    return t.set_column(
        t.schema.get_field_index("cost_usd"), "cost_usd", pc.if_else(refund, pc.negate(cost), cost)
    )


class _Counting(Ledger):
    """A ledger counting the queries that read the tasks (not only the cube)."""

    reads = 0

    def arrow(self, text: str) -> pa.Table:
        from songlab.ledger.engine import _tables_of

        if not _tables_of(text) <= {"cube", "cube_all"}:
            type(self).reads += 1
        return super().arrow(text)


@settings(max_examples=40, deadline=None)
@given(
    share=st.fractions(0, 2),
    days=st.integers(0, 25),
    every=st.sampled_from([0, 0, 4, 64]),
    project=st.sampled_from([None, 0, 1]),
)
def test_the_crossing_from_the_cube_is_the_tasks_own(
    share: Any, days: int, every: int, project: int | None
) -> None:
    """daily.crossed with the cube (the day from its sums, then that day's tasks; no task read
    when the sums to as-of's day do not reach the amount) gives what the tasks alone give, to the microsecond, for
    any amount, as-of day and scope; with refunds (negative costs), whose running sum can
    cross within a day and fall back, it reads every task of the period."""
    from decimal import Decimal

    import songlab.ledger.daily as daily

    tasks = _with_refunds(TASKS, every)
    projects = sorted(set(tasks["project"].cast(pa.string()).to_pylist()) - {None})
    scope, value = ("account", None) if project is None else ("project", projects[project])
    as_of = START + timedelta(days=days, hours=13)
    total = Decimal(str(pc.sum(tasks["cost_usd"]).as_py()))
    amount = (Decimal(share.numerator) * total / Decimal(share.denominator)).quantize(
        Decimal("0.00000001")
    )
    with open_ledger(tasks) as plain:
        want = daily.crossed(plain, scope, value, START.date(), as_of, amount)
        # what the cube's day sums hold to as-of's day (its later tasks too)
        (through,) = plain.one(
            f"SELECT coalesce(sum(cost_usd), 0) FROM ledger WHERE top_level AND "
            f"{daily.scope_filter(scope, value)} AND day >= DATE '{START.date()}' "
            f"AND day <= DATE '{as_of.date()}'"
        )
    with open_ledger(tasks) as opened:
        opened.__class__ = _Counting
        opened.precompute()
        _Counting.reads = 0
        got = daily.crossed(opened, scope, value, START.date(), as_of, amount)
        assert got == want
        if not every and through < amount:
            assert got is None and _Counting.reads == 0  # the cube's sums said so


def test_a_refund_that_undoes_a_crossing_within_its_day_is_still_found() -> None:
    """A day that spends 10 and is refunded 10 ends at zero, but the running sum passed 5 at
    09:00: with a refund in the period the cube's day sums cannot say when, so every task of
    the period is read (the next day's 6 would otherwise be taken for the crossing)."""
    from decimal import Decimal

    import songlab.ledger.daily as daily
    from songlab.ledger import tasks_frame
    from tests.ledger._util import snap

    def at(day: int, hour: int) -> str:
        return f"2026-11-{day:02d}T{hour:02d}:00:00.000000Z"

    tasks = tasks_frame(
        [
            snap("spent", created_at=at(3, 9), cost_usd="10.00000000"),
            snap("refund", created_at=at(3, 10), cost_usd="-10.00000000"),
            snap("next day", created_at=at(4, 9), cost_usd="6.00000000"),
        ]
    )
    as_of = datetime(2026, 11, 5, tzinfo=UTC)
    for cubed in (False, True):
        with open_ledger(tasks) as lg:
            if cubed:
                lg.precompute()
            got = daily.crossed(lg, "account", None, START.date(), as_of, Decimal(5))
            assert got == datetime(2026, 11, 3, 9, tzinfo=UTC), cubed
