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

:mod:`.runner` plugs this into the sandbox worker (``runner.run_agent`` is the
``agent`` entry of the runner table ``songlab.sandbox.assembly.build`` hands the worker):
each sub-tool call becomes a real task of the same account (ledger kind
``agent_sub_tool``, ``parent_task_id`` = the run) and the run bills its own fee
(kind ``agent_fee``).
"""

from __future__ import annotations

from songlab.sandbox.agent.orchestrate import AgentOutcome, SubTools, run_plan
from songlab.sandbox.agent.plan import Plan, Result
from songlab.sandbox.agent.planner import build_plan
from songlab.sandbox.agent.request import AgentPayloadError, AgentRequest, parse_request

__all__ = [
    "AgentOutcome",
    "AgentPayloadError",
    "AgentRequest",
    "Plan",
    "Result",
    "SubTools",
    "build_plan",
    "parse_request",
    "run_plan",
]
