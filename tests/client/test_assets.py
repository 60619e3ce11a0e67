"""Assets fetched once: the content-addressed, size-capped LRU cache of downloads."""

from __future__ import annotations

import os
import time

import pytest

from songlab.client import Client, ResourceNotFound
from songlab.client._assets import AssetCache


@pytest.fixture(scope="module")
def song(sandbox, new_account_module):
    acct = new_account_module()
    with Client(acct.api_key, base_url=sandbox.base_url, quiet=True, cache=False) as c:
        h = c.generations.create(
            operation="generate_song",
            model="v5",
            payload={"prompt": "cache me", "duration_seconds": 5},
        )
        task = h.wait(timeout=60)
    return acct, task


@pytest.fixture(scope="module")
def new_account_module(sandbox):
    import httpx

    def make():
        with httpx.Client(
            base_url=sandbox.base_url, headers={"X-Sandbox-Admin-Token": sandbox.admin_token}
        ) as admin:
            r = admin.post("/_sandbox/accounts", json={})
            r.raise_for_status()
            return type("A", (), r.json())

    return make


def _counting(client):
    seen = []
    client._http.event_hooks["request"].append(lambda r: seen.append((r.method, r.url.path)))
    return seen


def test_a_cached_asset_makes_no_request(sandbox, song, tmp_path, new_account_module):
    acct, task = song
    asset = task.output.assets[0]
    cache = AssetCache(tmp_path / "assets")
    with Client(acct.api_key, base_url=sandbox.base_url, cache=cache) as c:
        seen = _counting(c)
        first = c.files.download(asset)
        assert len(seen) == 2  # a fresh signed link, then its bytes
        again = c.files.download(asset)
        by_id = c.files.download(asset.file_id)  # a file id names one output for good
        audio = c.files.read(asset)
        path = c.files.download(asset, to=tmp_path)
        assert first == again == by_id == path.read_bytes() and audio.samples.shape[1] > 0
        assert len(seen) == 2
        # links are never cached: each one is minted again
        c.files.link(asset)
        c.files.link(asset)
        assert seen[2:] == [("GET", f"/v1/files/{asset.file_id}/url")] * 2
    assert cache.size() == len(first)
    # another client (another kernel) finds it on disk
    with Client(acct.api_key, base_url=sandbox.base_url, cache=tmp_path / "assets") as c2:
        seen2 = _counting(c2)
        assert c2.files.download(asset) == first and seen2 == []
    # another account never reads it from the cache: the service's 404 stands
    other = new_account_module()
    with Client(other.api_key, base_url=sandbox.base_url, cache=cache) as c4:
        with pytest.raises(ResourceNotFound):
            c4.files.download(asset)
    # no cache: every download asks
    with Client(acct.api_key, base_url=sandbox.base_url, cache=False) as c3:
        seen3 = _counting(c3)
        c3.files.download(asset)
        c3.files.download(asset)
        assert len(seen3) == 4


def test_damaged_entry_is_a_miss_and_is_fetched_again(sandbox, song, tmp_path):
    acct, task = song
    asset = task.output.assets[0]
    cache = AssetCache(tmp_path)
    with Client(acct.api_key, base_url=sandbox.base_url, cache=cache) as c:
        good = c.files.download(asset)
        entry = cache._entry(asset.file_id, asset.blob_hash, f"{c.key_id}@{c.base_url}")
        entry.write_bytes(b"not the song")
        seen = _counting(c)
        assert c.files.download(asset) == good and len(seen) == 2


def test_size_cap_evicts_least_recently_used(tmp_path):
    cache = AssetCache(tmp_path, max_bytes=250)
    for i, name in enumerate(("a", "b")):
        cache.put(name, None, bytes(100))
        t = time.time() - 100 + i
        os.utime(cache._entry(name, None), (t, t))
    assert cache.get("a") is not None  # a is now the most recently used
    cache.put("c", "h", bytes(100))
    assert cache.get("b") is None and cache.get("a") is not None
    assert cache.get("c", "h") is not None and cache.get("c", "other") is None
    assert cache.size() == 200
    cache.put("huge", None, bytes(300))  # larger than the cap: not kept, nothing evicted
    assert cache.get("huge") is None and cache.size() == 200


def test_default_location_honours_the_env(monkeypatch, tmp_path):
    monkeypatch.setenv("SONGLAB_CACHE_DIR", str(tmp_path / "x"))
    assert AssetCache().path == tmp_path / "x"


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(lambda b: b[:1000], id="cut-off"),
        pytest.param(lambda b: b"", id="emptied"),
        pytest.param(lambda b: b[:-1] + bytes([b[-1] ^ 1]), id="one-bit"),
    ],
)
def test_a_damaged_entry_found_by_bare_file_id_is_dropped_said_and_fetched_again(
    sandbox, song, tmp_path, caplog, damage
):
    """The issue's case: an entry looked up by its bare file id was never checked, so a
    cut-off entry came back as 1,000 bytes with no error."""
    acct, task = song
    asset = task.output.assets[0]
    cache = AssetCache(tmp_path)
    with Client(acct.api_key, base_url=sandbox.base_url, cache=cache) as c:
        good = c.files.download(asset.file_id)
        entry = cache._entry(asset.file_id, None, f"{c.key_id}@{c.base_url}")
        assert entry.read_bytes() == good
        entry.write_bytes(damage(good))
        seen = _counting(c)
        with caplog.at_level("WARNING", logger="songlab.client"):
            again = c.files.download(asset.file_id)
        assert again == good and len(seen) == 2  # fetched again: a link, then the bytes
        assert f"the cached copy of file {asset.file_id}" in caplog.text
        assert str(entry) in caplog.text and "fetching it again" in caplog.text
        seen.clear()
        assert c.files.download(asset.file_id) == good and seen == []  # kept again, whole


def test_every_read_is_checked_whatever_the_lookup(tmp_path, caplog):
    cache = AssetCache(tmp_path)
    content = b"the song's bytes" * 100
    cache.put("f1", None, content, owner="me")
    cache.put("f2", "opaque-etag", content, owner="me")  # a blob hash that is no SHA-256
    assert cache.get("f1", owner="me") == content
    assert cache.get("f2", "opaque-etag", owner="me") == content
    assert cache.get("f2", owner="me") == content  # by bare file id
    for fid, blob in (("f1", None), ("f2", "opaque-etag")):
        cache._entry(fid, blob, "me").write_bytes(content[:1000])
    with caplog.at_level("WARNING", logger="songlab.client"):
        assert cache.get("f1", owner="me") is None
        assert cache.get("f2", owner="me") is None
    assert caplog.text.count("is damaged (1,000 bytes, not as written)") == 2
    assert cache.size() == 0


def test_a_sha256_blob_hash_is_checked_too(tmp_path, caplog):
    import hashlib

    cache = AssetCache(tmp_path)
    content = b"abc" * 10
    right = "sha256:" + hashlib.sha256(content).hexdigest()
    wrong = "0" * 64
    cache.put("f", wrong, content)  # kept under a hash its bytes do not have
    with caplog.at_level("WARNING", logger="songlab.client"):
        assert cache.get("f", wrong) is None
    assert "does not match the service's blob hash" in caplog.text
    cache.put("f", right, content)
    assert cache.get("f", right) == content


def test_an_entry_of_an_older_songlab_is_a_miss(tmp_path):
    cache = AssetCache(tmp_path)
    old = cache._entry("f", None)  # where an older version kept it: no hash in the name
    old.parent.mkdir(parents=True)
    old.write_bytes(b"unchecked bytes")
    assert cache.get("f") is None and not old.exists()


def test_new_bytes_under_a_key_replace_the_old_entry(tmp_path):
    cache = AssetCache(tmp_path)
    cache.put("f", None, b"one")
    cache.put("f", None, b"two")
    assert cache.get("f") == b"two" and cache.size() == 3


@pytest.mark.skipif(os.name != "posix", reason="file modes are POSIX")
def test_entries_are_private_whatever_the_umask(tmp_path):
    import stat

    old = os.umask(0)
    try:
        cache = AssetCache(tmp_path / "cache" / "assets")
        cache.put("f", "h", b"bytes", owner="me")
    finally:
        os.umask(old)
    entry = cache._entry("f", "h", "me")
    modes = {
        p.relative_to(tmp_path).as_posix(): stat.S_IMODE(p.stat().st_mode)
        for p in (tmp_path / "cache").rglob("*")
    } | {"cache": stat.S_IMODE((tmp_path / "cache").stat().st_mode)}
    assert modes == {
        "cache": 0o700,
        "cache/assets": 0o700,
        f"cache/assets/{entry.parent.name}": 0o700,
        f"cache/assets/{entry.parent.name}/{entry.name}": 0o600,
    }


@pytest.mark.skipif(os.name != "posix", reason="file modes are POSIX")
def test_a_cache_folder_open_to_others_is_warned_about_once(tmp_path):
    from songlab.localfiles import WideModeWarning

    folder = tmp_path / "shared"
    folder.mkdir()
    folder.chmod(0o755)
    cache = AssetCache(folder)
    with pytest.warns(WideModeWarning, match="the asset cache folder .*chmod 700"):
        cache.put("f", None, b"x")
    assert cache.get("f") == b"x"  # no second warning (filterwarnings = error)
