"""Signed files served as a careful file service does; the signing secret outside the database;
the database file private."""

from __future__ import annotations

import os
import sqlite3
import stat
from pathlib import Path
from urllib.parse import unquote

import httpx
import pytest

from songlab.localfiles import WideModeWarning
from songlab.sandbox.storage import file_store as storage
from songlab.sandbox.storage.db import Store
from tests.sandbox._util import signed_url, tone, upload

posix_only = pytest.mark.skipif(os.name != "posix", reason="file modes are POSIX")

RUNNABLE = [
    ("page.html", "text/html", b"<script>document.title='ran'</script>"),
    ("page.html", "text/html; charset=utf-8", b"<script>1</script>"),
    ("page.xhtml", "application/xhtml+xml", b"<html xmlns='http://www.w3.org/1999/xhtml'/>"),
    ("pic.svg", "image/svg+xml", b"<svg xmlns='http://www.w3.org/2000/svg'><script/></svg>"),
    ("feed.xml", "application/xml", b"<?xml version='1.0'?><a/>"),
    ("feed.xml", "text/xml", b"<a/>"),
    ("app.js", "text/javascript", b"alert(1)"),
    ("app.js", "application/javascript", b"alert(1)"),
    ("doc.pdf", "application/pdf", b"%PDF-1.4"),
    ("odd.bin", "application/x-made-up", b"\x00\x01"),
    ("PAGE.HTML", "Text/HTML", b"<p>"),
]


@pytest.mark.parametrize(("name", "mime", "body"), RUNNABLE, ids=lambda v: str(v)[:24])
def test_a_type_a_browser_would_run_is_a_download(acct, name, mime, body):
    fid = upload(acct, body, name=name, mime=mime)
    r = httpx.get(signed_url(acct, fid))
    assert r.status_code == 200 and r.content == body
    assert r.headers["x-content-type-options"] == "nosniff"
    assert r.headers["content-disposition"] == f'attachment; filename="{name}"'
    assert r.headers["content-security-policy"] == "default-src 'none'; sandbox"


@pytest.mark.parametrize(
    ("name", "mime"),
    [("a.mp3", "audio/mpeg"), ("a.txt", "text/plain"), ("a.png", "image/png")],
)
def test_inert_types_play_in_place_with_nosniff(acct, name, mime):
    body = tone(0.5) if mime.startswith("audio/") else b"just text"
    fid = upload(acct, body, name=name, mime=mime)
    r = httpx.get(signed_url(acct, fid))
    assert r.status_code == 200 and r.content == body
    assert r.headers["x-content-type-options"] == "nosniff"
    assert "content-disposition" not in r.headers
    assert "content-security-policy" not in r.headers
    assert r.headers["cache-control"] == "private, max-age=60"


def test_generated_audio_stays_playable_in_place(acct):
    from tests.sandbox._util import run

    snap = run(acct, "sfx_gen", "v5", {"prompt": "door", "duration_seconds": 1})
    fid = snap["output"]["assets"][0]["file_id"]
    r = httpx.get(signed_url(acct, fid))
    assert r.headers["content-type"].startswith("audio/")
    assert r.headers["x-content-type-options"] == "nosniff"
    assert "content-disposition" not in r.headers


@pytest.mark.parametrize(
    ("name", "ascii_name"),
    [
        ("chanson été.html", "chanson _t_.html"),
        ("..\\..\\x.svg", "x.svg"),
        ("dir/sub/y.svg", "y.svg"),
        ("semi;colon%.html", "semi_colon_.html"),
    ],
)
def test_the_download_name_is_safe_ascii_with_the_exact_name_beside(acct, name, ascii_name):
    fid = upload(acct, b"<p>", name=name, mime="text/html")
    disposition = httpx.get(signed_url(acct, fid)).headers["content-disposition"]
    assert disposition.startswith(f'attachment; filename="{ascii_name}"')
    exact = name.replace("\\", "/").rsplit("/", 1)[-1]
    if exact != ascii_name:
        _, _, encoded = disposition.partition("; filename*=UTF-8''")
        assert unquote(encoded) == exact
    assert "\r" not in disposition and "\n" not in disposition


def test_download_headers_without_a_name_use_the_file_id():
    h = storage.download_headers("image/svg+xml", None, "f-123")
    assert h["Content-Disposition"] == 'attachment; filename="f-123"'


def test_a_quote_or_line_break_in_a_name_cannot_break_out_of_the_header():
    # (httpx percent-encodes quotes in a multipart name, so this is checked on the function)
    h = storage.download_headers("text/html", 'a".html\r\nSet-Cookie: x=1', "f")
    assert h["Content-Disposition"].startswith('attachment; filename="a_.html__Set-Cookie: x=1"')
    assert "\r" not in h["Content-Disposition"] and "\n" not in h["Content-Disposition"]


# -- the signing secret and the database file --------------------------------------------


def _signer(db: Path) -> tuple[Store, storage.Signer]:
    store = Store(str(db))
    return store, storage.Signer(store)


@posix_only
def test_a_new_database_is_0600_in_a_0700_folder_with_its_key_beside(tmp_path):
    db = tmp_path / "data" / "sandbox.sqlite3"
    store, signer = _signer(db)
    token = signer.sign("f1", 2_000_000_000)
    store.execute("INSERT INTO meta (key, value) VALUES ('x', 'y')")
    modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in db.parent.iterdir()}
    assert modes == {
        "sandbox.sqlite3": 0o600,
        "sandbox.sqlite3-wal": 0o600,
        "sandbox.sqlite3-shm": 0o600,
        "sandbox.sqlite3.signing-key": 0o600,
    }
    assert stat.S_IMODE(db.parent.stat().st_mode) == 0o700
    store.close()
    # the secret is nowhere in the database: not in meta, not in any byte of the file
    key_hex = storage.key_path(str(db)).read_text().strip()
    assert len(bytes.fromhex(key_hex)) == 32
    con = sqlite3.connect(db)
    assert [r[0] for r in con.execute("SELECT key FROM meta")] == ["x"]
    con.close()
    assert key_hex.encode() not in db.read_bytes()
    # a restart of the same database verifies what was signed before
    store, signer = _signer(db)
    assert signer.verify(token, 1_000_000_000) == "f1"
    store.close()


def test_an_old_database_secret_moves_out_and_is_erased_from_the_file(tmp_path):
    db = tmp_path / "old.sqlite3"
    store = Store(str(db))
    legacy = "ab" * 32
    store.set_meta("signing_secret", legacy)  # as songlab before issue 31 kept it
    store.close()
    token = storage.Signer(Store(":memory:"), key=bytes.fromhex(legacy)).sign("f1", 2_000_000_000)

    store, signer = _signer(db)
    assert signer.verify(token, 1_000_000_000) == "f1"  # links issued before still open
    assert store.get_meta("signing_secret") is None
    store.close()
    assert storage.key_path(str(db)).read_text().strip() == legacy
    assert legacy.encode() not in db.read_bytes()
    wal = db.with_name(db.name + "-wal")
    assert not wal.exists() or legacy.encode() not in wal.read_bytes()


def test_a_lost_key_costs_only_the_links_issued_before(tmp_path):
    db = tmp_path / "s.sqlite3"
    store, signer = _signer(db)
    token = signer.sign("f1", 2_000_000_000)
    store.close()
    storage.key_path(str(db)).unlink()
    store, signer = _signer(db)
    with pytest.raises(storage.SignatureError, match="tampered"):
        signer.verify(token, 1_000_000_000)
    assert signer.verify(signer.sign("f1", 2_000_000_000), 1_000_000_000) == "f1"
    store.close()


@pytest.mark.parametrize("damage", [b"", b"not hex at all", b"abcd\n", b"\xff\xfe"])
def test_a_damaged_key_is_replaced_and_said(tmp_path, caplog, damage):
    db = tmp_path / "s.sqlite3"
    store, _ = _signer(db)
    store.close()
    storage.key_path(str(db)).write_bytes(damage)
    with caplog.at_level("WARNING", logger="songlab.sandbox.storage"):
        store, signer = _signer(db)
    assert str(storage.key_path(str(db))) in caplog.text
    assert "a new one is made" in caplog.text
    assert len(bytes.fromhex(storage.key_path(str(db)).read_text())) == 32
    assert signer.verify(signer.sign("f", 20), 10) == "f"
    store.close()


def test_in_memory_keeps_its_secret_in_the_process_only(tmp_path):
    a = storage.Signer(Store(":memory:"))
    b = storage.Signer(Store(":memory:"))
    assert a.verify(a.sign("f", 20), 10) == "f"
    with pytest.raises(storage.SignatureError):
        b.verify(a.sign("f", 20), 10)
    assert storage.key_path(":memory:") is None
    assert list(tmp_path.iterdir()) == []


@posix_only
def test_an_existing_database_open_to_others_is_warned_about(tmp_path):
    db = tmp_path / "shared.sqlite3"
    Store(str(db)).close()
    db.chmod(0o644)
    with pytest.warns(WideModeWarning, match=r"the sandbox database .*0644.*chmod 600"):
        Store(str(db)).close()
    assert stat.S_IMODE(db.stat().st_mode) == 0o644  # the user's choice, only warned about


def test_a_damaged_database_is_named_and_left_as_it_is(tmp_path):
    from songlab.sandbox.storage.db import DamagedDatabase

    db = tmp_path / "bad.sqlite3"
    garbage = b"not a database at all" * 300
    db.write_bytes(garbage)
    db.chmod(0o600)
    with pytest.raises(DamagedDatabase, match=rf"the sandbox database {db} cannot be used"):
        Store(str(db))
    assert db.read_bytes() == garbage  # untouched
