"""The relation's UTC day (``dialects.DAY_SQL``) is the day of the instant in UTC, whatever
the session's time zone, at midnight's edges and before 1970 as after."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import duckdb
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from songlab.ledger.dialects import DAY_SQL

EDGES = [
    datetime(2026, 2, 28, 23, 59, 59, 999_999, tzinfo=UTC),
    datetime(2026, 3, 1, tzinfo=UTC),
    datetime(1970, 1, 1, tzinfo=UTC),
    datetime(1969, 12, 31, 23, 59, 59, 999_999, tzinfo=UTC),
    datetime(1900, 1, 1, 0, 0, 0, 1, tzinfo=UTC),
    datetime(2100, 12, 31, 23, 59, 59, tzinfo=UTC),
]


def days(times: list[datetime | None], zone: str) -> list[object]:
    con = duckdb.connect()
    try:
        con.execute(f"SET TimeZone = '{zone}'")
        tasks = pa.table({"created_at": pa.array(times, pa.timestamp("us", tz="UTC"))})
        con.register("tasks", tasks)
        return [r[0] for r in con.sql(f"SELECT {DAY_SQL['duckdb']} FROM tasks").fetchall()]
    finally:
        con.close()


def test_the_day_at_the_edges_in_any_session_zone() -> None:
    times: list[datetime | None] = [*EDGES, None]
    want = [t.date() if t is not None else None for t in times]
    for zone in ("UTC", "America/Los_Angeles", "Asia/Kolkata"):
        assert days(times, zone) == want, zone


@settings(max_examples=50, deadline=None)
@given(st.lists(st.integers(-(10**15), 4 * 10**15), min_size=1, max_size=50))
def test_the_day_of_any_instant(micros: list[int]) -> None:
    times: list[datetime | None] = [
        datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=m) for m in micros
    ]
    assert days(times, "Europe/Berlin") == [t.date() for t in times if t is not None]
