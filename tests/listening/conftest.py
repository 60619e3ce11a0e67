"""Fixtures of the listening tests (helpers live in listening_signals.py: a unique module name)."""

from __future__ import annotations

import pytest

from tests.listening.listening_signals import make_clips


@pytest.fixture
def clips() -> dict:
    return make_clips()
