"""Shared fixtures: a real sandbox over HTTP (session), an admin client, fresh accounts.

- ``sandbox``: a uvicorn sandbox in a background thread, ``db=":memory:"``, high
  speed; ``.base_url``, ``.admin_token``, ``.stop()``.
- ``admin``: an ``httpx.Client`` on it with the ``X-Sandbox-Admin-Token`` header.
- ``new_account()``: a fresh account (``.account_id``, ``.api_key``) so tests do
  not share balances; keyword arguments go to ``POST /_sandbox/accounts``.

The client's record (``songlab.client.RecordStore``) and asset cache never touch the
user's data or cache dir in tests: ``pytest_configure`` points ``SONGLAB_RECORD`` and
``SONGLAB_CACHE_DIR`` into a temporary directory for the whole run (the repository's root
``conftest.py`` sets ``SONGLAB_SANDBOX_DB`` to ``:memory:``, so ``connect()``'s sandbox keeps
nothing; kernels that nbval starts inherit all three), and ``_own_record`` gives each test its own record file and its own
reuse scope (``SONGLAB_ORIGIN`` = the test's id) and asset cache, so one test never
re-attaches to another's tasks or reads another's downloads. The run's directory is
removed when pytest ends (``pytest_unconfigure``): a suite that leaves its notebooks'
downloads in /tmp on every run fills a CI machine's disk.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest

from tests._measured import file_seconds, heaviest_files_first, mark_slow_by_measure
from tests._profiles import PROFILES, ProfileSandbox, running

SANDBOX_SPEED = 500.0


RUN_DIR = pytest.StashKey[str]()


def pytest_configure(config: pytest.Config) -> None:
    run_dir = config.stash[RUN_DIR] = tempfile.mkdtemp(prefix="songlab-test-")
    os.environ["SONGLAB_RECORD"] = os.path.join(run_dir, "record.sqlite")
    os.environ["SONGLAB_CACHE_DIR"] = os.path.join(run_dir, "cache")
    os.environ["SONGLAB_CAMPAIGN_DIR"] = os.path.join(run_dir, "campaigns")
    os.environ["SONGLAB_ANALYSIS_CACHE"] = os.path.join(run_dir, "analysis.sqlite")


@pytest.hookimpl(tryfirst=True)  # before -m deselects by marker
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    mark_slow_by_measure(items)  # tests/_measured.py: slow by measured CPU, not by guess
    heaviest_files_first(items, file_seconds())  # the suite's longest files start first


def pytest_unconfigure(config: pytest.Config) -> None:
    if RUN_DIR in config.stash:
        shutil.rmtree(config.stash[RUN_DIR], ignore_errors=True)


@pytest.fixture(autouse=True)
def _own_record(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", request.node.name)[:60]
    monkeypatch.setenv("SONGLAB_RECORD", str(tmp_path_factory.mktemp("record") / f"{name}.sqlite"))
    monkeypatch.setenv("SONGLAB_ORIGIN", f"test:{request.node.nodeid}")
    monkeypatch.setenv("SONGLAB_CACHE_DIR", str(tmp_path_factory.mktemp("assets")))
    monkeypatch.setenv(
        "SONGLAB_ANALYSIS_CACHE", str(tmp_path_factory.mktemp("analysis") / "analysis.sqlite")
    )


@dataclass(frozen=True)
class Account:
    account_id: str
    api_key: str = field(repr=False)


@pytest.fixture(scope="session")
def sandbox() -> Iterator[Any]:
    from songlab.sandbox.http.server import serve_in_thread

    srv = serve_in_thread(db=":memory:", speed=SANDBOX_SPEED, admin_token="test-admin-token")
    try:
        yield srv
    finally:
        srv.stop()


@pytest.fixture
def admin(sandbox: Any) -> Iterator[httpx.Client]:
    with httpx.Client(
        base_url=sandbox.base_url,
        headers={"X-Sandbox-Admin-Token": sandbox.admin_token},
        timeout=30.0,
        verify=False,  # plain HTTP on loopback; skips building an SSL context (~0.2 s)
    ) as client:
        yield client


@pytest.fixture
def new_account(admin: httpx.Client) -> Callable[..., Account]:
    def make(**body: Any) -> Account:
        r = admin.post("/_sandbox/accounts", json=body)
        assert r.status_code == 201, r.text
        data = r.json()
        return Account(data["account_id"], data["api_key"])

    return make


@pytest.fixture(scope="module", params=PROFILES)
def profile_sandbox(request: pytest.FixtureRequest) -> Iterator[ProfileSandbox]:
    """One sandbox per test module and profile (default, spec, noisy), ids as the profiles.

    Module-scoped and parametrised over ``tests._profiles.PROFILES``: a module's tests run
    profile by profile, so at most one of its sandboxes runs at once.
    """
    sb = running(request.param)
    try:
        yield sb
    finally:
        sb.stop()
