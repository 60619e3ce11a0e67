"""The Parquet ledger: month partitions, incremental refresh, atomic writes, DuckDB-readable."""

from __future__ import annotations

from datetime import datetime
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
    done = snap(
        "p", status="completed", cost_usd="0.12000000", created_at=_ts(5), updated_at=_ts(5, 13)
    )
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


class _Service:
    """A fake client over a written dataset: ``list()`` yields ``new`` then the newest stored
    tasks as the service shows them now (finished); ``get`` answers for those."""

    def __init__(self, path: Path, new: list[dict[str, Any]]) -> None:
        head: list[dict[str, Any]] = []
        for month in sorted(path.glob("month=2*/part.parquet"))[-2:]:
            head += pq.ParquetFile(month).read_row_group(0).slice(0, 500).to_pylist()
        self.shown = {
            r["task_id"]: snap(
                r["task_id"],
                tool_id=r["tool_id"],
                model=r["model"],
                operation=r["operation"],
                license=r["license"],
                created_at=r["created_at"].isoformat(),
                updated_at=r["updated_at"].isoformat(),
                cost_usd=str(r["cost_usd"]) if r["cost_usd"] is not None else None,
            )
            for r in head
        }
        self.listed = [
            *new,
            *sorted(self.shown.values(), key=lambda r: r["created_at"], reverse=True),
        ]
        self.generations = self

    def list(self, *, limit: int = 100) -> Any:
        yield from self.listed

    def get(self, task_id: str) -> dict[str, Any]:
        return self.shown[task_id]


def _stamp(store: LedgerStore) -> dict[str, tuple[int, int]]:
    return {f.parent.name: (f.stat().st_ino, f.stat().st_mtime_ns) for f in store.files()}


def test_refresh_of_a_large_dataset_rewrites_only_the_changed_month(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from datetime import timedelta

    from songlab.ledger import store as store_module
    from songlab.ledger.synthetic import _EPOCH, write_synthetic_dataset

    root = tmp_path / "big"
    end = _EPOCH + timedelta(days=365)
    write_synthetic_dataset(
        root, 1_000_000, seed=2, days=365, settled_before=end - timedelta(minutes=30)
    )
    store = LedgerStore(root, record=None)
    glob = str(root / "**" / "*.parquet")
    con = duckdb.connect()
    (waiting,) = con.execute(
        f"SELECT list(task_id) FROM read_parquet('{glob}') WHERE status IN ('queued', 'processing')"
    ).fetchone()
    assert 0 < len(waiting) < 100  # only the last half hour is in flight
    newest = con.execute(f"SELECT max(created_at) FROM read_parquet('{glob}')").fetchone()[0]
    month = f"month={newest:%Y-%m}"
    read_months: list[str] = []
    real_read = LedgerStore._read_month

    def spy(self: LedgerStore, m: str) -> Any:
        read_months.append(m)
        return real_read(self, m)

    def never(self: LedgerStore) -> Any:
        raise AssertionError("refresh read every stored row")

    monkeypatch.setattr(LedgerStore, "_read_month", spy)
    monkeypatch.setattr(LedgerStore, "_read_stored", never)
    for round_, count in enumerate((5, 3)):
        new = [
            snap(
                f"new{round_}_{i}", created_at=(newest + timedelta(milliseconds=9 - i)).isoformat()
            )
            for i in range(count)
        ]
        before = _stamp(store)
        read_months.clear()
        result = store.refresh(_Service(root, new))
        assert result.added == count
        assert result.updated == (len(waiting) if round_ == 0 else 0)
        assert result.months_written == (month.removeprefix("month="),)
        assert read_months == [month.removeprefix("month=")]  # no other month is read
        after = _stamp(store)
        assert after[month] != before[month]  # replaced (os.replace: a new inode)
        assert {m: s for m, s in after.items() if m != month} == {
            m: s for m, s in before.items() if m != month
        }
        assert (root / store_module.STATE_FILE).exists()
        newest = max(newest, *(datetime.fromisoformat(t["created_at"]) for t in new))
    rows, ids, still = con.execute(
        f"SELECT count(*), count(DISTINCT task_id), count(*) FILTER (WHERE status IN "
        f"('queued', 'processing')) FROM read_parquet('{glob}')"
    ).fetchone()
    assert rows == ids == 1_000_000 + 8  # every task once
    assert still == 0  # the tasks in flight were fetched again, now finished
    (mine,) = con.execute(
        f"SELECT list(task_id ORDER BY task_id) FROM read_parquet('{glob}') "
        "WHERE task_id LIKE 'new%'"
    ).fetchone()
    assert mine == sorted([f"new0_{i}" for i in range(5)] + [f"new1_{i}" for i in range(3)])
    # the same listing again: nothing new, nothing written, one snapshot read
    before = _stamp(store)
    again = store.refresh(_Service(root, []))
    assert (again.added, again.updated, again.months_written, again.read) == (0, 0, (), 1)
    assert _stamp(store) == before


def test_a_state_that_no_longer_matches_the_files_is_rebuilt(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.compute as pc

    from songlab.ledger import _parquet

    store = LedgerStore(tmp_path)
    store.refresh(
        [
            snap("p", status="processing", cost_usd=None, created_at=_ts(5)),
            snap("o", created_at=_ts(1)),
        ]
    )
    assert (tmp_path / "_state.arrow").exists()  # "p" is pending in it
    # another writer (an older songlab, a copy from a backup) finishes "p" in the file
    (part,) = [f for f in store.files() if "p" in pq.read_table(f)["task_id"].to_pylist()]
    table = _parquet.read_table(part)
    done = pc.if_else(pc.equal(table["task_id"], "p"), "completed", table["status"])
    _parquet.write_atomic(
        part, table.set_column(table.schema.get_field_index("status"), "status", pa.array(done))
    )
    client = _Client([snap("p", created_at=_ts(5)), snap("o", created_at=_ts(1))])
    result = store.refresh(client)
    # the state was made again from the files: "p" is finished, nothing to fetch
    assert (result.added, result.updated, result.months_written) == (0, 0, ())
    assert client.generations.read == 1 and client.generations.got == []


def test_reconcile_store_read_in_place_equals_the_whole_table(tmp_path: Path) -> None:
    """The engine reads the month files in place (as the report does); the same figures as
    the whole table read into memory."""
    from songlab.ledger.reconcile import reconcile, reconcile_store

    class _Account:
        def __init__(self) -> None:
            self.left = 100_000

        def balance(self) -> dict[str, Any]:
            return {"total_effective": self.left, "base_effective": self.left}

    class _Billed(_Client):
        account = _Account()

    store = LedgerStore(tmp_path, record=None)
    tasks: list[dict[str, Any]] = []
    for round_, days in enumerate(((1, 2), (33, 40), (70, 71, 72))):  # three months
        tasks = [
            *(
                snap(f"r{round_}_{d}", created_at=_ts(d), cost_usd="0.12000000")
                for d in reversed(days)
            ),
            *tasks,
        ]
        client = _Billed(tasks)
        client.account.left -= 12 * len(days) + round_  # a cent unexplained from round 1
        store.refresh(client)
    assert len(store.files()) == 3 and len(store.balance_table()) == 3
    whole = reconcile(store.read_table(), store.balance_table())
    pd.testing.assert_frame_equal(reconcile_store(store), whole)
    assert whole["tasks"].tolist() == [2, 2, 3]
    assert whole["status"].tolist() == ["baseline", "unexplained", "unexplained"]
    monthly = reconcile_store(store, freq="month")
    pd.testing.assert_frame_equal(
        monthly, reconcile(store.read_table(), store.balance_table(), freq="month")
    )
    # no snapshot: nothing to reconcile, and no task is read
    bare = LedgerStore(tmp_path / "bare", record=None)
    bare.refresh(tasks)

    def no_read() -> list[Path]:
        raise AssertionError("reconcile_store read the tasks with no snapshot to compare")

    bare.files = no_read  # type: ignore[method-assign]
    assert reconcile_store(bare).empty


def test_a_busy_month_is_written_in_row_groups_an_engine_can_split_and_skip(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A month's file holds row groups of at most ``ROW_GROUP_ROWS`` tasks, newest first, so
    each group's times are a range of their own (an engine reads the groups on several cores
    and skips those outside a window: the newest day, the last 7 days); it reads back as the
    same tasks as a file of one group."""
    import songlab.ledger._parquet as _parquet

    records = list(synthetic_tasks(800, seed=5))
    whole = LedgerStore(tmp_path / "whole")
    whole.refresh(records)
    monkeypatch.setattr(_parquet, "ROW_GROUP_ROWS", 100)
    store = LedgerStore(tmp_path / "ledger")
    store.refresh(records)
    busiest = max(store.files(), key=lambda f: pq.ParquetFile(f).metadata.num_rows)
    meta = pq.ParquetFile(busiest).metadata
    assert meta.num_rows > 200
    sizes = [meta.row_group(g).num_rows for g in range(meta.num_row_groups)]
    assert max(sizes) == 100 and sum(sizes) == meta.num_rows
    at = meta.schema.to_arrow_schema().get_field_index("created_at")
    ranges = [
        (meta.row_group(g).column(at).statistics.min, meta.row_group(g).column(at).statistics.max)
        for g in range(meta.num_row_groups)
    ]
    assert all(newer[0] >= older[1] for newer, older in zip(ranges, ranges[1:], strict=False))
    pd.testing.assert_frame_equal(
        store.read().drop(columns="seen_at"), whole.read().drop(columns="seen_at")
    )
