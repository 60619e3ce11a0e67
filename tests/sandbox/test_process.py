"""The sandbox as a process: the first stdout line, and a restart (even after SIGKILL)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.sandbox._util import create, tid, wait

pytestmark = pytest.mark.slow  # starts, kills and restarts sandbox processes

ADMIN = "restart-admin"


class Proc:
    def __init__(
        self,
        db: Path,
        speed: float,
        *extra: str,
        env_token: str | None = None,
        module: tuple[str, ...] = ("songlab.sandbox",),
    ) -> None:
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        env.pop("SONGLAB_SANDBOX_ADMIN_TOKEN", None)
        if env_token is not None:
            env["SONGLAB_SANDBOX_ADMIN_TOKEN"] = env_token
        self.p = subprocess.Popen(
            [
                sys.executable,
                "-m",
                *module,
                "--db",
                str(db),
                "--port",
                "0",
                "--speed",
                str(speed),
                *extra,
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        self.first = self.p.stdout.readline().strip()
        if not self.first.startswith("songlab sandbox listening on http://127.0.0.1:"):
            self.p.kill()
            _, err = self.p.communicate(timeout=10)
            raise AssertionError(f"bad first line {self.first!r}; stderr: {err[-2000:]}")
        self.base_url = self.first.rsplit(" ", 1)[1]

    def client(self, key: str = "sk-sandbox-demo") -> httpx.Client:
        return httpx.Client(
            base_url=self.base_url,
            verify=False,
            timeout=30,
            headers={"Authorization": f"Bearer {key}"},
        )

    def admin(self) -> httpx.Client:
        return httpx.Client(
            base_url=self.base_url,
            verify=False,
            timeout=30,
            headers={"X-Sandbox-Admin-Token": ADMIN},
        )

    def kill(self) -> None:
        self.p.send_signal(signal.SIGKILL)
        self.p.wait(10)
        self.p.stdout.close()
        self.p.stderr.close()

    def stop(self) -> int:
        self.p.send_signal(signal.SIGTERM)
        code = self.p.wait(20)
        self.p.stdout.close()
        self.p.stderr.close()
        return code


def test_first_lines_health_and_a_generated_admin_token(tmp_path):
    proc = Proc(tmp_path / "a.db", 100)
    try:
        second = proc.p.stdout.readline().strip()
        assert second.startswith("admin token: ")
        token = second.split(": ", 1)[1]
        assert httpx.get(proc.base_url + "/health").status_code == 200
        r = httpx.get(proc.base_url + "/_sandbox/faults", headers={"X-Sandbox-Admin-Token": token})
        assert r.status_code == 200
    finally:
        assert proc.stop() == 0


def test_restart_with_the_same_db_keeps_everything_and_bills_once(tmp_path):
    db = tmp_path / "sandbox.sqlite3"
    # first start: `songlab sandbox` with the admin token from the environment
    proc = Proc(db, 1000, env_token=ADMIN, module=("songlab.cli", "sandbox"))
    with proc.client() as c, proc.admin() as adm:
        acct = adm.post("/_sandbox/accounts", json={"balance_tokens": 1000}).json()
        done = create(c, "write_lyrics", "v5", {"prompt": "x"}, idempotency_key="before")
        wait(c, done.json()["task_id"])
        tools = c.get("/v1/tools").json()
        up = c.post("/v1/files", files={"file": ("a.bin", b"payload", "application/octet-stream")})
        file_id = up.json()["file_id"]
        link = c.get(f"/v1/files/{file_id}/url").json()["url"]
        demo_before = c.get("/v1/account/balance").json()
    proc.stop()

    proc = Proc(db, 1000, "--admin-token", ADMIN)
    try:
        with proc.client() as c, proc.admin() as adm, proc.client(acct["api_key"]) as mine:
            assert c.get("/v1/tools").json() == tools
            snap = c.get(f"/v1/generations/{done.json()['task_id']}").json()
            assert snap["status"] == "completed"
            again = create(c, "write_lyrics", "v5", {"prompt": "x"}, idempotency_key="before")
            assert again.json() == done.json()
            assert c.get("/v1/account/balance").json() == demo_before
            assert mine.get("/v1/account/balance").json()["total_effective"] == 1000
            # signed links carry the old port; the token itself stays valid
            token = link.rsplit("/_signed/", 1)[1]
            assert httpx.get(f"{proc.base_url}/_signed/{token}").content == b"payload"
            assert adm.get(f"/_sandbox/accounts/{acct['account_id']}/ledger").status_code == 200
    finally:
        proc.stop()


JOBS = [
    ("write_lyrics", "v5", {"prompt": "x"}),
    ("sfx_gen", "v5", {"prompt": "door", "duration_seconds": 1}),
]


def test_sigkill_mid_task_then_restart_finishes_it_and_bills_once(tmp_path):
    db = tmp_path / "sandbox.sqlite3"
    slow = Proc(db, 0.01, "--admin-token", ADMIN)  # 1 sim s takes 100 real s
    with slow.client() as c:
        before = c.get("/v1/account/balance").json()["total_effective"]
        ids = [create(c, op, model, payload).json()["task_id"] for op, model, payload in JOBS]
        deadline = time.monotonic() + 20
        while any(c.get(f"/v1/generations/{t}").json()["status"] != "processing" for t in ids):
            assert time.monotonic() < deadline
            time.sleep(0.02)
        reserved = c.get("/v1/account/balance").json()["total_effective"]
        assert reserved == before - 2 - 54
    slow.kill()

    def lines(adm: httpx.Client, task_id: str) -> list[dict]:
        return [
            x
            for x in adm.get("/_sandbox/accounts/acct_demo/ledger").json()["entries"]
            if x["task_id"] == task_id
        ]

    fast = Proc(db, 1000, "--admin-token", ADMIN)
    try:
        with fast.client() as c, fast.admin() as adm:
            for task_id, (op, model, _) in zip(ids, JOBS, strict=True):
                assert wait(c, task_id)["status"] == "completed"
                found = lines(adm, task_id)
                assert len(found) == 1 and found[0]["tool_id"] == tid(op, model)
                seqs = _events(c, task_id)
                assert seqs == list(range(1, len(seqs) + 1))
            assert c.get("/v1/account/balance").json()["total_effective"] == reserved
    finally:
        fast.stop()
    again = Proc(db, 1000, "--admin-token", ADMIN)  # nothing is re-run or re-billed
    try:
        with again.client() as c, again.admin() as adm:
            for task_id in ids:
                assert c.get(f"/v1/generations/{task_id}").json()["status"] == "completed"
                assert len(lines(adm, task_id)) == 1
    finally:
        again.stop()


def _events(c: httpx.Client, task_id: str) -> list[int]:
    from tests.sandbox._util import sse

    return [e["seq"] for e in sse(c, task_id)]


def test_bad_flags_exit_nonzero():
    r = subprocess.run(
        [sys.executable, "-m", "songlab.sandbox", "--speed", "0"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 2 and "speed" in r.stderr
