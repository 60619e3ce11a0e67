"""The record is never silently lost: an emptied, cut-off, garbage or unreadable record is
named (path, what is wrong, what songlab does), kept aside and never overwritten; no
``sqlite3.DatabaseError`` reaches the caller; the record is private on disk.

The proof against the real notebook (notebook 02's clone, run twice with the record
damaged between the runs) is ``tests/reliability/test_lost_record.py``.
"""

from __future__ import annotations

import os
import sqlite3
import stat
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import pytest

from songlab.client import Client
from songlab.client._create_record import CreateRecord
from songlab.client._record_file import diagnose
from songlab.client._record_store import RecordStore
from songlab.localfiles import WideModeWarning

DATA = Path(__file__).resolve().parents[2] / "data"
SONG = {"prompt": "a short test song", "duration_seconds": 5}


def _row(i: int) -> CreateRecord:
    return CreateRecord(
        task_id=f"t-{i:05d}",
        key_id="key_1",
        base_url="http://x",
        idempotency_key=f"k-{i}",
        route="/v1/generations",
        tool_id="tool",
        operation="generate_song",
        model="v5",
        license=1,
        payload_sha256=f"{i:064x}",
        estimate_usd=Decimal("0.07"),
        project=None,
        tags=(),
        scope="account",
        take=1,
        origin="test",
        sent_at=datetime(2026, 11, 1, tzinfo=UTC),
        accepted_at=datetime(2026, 11, 1, tzinfo=UTC),
    )


def _filled(path: Path, n: int = 400) -> RecordStore:
    store = RecordStore(path)
    for i in range(n):
        store.write(_row(i), payload="x" * 200)
    store.close()
    con = sqlite3.connect(path)  # fold the WAL into the file, as a closed session leaves it
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()
    return store


def _aside(path: Path) -> list[Path]:
    """The damaged files set aside (not their -wal/-shm, set aside beside them)."""
    found = path.parent.glob(f"{path.name}.damaged-*")
    return sorted(p for p in found if not p.name.endswith(("-wal", "-shm", "-journal")))


def _cut(p: Path) -> None:
    p.write_bytes(p.read_bytes()[: p.stat().st_size // 2])


DAMAGE = {
    "emptied": (lambda p: p.write_bytes(b""), "is empty (0 bytes)"),
    "garbage": (lambda p: p.write_bytes(b"<html>sync conflict</html>" * 100), "not an SQLite"),
    "cut-off": (_cut, "is cut off"),
    "cut-in-header": (lambda p: p.write_bytes(p.read_bytes()[:60]), "is cut off"),
}


@pytest.mark.parametrize("kind", list(DAMAGE))
def test_a_damaged_record_is_named_kept_aside_and_replaced(tmp_path, caplog, kind):
    path = tmp_path / "record.sqlite"
    _filled(path)
    damage, what = DAMAGE[kind]
    damage(path)
    before = path.read_bytes()
    store = RecordStore(path)
    with caplog.at_level("WARNING", logger="songlab.client"):
        assert store.rows() == []  # a new, empty record: no raw sqlite3 error
    (aside,) = _aside(path)
    assert aside.read_bytes() == before  # kept whole, as it was found
    text = caplog.text
    assert f"the record {path} " in text and what in text
    assert f"kept as {aside.name} (never overwritten)" in text
    assert "a new record is started" in text and "Nothing is bought twice" in text
    assert store.write(_row(1))  # the new record works
    assert [r.task_id for r in RecordStore(path).rows()] == ["t-00001"]


def test_a_page_damaged_in_the_middle_is_found_when_read(tmp_path, caplog):
    """A file whose header is whole but one of its pages is garbage: SQLite finds it
    malformed at the first read that touches it; the store sets it aside then."""
    path = tmp_path / "record.sqlite"
    _filled(path, 2000)
    raw = bytearray(path.read_bytes())
    page = int.from_bytes(raw[16:18], "big")
    for p in range(2, len(raw) // page):  # every page but the first: b-tree headers broken
        raw[p * page : p * page + 16] = b"\xff" * 16
    path.write_bytes(bytes(raw))
    assert diagnose(path) is None  # nothing to see from the outside
    store = RecordStore(path)
    with caplog.at_level("WARNING", logger="songlab.client"):
        rows = store.rows()
    assert rows == [] and len(_aside(path)) == 1
    assert "is damaged (database disk image is malformed)" in caplog.text


def test_a_record_damaged_while_open_is_set_aside_at_the_next_write(tmp_path, caplog):
    path = tmp_path / "record.sqlite"
    store = _filled(path)
    assert len(store.rows()) == 400  # open now
    path.write_bytes(b"\x00" * path.stat().st_size)  # zeroed in place under the open store
    for suffix in ("-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    with caplog.at_level("WARNING", logger="songlab.client"):
        assert store.write(_row(9999))
    assert len(_aside(path)) == 1 and f"the record {path} is damaged (" in caplog.text
    assert [r.task_id for r in RecordStore(path).rows()] == ["t-09999"]


def test_what_is_set_aside_is_never_overwritten(tmp_path):
    path = tmp_path / "record.sqlite"
    for i in range(3):
        path.write_bytes(f"garbage {i}".encode() * 10)
        RecordStore(path).rows()
    asides = _aside(path)
    assert len(asides) == 3
    assert sorted(p.read_bytes()[:9] for p in asides) == [b"garbage 0", b"garbage 1", b"garbage 2"]


def test_an_unreadable_record_is_named_and_the_client_carries_on(tmp_path, caplog):
    path = tmp_path / "record.sqlite"
    path.mkdir()  # something in the way that is no file
    store = RecordStore(path)
    with caplog.at_level("WARNING", logger="songlab.client"):
        assert store.rows() == [] and store.write(_row(1)) is False
        assert store.upload_of("k", None, "0" * 64, "audio/mpeg") is None
    assert caplog.text.count(f"could not read the record {path}") == 1  # said once
    assert "Continuing without it" in caplog.text and "nothing is bought twice" in caplog.text
    assert path.is_dir() and _aside(path) == []  # nothing moved: it is not a damaged record


def test_an_upload_with_a_garbage_record_is_no_raw_sqlite_error(
    sandbox, new_account, tmp_path, caplog
):
    """The issue's case: a record holding garbage made files.upload raise a raw
    sqlite3.DatabaseError naming no file."""
    path = tmp_path / "record.sqlite"
    path.write_bytes(os.urandom(5000))
    with Client(new_account().api_key, base_url=sandbox.base_url, record=path, quiet=True) as c:
        with caplog.at_level("WARNING", logger="songlab.client"):
            up = c.files.upload(DATA / "voice_female.mp3")
            h = c.generations.create(operation="generate_song", model="v5", payload=SONG)
    assert up.file_id and h.task_id
    assert f"the record {path} is not an SQLite database" in caplog.text
    assert [r.task_id for r in RecordStore(path).rows()] == [h.task_id]


@pytest.mark.skipif(os.name != "posix", reason="file modes are POSIX")
def test_a_new_record_is_private_and_an_old_wide_one_is_warned_about(tmp_path):
    old = os.umask(0)
    try:
        path = tmp_path / "data" / "songlab" / "record.sqlite"
        store = RecordStore(path)
        store.write(_row(1))
        modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in path.parent.iterdir()}
    finally:
        os.umask(old)
    assert modes == {n: 0o600 for n in ("record.sqlite", "record.sqlite-wal", "record.sqlite-shm")}
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    store.close()
    path.chmod(0o644)  # as an older songlab left it
    with pytest.warns(WideModeWarning, match=r"the client's record .* \(mode 0644\).*chmod 600"):
        RecordStore(path).rows()


def test_diagnose_reads_only_the_header(tmp_path):
    path = tmp_path / "r.sqlite"
    assert diagnose(path) is None  # absent: a new record
    _filled(path, 10)
    assert diagnose(path) is None
    path.write_bytes(path.read_bytes() + b"\x00" * 100)
    assert "not a whole number of" in str(diagnose(path))
