"""A sandbox child process that can be SIGKILLed and started again on the same port and file.

``RestartingSandbox(db, speed=...)`` picks a free loopback port once and keeps it:
``kill_and_restart()`` SIGKILLs the process (no shutdown code runs, as in a
crash), leaves the port dark for ``down_s`` seconds (connections refused), and
starts ``python -m songlab.sandbox --db FILE --port PORT`` again. Clients keep
the same ``base_url`` throughout, as they would behind a fixed address.
"""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Callable
from typing import Any

import httpx

from tests.reliability._util import ADMIN_TOKEN, SandboxProcess


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class RestartingSandbox:
    def __init__(self, db: str, *, speed: float, admin_token: str = ADMIN_TOKEN) -> None:
        self.db = db
        self.speed = speed
        self.admin_token = admin_token
        self.port = free_port()
        self.proc = SandboxProcess(db, speed=speed, admin_token=admin_token, port=self.port)
        self.base_url = self.proc.base_url
        self.restarts: list[float] = []  # seconds each restart kept the port dark

    def kill_and_restart(self, down_s: float = 0.5) -> None:
        t0 = time.monotonic()
        self.proc.kill()
        time.sleep(down_s)
        for attempt in range(20):  # the port may linger a moment after SIGKILL
            try:
                self.proc = SandboxProcess(
                    self.db, speed=self.speed, admin_token=self.admin_token, port=self.port
                )
                break
            except RuntimeError:
                if attempt == 19:
                    raise
                time.sleep(0.2)
        assert self.proc.base_url == self.base_url
        self.restarts.append(time.monotonic() - t0)

    def put_faults(self, faults: dict[str, Any]) -> None:
        """Faults live in the process's memory: a restart clears them."""
        r = httpx.put(
            self.base_url + "/_sandbox/faults",
            json=faults,
            timeout=30,
            headers={"X-Sandbox-Admin-Token": self.admin_token},
        )
        assert r.status_code == 200, r.text

    def stop(self) -> None:
        self.proc.stop()

    def __enter__(self) -> RestartingSandbox:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def restarts(
    sp: RestartingSandbox,
    *,
    first_after_s: float,
    between_s: float,
    count: int = 2,
    down_s: float = 0.5,
    faults: dict[str, Any] | None = None,
    ready: Callable[[], bool] = lambda: True,
) -> Callable[[], Any]:
    """A ``disrupt`` coroutine for ``run_storm``: ``count`` SIGKILL restarts, the first
    ``first_after_s`` in, then every ``between_s`` after the previous came back; faults
    are put back after each. ``ready()`` (checked before each kill) lets the caller make
    sure work is in flight."""

    async def disrupt() -> None:
        await asyncio.sleep(first_after_s)
        for k in range(count):
            while not ready():
                await asyncio.sleep(0.05)
            await asyncio.to_thread(sp.kill_and_restart, down_s)
            if faults:
                await asyncio.to_thread(sp.put_faults, faults)
            if k + 1 < count:
                await asyncio.sleep(between_s)

    return disrupt
