"""The user journeys of the client side, run against the sandbox in every profile.

The client reaches each sandbox as a user reaches the real service
(``SONGLAB_API_KEY``/``SONGLAB_BASE_URL`` and ``songlab.connect()``); the spec
profile is a real ``songlab sandbox --profile spec`` process. Every journey must
work on what the spec shows alone, and ignore unknown fields.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest

from songlab import listening
from songlab.client import AsyncClient, Client
from songlab.widgets import ProgressPanel
from tests._profiles import ProfileSandbox

DATA = Path(__file__).resolve().parents[2] / "data"
SONG = {"prompt": "a profile journey", "duration_seconds": 5, "seed": 3}


def payload(seed: int) -> dict[str, Any]:
    """A song payload of its own: a client that re-attaches identical requests makes a new
    task only for a new request."""
    return {**SONG, "seed": seed}


@pytest.fixture(scope="module")
def client(profile_sandbox: ProfileSandbox) -> Any:
    c = profile_sandbox.client()
    assert isinstance(c, Client) and c.base_url == profile_sandbox.base_url
    yield c
    c.close()


@pytest.fixture(scope="module")
def songs(client: Any) -> dict[str, Any]:
    """One finished song per model (v5, v7): shared by the listening journeys."""
    handles = {
        m: client.generations.create(operation="generate_song", model=m, payload=payload(100))
        for m in ("v5", "v7")
    }
    return {m: h.wait(timeout=120) for m, h in handles.items()}


def _spec(sb: ProfileSandbox) -> bool:
    return sb.profile == "spec"


def test_quickstart(profile_sandbox: ProfileSandbox, client: Any, tmp_path: Path) -> None:
    tools = client.tools.list()
    tool = client.tools.find("generate_song", "v5")
    assert tool in tools and tool.operation == "generate_song"
    before = client.account.balance()
    events: list[Any] = []
    done = client.generations.create(tool_id=tool.id, payload=payload(101)).wait(
        timeout=120, on_event=events.append
    )
    assert done.status == "completed" and len(done.file_ids) == 1
    assert events and events[-1].is_terminal
    assert [e.seq for e in events] == sorted({e.seq for e in events})
    if _spec(profile_sandbox):  # what the spec shows, and no more
        assert (done.operation, done.model, done.created_at, done.cost_usd) == (None,) * 4
        assert all(e.status is None and e.progress is None for e in events)
    else:
        assert done.cost_usd == Decimal("0.07") and done.created_at is not None
    samples, rate = client.files.read(done.file_ids[0])
    assert samples.ndim == 2 and samples.shape[1] / rate == pytest.approx(5.0, abs=0.1)
    path = client.files.download(done.file_ids[0], to=tmp_path)
    assert path.stat().st_size > 1000 and path.suffix == ".mp3"
    after = client.account.balance()
    assert before.total_effective - after.total_effective == 7  # $0.07, the one money figure


def test_stream_and_async_wait_on_kind_and_seq(
    profile_sandbox: ProfileSandbox, client: Any
) -> None:
    handle = client.generations.create(operation="generate_music", model="v5", payload=payload(102))
    handle.wait(timeout=120)
    events = list(client.generations.stream(handle.task_id))  # a finished task replays
    assert events[-1].is_terminal and all(e.seq > 0 for e in events)
    assert {e.kind for e in events} <= {"progress", "streaming_url", "partial_output", "terminal"}

    async def journey() -> tuple[Any, list[Any]]:
        with profile_sandbox.environ():
            import songlab

            ac = songlab.connect(asynchronous=True, quiet=True)
        assert isinstance(ac, AsyncClient)
        try:
            h = await ac.generations.create(
                operation="generate_song", model="v5", payload=payload(103)
            )
            seen: list[Any] = []
            task = await h.wait(timeout=120, on_event=seen.append)
            return task, seen
        finally:
            await ac.aclose()

    task, seen = asyncio.run(journey())
    assert task.status == "completed" and task.file_ids and seen[-1].is_terminal
    if _spec(profile_sandbox):
        assert all(set(e.raw) == {"seq"} for e in seen)


def test_clone_and_a_song_in_that_voice(profile_sandbox: ProfileSandbox, client: Any) -> None:
    ref = client.files.upload(DATA / "voice_female.mp3")
    assert ref.file_id
    if not _spec(profile_sandbox):  # spec: the answer shows file_id only
        assert ref.size_bytes == (DATA / "voice_female.mp3").stat().st_size
    handle = client.voice_clones.create(
        reference_file_id=ref,
        consent=True,
        name="me",
        rights_attestation="I am the singer and own it.",
    )
    assert handle.consent_id
    clone = handle.wait(timeout=120)
    assert clone.status == "completed" and clone.vocal_id  # from metadata_json alone
    song = client.generations.create(
        operation="generate_song", model="v6", payload={**payload(104), "vocal_id": clone.vocal_id}
    ).wait(timeout=120)
    assert song.status == "completed" and song.file_ids
    stock = client.generations.create(
        operation="generate_song", model="v6", payload=payload(104)
    ).wait(timeout=120)
    assert song.output.metadata["voice"] != stock.output.metadata["voice"]


def test_agent_one_recognised_by_tool_id_and_traced_from_metadata(
    profile_sandbox: ProfileSandbox, client: Any
) -> None:
    tool = client.tools.agent("flash")
    run = client.agent.run(
        tier="flash",
        prompt="write lyrics about the sea and make a short song",
        max_budget=200,
        timeout=180,
    )
    assert run.status == "completed" and run.text
    # recognised by the tool it was created with, through the tools listing
    listed = client.tools.get(tool.id)
    assert listed is not None and listed.is_agent and listed.model == "flash"
    assert client.tools.by_id()[tool.id] == listed
    assert client.tools.get("not-a-tool") is None
    assert not client.tools.find("generate_song", "v5").is_agent
    trace = run.trace  # parsed from output.metadata_json alone
    assert trace is not None and trace.tool_calls
    assert trace.total_cost_usd is not None and trace.total_cost_usd > 0
    assert all(isinstance(s.cost_usd, Decimal) for s in trace.tool_calls)
    if _spec(profile_sandbox):
        assert run.task.operation is None and run.task.cost_usd is None
        assert set(run.task.raw) == {"task_id", "status", "output"}


def test_progress_panel_finishes_with_the_real_outcome(
    profile_sandbox: ProfileSandbox, client: Any
) -> None:
    panel = ProgressPanel(client, title="journey")
    ok = client.generations.create(operation="generate_song", model="v5", payload=payload(106))
    ok.wait(timeout=120)
    with profile_sandbox.admin() as admin:  # the next task fails in the worker
        assert admin.put("/_sandbox/faults", json={"fail_tasks": 1.0}).status_code == 200
        try:
            bad = client.generations.create(
                operation="generate_song", model="v5", payload=payload(107)
            )
            client.generations.wait(bad.task_id, timeout=120, raise_on_failure=False)
        finally:
            admin.delete("/_sandbox/faults")
    rows = [panel.track(ok.task_id, label="song"), panel.track(bad.task_id, label="bad")]
    states = panel.wait(timeout=120)
    assert all(r.finished.is_set() for r in rows)
    song, failed = states[ok.task_id], states[bad.task_id]
    assert (song.status, song.done, song.fraction) == ("completed", True, 1.0)
    assert rows[0].bar.value == 100 and rows[0].bar.bar_style == "success"
    assert "completed (100%)" in rows[0].status.value
    assert rows[0].task.status == "completed"  # the outcome, from the one GET
    assert (failed.status, failed.done) == ("failed", True) and failed.error
    assert rows[1].bar.bar_style == "danger"
    if _spec(profile_sandbox):
        assert not song.determinate and failed.error == "the task failed"  # detail not shown
    else:
        assert song.determinate and failed.error != "the task failed"


def test_translation_steps_show_when_events_carry_them(
    profile_sandbox: ProfileSandbox, client: Any, songs: dict
) -> None:
    panel = ProgressPanel(client, title="translation")
    handle = client.song_translations.create(
        song_file_id=songs["v5"].file_ids[0], target_language="Spanish", song_style="pop"
    )
    row = panel.track(handle.task_id, label="to Spanish")
    state = row.wait(timeout=120)
    assert state.done and state.status == "completed" and state.fraction == 1.0
    names = [name for name, _ in state.steps]
    if _spec(profile_sandbox):
        assert names == []  # the events carry no step: none is invented
    else:
        assert names == ["transcribe", "translate", "separate", "revoice", "layer", "render"]
        assert all(phase == "finished" for _, phase in state.steps)


def _clips(client: Any, songs: dict) -> dict[str, list]:
    return {m: [client.files.read(t.file_ids[0])] for m, t in songs.items()}


def test_ab_listening_session(client: Any, songs: dict) -> None:
    session = listening.preference(
        _clips(client, songs), prompts=[SONG["prompt"]], repeats=6, seed=7
    )
    listening.simulate(session, prefer="v7", p=0.9, seed=1)
    assert session.done
    session.reveal()
    pairs = session.stats()["pairs"]
    assert len(pairs) == 1 and int(pairs["n"].iloc[0]) == 6


@pytest.fixture(scope="module")
def joined(client: Any, songs: dict, tmp_path_factory: Any) -> Any:
    """A preference campaign whose raters join through the served links and answer there.

    One fixed secret: with a fresh one each run the designs, and so the eight scripted
    answers, changed from run to run, and about one run in 25 per profile v7 won all eight
    comparisons, which no Bradley-Terry fit can rank (a refusal the panel tests cover)."""
    camp = listening.campaign(
        "preference",
        _clips(client, songs),
        raters=8,
        seed=5,
        prompts=[SONG["prompt"]],
        secret=hashlib.sha256(b"tests/journeys/test_journeys.py joined").digest(),
    )
    now = [time.time()]
    server = listening.serve(
        camp, db=f"sqlite:///{tmp_path_factory.mktemp('joined')}/c.sqlite", clock=lambda: now[0]
    )
    try:
        page = httpx.get(server.links()[camp.raters[0]], timeout=30, follow_redirects=True)
        assert page.status_code == 200 and "<html" in page.text.lower()
        # the scripted raters answer at once; the first one's page was served just now, so
        # the server would refuse its answers as sent before the clips could be heard: the
        # server's clock moves an hour on, as if the rater had listened (the too-fast rule
        # itself is tested in tests/listening/test_crowd_service.py)
        now[0] += 3600
        for i, rater in enumerate(camp.raters):
            r = httpx.post(
                f"{server.url}/answers",
                timeout=30,
                json=camp.simulate(rater, prefer={"v7": 2.0, "v5": 1.0}, seed=i),
            )
            assert r.status_code == 200, r.text
        camp.collect(server)
    finally:
        server.stop()
    return camp


def test_listening_campaign_join(joined: Any) -> None:
    assert set(joined.results()["rater"]) == set(joined.raters)
    ranking = joined.stats(baseline="v5")["ranking"]
    assert set(ranking["model"]) == {"v5", "v7"} and np.isfinite(ranking["score"]).all()
    assert json.loads(joined.design(joined.raters[0]))["trials"]


def test_campaign_scores_join_what_the_clips_cost(client: Any, songs: dict, joined: Any) -> None:
    """quality per dollar: the ranking joined to the ledger's cost of each clip, never 0.
    In the spec profile the ledger's costs come from the client's record (branches
    issue19-ledger and issue20): on this branch alone that profile's case fails."""
    from songlab.ledger import tasks_frame

    value = listening.quality_per_dollar(
        joined.stats(baseline="v5")["ranking"],
        tasks_frame(client),
        {m: [t.task_id] for m, t in songs.items()},
    )
    measured = value[value["measured"]]
    assert set(measured["model"]) == {"v5", "v7"}
    assert all(v > 0 for v in measured["usd_per_clip"])
