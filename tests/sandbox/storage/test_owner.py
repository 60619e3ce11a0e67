"""One sandbox per database file: the lock, the published address, a second server refused."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import httpx
import pytest

from songlab.sandbox.http.server import serve_in_thread
from songlab.sandbox.storage import owner


def test_a_claimed_file_is_refused_to_a_second_claim_naming_where_it_answers(
    tmp_path: Path,
) -> None:
    db = str(tmp_path / "sandbox.sqlite3")
    first = owner.claim(db)
    with pytest.raises(owner.SandboxInUse) as starting:
        owner.claim(db)
    assert starting.value.serving is None and "another process holds it" in str(starting.value)
    first.publish(base_url="http://127.0.0.1:1234", admin_token="adm-x")
    published = owner.address_file(db)
    assert stat.S_IMODE(published.stat().st_mode) == 0o600
    with pytest.raises(owner.SandboxInUse) as serving:
        owner.claim(db)
    assert serving.value.serving == {
        "pid": os.getpid(),
        "db": db,
        "base_url": "http://127.0.0.1:1234",
        "admin_token": "adm-x",
    }
    assert "serves it at http://127.0.0.1:1234" in str(serving.value)
    assert "adm-x" not in str(serving.value)  # the token is never in a message
    first.release()
    # the address stays (the next sandbox takes the same port); no process, no token
    assert json.loads(published.read_text()) == {
        "pid": None,
        "db": db,
        "base_url": "http://127.0.0.1:1234",
    }
    owner.claim(db).release()  # free again


def test_a_second_server_on_the_same_file_is_refused_and_starts_after_the_first_stops(
    tmp_path: Path,
) -> None:
    db = str(tmp_path / "sandbox.sqlite3")
    first = serve_in_thread(db=db, speed=500, admin_token="adm-1")
    try:
        assert first.fresh
        assert json.loads(owner.address_file(db).read_text())["base_url"] == first.base_url
        with pytest.raises(owner.SandboxInUse) as refused:
            serve_in_thread(db=db, speed=500, admin_token="adm-2")
        assert refused.value.serving is not None
        assert refused.value.serving["base_url"] == first.base_url
        # the refused one left the first alone: it still answers, the file still its own
        assert httpx.get(first.base_url + "/health").status_code == 200
        assert json.loads(owner.address_file(db).read_text())["pid"] == os.getpid()
    finally:
        first.stop()
    assert json.loads(owner.address_file(db).read_text())["pid"] is None
    second = serve_in_thread(db=db, speed=500, admin_token="adm-2")
    try:
        assert not second.fresh  # the file was kept: not a fresh sandbox
        assert second.sandbox.kept("acct_demo") == (0, 0)
    finally:
        second.stop()


def test_memory_sandboxes_take_no_lock(tmp_path: Path) -> None:
    a = serve_in_thread(db=":memory:", speed=500)
    b = serve_in_thread(db=":memory:", speed=500)
    try:
        assert a.fresh and b.fresh and a.base_url != b.base_url
    finally:
        a.stop()
        b.stop()
