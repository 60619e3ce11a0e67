"""Sandboxes in each answer profile, reached like the real service.

``running(profile)`` starts one: the ``spec`` profile as a real ``songlab sandbox
--profile spec`` process (stdout's first line gives its URL), ``default`` and
``noisy`` in a background thread. Each is a :class:`ProfileSandbox`: ``profile``,
``base_url``, ``admin_token``, ``api_key`` (the demo key), ``env()`` (the
``SONGLAB_API_KEY``/``SONGLAB_BASE_URL`` a user sets for the real service),
``client()`` (a songlab client made by ``songlab.connect()`` from that env) and
``stop()``.
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

PROFILES = ("default", "spec", "noisy")
PROCESS_PROFILES = ("spec",)  # served by a real `songlab sandbox` process
SPEED = 500.0
ADMIN_TOKEN = "profiles-admin-token"
DEMO_KEY = "sk-sandbox-demo"
START_TIMEOUT = 60.0


def songlab_command() -> list[str]:
    """The installed ``songlab`` console script next to this interpreter (else ``-m``)."""
    script = Path(sys.executable).parent / "songlab"
    if script.exists():
        return [str(script)]
    found = shutil.which("songlab")
    return [found] if found else [sys.executable, "-m", "songlab.cli"]


@dataclass
class ProfileSandbox:
    profile: str
    base_url: str
    admin_token: str = field(repr=False)
    api_key: str = field(default=DEMO_KEY, repr=False)
    _stop: Any = field(default=None, repr=False)

    def env(self, **more: str) -> dict[str, str]:
        return {"SONGLAB_API_KEY": self.api_key, "SONGLAB_BASE_URL": self.base_url, **more}

    @contextlib.contextmanager
    def environ(self, **more: str) -> Iterator[None]:
        """``os.environ`` set like a real-service user's, restored afterwards."""
        saved = {k: os.environ.get(k) for k in self.env(**more)}
        os.environ.update(self.env(**more))
        try:
            yield
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v

    def client(self, **options: Any) -> Any:
        """``songlab.connect()`` with this sandbox as the configured real service."""
        import songlab

        with self.environ():
            return songlab.connect(quiet=True, **options)

    def admin(self) -> httpx.Client:
        return httpx.Client(
            base_url=self.base_url,
            timeout=30.0,
            headers={"X-Sandbox-Admin-Token": self.admin_token},
        )

    def http(self, api_key: str | None = None) -> httpx.Client:
        return httpx.Client(
            base_url=self.base_url,
            timeout=30.0,
            headers={"Authorization": f"Bearer {api_key or self.api_key}"},
        )

    def stop(self) -> None:
        if self._stop is not None:
            self._stop()
            self._stop = None


def _process(
    profile: str,
    *,
    db: str | None = ":memory:",
    env: dict[str, str] | None = None,
    umask: int | None = None,
) -> ProfileSandbox:
    errors = tempfile.TemporaryFile(mode="w+")  # never a pipe nobody reads
    proc = subprocess.Popen(
        [
            *songlab_command(),
            "sandbox",
            "--profile",
            profile,
            *(["--db", db] if db is not None else []),
            "--speed",
            str(SPEED),
            "--admin-token",
            ADMIN_TOKEN,
            "--port",
            "0",
        ],
        stdout=subprocess.PIPE,
        stderr=errors,
        text=True,
        env=env,
        preexec_fn=None if umask is None else functools.partial(os.umask, umask),
    )
    assert proc.stdout is not None
    line = proc.stdout.readline().strip()
    prefix = "songlab sandbox listening on "
    if not line.startswith(prefix):
        proc.kill()
        proc.wait()
        errors.seek(0)
        raise RuntimeError(
            f"songlab sandbox --profile {profile} did not start: {line!r} {errors.read()[-2000:]}"
        )

    def stop() -> None:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
        errors.close()

    return ProfileSandbox(profile, line[len(prefix) :], ADMIN_TOKEN, _stop=stop)


def _thread(profile: str) -> ProfileSandbox:
    from songlab.sandbox.http.server import serve_in_thread

    srv = serve_in_thread(db=":memory:", speed=SPEED, admin_token=ADMIN_TOKEN, profile=profile)
    return ProfileSandbox(profile, srv.base_url, ADMIN_TOKEN, _stop=srv.stop)


def running(profile: str) -> ProfileSandbox:
    return _process(profile) if profile in PROCESS_PROFILES else _thread(profile)


def process(
    profile: str, *, db: str | None, env: dict[str, str], umask: int | None = None
) -> ProfileSandbox:
    """A ``songlab sandbox --profile PROFILE`` process on ``db`` (None: its default database,
    under ``env``'s HOME), started with ``env`` and, if given, ``umask``."""
    return _process(profile, db=db, env=env, umask=umask)
