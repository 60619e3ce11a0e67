"""Fixtures of the ledger tests: synthetic task snapshots in design.md's shape."""

from __future__ import annotations

from typing import Any

import pytest

from songlab.ledger.synthetic import synthetic_tasks


@pytest.fixture(scope="session")
def records() -> list[dict[str, Any]]:
    """3000 synthetic task snapshots, newest first, with Agent One runs and failures."""
    return list(synthetic_tasks(3000, seed=7))
