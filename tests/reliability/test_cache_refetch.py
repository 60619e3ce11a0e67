"""A cut cache entry is refetched: two client processes share one asset cache.

A sandbox process makes a song. A first Python process downloads it (a link, then the
bytes) into the cache and reads it again from the cache (no request). The entry is then
cut to 1,000 bytes on disk, as a full disk or a killed copy leaves it. A second process,
asking by the bare file id (the lookup that was never checked), gets the whole song again:
it says on stderr which entry was damaged, fetches the file, keeps it whole, and its next
read is served from the cache again.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.reliability._util import SandboxProcess, key_client, wait

pytestmark = pytest.mark.slow  # a sandbox process and two client processes

DOWNLOAD = textwrap.dedent(
    """
    import hashlib, json, sys
    import songlab

    client = songlab.connect()
    paths = []
    client._http.event_hooks["request"].append(lambda r: paths.append(r.url.path))
    for _ in range(2):  # read twice: the second read is the cache's
        data = client.files.download(sys.argv[1])
        print(json.dumps({"sha256": hashlib.sha256(data).hexdigest(), "size": len(data),
                          "requests": paths}), flush=True)
        paths = []
    """
)


def _download(
    env: dict[str, str], file_id: str
) -> tuple[dict[str, object], dict[str, object], str]:
    """Two downloads of ``file_id`` in one fresh process: what each saw, and its stderr."""
    done = subprocess.run(
        [sys.executable, "-c", DOWNLOAD, file_id],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    first, second = (json.loads(line) for line in done.stdout.strip().splitlines()[-2:])
    return first, second, done.stderr


def test_a_cut_cache_entry_is_refetched_by_the_next_process(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    with SandboxProcess(":memory:", speed=500) as sb:
        with key_client(sb.base_url, "sk-sandbox-demo") as c:
            tool = next(
                t["id"]
                for t in c.get("/v1/tools").json()["data"]
                if t["operation"] == "generate_song" and t["model"] == "v5"
            )
            payload = json.dumps({"prompt": "cache me", "duration_seconds": 5})
            r = c.post("/v1/generations", json={"tool_id": tool, "payload_json": payload})
            snap = wait(c, r.json()["task_id"])
            file_id = snap["output"]["assets"][0]["file_id"]
            song = c.get(c.get(f"/v1/files/{file_id}/url").json()["url"]).content
        env = {
            **os.environ,
            "SONGLAB_API_KEY": "sk-sandbox-demo",
            "SONGLAB_BASE_URL": sb.base_url,
            "SONGLAB_CACHE_DIR": str(cache),
        }
        first, second, _ = _download(env, file_id)
        assert first["requests"] == [f"/v1/files/{file_id}/download", first["requests"][1]]
        assert first["sha256"] == hashlib.sha256(song).hexdigest()
        assert second["requests"] == [] and second["sha256"] == first["sha256"]

        (entry,) = [p for p in cache.rglob("*") if p.is_file()]
        entry.write_bytes(entry.read_bytes()[:1000])  # cut off

        third, fourth, stderr = _download(env, file_id)  # a fresh process: nothing in memory
        assert third["size"] == len(song) and third["sha256"] == first["sha256"]
        assert len(third["requests"]) == 2  # fetched again
        assert f"the cached copy of file {file_id}" in stderr
        assert "is damaged (1,000 bytes, not as written)" in stderr and str(entry) in stderr
        assert "fetching it again" in stderr
        assert stderr.count("is damaged") == 1  # said once, of the cut entry only
        assert fourth["requests"] == [] and fourth["sha256"] == first["sha256"]  # whole again
        assert len(entry.read_bytes()) == len(song)
