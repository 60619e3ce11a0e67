"""The run's trace, in the shape design.md fixes for ``output.metadata_json``.

``{"steps": [{"index", "kind", "tool", "tool_id", "status", "cost_usd",
"task_id", "file_ids", "text"}], "usage": {"input_tokens", "output_tokens"},
"agent_fee_usd", "total_cost_usd", "stopped_by"}``

* ``kind``: ``"prose"`` (a turn's or the final answer's text), ``"tool_call"``
  (one sub-tool call) or ``"verification"`` (pro's verification note).
* Only calls that were made are ``tool_call`` steps, so their count is the
  count of calls billed 0.001 each. ``status`` of a tool call: ``"completed"``
  or ``"failed"`` (made and failed: not billed, but it counts as a call for the
  0.001 fee). Prose and verification steps are ``"completed"``. Calls a run
  planned but never made (the budget or step cap stopped it, or an input they
  needed failed) are listed under the extra key ``not_done`` as ``{"tool",
  "purpose", "reason"}`` and said in ``output.text``; a ``workflow_build_only``
  run's planned calls are its ``workflow``'s steps.
* Money is a decimal string with 8 decimals (:func:`money`); a step that
  bills nothing says ``"0.00000000"``. ``tool``/``tool_id``/``task_id`` are null on prose and
  verification steps.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, TypedDict

__all__ = ["Trace", "TraceStep", "money"]


_EIGHT = Decimal("0.00000001")


def money(amount: Decimal) -> str:
    """A USD amount as a decimal string with 8 decimals, as the task snapshot and
    the ledger write it: ``"0.07000000"``, ``"0.00123456"``, ``"0.00000000"``.

    Raises ValueError for an amount with more than 8 decimals (never rounded).
    """
    if not isinstance(amount, Decimal):
        raise TypeError(f"amount: must be a Decimal, got {type(amount).__name__}")
    q = amount.quantize(_EIGHT)
    if q != amount:
        raise ValueError(f"amount: {amount} has more than 8 decimals")
    return format(q, "f")


class TraceStep(TypedDict):
    """One step of an Agent One trace (design.md: the trace in ``metadata_json``)."""

    index: int
    kind: str  # "tool_call", "prose" or "verification"
    tool: str | None
    tool_id: str | None
    status: str  # "completed" or "failed"
    cost_usd: str  # decimal string, 8 places
    task_id: str | None
    file_ids: list[str]
    text: str


@dataclass(slots=True)
class Trace:
    """Steps in the order they happened, then the totals (:meth:`finish`)."""

    steps: list[TraceStep] = field(default_factory=list)

    def _add(
        self,
        kind: str,
        *,
        tool: str | None = None,
        tool_id: str | None = None,
        status: str = "completed",
        cost: Decimal = Decimal(0),
        task_id: str | None = None,
        file_ids: list[str] | tuple[str, ...] = (),
        text: str = "",
    ) -> TraceStep:
        entry = TraceStep(
            index=len(self.steps),
            kind=kind,
            tool=tool,
            tool_id=tool_id,
            status=status,
            cost_usd=money(cost),
            task_id=task_id,
            file_ids=list(file_ids),
            text=text,
        )
        self.steps.append(entry)
        return entry

    def prose(self, text: str) -> TraceStep:
        return self._add("prose", text=text)

    def verification(self, text: str) -> TraceStep:
        return self._add("verification", text=text)

    def tool_call(
        self,
        *,
        tool: str,
        tool_id: str | None,
        status: str,
        cost: Decimal = Decimal(0),
        task_id: str | None = None,
        file_ids: list[str] | tuple[str, ...] = (),
        text: str = "",
    ) -> TraceStep:
        if status not in ("completed", "failed"):
            raise ValueError(
                f"status: must be completed or failed (only calls made are traced), got {status!r}"
            )
        return self._add(
            "tool_call",
            tool=tool,
            tool_id=tool_id,
            status=status,
            cost=cost,
            task_id=task_id,
            file_ids=file_ids,
            text=text,
        )

    def finish(
        self,
        *,
        usage: dict[str, int],
        agent_fee: Decimal,
        total_cost: Decimal,
        stopped_by: str | None,
        extra: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """The whole trace as a JSON-able dict (``extra`` keys go after the fixed ones)."""
        if stopped_by not in (None, "budget", "max_steps"):
            raise ValueError(
                f"stopped_by: must be None, 'budget' or 'max_steps', got {stopped_by!r}"
            )
        return {
            "steps": [dict(s) for s in self.steps],
            "usage": {
                "input_tokens": usage["input_tokens"],
                "output_tokens": usage["output_tokens"],
            },
            "agent_fee_usd": money(agent_fee),
            "total_cost_usd": money(total_cost),
            "stopped_by": stopped_by,
            **(extra or {}),
        }

    @staticmethod
    def dumps(trace: dict[str, Any]) -> str:
        """The JSON text stored in ``output.metadata_json``."""
        return json.dumps(trace, ensure_ascii=False, separators=(",", ":"))
