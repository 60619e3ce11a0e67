"""The Parquet ledger: month partitions, incremental refresh, atomic writes, DuckDB-readable."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
import pandas as pd
import pyarrow.parquet as pq
import pytest

from songlab.ledger import LedgerStore, tasks_frame
from songlab.ledger.synthetic import synthetic_tasks
from tests.ledger._util import snap


class _Listing:
    """A newest-first listing that counts what was read; optional per-task get."""

    def __init__(self, tasks: list[dict[str, Any]], *, with_get: bool) -> None:
        self.tasks = tasks
        self.read = 0
        self.got: list[str] = []
        if not with_get:
            self.get = None  # type: ignore[assignment]

    def list(self, *, limit: int = 20) -> Any:
        for t in self.tasks:
            self.read += 1
            yield t

    def get(self, task_id: str) -> dict[str, Any]:
        self.got.append(task_id)
        return next(t for t in self.tasks if t["task_id"] == task_id)


class _Client:
    def __init__(self, tasks: list[dict[str, Any]], *, with_get: bool = True) -> None:
        self.generations = _Listing(tasks, with_get=with_get)


def _ts(day: int, hour: int = 12) -> str:
    return f"2026-{10 + day // 31:02d}-{day % 31 + 1:02d}T{hour:02d}:00:00.000000Z"


def test_first_refresh_writes_month_partitions(tmp_path: Path) -> None:
    records = list(synthetic_tasks(500, seed=3))
    store = LedgerStore(tmp_path / "ledger")
    result = store.refresh(records)
    assert result.added == 500 and result.updated == 0
    months = sorted(p.parent.name for p in store.files())
    assert months == [f"month={m}" for m in result.months_written]
    assert len(months) >= 3  # 100 days of tasks
    back = store.read()
    expected = tasks_frame(records)
    # the store adds when it first saw each task: this refresh, the same instant for all
    assert back["seen_at"].notna().all() and back["seen_at"].nunique() == 1
    assert expected["seen_at"].isna().all()
    pd.testing.assert_frame_equal(back.drop(columns="seen_at"), expected.drop(columns="seen_at"))
    for f in store.files():
        month = f.parent.name.removeprefix("month=")
        created = pq.read_table(f)["created_at"].to_pylist()
        assert {c.strftime("%Y-%m") for c in created} == {month}


@pytest.mark.parametrize("with_get", [True, False], ids=["get", "walk-back"])
def test_refresh_pulls_only_new_and_refetches_pending(tmp_path: Path, with_get: bool) -> None:
    old = [
        snap("p", status="processing", cost_usd=None, created_at=_ts(5)),
        *[snap(f"o{i}", created_at=_ts(4 - i)) for i in range(5)],
    ]  # newest first
    store = LedgerStore(tmp_path)
    store.refresh(old)
    done = snap("p", status="completed", cost_usd="0.12000000", created_at=_ts(5),
                updated_at=_ts(5, 13))  # fmt: skip
    new = [snap(f"n{i}", created_at=_ts(40 - i)) for i in range(3)]
    client = _Client([*new, done, *old[1:]], with_get=with_get)
    result = store.refresh(client)
    assert (result.added, result.updated) == (3, 1)
    # stops at the first task older than the newest row (or the oldest pending one)
    assert client.generations.read == 5
    assert client.generations.got == []  # "p" came with the new page: no extra fetch
    df = store.read().set_index("task_id")
    assert df.loc["p", "status"] == "completed" and df.loc["p", "cost_source"] == "billed"
    assert len(df) == 9
    # nothing new: one snapshot read, nothing written
    again = store.refresh(_Client([*new, done, *old[1:]], with_get=with_get))
    assert (again.added, again.updated, again.months_written) == (0, 0, ())


def test_pending_row_older_than_the_page_is_fetched_by_id(tmp_path: Path) -> None:
    store = LedgerStore(tmp_path)
    store.refresh(
        [
            snap("new", created_at=_ts(9)),
            snap("p", status="queued", cost_usd=None, created_at=_ts(1)),
        ]
    )
    done = snap("p", status="failed", cost_usd="0", created_at=_ts(1))
    client = _Client([snap("newer", created_at=_ts(20)), snap("new", created_at=_ts(9)), done])
    result = store.refresh(client)
    assert (result.added, result.updated) == (1, 1)
    assert client.generations.got == ["p"]
    assert client.generations.read == 2  # stops at "new", a task it has
    assert store.read().set_index("task_id").loc["p", "status"] == "failed"


def test_a_failed_write_leaves_the_old_file_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = LedgerStore(tmp_path)
    store.refresh([snap("a")])
    (part,) = store.files()
    before = part.read_bytes()

    def broken(table: Any, where: Any, **kwargs: Any) -> None:
        Path(where).write_bytes(b"PAR1 half a file")
        raise OSError("disk full")

    monkeypatch.setattr(pq, "write_table", broken)
    with pytest.raises(OSError, match="disk full"):
        store.refresh([snap("b", created_at="2026-11-20T11:00:00Z"), snap("a")])
    assert part.read_bytes() == before
    assert [p.name for p in part.parent.iterdir()] == ["part.parquet"]
    assert store.read()["task_id"].tolist() == ["a"]


def test_duckdb_reads_the_dataset(tmp_path: Path) -> None:
    records = list(synthetic_tasks(800, seed=5))
    store = LedgerStore(tmp_path / "ledger")
    store.refresh(records)
    frame = store.read()
    glob = str(tmp_path / "ledger" / "**" / "*.parquet")
    con = duckdb.connect()
    rows, total, months = con.execute(
        "SELECT count(*), sum(cost_usd), count(DISTINCT month) "
        f"FROM read_parquet('{glob}', hive_partitioning = true)"
    ).fetchone()
    assert rows == len(frame)
    assert total == frame["cost_usd"].sum()  # DECIMAL(38, 8) in DuckDB: exact
    assert months == len(store.files())
    by_op = dict(
        con.execute(
            f"SELECT operation, sum(cost_usd) FROM read_parquet('{glob}') GROUP BY operation"
        ).fetchall()
    )
    assert by_op == dict(
        frame.songlab.spend("operation")[["operation", "cost_usd"]].itertuples(index=False)
    )
