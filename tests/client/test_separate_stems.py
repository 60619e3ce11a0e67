"""``generations.separate_stems``: a named method added as one declaration in
``client/_generations.py`` (the registry already holds the operation): the extension point
of docs/architecture.md ("a named client method"), kept as a real method."""

from __future__ import annotations

import asyncio
from decimal import Decimal

import numpy as np
import pytest

from songlab.client import AsyncClient, Client, RecordStore, ValidationError


@pytest.fixture
def account(new_account):
    return new_account()


@pytest.fixture
def song(sandbox, account):
    with Client(account.api_key, base_url=sandbox.base_url, quiet=True) as c:
        payload = {"prompt": "pop", "lyrics": "la la la", "duration_seconds": 6}
        return c.generations.create(operation="generate_song", model="v7", payload=payload).wait()


def test_stems_of_a_song_add_up_to_it_priced_recorded_and_paid_once(
    sandbox, account, song, tmp_path
):
    store = RecordStore(tmp_path / "r.sqlite")
    with Client(account.api_key, base_url=sandbox.base_url, record=store, quiet=True) as c:
        before = c.account.balance().total_effective
        h = c.generations.separate_stems(song.output.assets[0])
        task = h.wait(timeout=60)
        assert task.status == "completed" and (task.operation, task.model) == (
            "separate_stems",
            "2stem",
        )
        assert sorted(a.name for a in task.output.assets) == ["instrumental", "vocals"]
        stems = [c.files.read(a).samples for a in task.output.assets]
        mix = c.files.read(song.output.assets[0]).samples
        summed = stems[0] + stems[1]
        n = min(summed.shape[-1], mix.shape[-1])
        assert np.corrcoef(summed[0, :n], mix[0, :n])[0, 1] > 0.99  # the song's true stems
        # the same audio and model again, named by its file id: the recorded task
        again = c.generations.separate_stems(song.output.assets[0].file_id, model="2stem")
        assert again.reused and again.task_id == h.task_id
        assert before - c.account.balance().total_effective == 10  # $0.10 once
    (row,) = store.table().to_pylist()
    assert (row["operation"], row["model"], row["estimate_usd"]) == (
        "separate_stems",
        "2stem",
        Decimal("0.1"),
    )


def test_the_model_decides_the_stems_and_a_wrong_one_is_refused_before_sending(
    sandbox, account, song
):
    with Client(account.api_key, base_url=sandbox.base_url, quiet=True) as c:
        twelve = c.generations.separate_stems(song.output.assets[0], model="12stem").wait()
        assert len(twelve.output.assets) == 12
        with pytest.raises(ValidationError) as info:
            c.generations.separate_stems(song.output.assets[0], model="3stem")
        assert info.value.field == "model" and "2stem, 6-stem, 12stem" in info.value.rule
        ops = [t.operation for t in c.generations.list()]
        assert ops.count("separate_stems") == 1  # only the 12-stem split was sent


def test_the_async_client_has_it_too(sandbox, account, song):
    async def run():
        async with AsyncClient(account.api_key, base_url=sandbox.base_url, quiet=True) as c:
            h = await c.generations.separate_stems(song.output.assets[0], model="6-stem", take=2)
            return await h.wait(timeout=60)

    task = asyncio.run(run())
    assert {a.name for a in task.output.assets} >= {"vocals", "drums", "bass"}
