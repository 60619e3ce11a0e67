"""Helpers of the reliability tests: a sandbox subprocess, admin calls, before/after snapshots.

Everything here talks to loopback only. ``SandboxProcess`` runs
``python -m songlab.sandbox --port 0`` as a child (used by the crash test and
the fault-storm benchmark); ``Snapshot`` captures what an account holds (balance,
ledger, tasks, files) so a test can prove that a refused request changed nothing.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx

from songlab.sandbox.catalog import tool_id
from tests.sandbox._util import ledger, tone, upload, wait  # noqa: F401 (shared helpers, re-exported)

ADMIN_TOKEN = "reliability-admin-token"
ADMIN_HEADER = "X-Sandbox-Admin-Token"
START_TIMEOUT = 60.0

# --- a sandbox in a child process ----------------------------------------------------


class SandboxProcess:
    """``python -m songlab.sandbox`` as a child process; ``.base_url`` from its first line."""

    def __init__(
        self, db: str, *, speed: float = 200.0, admin_token: str = ADMIN_TOKEN, port: int = 0
    ) -> None:
        self.db = db
        self.admin_token = admin_token
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        env.pop("SONGLAB_SANDBOX_ADMIN_TOKEN", None)
        # stderr goes to a file (a full pipe would block the child); shown if it fails
        self._stderr = tempfile.TemporaryFile(mode="w+")
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "songlab.sandbox",
                "--db",
                db,
                "--port",
                str(port),
                "--speed",
                str(speed),
                "--admin-token",
                admin_token,
            ],
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            text=True,
            env=env,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        prefix = "songlab sandbox listening on "
        if not line.startswith(prefix):
            if self.proc.poll() is None:
                self.proc.kill()
            self.proc.wait(timeout=30)
            self._stderr.seek(0)
            err = self._stderr.read()[-2000:]
            self.kill()
            raise RuntimeError(f"sandbox did not start: {line!r} {err}")
        self._drain = threading.Thread(target=self.proc.stdout.read, daemon=True)
        self._drain.start()  # the rest of stdout, so the child never blocks on it
        self.base_url = line[len(prefix) :].strip()
        assert self.base_url.startswith("http://127.0.0.1:"), self.base_url  # loopback only
        deadline = time.monotonic() + START_TIMEOUT
        while httpx.get(self.base_url + "/health", timeout=5.0).status_code != 200:
            if time.monotonic() > deadline:
                raise RuntimeError("sandbox /health never answered 200")
            time.sleep(0.05)

    def kill(self) -> None:
        """SIGKILL: no shutdown code runs, as in a crash."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=30)
        drain = getattr(self, "_drain", None)
        if drain is not None:
            drain.join(timeout=10)
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        self._stderr.close()

    def stop(self) -> None:
        """SIGTERM, then SIGKILL if it does not end in time."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                pass
        self.kill()

    def __enter__(self) -> SandboxProcess:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()


# --- HTTP helpers -------------------------------------------------------------------------


def admin_client(base_url: str, token: str = ADMIN_TOKEN) -> httpx.Client:
    return httpx.Client(
        base_url=base_url, headers={ADMIN_HEADER: token}, timeout=30.0, verify=False
    )


def key_client(base_url: str, api_key: str | None) -> httpx.Client:
    headers = {} if api_key is None else {"Authorization": f"Bearer {api_key}"}
    return httpx.Client(base_url=base_url, headers=headers, timeout=30.0, verify=False)


def new_account(admin: httpx.Client, **body: Any) -> tuple[str, str]:
    r = admin.post("/_sandbox/accounts", json=body)
    assert r.status_code == 201, r.text
    return r.json()["account_id"], r.json()["api_key"]


def balance(admin: httpx.Client, account_id: str) -> dict[str, Any]:
    r = admin.get(f"/_sandbox/accounts/{account_id}/balance")
    assert r.status_code == 200, r.text
    return r.json()


def all_tasks(c: httpx.Client) -> list[dict[str, Any]]:
    """Every task of the key's account, walking the cursor pages."""
    out: list[dict[str, Any]] = []
    cursor = None
    while True:
        params: dict[str, Any] = {"limit": 100}
        if cursor:
            params["cursor"] = cursor
        r = c.get("/v1/generations", params=params)
        assert r.status_code == 200, r.text
        out += r.json()["data"]
        cursor = r.json()["next_cursor"]
        if not cursor:
            return out


def create(
    c: httpx.Client,
    operation: str,
    model: str,
    payload: dict[str, Any] | None = None,
    *,
    key: str | None = None,
    **extra: Any,
) -> httpx.Response:
    body = {
        "tool_id": tool_id(operation, model),
        "payload_json": json.dumps(payload or {}),
        **extra,
    }
    headers = {} if key is None else {"Idempotency-Key": key}
    return c.post("/v1/generations", json=body, headers=headers)


def usd_sum(entries: list[dict[str, Any]]) -> Decimal:
    return sum((Decimal(e["amount_usd"]) for e in entries), Decimal(0))


def assert_invalid(r: httpx.Response, field_name: str) -> None:
    assert r.status_code == 422, r.text
    body = r.json()
    assert body["error"] == "InvalidGenerationInput", body
    assert field_name in body["message"], body


# --- "nothing changed" -------------------------------------------------------------------


def stored_files(sandbox: Any, account_id: str) -> list[str]:
    """Ids of every file row of the account (uploads, inline inputs, outputs), from the store.

    The vendor API has no file listing, so the in-process sandbox's store is read
    directly (tests only).
    """
    rows = sandbox.sandbox.store.all(
        "SELECT id FROM files WHERE account_id = ? ORDER BY id", (account_id,)
    )
    return [r[0] for r in rows]


@dataclass
class Snapshot:
    """Balance, ledger, task ids and file ids of one account at one moment."""

    balance: dict[str, Any]
    ledger: list[dict[str, Any]]
    tasks: list[str]
    files: list[str] = field(default_factory=list)

    @classmethod
    def take(cls, sandbox: Any, admin: httpx.Client, account_id: str, c: httpx.Client) -> Snapshot:
        return cls(
            balance(admin, account_id),
            ledger(admin, account_id),
            [t["task_id"] for t in all_tasks(c)],
            stored_files(sandbox, account_id),
        )


def repo_root() -> Path:
    return Path(__file__).resolve().parents[2]
