"""Validate an Agent One payload (the decoded ``payload_json``) into an :class:`AgentRequest`.

Fields exactly as the spec's table: ``prompt`` (required, non-empty),
``system_prompt`` (str, ""), ``max_steps`` (int 0-50, 0 = the tier's default),
``max_budget`` (int cents >= 0, or null = uncapped), ``workflow_build_only``
(bool, false). ``studio`` and ``visualizer_*`` belong to the studio editing
surface and are refused by name; other unknown fields are ignored, as the
sandbox's create validation ignores them (the spec does not say they are errors).
Every refusal is an :class:`AgentPayloadError` naming the field and the rule;
the sandbox answers it with 422 InvalidGenerationInput, nothing billed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from songlab.spec import LIMITS

__all__ = ["AgentPayloadError", "AgentRequest", "parse_request"]


class AgentPayloadError(ValueError):
    """A refused Agent One payload; ``field`` names the field."""

    def __init__(self, field: str, rule: str) -> None:
        super().__init__(f"{field}: {rule}")
        self.field = field
        self.rule = rule


@dataclass(frozen=True, slots=True)
class AgentRequest:
    prompt: str
    system_prompt: str = ""
    max_steps: int = 0
    max_budget: int | None = None
    workflow_build_only: bool = False


def _int(payload: dict[str, Any], name: str, lo: int, hi: int | None) -> int | None:
    value = payload.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise AgentPayloadError(name, f"must be an integer, got {type(value).__name__}")
    if value < lo or (hi is not None and value > hi):
        rng = f"{lo}-{hi}" if hi is not None else f">= {lo}"
        raise AgentPayloadError(name, f"must be {rng}, got {value}")
    return value


def parse_request(payload: Any) -> AgentRequest:
    """The :class:`AgentRequest` of ``payload``, or :class:`AgentPayloadError`."""
    if not isinstance(payload, dict):
        raise AgentPayloadError("payload_json", "must encode a JSON object")
    studio = sorted(k for k in payload if k == "studio" or k.startswith("visualizer_"))
    if studio:
        raise AgentPayloadError(
            studio[0],
            f"{', '.join(studio)} belong to the studio editing surface and must be left unset for Agent One",
        )
    prompt = payload.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip():
        raise AgentPayloadError("prompt", "required: a non-empty string")
    system_prompt = payload.get("system_prompt", "")
    if system_prompt is None:
        system_prompt = ""
    if not isinstance(system_prompt, str):
        raise AgentPayloadError("system_prompt", "must be a string")
    max_steps = _int(payload, "max_steps", 0, int(LIMITS["agent_max_steps_max"])) or 0
    max_budget = _int(payload, "max_budget", 0, None)
    build_only = payload.get("workflow_build_only", False)
    if build_only is None:
        build_only = False
    if not isinstance(build_only, bool):
        raise AgentPayloadError("workflow_build_only", "must be a boolean")
    return AgentRequest(prompt, system_prompt, max_steps, max_budget, build_only)
