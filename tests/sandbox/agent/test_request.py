"""Agent One payloads: the spec's fields exactly; studio and visualizer_* refused by name."""

from __future__ import annotations

from typing import Any

import pytest

from songlab.sandbox.agent.request import AgentPayloadError, AgentRequest, parse_request


def test_defaults() -> None:
    assert parse_request({"prompt": "make a song"}) == AgentRequest(
        "make a song", "", 0, None, False
    )


def test_all_fields() -> None:
    req = parse_request(
        {
            "prompt": "p",
            "system_prompt": "s",
            "max_steps": 50,
            "max_budget": 25,
            "workflow_build_only": True,
        }
    )
    assert req == AgentRequest("p", "s", 50, 25, True)


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({}, "prompt"),
        ({"prompt": "   "}, "prompt"),
        ({"prompt": 3}, "prompt"),
        ({"prompt": "p", "max_steps": 51}, "max_steps"),
        ({"prompt": "p", "max_steps": -1}, "max_steps"),
        ({"prompt": "p", "max_steps": 2.5}, "max_steps"),
        ({"prompt": "p", "max_steps": True}, "max_steps"),
        ({"prompt": "p", "max_budget": -5}, "max_budget"),
        ({"prompt": "p", "max_budget": "10"}, "max_budget"),
        ({"prompt": "p", "workflow_build_only": "yes"}, "workflow_build_only"),
        ({"prompt": "p", "system_prompt": 1}, "system_prompt"),
        ({"prompt": "p", "studio": {}}, "studio"),
        ({"prompt": "p", "visualizer_theme": "dark"}, "visualizer_theme"),
        ([1, 2], "payload_json"),
    ],
    ids=[
        "no-prompt",
        "blank-prompt",
        "int-prompt",
        "steps-high",
        "steps-negative",
        "steps-float",
        "steps-bool",
        "budget-negative",
        "budget-str",
        "build-only-str",
        "system-int",
        "studio",
        "visualizer",
        "not-object",
    ],
)
def test_refusals_name_the_field(payload: Any, field: str) -> None:
    with pytest.raises(AgentPayloadError) as info:
        parse_request(payload)
    assert info.value.field == field
    assert str(info.value).startswith(f"{field}: ")


def test_studio_message_says_why() -> None:
    with pytest.raises(AgentPayloadError, match="studio editing surface"):
        parse_request({"prompt": "p", "studio": True, "visualizer_x": 1})


def test_other_unknown_fields_are_ignored() -> None:
    assert parse_request({"prompt": "p", "temperature": 0.2}) == AgentRequest("p")
