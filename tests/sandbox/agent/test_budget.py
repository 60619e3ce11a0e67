"""Caps: the step cap is checked before a call, the budget after a turn (cents -> USD)."""

from __future__ import annotations

from decimal import Decimal

import pytest

from songlab.sandbox.agent.budget import DEFAULT_MAX_STEPS, Caps


@pytest.mark.parametrize("tier", ["flash", "standard", "pro"])
def test_zero_steps_means_tier_default(tier: str) -> None:
    assert Caps.of(tier, max_steps=0).max_steps == DEFAULT_MAX_STEPS[tier]
    assert Caps.of(tier, max_steps=7).max_steps == 7


def test_default_caps_grow_with_the_tier() -> None:
    assert DEFAULT_MAX_STEPS["flash"] < DEFAULT_MAX_STEPS["standard"] < DEFAULT_MAX_STEPS["pro"]


def test_may_call_until_the_cap() -> None:
    caps = Caps.of("standard", max_steps=2)
    assert [caps.may_call(n) for n in range(4)] == [True, True, False, False]


def test_budget_in_cents_reached_at_equality() -> None:
    caps = Caps.of("pro", max_budget=10)
    assert caps.budget_usd == Decimal("0.10")
    assert not caps.budget_reached(Decimal("0.09999999"))
    assert caps.budget_reached(Decimal("0.10"))
    assert caps.budget_reached(Decimal("0.5"))


def test_no_budget_is_never_reached() -> None:
    caps = Caps.of("flash")
    assert caps.budget_usd is None
    assert not caps.budget_reached(Decimal("1000000"))
