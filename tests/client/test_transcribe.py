"""``generations.transcribe``: a named method added as one declaration in one file
(``client/_generations.py``), the registry already holding the operation: the extension
point of docs/architecture.md ("a named client method"), kept as a real method."""

from __future__ import annotations

import asyncio
from decimal import Decimal

import pytest

from songlab.client import AsyncClient, BudgetExceeded, Client, RecordStore

LYRICS = "hello bright morning\nsing along with me"


@pytest.fixture
def account(new_account):
    return new_account()


@pytest.fixture
def song(sandbox, account):
    with Client(account.api_key, base_url=sandbox.base_url, quiet=True) as c:
        payload = {"prompt": "pop", "lyrics": LYRICS, "duration_seconds": 8}
        return c.generations.create(operation="generate_song", model="v5", payload=payload).wait()


def test_transcribe_an_output_priced_recorded_and_paid_once(sandbox, account, song, tmp_path):
    store = RecordStore(tmp_path / "r.sqlite")
    with Client(account.api_key, base_url=sandbox.base_url, record=store, quiet=True) as c:
        assert c.estimate(operation="transcribe", model="whisper-transcribe-v1").usd == Decimal(
            "0.03"
        )
        before = c.account.balance().total_effective
        h = c.generations.transcribe(song.output.assets[0], language="en")
        task = h.wait(timeout=60)
        assert task.status == "completed" and task.output.text == "hello bright morning"
        assert (task.operation, task.model) == ("transcribe", "whisper-transcribe-v1")
        # the same audio named by its file id, and its language: the recorded task again
        again = c.generations.transcribe(song.output.assets[0].file_id, language="en")
        assert again.reused and again.task_id == h.task_id
        assert before - c.account.balance().total_effective == 3  # $0.03 once
    (row,) = store.table().to_pylist()
    assert (row["operation"], row["model"], row["estimate_usd"]) == (
        "transcribe",
        "whisper-transcribe-v1",
        Decimal("0.03"),
    )
    assert row["final_status"] == "completed"


def test_transcribe_is_held_to_a_budget_and_checked_before_sending(sandbox, account, song):
    with Client(account.api_key, base_url=sandbox.base_url, quiet=True) as c:
        with c.budget(usd="0.02"), pytest.raises(BudgetExceeded, match="transcribe"):
            c.generations.transcribe(song.output.assets[0])
        with pytest.raises(TypeError, match="unexpected keyword argument 'takes'"):
            c.generations.transcribe(song.output.assets[0], takes=2)  # type: ignore[call-arg]
        assert [t.operation for t in c.generations.list()] == ["generate_song"]  # no transcribe


def test_the_async_client_has_it_too(sandbox, account, song):
    async def run():
        async with AsyncClient(account.api_key, base_url=sandbox.base_url, quiet=True) as c:
            h = await c.generations.transcribe(song.output.assets[0], language="en", take=2)
            return await h.wait(timeout=60)

    assert asyncio.run(run()).output.text == "hello bright morning"
