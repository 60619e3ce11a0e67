"""A damaged record never buys twice: notebook 02 (upload a reference, clone the voice,
sing with it) run by papermill against one sandbox process, the record emptied, cut off
or corrupted between runs.

The first run buys the clone ($12) and three songs. Before each later run the record file
is damaged as a sync tool, a full disk or a careless user would leave it. Each later run
must buy nothing (the balance and the account's tasks are those of the first run), say in
the notebook which file was damaged and what songlab did, and keep the damaged file aside.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from tests.reliability._util import SandboxProcess

pytestmark = pytest.mark.slow  # a sandbox process and four notebook runs

papermill = pytest.importorskip("papermill")

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK = "02_voice_clone"


def _empty(p: Path) -> None:
    p.write_bytes(b"")


def _cut(p: Path) -> None:
    p.write_bytes(p.read_bytes()[: p.stat().st_size // 2 + 100])


def _corrupt(p: Path) -> None:
    # the kernel left its WAL beside the file (it holds the newest pages, which would hide
    # damage to the file): fold it in first, as the next clean close would
    con = sqlite3.connect(p)
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()
    raw = bytearray(p.read_bytes())
    page = int.from_bytes(raw[16:18], "big")
    for at in range(page, len(raw), page):  # every page but the first: garbage b-tree headers
        raw[at : at + 16] = b"\xff" * 16
    p.write_bytes(bytes(raw))


DAMAGE: list[tuple[str, Callable[[Path], None], str]] = [
    ("emptied", _empty, "is empty (0 bytes)"),
    ("cut off", _cut, "is cut off"),
    ("corrupted", _corrupt, "is damaged (database disk image is malformed)"),
]


@pytest.fixture
def service(tmp_path: Path) -> Iterator[str]:
    with SandboxProcess(str(tmp_path / "sandbox.sqlite3"), speed=1000) as sb:
        yield sb.base_url


def _state(base_url: str) -> tuple[set[str], int]:
    h = {"Authorization": "Bearer sk-sandbox-demo"}
    with httpx.Client(base_url=base_url, headers=h, timeout=30) as c:
        tasks = {
            t["task_id"] for t in c.get("/v1/generations", params={"limit": 100}).json()["data"]
        }
        return tasks, int(c.get("/v1/account/balance").json()["total_effective"])


def _run(work: Path, n: int) -> str:
    out = work / f"{NOTEBOOK}.run{n}.ipynb"
    papermill.execute_notebook(
        str(work / f"{NOTEBOOK}.ipynb"),
        str(out),
        cwd=str(work),
        kernel_name="python3",
        progress_bar=False,
        log_output=False,
    )
    return out.read_text(encoding="utf-8")


def test_an_emptied_cut_or_corrupt_record_buys_nothing_twice_and_is_named(
    service: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    work = tmp_path / "notebooks"
    work.mkdir()
    (tmp_path / "data").symlink_to(ROOT / "data")
    shutil.copy(ROOT / "notebooks" / f"{NOTEBOOK}.ipynb", work)
    record = tmp_path / "record" / "record.sqlite"
    monkeypatch.setenv("SONGLAB_API_KEY", "sk-sandbox-demo")
    monkeypatch.setenv("SONGLAB_BASE_URL", service)
    monkeypatch.setenv("SONGLAB_RECORD", str(record))
    monkeypatch.setenv("SONGLAB_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("SONGLAB_ORIGIN", raising=False)  # the kernel names itself

    _run(work, 0)
    tasks, balance = _state(service)
    assert 100000 - balance >= 1200  # the clone ($12) and the songs were bought
    assert record.stat().st_size > 0

    for n, (name, damage, said) in enumerate(DAMAGE, start=1):
        damage(record)
        damaged = record.read_bytes()
        text = _run(work, n)
        assert _state(service) == (tasks, balance), f"{name}: something was bought again"
        assert f"the record {record} {said}" in text, name
        assert "Nothing is bought twice" in text and "kept as record.sqlite.damaged-" in text
        asides = sorted(
            p
            for p in record.parent.glob("record.sqlite.damaged-*")
            if not p.name.endswith(("-wal", "-shm"))
        )
        assert len(asides) == n and damaged in {p.read_bytes() for p in asides}, name
        assert os.stat(record).st_size > 0  # a new record, written by this run
