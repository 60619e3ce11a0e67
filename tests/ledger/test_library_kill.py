"""The library export killed halfway, in a real process, and run again: 300 assets.

A sandbox in this process (its app wrapped to count every fetch of a signed file URL, so
downloads are counted at the server, not by the exporter), 300 sound effects of which 30
repeat an earlier request and seed (the same bytes, the same blob hash). A child process
exports them; once about a third of the files are written it gets SIGKILL. Then:

- every file under a final name is whole (its SHA-256 is its blob hash);
- the second run (another process) finishes: every asset's file is there exactly once,
  the manifest has all 300 rows, and it downloaded only what the first run had not
  written whole; the downloads of both runs together are at most the distinct blobs plus
  one per worker (a file in flight at the kill);
- a third run downloads nothing.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pandas as pd
import pytest

from songlab.client import Client

pytestmark = [pytest.mark.slow, pytest.mark.timeout(420)]

ASSETS = 300
REPEATS = 30  # tasks repeating an earlier request and seed: same bytes, same blob hash
WORKERS = 4
CHILD = """
import json, os, sys
import songlab
from songlab.ledger.library import export_library

client = songlab.connect(cache=False, quiet=True)
result = export_library(client, sys.argv[1], workers=int(sys.argv[2]))
print(json.dumps({"downloaded": result.downloaded, "present": result.present,
                  "copied": result.copied, "files": result.files, "failed": len(result.failed)}))
"""


class _Counter:
    """Counts the requests for a signed file URL (the bytes of a file) the sandbox answers."""

    def __init__(self) -> None:
        self.n = 0
        self._lock = threading.Lock()

    def wrap(self, app: Any) -> Any:
        async def counted(scope: Any, receive: Any, send: Any) -> None:
            if scope["type"] == "http" and scope["path"].startswith("/_signed/"):
                with self._lock:
                    self.n += 1
            await app(scope, receive, send)

        return counted


@pytest.fixture
def counted_sandbox() -> Iterator[tuple[Any, _Counter]]:
    from songlab.sandbox.config import SandboxConfig
    from songlab.sandbox.http.server import SandboxServer

    counter = _Counter()
    config = SandboxConfig(
        host="127.0.0.1", port=0, db=":memory:", speed=1000.0, admin_token="kill-test", workers=8
    )
    srv = SandboxServer(config, wrap=counter.wrap).start()
    try:
        yield srv, counter
    finally:
        srv.stop()


def _make_assets(srv: Any, api_key: str, admin: httpx.Client) -> set[str]:
    """300 completed sound effects; answers their distinct blob hashes."""
    with Client(api_key, base_url=srv.base_url, quiet=True, reuse=False, cache=False) as c:

        def make(i: int) -> str:
            n = i if i < ASSETS - REPEATS else i - (ASSETS - REPEATS)  # the last 30 repeat
            payload = {"prompt": f"door knock {n}", "duration_seconds": 0.5, "seed": n}
            return c.generations.create(operation="sfx_gen", model="v5", payload=payload).task_id

        ids: list[str] = []
        for lo in range(0, ASSETS, 100):  # 100 an hour per tool: move the sandbox clock on
            with ThreadPoolExecutor(4) as pool:
                ids += pool.map(make, range(lo, min(ASSETS, lo + 100)))
            admin.post("/_sandbox/clock", json={"advance_seconds": 3601}).raise_for_status()
        blobs = set()
        for task_id in ids:
            task = c.task(task_id).wait()
            assert task.status == "completed" and len(task.output.assets) == 1
            blobs.add(task.output.assets[0].blob_hash)
        return blobs


def _child(env: dict[str, str], folder: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", CHILD, str(folder), str(WORKERS)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _journalled(folder: Path) -> int:
    path = folder / ".songlab-export.sqlite"
    if not path.exists():
        return 0
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=1) as db:
            return int(db.execute("SELECT COUNT(*) FROM files").fetchone()[0])
    except sqlite3.Error:  # not made yet
        return 0


def _outputs(folder: Path) -> list[Path]:
    return [
        p
        for p in folder.rglob("*")
        if p.is_file() and not p.name.startswith(".") and not p.name.startswith("manifest.")
    ]


def _account_with_assets(srv: Any, tmp_path: Path) -> tuple[dict[str, str], set[str]]:
    """An account with ASSETS assets (REPEATS of them twins), its /v1 requests slowed so an
    export can be killed midway: (the exporter's environment, the distinct blob hashes)."""
    with httpx.Client(
        base_url=srv.base_url, headers={"X-Sandbox-Admin-Token": "kill-test"}
    ) as admin:
        made = admin.post("/_sandbox/accounts", json={"balance_tokens": 1_000_000})
        api_key = made.json()["api_key"]
        blobs = _make_assets(srv, api_key, admin)
        assert len(blobs) == ASSETS - REPEATS
        # every /v1 request takes 40 ms more, so the export is slow enough to be killed midway
        admin.put("/_sandbox/faults", json={"latency_ms": 40}).raise_for_status()
    env = {
        **os.environ,
        "SONGLAB_API_KEY": api_key,
        "SONGLAB_BASE_URL": srv.base_url,
        "SONGLAB_RECORD": str(tmp_path / "record.sqlite"),
    }
    return env, blobs


def _kill_after_a_third(env: dict[str, str], folder: Path) -> int:
    """Start an export and SIGKILL it once a third of the files are journalled; returns how
    many were journalled then."""
    first = _child(env, folder)
    deadline = time.monotonic() + 240
    while _journalled(folder) < ASSETS // 3:
        assert first.poll() is None, f"the export ended before the kill: {first.communicate()}"
        assert time.monotonic() < deadline, "the export wrote too little in 240 s"
        time.sleep(0.02)
    first.send_signal(signal.SIGKILL)
    first.wait(30)
    first.communicate()
    killed_at = _journalled(folder)
    assert first.returncode == -signal.SIGKILL
    assert ASSETS // 3 <= killed_at < ASSETS - REPEATS, killed_at  # really halfway
    return killed_at


def _whole_files(folder: Path, blobs: set[str]) -> set[str]:
    """Every file under a final name is whole (one of the blobs): their hashes."""
    whole_blobs: set[str] = set()
    for path in _outputs(folder):
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        assert digest in blobs, path
        whole_blobs.add(digest)
    return whole_blobs


def _run_to_the_end(env: dict[str, str], folder: Path) -> dict[str, Any]:
    """An export run to its end: its result line."""
    run = _child(env, folder)
    out, err = run.communicate(timeout=300)
    assert run.returncode == 0, err[-3000:]
    result: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    return result


def _every_asset_once_in_the_manifest(folder: Path) -> None:
    """Every asset's file once, the manifest's rows matching the files and their hashes, no
    temporary left by the kill."""
    files = _outputs(folder)
    assert len(files) == ASSETS  # every asset's file, once
    manifest = pd.read_csv(folder / "manifest.csv", dtype=str)
    assert len(manifest) == ASSETS and manifest["file"].is_unique and manifest["error"].isna().all()
    assert set(manifest["file"]) == {str(p.relative_to(folder)) for p in files}
    assert manifest["file_id"].is_unique and manifest["task_id"].is_unique
    assert (manifest["cost_usd"] == "0.54000000").all()  # sfx_gen's price, as billed
    for row in manifest.itertuples():
        assert hashlib.sha256((folder / row.file).read_bytes()).hexdigest() == row.blob_hash
    assert not list(folder.rglob("*.tmp"))  # no temporary left by the kill


def test_an_export_killed_halfway_resumes_with_every_file_once(
    counted_sandbox: tuple[Any, _Counter], tmp_path: Path
) -> None:
    srv, counter = counted_sandbox
    env, blobs = _account_with_assets(srv, tmp_path)
    folder = tmp_path / "library"

    killed_at = _kill_after_a_third(env, folder)
    fetched_first = counter.n
    whole_blobs = _whole_files(folder, blobs)  # under a final name, a file is whole
    whole = len(_outputs(folder))

    result = _run_to_the_end(env, folder)
    fetched_second = counter.n - fetched_first
    assert result["files"] == ASSETS and result["failed"] == 0
    assert result["downloaded"] == fetched_second  # the exporter's count is the server's
    assert result["present"] == whole  # every whole file of the killed run was kept
    assert result["present"] + result["copied"] + result["downloaded"] == ASSETS
    # nothing downloaded twice: both runs together fetched each distinct blob once, plus at
    # most one per worker that was in flight when the first run was killed
    assert len(blobs) <= fetched_first + fetched_second <= len(blobs) + WORKERS
    assert fetched_second == len(blobs - whole_blobs)  # only the blobs not yet whole on disk
    _every_asset_once_in_the_manifest(folder)

    again = _run_to_the_end(env, folder)
    assert (again["downloaded"], again["present"], again["files"]) == (0, ASSETS, ASSETS)
    print(
        f"killed after {killed_at} of {ASSETS} files ({whole} whole on disk); the second run "
        f"downloaded {result['downloaded']}, kept {result['present']}, copied "
        f"{result['copied']}; server downloads {fetched_first} + {fetched_second} for "
        f"{len(blobs)} distinct blobs"
    )
