"""Tier comparison: the same billed tasks priced in every tier, beside what they cost."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from songlab import pricing
from songlab.ledger import tasks_frame, tier_comparison, tier_prices
from tests.ledger._util import snap


def test_each_tier_prices_the_same_tasks(records: list[dict[str, Any]]) -> None:
    tasks = tasks_frame(records)
    comp = tier_comparison(tasks)
    assert comp["license"].tolist() == [1, 2, 3, 4, 5]
    assert comp["tier"].tolist() == ["royalty_free", "standard", "distribution", "sync", "master"]
    compared = [r for r in records if r["cost_usd"] is not None and r["operation"] != "agent"]
    assert set(comp["tasks"]) == {len(compared)}
    actual = sum((Decimal(r["cost_usd"]) for r in compared), Decimal(0))
    for lic, priced, act, diff in comp[
        ["license", "priced_usd", "actual_usd", "difference_usd"]
    ].itertuples(index=False):
        expected = sum(
            (pricing.price(r["operation"], r["model"], lic) for r in compared), Decimal(0)
        )
        assert priced == expected
        assert act == actual
        assert diff == expected - actual
    assert comp.attrs["excluded_tasks"] == len(records) - len(compared)


def test_small_case_by_hand() -> None:
    tasks = tasks_frame(
        [
            snap("a"),  # v7 song, royalty-free, 0.12
            snap("b", license=5, cost_usd="1.67000000"),
            snap("c", operation="agent", model="flash", cost_usd="0.01000000"),
            snap("d", status="failed", cost_usd=None),
        ]
    )
    comp = tier_comparison(tasks).set_index("tier")
    assert comp.loc["royalty_free", "priced_usd"] == Decimal("0.24")
    assert comp.loc["master", "priced_usd"] == Decimal("3.34")
    assert comp.loc["master", "actual_usd"] == Decimal("1.79")
    assert comp.loc["master", "difference_usd"] == Decimal("1.55")
    assert comp.attrs["excluded_tasks"] == 2
    wide = tier_prices(tasks)
    assert wide["task_id"].tolist() == ["a", "b"]
    assert wide["sync_usd"].tolist() == [Decimal("0.67"), Decimal("0.67")]


def test_grouped_by_operation(records: list[dict[str, Any]]) -> None:
    comp = tier_comparison(tasks_frame(records), by="operation")
    assert len(comp) == 5 * comp["operation"].nunique()
    flat = tier_comparison(tasks_frame(records))
    for lic in range(1, 6):
        assert (
            comp[comp["license"] == lic]["priced_usd"].sum()
            == flat[flat["license"] == lic]["priced_usd"].iloc[0]
        )


def test_grouping_by_tier_is_refused() -> None:
    with pytest.raises(ValueError, match="by: license and tier"):
        tier_comparison(tasks_frame([snap("a")]), by="tier")
