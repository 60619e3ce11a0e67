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
