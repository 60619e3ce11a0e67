"""Fixtures shared by the sandbox contract tests."""

from __future__ import annotations

import pytest

from tests.sandbox._util import client


@pytest.fixture
def acct(sandbox, new_account):
    """An httpx client on a fresh account (``.account_id`` set for admin look-ups)."""
    a = new_account()
    with client(sandbox, a.api_key) as c:
        c.account_id = a.account_id  # type: ignore[attr-defined]
        yield c
