"""The sandbox's settings: one frozen value built from flags, env and defaults."""

from __future__ import annotations

import os
import secrets
from dataclasses import dataclass, field
from pathlib import Path

import platformdirs

from songlab.sandbox.http.profiles import check as check_profile

ADMIN_TOKEN_ENV = "SONGLAB_SANDBOX_ADMIN_TOKEN"
DB_ENV = "SONGLAB_SANDBOX_DB"
DEMO_API_KEY = "sk-sandbox-demo"
DEMO_ACCOUNT_ID = "acct_demo"
DEMO_TOKENS = 100_000
MEMORY = ":memory:"


def default_db_path() -> str:
    """Where a sandbox keeps its state unless told: ``$SONGLAB_SANDBOX_DB`` (a path, or
    ``:memory:`` to keep nothing) if set, else ``<user data dir>/songlab/sandbox.sqlite3``
    (created on first use). The tests set ``:memory:``: no test writes the user's data."""
    return os.environ.get(DB_ENV) or str(
        Path(platformdirs.user_data_dir("songlab")) / "sandbox.sqlite3"
    )


def resolve_admin_token(token: str | None) -> tuple[str, bool]:
    """The admin token and whether it was generated (then it is printed once)."""
    if token:
        return token, False
    env = os.environ.get(ADMIN_TOKEN_ENV)
    if env:
        return env, False
    return "adm-" + secrets.token_urlsafe(18), True


@dataclass(frozen=True, slots=True)
class SandboxConfig:
    host: str = "127.0.0.1"
    port: int = 0
    db: str = MEMORY
    speed: float = 1.0
    admin_token: str = field(default="", repr=False)
    workers: int = 8
    profile: str = "default"  # what the vendor surface shows: default, spec, noisy (profiles.py)

    def __post_init__(self) -> None:
        if not self.speed > 0:
            raise ValueError(f"speed: must be > 0, got {self.speed}")
        if not 0 <= self.port <= 65535:
            raise ValueError(f"port: must be 0-65535, got {self.port}")
        check_profile(self.profile)
        if self.workers < 1:
            raise ValueError(f"workers: must be >= 1, got {self.workers}")
