"""``client.agent`` (the client engineer's) against the sandbox's Agent One: the typed run
carries the parsed trace, and the trace's files resolve through the link route."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from songlab.client import Client, ValidationError
from tests.sandbox.agent._agent_http import MULTI


@pytest.fixture
def client(sandbox: Any, new_account: Any) -> Any:
    acct = new_account(balance_tokens=1000)
    with Client(acct.api_key, base_url=sandbox.base_url) as c:
        yield c


def test_agent_run_returns_the_parsed_trace(client: Any) -> None:
    run = client.agent.run(tier="standard", prompt=MULTI, max_budget=100)
    assert run.status == "completed"
    assert run.stopped_by is None
    assert run.text and run.text == run.trace.steps[-1].text
    calls = run.trace.tool_calls
    assert [s.tool for s in calls] == [
        "write_lyrics",
        "generate_song",
        "separate_stems",
        "copyright",
    ]
    assert all(isinstance(s.cost_usd, Decimal) for s in calls)
    assert run.trace.total_cost_usd == run.trace.agent_fee_usd + sum(s.cost_usd for s in calls)
    assert run.trace.usage.input_tokens > run.trace.usage.output_tokens > 0
    assert run.trace.file_ids
    for fid in run.trace.file_ids:
        link = client.files.link(fid)
        assert link.file_id == fid and link.url.startswith("http")


def test_agent_run_reports_a_stop(client: Any) -> None:
    run = client.agent.run(tier="standard", prompt=MULTI, max_steps=1)
    assert run.stopped_by == "max_steps"
    assert [s.status for s in run.trace.tool_calls] == ["completed"]  # only the call made
    assert run.text.startswith("Stopped: the step cap of 1 tool call was reached")
    assert run.text.count("the step cap of 1 was reached") == 3  # the three calls left undone


def test_agent_has_no_default_tier(client: Any) -> None:
    with pytest.raises(ValidationError, match="tier"):
        client.agent.run(tier="ultra", prompt="a song")
