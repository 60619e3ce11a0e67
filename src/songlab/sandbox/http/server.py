"""Serving the sandbox with uvicorn: in a background thread or in the foreground.

``serve_in_thread(db=":memory:", speed=1.0, admin_token=None, host="127.0.0.1", port=0,
profile="default")``
returns a running :class:`SandboxServer` (``.base_url``, ``.admin_token``,
``.stop()``, a context manager); ``port=0`` binds a free port.

A server on a database file holds that file's lock while it serves and publishes its
address beside it (:mod:`songlab.sandbox.storage.owner`): a second server on the same file
is refused with :class:`~songlab.sandbox.storage.owner.SandboxInUse`, which says where the
first one answers. ``fresh`` says whether the file was new (nothing kept before).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import uvicorn
from starlette.types import ASGIApp

from songlab.sandbox.assembly import build
from songlab.sandbox.config import MEMORY, SandboxConfig, resolve_admin_token
from songlab.sandbox.storage import owner

STARTUP_TIMEOUT = 30.0


class SandboxServer:
    """A sandbox served by uvicorn on a loopback port, in a daemon thread."""

    def __init__(
        self,
        config: SandboxConfig,
        *,
        wrap: Callable[[ASGIApp], ASGIApp] | None = None,
        claim: owner.Claim | None = None,
    ) -> None:
        self.config = config
        self._claim: owner.Claim | None = None
        if config.db != MEMORY:  # one sandbox per file: SandboxInUse names the one serving it
            self._claim = claim if claim is not None else owner.claim(config.db)
        path = Path(config.db).expanduser()
        self.fresh = config.db == MEMORY or not (path.exists() and path.stat().st_size > 0)
        try:
            self.sandbox = build(config)
        except BaseException:
            self._release()
            raise
        self.app = self.sandbox.asgi
        served = self.app if wrap is None else wrap(self.app)  # e.g. a benchmark's extra route
        self._server = uvicorn.Server(
            uvicorn.Config(
                served,
                host=config.host,
                port=config.port,
                log_level="warning",
                access_log=False,
                lifespan="off",
                timeout_graceful_shutdown=1,
            )
        )
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None
        self.host = config.host
        self.port = config.port

    def __repr__(self) -> str:
        return f"SandboxServer(base_url={self.base_url!r})"

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def admin_token(self) -> str:
        return self.config.admin_token

    @property
    def profile(self) -> str:
        """What the vendor surface shows: ``default``, ``spec`` or ``noisy``."""
        return self.config.profile

    def start(self) -> SandboxServer:
        self._thread = threading.Thread(target=self._run, name="songlab-sandbox", daemon=True)
        self._thread.start()
        waited = 0.0
        while not self._server.started:
            if self._error is not None or not self._thread.is_alive():
                self.sandbox.close()
                self._release()
                raise RuntimeError(f"sandbox failed to start: {self._error!r}")
            if waited > STARTUP_TIMEOUT:
                raise RuntimeError("sandbox did not start in time")
            self._thread.join(0.01)
            waited += 0.01
        sock = self._server.servers[0].sockets[0]
        self.host, self.port = sock.getsockname()[:2]
        self.sandbox.set_address(self.host, self.port)
        self.sandbox.start()
        if self._claim is not None:
            self._claim.publish(
                base_url=self.base_url,
                admin_token=self.admin_token,
                speed=self.config.speed,
                profile=self.config.profile,
            )
        return self

    def _release(self) -> None:
        if self._claim is not None:
            self._claim.release()
            self._claim = None

    def _run(self) -> None:
        try:
            asyncio.run(self._server.serve())
        except BaseException as exc:  # noqa: BLE001 - the thread's end (SystemExit too) is start()'s to raise
            self._error = exc

    def stop(self) -> None:
        if self._thread is None:
            return
        self._server.should_exit = True
        self._thread.join(timeout=10)
        self._thread = None
        self.sandbox.close()
        self._release()  # after the store is closed: a process waiting for the file takes it

    def __enter__(self) -> SandboxServer:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def serve_in_thread(
    db: str = MEMORY,
    speed: float = 1.0,
    admin_token: str | None = None,
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    workers: int = 8,
    profile: str = "default",
) -> SandboxServer:
    """Start a sandbox in a background thread and return it once it answers.

    ``profile``: what the vendor surface shows: ``"default"`` (design.md's generous
    answers), ``"spec"`` (only what the spec shows) or ``"noisy"`` (default plus unknown
    fields everywhere); see ``songlab.sandbox.http.profiles``.
    """
    token, _ = resolve_admin_token(admin_token)
    config = SandboxConfig(
        host=host,
        port=port,
        db=db,
        speed=speed,
        admin_token=token,
        workers=workers,
        profile=profile,
    )
    return SandboxServer(config).start()
