"""df.songlab: checks its columns up front, never mutates, returns exact totals."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pandas as pd
import pytest

import songlab.ledger
from songlab.ledger import spend, tasks_frame, tier_comparison, trace_frame


def test_missing_columns_are_named() -> None:
    with pytest.raises(AttributeError, match="missing column.*cost_usd"):
        pd.DataFrame({"task_id": ["a"]}).songlab  # noqa: B018


def test_methods_match_the_functions(records: list[dict[str, Any]]) -> None:
    tasks = tasks_frame(records)
    before = tasks.copy()
    assert tasks.songlab.total() == tasks["cost_usd"].sum()
    assert isinstance(tasks.songlab.total("billed_usd"), Decimal)
    pd.testing.assert_frame_equal(tasks.songlab.spend("tier"), spend(tasks, "tier"))
    pd.testing.assert_frame_equal(tasks.songlab.tier_comparison(), tier_comparison(tasks))
    pd.testing.assert_frame_equal(tasks.songlab.agent_trace(), trace_frame(tasks))
    pd.testing.assert_frame_equal(tasks, before)
    with pytest.raises(ValueError, match="column"):
        tasks.songlab.total("tasks")


def test_public_names_are_sorted_and_exist() -> None:
    names = songlab.ledger.__all__
    assert names == sorted(names)
    for name in names:
        assert hasattr(songlab.ledger, name), name
