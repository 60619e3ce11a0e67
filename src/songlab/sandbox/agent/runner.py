"""Agent One's runner in the sandbox worker: plan, orchestrate through real sub-tasks, bill the fee.

``run_agent(ctx)`` is what the worker calls for an ``agent`` task (through
``songlab.sandbox.agent.run``). It reads the payload, builds the tier's plan
and runs it with :class:`SandboxTools`, the :class:`~.orchestrate.SubTools` of
the sandbox:

* each sub-tool call is ``ctx.create_subtask`` + ``ctx.run_subtask``: a real
  task of the same account (``parent_task_id`` = the run), validated like a
  native create, reserved, run in this worker thread and charged at its own
  completion as a ledger line of kind ``agent_sub_tool``; its files are the
  account's. A refused create (402, 422, ...) is a failed call (not billed,
  but it counts for the 0.001 per-call fee);
* every call shows on the run's stream as two ``progress`` events carrying
  ``step`` (the tool's operation), ``phase`` (``started``/``finished``),
  ``index`` (its index in the trace) and ``message``; the run's first event
  has ``step`` ``"plan"`` and the plan as its message;
* the run's own fee is one ``agent_fee`` line (``ctx.agent_fee``), settled
  against the reserve floor held at create.

The reserve floor, the per-tier rate limits and payload validation happen at
create, in the sandbox core, before this runs.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from songlab.sandbox.agent.orchestrate import run_plan
from songlab.sandbox.agent.plan import Result
from songlab.sandbox.agent.planner import build_plan
from songlab.sandbox.agent.request import parse_request
from songlab.sandbox.catalog import BY_PAIR
from songlab.sandbox.tasks.context import Outcome, SubtaskRefused, TaskContext

__all__ = ["THINK_SECONDS", "SandboxTools", "run_agent"]

THINK_SECONDS = 0.4  # simulated model time to plan, and before each call (scaled by --speed)


def _payload_for(operation: str, payload: dict[str, Any]) -> dict[str, Any]:
    """The planner's payload in the sub-task's own field names.

    ``mix`` takes its inputs as ``track0``, ``track1``...; the planner writes
    one ``tracks`` list (its length is known only at run time).
    """
    if operation == "mix" and isinstance(payload.get("tracks"), list):
        rest = {k: v for k, v in payload.items() if k != "tracks"}
        return {**{f"track{i}": t for i, t in enumerate(payload["tracks"])}, **rest}
    return payload


class SandboxTools:
    """:class:`~.orchestrate.SubTools` over a worker's :class:`TaskContext`."""

    def __init__(self, ctx: TaskContext) -> None:
        self.ctx = ctx

    def tool_id(self, operation: str, model: str) -> str | None:
        tool = BY_PAIR.get((operation, model))
        return None if tool is None else tool.id

    def call(self, operation: str, model: str, payload: dict[str, Any]) -> Result:
        tid = self.tool_id(operation, model)
        self.ctx.sleep(THINK_SECONDS)
        try:
            sub_id = self.ctx.create_subtask(operation, model, _payload_for(operation, payload))
        except SubtaskRefused as exc:
            body = exc.body
            error = f"{body.get('error')}: {body.get('message', '')}".rstrip(": ")
            return Result("failed", tid, None, Decimal(0), error=error)
        snap = self.ctx.run_subtask(sub_id)
        if snap["status"] != "completed":
            failure = snap.get("failure") or {}
            return Result("failed", tid, sub_id, Decimal(0), error=failure.get("message", "failed"))
        output = snap.get("output") or {}
        assets = [(a.get("name") or "audio", a["file_id"]) for a in output.get("assets") or []]
        return Result(
            "completed", tid, sub_id, Decimal(snap["cost_usd"] or 0), assets, output.get("text")
        )

    def progress(self, *, step: str, phase: str, index: int, message: str, fraction: float) -> None:
        # the run's own progress stops short of 1.0: completion is the worker's
        self.ctx.progress(min(fraction, 0.99), step=step, phase=phase, index=index, message=message)


def run_agent(ctx: TaskContext) -> Outcome:
    """Run one Agent One task (the worker completes it and writes the ``agent_fee`` line)."""
    req = parse_request(ctx.payload)
    plan = build_plan(req.prompt, ctx.model)
    ctx.progress(0.0, step="plan", message=plan.summary)
    ctx.sleep(THINK_SECONDS)  # planning
    outcome = run_plan(plan, req, SandboxTools(ctx))
    return Outcome(text=outcome.text, metadata=outcome.trace, charges=[ctx.agent_fee(outcome.fee)])
