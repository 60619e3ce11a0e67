"""Agent One in the sandbox: a deterministic planner that really orchestrates, bills and reports.

Pure parts (no I/O, unit-tested on their own):

* :mod:`.request` validates the payload (``prompt``, ``system_prompt``,
  ``max_steps``, ``max_budget``, ``workflow_build_only``; ``studio`` and
  ``visualizer_*`` refused by name);
* :mod:`.intents` reads the prompt, :mod:`.planner` turns it into a
  :class:`~.plan.Plan` per tier (flash one step, standard multi-step, pro
  multi-step plus a verification turn);
* :mod:`.tokens` counts tokens, :mod:`.budget` holds the step and budget caps,
  :mod:`.trace` builds ``output.metadata_json`` in design.md's shape;
* :mod:`.orchestrate` runs a plan against a :class:`~.orchestrate.SubTools` (the seam).

:mod:`.runner` plugs this into the sandbox worker: each sub-tool call becomes a
real task of the same account (ledger kind ``agent_sub_tool``, ``parent_task_id``
= the run) and the run bills its own fee (kind ``agent_fee``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from songlab.sandbox.agent.orchestrate import AgentOutcome, SubTools, run_plan
from songlab.sandbox.agent.plan import Plan, Result
from songlab.sandbox.agent.planner import build_plan
from songlab.sandbox.agent.request import AgentPayloadError, AgentRequest, parse_request

if TYPE_CHECKING:
    from songlab.sandbox.tasks.context import Outcome, TaskContext

__all__ = [
    "AgentOutcome",
    "AgentPayloadError",
    "AgentRequest",
    "Plan",
    "Result",
    "SubTools",
    "build_plan",
    "parse_request",
    "run",
    "run_plan",
]


def run(ctx: TaskContext) -> Outcome:
    """The worker's runner for ``agent`` tasks (imported lazily: the pure parts above
    need nothing of the sandbox core)."""
    from songlab.sandbox.agent.runner import run_agent

    return run_agent(ctx)
