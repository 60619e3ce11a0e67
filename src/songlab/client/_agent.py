"""Agent One: start a run on a tier's tool, or run it to the end with its parsed trace.

A run is a native create (``POST /v1/generations`` with the tier's tool), built by the one
native builder and sent through the one create path.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Unpack

from songlab.client._call import NOT_GIVEN, NotGiven, Op
from songlab.client._create import CreateOptions, CreateRequest, create_op, create_options
from songlab.client._generations import native_request
from songlab.client._handle import TaskHandle, wait_op
from songlab.client._models import AgentRun, Event
from songlab.client._typing import C, Resource, creates, operation
from songlab.client._validate import ValidationError
from songlab.spec import AGENT_TIERS

__all__ = ["Agent"]


class Agent(Resource[C]):
    def _request_op(
        self,
        tier: str,
        prompt: str,
        max_steps: int | NotGiven,
        max_budget: int | None | NotGiven,
        system_prompt: str | NotGiven,
        workflow_build_only: bool | NotGiven,
        license: int | str | NotGiven,
    ) -> Op[CreateRequest]:
        if tier not in AGENT_TIERS:
            raise ValidationError(
                "tier", f"one of {', '.join(AGENT_TIERS)} (there is no default tier), got {tier!r}"
            )
        payload: dict[str, object] = {"prompt": prompt}
        for name, value in (
            ("max_steps", max_steps),
            ("max_budget", max_budget),
            ("system_prompt", system_prompt),
            ("workflow_build_only", workflow_build_only),
        ):
            if not isinstance(value, NotGiven):
                payload[name] = value
        return native_request(
            self._c,
            tool_id=NOT_GIVEN,
            operation="agent",
            model=tier,
            payload=payload,
            license=license,
        )

    @creates
    def start(
        self,
        *,
        tier: str,
        prompt: str,
        max_steps: int | NotGiven = NOT_GIVEN,
        max_budget: int | None | NotGiven = NOT_GIVEN,
        system_prompt: str | NotGiven = NOT_GIVEN,
        workflow_build_only: bool | NotGiven = NOT_GIVEN,
        **options: Unpack[CreateOptions],
    ) -> Op[TaskHandle[C]]:
        """Start an Agent One run -> :class:`TaskHandle`.

        ``max_steps`` 0-50 (0: the worker's default); ``max_budget`` in cents
        (None: uncapped). Options not given are left to the service's defaults.
        """
        reuse, license = create_options(options, "start")
        request = yield from self._request_op(
            tier, prompt, max_steps, max_budget, system_prompt, workflow_build_only, license
        )
        return (yield from create_op(self._c, request, reuse))

    @operation
    def run(
        self,
        *,
        tier: str,
        prompt: str,
        max_steps: int | NotGiven = NOT_GIVEN,
        max_budget: int | None | NotGiven = NOT_GIVEN,
        system_prompt: str | NotGiven = NOT_GIVEN,
        workflow_build_only: bool | NotGiven = NOT_GIVEN,
        timeout: float = 600.0,
        on_event: Callable[[Event], object] | None = None,
        **options: Unpack[CreateOptions],
    ) -> Op[AgentRun]:
        """Start a run and wait for it -> :class:`AgentRun` (answer text and parsed trace)."""
        reuse, license = create_options(options, "run")
        request = yield from self._request_op(
            tier, prompt, max_steps, max_budget, system_prompt, workflow_build_only, license
        )
        handle = yield from create_op(self._c, request, reuse)
        task = yield from wait_op(handle.task_id, timeout, on_event, True, 0.5, True)
        return AgentRun(task.task_id, task.status, task.output.text, task.trace, task)
