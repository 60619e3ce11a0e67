"""A campaign over real sandbox songs: pages and answer files carry no model name, tool id,
task id or file id; quality per dollar reads the billed costs through the ledger."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest

from songlab.ledger import tasks_frame
from songlab.listening import campaign, quality_per_dollar
from tests.listening.listening_signals import SHORT, scan

# real sandbox songs in three protocols' campaigns (about a minute of a worker): `make test`
pytestmark = pytest.mark.slow

MODELS = ("v5", "v6", "v7")
PROMPTS = ("calm piano", "fast drums")


@pytest.fixture(scope="module")
def made(sandbox, request):
    import httpx

    from songlab.client import Client

    with httpx.Client(
        base_url=sandbox.base_url,
        timeout=30,
        headers={"X-Sandbox-Admin-Token": sandbox.admin_token},
    ) as admin:
        key = admin.post("/_sandbox/accounts", json={"name": "campaign"}).json()["api_key"]
    client = Client(key, base_url=sandbox.base_url)
    request.addfinalizer(client.close)
    tasks = {
        (m, p): client.generations.create(
            operation="generate_song",
            model=m,
            license="standard",
            payload={"prompt": p, "duration_seconds": 5, "seed": 1},
        ).wait()
        for m in MODELS
        for p in PROMPTS
    }
    clips = {m: [client.files.download(tasks[(m, p)].file_ids[0]) for p in PROMPTS] for m in MODELS}
    return client, tasks, clips


@pytest.mark.parametrize("kind", ["preference", "abx", "mushra"])
def test_nothing_in_a_page_or_answer_file_maps_to_a_model(made, kind, tmp_path) -> None:
    client, tasks, clips = made
    options = {"reference": "v7", "anchor": True, "mid_anchor": True} if kind == "mushra" else {}
    c = campaign(kind, clips, raters=2, seed=1, prompts=list(PROMPTS), **options)
    ids = [t.task_id for t in tasks.values()] + [f for t in tasks.values() for f in t.file_ids]
    ids += [t.tool_id for t in tasks.values()] + [tool.id for tool in client.tools.list()]
    assert len(ids) > 12
    for path in c.export(tmp_path):
        rater = path.stem.removeprefix("rater-")
        doc = json.dumps(c.simulate(rater, seed=0)).encode()
        for blob in (path.read_bytes(), doc, path.name.encode()):
            assert not scan(blob, long=sorted(set(ids)), short=SHORT)
        assert path.stat().st_size < 3_000_000  # 5 s stereo clips, 96 kbit/s MP3


def test_quality_per_dollar_uses_the_billed_costs(made) -> None:
    client, tasks, clips = made
    c = campaign("mushra", clips, raters=3, seed=2, prompts=list(PROMPTS), reference="v7")
    c.collect(
        [
            c.simulate(r, scores={"v7": 99, "v6": 70, "v5": 40}, noise=2, seed=i)
            for i, r in enumerate(c.raters)
        ]
    )
    clip_tasks = {m: [tasks[(m, p)].task_id for p in PROMPTS] for m in MODELS}
    table = quality_per_dollar(c.stats()["models"], tasks_frame(client), clip_tasks)
    own = table[table["measured"]].set_index("model")
    billed = {m: sum(tasks[(m, p)].cost_usd for p in PROMPTS) / 2 for m in MODELS}
    assert own["usd_per_clip"].to_dict() == billed
    assert billed == {"v5": Decimal("0.11"), "v6": Decimal("0.15"), "v7": Decimal("0.25")}
    assert table.attrs["license"] == 2 and table.attrs["reference_model"] == "v7"
