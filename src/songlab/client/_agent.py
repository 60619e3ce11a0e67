"""Agent One: start a run on a tier's tool, or run it to the end with its parsed trace."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Generic, overload

from songlab.client._call import NOT_GIVEN, NotGiven, Op
from songlab.client._estimate import estimate_agent
from songlab.client._generations import find_tool, resolve_key
from songlab.client._models import AgentRun
from songlab.client._typing import Awaiting, C
from songlab.client._validate import ValidationError, agent_payload, license_number, payload_json
from songlab.spec import AGENT_TIERS

if TYPE_CHECKING:
    from songlab.client._async import AsyncClient
    from songlab.client._handle import TaskHandle
    from songlab.client._sync import Client

__all__ = ["Agent"]


class Agent(Generic[C]):
    def __init__(self, client: C) -> None:
        self._c = client

    def _start_op(
        self,
        tier: Any,
        payload: dict[str, Any],
        license: Any,
        key: Any,
        take: Any = 1,
        fresh: Any = False,
    ) -> Op:
        key = resolve_key(key)
        if tier not in AGENT_TIERS:
            raise ValidationError(
                "tier", f"one of {', '.join(AGENT_TIERS)} (there is no default tier), got {tier!r}"
            )
        agent_payload(payload)
        lic = None if isinstance(license, NotGiven) else license_number(license)
        text = payload_json(payload)
        tools = yield from self._c._tools_op()
        tool = find_tool(tools, "agent", tier)
        body: dict[str, Any] = {"tool_id": tool.id, "payload_json": text}
        if lic is not None:
            body["license"] = lic
        est = estimate_agent(tier, payload.get("max_budget"), lic)
        return (yield from self._c._create_op("/v1/generations", body, est, key, take, fresh))

    @overload
    def start(
        self: Agent[Client],
        *,
        tier: str,
        prompt: str,
        max_steps: int | NotGiven = ...,
        max_budget: int | None | NotGiven = ...,
        system_prompt: str | NotGiven = ...,
        workflow_build_only: bool | NotGiven = ...,
        license: int | str | NotGiven = ...,
        idempotency_key: str | NotGiven = ...,
        take: int = ...,
        fresh: bool = ...,
    ) -> TaskHandle[Client]: ...
    @overload
    def start(
        self: Agent[AsyncClient],
        *,
        tier: str,
        prompt: str,
        max_steps: int | NotGiven = ...,
        max_budget: int | None | NotGiven = ...,
        system_prompt: str | NotGiven = ...,
        workflow_build_only: bool | NotGiven = ...,
        license: int | str | NotGiven = ...,
        idempotency_key: str | NotGiven = ...,
        take: int = ...,
        fresh: bool = ...,
    ) -> Awaiting[TaskHandle[AsyncClient]]: ...
    def start(
        self,
        *,
        tier: str,
        prompt: str,
        max_steps: int | NotGiven = NOT_GIVEN,
        max_budget: int | None | NotGiven = NOT_GIVEN,
        system_prompt: str | NotGiven = NOT_GIVEN,
        workflow_build_only: bool | NotGiven = NOT_GIVEN,
        license: int | str | NotGiven = NOT_GIVEN,
        idempotency_key: str | NotGiven = NOT_GIVEN,
        take: int = 1,
        fresh: bool = False,
    ) -> Any:
        """Start an Agent One run -> :class:`TaskHandle`.

        ``max_steps`` 0-50 (0: the worker's default); ``max_budget`` in cents
        (None: uncapped). Options not given are left to the service's defaults.
        """
        payload: dict[str, Any] = {"prompt": prompt}
        for name, value in (
            ("max_steps", max_steps),
            ("max_budget", max_budget),
            ("system_prompt", system_prompt),
            ("workflow_build_only", workflow_build_only),
        ):
            if not isinstance(value, NotGiven):
                payload[name] = value
        return self._c._drive(self._start_op(tier, payload, license, idempotency_key, take, fresh))

    @overload
    def run(
        self: Agent[Client],
        *,
        tier: str,
        prompt: str,
        timeout: float = ...,
        on_event: Any = ...,
        **options: Any,
    ) -> AgentRun: ...
    @overload
    def run(
        self: Agent[AsyncClient],
        *,
        tier: str,
        prompt: str,
        timeout: float = ...,
        on_event: Any = ...,
        **options: Any,
    ) -> Awaiting[AgentRun]: ...
    def run(
        self,
        *,
        tier: str,
        prompt: str,
        timeout: float = 600.0,
        on_event: Any = None,
        **options: Any,
    ) -> Any:
        """Start a run and wait for it -> :class:`AgentRun` (answer text and parsed trace)."""

        def finish(handle: Any) -> Any:
            return self._c._then(
                handle.wait(timeout=timeout, on_event=on_event),
                lambda t: AgentRun(t.task_id, t.status, t.output.text, t.trace, t),
            )

        me: Any = self  # the overloads above say what start() returns
        return self._c._then(me.start(tier=tier, prompt=prompt, **options), finish)
