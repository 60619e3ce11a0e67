"""songlab.localfiles: private files (0600) in private folders (0700), written whole or not at all."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from songlab import localfiles
from songlab.localfiles import (
    WideModeWarning,
    check_private,
    create_exclusive,
    ensure_private_file,
    private_dir,
    replace_atomically,
    write_atomic,
)

posix_only = pytest.mark.skipif(os.name != "posix", reason="file modes are POSIX")


def mode(p: Path) -> int:
    return stat.S_IMODE(p.stat().st_mode)


@pytest.fixture
def open_umask():
    """The loosest umask a user may have: nothing masked."""
    old = os.umask(0)
    yield
    os.umask(old)


@posix_only
def test_private_dir_makes_missing_parents_0700_and_leaves_existing_folders(
    tmp_path, open_umask
) -> None:
    tmp_path.chmod(0o755)
    made = private_dir(tmp_path / "a" / "b" / "c")
    assert made == tmp_path / "a" / "b" / "c"
    for p in (tmp_path / "a", tmp_path / "a" / "b", made):
        assert mode(p) == 0o700, p
    assert mode(tmp_path) == 0o755  # the user's own folder is not changed
    assert private_dir(made) == made  # again: no error


def test_private_dir_refuses_a_file_in_the_way(tmp_path) -> None:
    (tmp_path / "f").write_text("x")
    with pytest.raises((NotADirectoryError, FileExistsError)):
        private_dir(tmp_path / "f")


@posix_only
def test_write_atomic_creates_0600_whatever_the_umask(tmp_path, open_umask) -> None:
    target = tmp_path / "new" / "record.json"
    assert write_atomic(target, "héllo") == target
    assert target.read_text(encoding="utf-8") == "héllo"
    assert mode(target) == 0o600
    assert mode(target.parent) == 0o700
    write_atomic(target, b"\x00\x01")
    assert target.read_bytes() == b"\x00\x01"
    assert sorted(p.name for p in target.parent.iterdir()) == ["record.json"]  # no temp left


@posix_only
def test_rewriting_a_wide_file_makes_it_private(tmp_path) -> None:
    target = tmp_path / "report.html"
    target.write_text("old")
    target.chmod(0o644)
    write_atomic(target, "new")
    assert (target.read_text(), mode(target)) == ("new", 0o600)


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path) -> None:
    target = tmp_path / "ledger.parquet"
    write_atomic(target, b"old")

    def half(tmp: Path) -> None:
        tmp.write_bytes(b"half of the n")
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError, match="disk full"):
        replace_atomically(target, half)
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["ledger.parquet"]


@posix_only
def test_replace_atomically_hands_an_existing_private_path_to_the_writer(tmp_path) -> None:
    seen = {}

    def writer(tmp: Path) -> None:
        seen["exists"], seen["mode"] = tmp.exists(), mode(tmp)
        tmp.unlink()  # a library that recreates its file (with its own mode)
        tmp.write_bytes(b"xlsx")
        tmp.chmod(0o666)

    target = replace_atomically(tmp_path / "out.xlsx", writer)
    assert seen == {"exists": True, "mode": 0o600}
    assert (target.read_bytes(), mode(target)) == (b"xlsx", 0o600)


@posix_only
def test_create_exclusive_writes_a_new_private_file_once(tmp_path, open_umask) -> None:
    target = tmp_path / "inbox" / "answer.json"
    create_exclusive(target, '{"a": 1}')
    assert (target.read_text(), mode(target), mode(target.parent)) == ('{"a": 1}', 0o600, 0o700)
    with pytest.raises(FileExistsError):
        create_exclusive(target, '{"a": 2}')
    assert target.read_text() == '{"a": 1}'  # never overwritten
    assert [p.name for p in target.parent.iterdir()] == ["answer.json"]


def test_create_exclusive_without_hard_links_still_refuses_to_overwrite(
    tmp_path, monkeypatch
) -> None:
    def no_links(src: object, dst: object) -> None:
        raise PermissionError("hard links not supported")

    monkeypatch.setattr(localfiles.os, "link", no_links)
    target = tmp_path / "a.json"
    create_exclusive(target, b"one")
    with pytest.raises(FileExistsError):
        create_exclusive(target, b"two")
    assert target.read_bytes() == b"one"
    assert [p.name for p in tmp_path.iterdir()] == ["a.json"]


def test_only_one_of_many_racing_processes_creates_the_file(tmp_path) -> None:
    """Eight real processes race to create one answer file: exactly one wins, whole."""
    target = tmp_path / "answer.json"
    code = textwrap.dedent(
        f"""
        import sys
        from songlab.localfiles import create_exclusive
        try:
            create_exclusive({str(target)!r}, sys.argv[1] * 100_000)
        except FileExistsError:
            print("lost")
        else:
            print("won")
        """
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", code, ch], stdout=subprocess.PIPE, text=True)
        for ch in "abcdefgh"
    ]
    results = [p.communicate(timeout=60)[0].strip() for p in procs]
    assert sorted(results) == ["lost"] * 7 + ["won"]
    content = target.read_text()
    assert len(content) == 100_000 and len(set(content)) == 1
    assert [p.name for p in tmp_path.iterdir()] == ["answer.json"]


@posix_only
def test_check_private_warns_naming_path_mode_and_fix(tmp_path) -> None:
    f = tmp_path / "campaign.json"
    assert check_private(f) is True  # absent: nothing to say
    f.write_text("{}")
    f.chmod(0o600)
    assert check_private(f) is True
    f.chmod(0o644)
    with pytest.warns(WideModeWarning) as caught:
        assert check_private(f, what="the campaign file") is False
    text = str(caught[0].message)
    assert "the campaign file" in text and str(f) in text
    assert "0644" in text and f"chmod 600 {f}" in text
    d = tmp_path / "cache"
    d.mkdir(mode=0o755)
    d.chmod(0o755)
    with pytest.warns(WideModeWarning, match="chmod 700"):
        check_private(d, what="the cache folder")


@posix_only
def test_ensure_private_file_creates_or_checks(tmp_path, open_umask) -> None:
    db = tmp_path / "data" / "sandbox.db"
    ensure_private_file(db)
    assert (db.read_bytes(), mode(db), mode(db.parent)) == (b"", 0o600, 0o700)
    db.write_bytes(b"SQLite format 3\x00")
    ensure_private_file(db)  # exists, private: kept, no warning
    assert db.read_bytes() == b"SQLite format 3\x00"
    db.chmod(0o664)
    with pytest.warns(WideModeWarning, match="0664"):
        ensure_private_file(db, what="the sandbox database")
    assert mode(db) == 0o664  # a mode the user chose is only warned about


@posix_only
def test_sqlite_journal_and_wal_follow_the_private_database(tmp_path, open_umask) -> None:
    """SQLite gives its -wal and -shm files the mode of the database file."""
    import sqlite3

    db = ensure_private_file(tmp_path / "record.sqlite")
    con = sqlite3.connect(db)
    con.execute("PRAGMA journal_mode=WAL")
    con.execute("CREATE TABLE t (x)")
    con.execute("INSERT INTO t VALUES (1)")
    con.commit()
    files = sorted(tmp_path.iterdir())
    assert {p.name for p in files} >= {"record.sqlite", "record.sqlite-wal", "record.sqlite-shm"}
    assert {p.name: mode(p) for p in files} == {p.name: 0o600 for p in files}
    con.close()


def test_localfiles_imports_nothing_of_songlab() -> None:
    import ast

    tree = ast.parse(Path(localfiles.__file__).read_text())
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            names.append(node.module or "")
    assert "os" in names
    assert [n for n in names if n.startswith("songlab")] == []
