"""The price-list estimate of one task, from songlab.pricing (never re-typed here).

- a catalog tool, a workflow route (operation named like ``karaoke-tracks``) or a
  song translation: ``pricing.task_price(operation, model, license)``, the one place
  a task is priced (a pipeline costs the sum of its steps);
- an Agent One run: its own fee from the trace's token usage and the number
  of sub-tool calls made (completed or failed; skipped and planned ones were
  never made) at the tier's rates, plus what the sub-tool calls cost (priced
  from the list when a step names a priced (operation, model), else the
  step's billed cost, since a trace names its tools but not their models).

Anything else has no estimate (None).
"""

from __future__ import annotations

import json
from decimal import Decimal

import songlab.pricing as pricing

__all__ = ["TRANSLATION_OPERATIONS", "estimate", "estimate_agent_run", "priceable_in_tiers"]

# Tool-call statuses that count as a call made (billed 0.001 each, failed ones too).
CALLS_MADE = frozenset({"completed", "failed"})
# How a song-translation task may name its operation.
TRANSLATION_OPERATIONS = frozenset({"song_translation", "translation", "translate_song"})


def estimate(operation: str | None, model: str | None, license: int) -> Decimal | None:
    """The list price of a non-agent task, or None if the list has none."""
    if operation is None:
        return None
    try:
        return pricing.task_price(operation, model, license).usd
    except pricing.PricingError:
        return None


def priceable_in_tiers(operation: str | None, model: str | None) -> bool:
    """Whether the task has a list price in every tier (Agent One runs do not)."""
    return estimate(operation, model, 1) is not None


def _dec(value: object) -> Decimal:
    return Decimal(str(value)) if value is not None else Decimal(0)


def estimate_agent_run(tier: str | None, metadata_json: str | None) -> Decimal | None:
    """Agent One: fee from usage at the tier's rates plus sub-tool calls; None without a trace."""
    if tier not in pricing.AGENT_RATES or not isinstance(metadata_json, str) or not metadata_json:
        return None
    try:
        trace = json.loads(metadata_json)
        steps = trace.get("steps") or []
        usage = trace.get("usage") or {}
    except (ValueError, AttributeError):
        return None
    calls = [
        s
        for s in steps
        if isinstance(s, dict)
        and s.get("kind") == "tool_call"
        and s.get("status", "completed") in CALLS_MADE
    ]
    sub_cost = Decimal(0)
    for s in calls:
        op, model = s.get("operation"), s.get("model")
        if isinstance(op, str) and isinstance(model, str) and (op, model) in pricing.PRICES:
            sub_cost += pricing.price(op, model, s.get("license") or 1)
        else:
            sub_cost += _dec(s.get("cost_usd"))
    return pricing.estimate_agent(
        tier,
        input_tokens=int(usage.get("input_tokens") or 0),
        output_tokens=int(usage.get("output_tokens") or 0),
        sub_tool_calls=len(calls),
        sub_tool_cost=sub_cost,
    )
