"""The run's caps: ``max_budget`` checked after each turn settles, ``max_steps`` before a call.

Spec: ``max_budget`` is a hard cap in cents on the run's total cost (own fee
plus every sub-tool call), checked after each turn's tool calls settle, *not*
before a call; when the cumulative cost reaches the cap the run halts and
reports it; what was spent stays charged. ``max_steps`` caps tool-using steps
(here: sub-tool calls); 0 means the tier's default.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Final

__all__ = ["Caps", "DEFAULT_MAX_STEPS"]

# The worker's default step cap per tier (max_steps = 0).
DEFAULT_MAX_STEPS: Final[dict[str, int]] = {"flash": 1, "standard": 10, "pro": 20}

_CENT = Decimal("0.01")


@dataclass(frozen=True, slots=True)
class Caps:
    """The caps of one run: a step cap (always set) and an optional budget in USD."""

    max_steps: int
    budget_usd: Decimal | None

    @classmethod
    def of(cls, tier: str, *, max_steps: int = 0, max_budget: int | None = None) -> Caps:
        """Caps from the payload's ``max_steps`` (0 = default) and ``max_budget`` (cents)."""
        steps = max_steps or DEFAULT_MAX_STEPS[tier]
        budget = None if max_budget is None else Decimal(max_budget) * _CENT
        return cls(max_steps=steps, budget_usd=budget)

    def may_call(self, calls_made: int) -> bool:
        """Before a call: the step cap only (the budget is never checked here)."""
        return calls_made < self.max_steps

    def budget_reached(self, spent_usd: Decimal) -> bool:
        """After a turn settles: has the cumulative cost reached the budget?"""
        return self.budget_usd is not None and spent_usd >= self.budget_usd
