"""A real sandbox process for the tests that drive it with tools from outside the project."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

ADMIN = "external-admin-token"


class Sandbox:
    def __init__(self, tmp: Path) -> None:
        self.err = (tmp / "sandbox.err").open("w")
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "songlab.sandbox",
                "--port",
                "0",
                "--db",
                ":memory:",
                "--admin-token",
                ADMIN,
                "--speed",
                "1000",
            ],
            stdout=subprocess.PIPE,
            stderr=self.err,
            text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        self.base_url = self.proc.stdout.readline().strip().rsplit(" ", 1)[-1]
        assert self.base_url.startswith("http://127.0.0.1:"), self.base_url
        self.admin = httpx.Client(
            base_url=self.base_url, timeout=60, headers={"X-Sandbox-Admin-Token": ADMIN}
        )

    def stop(self) -> None:
        self.admin.close()
        self.proc.terminate()
        self.proc.wait(timeout=20)
        self.proc.stdout.close()
        self.err.close()


@pytest.fixture
def sandbox_proc(tmp_path: Path) -> Iterator[Sandbox]:
    """``python -m songlab.sandbox --port 0`` (in-memory, fast), stopped afterwards."""
    srv = Sandbox(tmp_path)
    try:
        yield srv
    finally:
        srv.stop()
