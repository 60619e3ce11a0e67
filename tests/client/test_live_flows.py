"""Every method of the client against a real sandbox over HTTP."""

from __future__ import annotations

import json
from decimal import Decimal

import httpx
import numpy as np
import pytest

from songlab import pricing
from songlab.client import ClampWarning, Client, ResourceNotFound, Task, error_from_response
from songlab.spec import TRANSLATION_STEPS
from tests.client.live import LIVE_RETRY, faults, ledger, ledger_total, live_client, tone_mp3


@pytest.fixture
def acct(new_account):
    return new_account()


@pytest.fixture
def client(sandbox, acct):
    c = live_client(sandbox, acct.api_key)
    yield c
    c.close()


@pytest.fixture(scope="module")
def studio(sandbox, request):
    """One account with a song, an mp3 reference and a saved voice, shared by slow tests."""
    admin = httpx.Client(
        base_url=sandbox.base_url, headers={"X-Sandbox-Admin-Token": sandbox.admin_token}
    )
    body = admin.post("/_sandbox/accounts", json={}).json()
    c = Client(body["api_key"], base_url=sandbox.base_url, retry=LIVE_RETRY)  # module-long
    song = c.generations.create(
        operation="generate_song",
        model="v5",
        payload={"prompt": "bright pop", "lyrics": "la la la", "duration_seconds": 5},
    ).wait(timeout=60)
    ref = c.files.upload(tone_mp3(), filename="ref.mp3")
    clone = c.voice_clones.clone(
        reference_file_id=ref,
        consent=True,
        rights_attestation="My own voice, recorded by me.",
        name="Me",
    )
    yield {
        "client": c,
        "account_id": body["account_id"],
        "song": song,
        "ref": ref,
        "vocal_id": clone.vocal_id,
        "clone": clone,
        "admin": admin,
    }
    c.close()
    admin.close()


def test_generation_lifecycle(client, admin, acct):
    est = client.estimate(operation="generate_song", model="v6", license="standard")
    h = client.generations.create(
        operation="generate_song",
        model="v6",
        license="standard",
        payload={"prompt": "calm piano", "duration_seconds": 5},
    )
    assert h.status == "queued" and h.idempotency_key
    events = list(h.stream())
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    assert events[-1].is_terminal and events[-1].status == "completed"
    task = client.generations.get(h.task_id)
    assert isinstance(task, Task) and task.status == "completed" and task.license == 2
    assert task.cost_usd == est.usd == Decimal("0.15")
    assert ledger_total(ledger(admin, acct.account_id), h.task_id) == est.usd
    assert client.task(h.task_id).wait().task_id == h.task_id
    assert [t.task_id for t in client.generations.list(limit=5)] == [h.task_id]
    assert client.generations.page(limit=1).data[0].task_id == h.task_id
    audio, rate = client.files.read(task.file_ids[0])
    assert audio.ndim == 2 and audio.shape[1] > rate and np.isfinite(audio).all()
    assert client.account.balance().total_effective == 100000 - 15


def test_list_follows_cursors(client):
    ids = [
        client.compat.generate_song("v5", prompt=f"s{i}", duration_seconds=5).task_id
        for i in range(5)
    ]
    listed = [t.task_id for t in client.generations.list(limit=2)]
    assert listed == ids[::-1]


def test_tools(client):
    tools = client.tools.list()
    assert {t.id for t in tools} == {t.id for t in client.tools.list()}  # stable ids
    for tier in ("flash", "standard", "pro"):
        tool = client.tools.agent(tier)
        assert (tool.operation, tool.model) == ("agent", tier)
    assert client.tools.find("transcribe").model == "whisper-transcribe-v1"
    assert client.tools.find("separate_stems", "6-stem").operation == "separate_stems"


def test_files(client, acct, new_account, sandbox, tmp_path):
    mp3 = tone_mp3()
    path = tmp_path / "tone.mp3"
    path.write_bytes(mp3)
    a = client.files.upload(path)
    b = client.files.upload(mp3, filename="tone.mp3")
    assert a.size_bytes == b.size_bytes == len(mp3) and a.sha256 == b.sha256
    link = client.files.link(a)
    assert link.mime_type and link.expires_at is not None
    c = client.files.upload(link.url)  # from a URL (this sandbox's signed one)
    assert c.sha256 == a.sha256
    assert client.files.download(c) == mp3
    out = client.files.download(a.file_id, to=tmp_path)
    assert out.parent == tmp_path and out.read_bytes() == mp3
    # a client that did not upload it names the file from the bytes' own signature
    fresh = live_client(sandbox, acct.api_key)
    (tmp_path / "fresh").mkdir()
    assert fresh.files.download(a.file_id, to=tmp_path / "fresh").suffix == ".mp3"
    samples, rate = client.files.read(a)
    assert rate == 22050 and samples.shape[0] == 1 and samples.shape[1] > 2 * rate
    other = live_client(sandbox, new_account().api_key)
    with pytest.raises(ResourceNotFound):
        other.files.link(a)  # another account's file: same 404 as an absent one
    with pytest.raises(ResourceNotFound):
        other.files.download(a)
    with pytest.raises(ResourceNotFound):
        client.files.link("00000000-0000-0000-0000-000000000000")


def test_asset_storage_url_is_an_xml_resource_not_found(client):
    task = client.compat.generate_song("v5", prompt="x", duration_seconds=5).wait()
    url = task.raw["output"]["assets"][0]["url"]
    r = httpx.get(url)
    err = error_from_response(r.status_code, r.content)
    assert type(err) is ResourceNotFound


def test_m4a_is_read_with_pyav(client):
    import io

    import av

    buf = io.BytesIO()
    with av.open(buf, "w", format="ipod") as out:
        stream = out.add_stream("aac", rate=22050)
        stream.layout = "mono"
        t = np.arange(22050) / 22050
        frame = av.AudioFrame.from_ndarray(
            (0.3 * np.sin(2 * np.pi * 440 * t)).astype(np.float32)[None, :],
            format="fltp",
            layout="mono",
        )
        frame.sample_rate = 22050
        for packet in stream.encode(frame):
            out.mux(packet)
        for packet in stream.encode(None):
            out.mux(packet)
    up = client.files.upload(buf.getvalue(), filename="a.m4a", mime_type="audio/mp4")
    samples, rate = client.files.read(up)
    assert rate == 22050 and samples.shape[0] == 1 and samples.shape[1] >= 20000


def test_voice_clone_and_saved_voice(studio):
    c, clone = studio["client"], studio["clone"]
    assert clone.vocal_id and clone.consent_id and clone.task.operation == "vocal_clone"
    assert json.loads(clone.task.output.metadata_json)["vocal_id"] == clone.vocal_id
    entries = ledger(studio["admin"], studio["account_id"])
    assert ledger_total(entries, clone.task_id) == Decimal("12.00")
    song = c.compat.generate_song(
        "v7", prompt="soul", lyrics="hold on", vocal_id=clone.vocal_id, duration_seconds=5
    ).wait()
    singing = c.compat.generate_singing(
        "v6", style_of_music="gospel", lyrics="amen", vocal_id=clone.vocal_id
    ).wait()
    assert song.status == singing.status == "completed"


def test_song_translation(studio):
    c = studio["client"]
    seen = []
    h = c.song_translations.create(
        song_file_id=studio["song"].file_ids[0],
        target_language="French",
        song_style="bright female pop",
    )
    task = h.wait(on_event=seen.append)
    assert task.status == "completed" and task.file_ids
    steps = [(e.step, e.phase) for e in seen if e.step]
    assert [s for s, p in steps if p == "started"] == list(TRANSLATION_STEPS)
    lines = [
        e
        for e in ledger(studio["admin"], studio["account_id"])
        if e["task_id"] == h.task_id or e.get("parent_task_id") == h.task_id
    ]
    assert len(lines) == 6 and {e["kind"] for e in lines} == {"translation_step"}
    assert ledger_total(lines) <= c.estimate(route="/v1/song-translations").usd


WORKFLOWS = {
    "beat_swap": lambda s: dict(song_file_id=s["song"].file_ids[0], prompt="trap beat"),
    "karaoke_track": lambda s: dict(song_file_id=s["song"].file_ids[0]),
    "drumless_mix": lambda s: dict(song_file_id=s["song"].file_ids[0]),
    "revoicing": lambda s: dict(song_file_id=s["song"].file_ids[0], vocal_id=s["vocal_id"]),
    "instrument_layer": lambda s: dict(song_file_id=s["song"].file_ids[0], instrument="cello"),
    "hummed_song": lambda s: dict(hum_file_id=s["ref"], prompt="folk"),
    "trending_song": lambda s: dict(genre="trending", prompt="summer"),
    "voice_song": lambda s: dict(recording_file_id=s["ref"], prompt="indie"),
    "genre_remix": lambda s: dict(song_file_id=s["song"].file_ids[0], genre="jazz"),
    "midi_song": None,  # needs a MIDI upload, built in the test
    "vocal_layer": lambda s: dict(
        song_file_id=s["song"].file_ids[0], lyrics="oh oh", vocal_id=s["vocal_id"]
    ),
    "audio_inpainting": lambda s: dict(
        song_file_id=s["song"].file_ids[0], start_ms=1000, end_ms=3000, lyrics="new line"
    ),
}
ROUTES = {
    "beat_swap": "beat-swaps",
    "karaoke_track": "karaoke-tracks",
    "drumless_mix": "drumless-mixes",
    "revoicing": "revoicings",
    "instrument_layer": "instrument-layers",
    "hummed_song": "hummed-songs",
    "trending_song": "trending-songs",
    "voice_song": "voice-songs",
    "genre_remix": "genre-remixes",
    "midi_song": "midi-songs",
    "vocal_layer": "vocal-layers",
    "audio_inpainting": "audio-inpainting",
}


def midi_bytes() -> bytes:
    import io

    import mido

    mid = mido.MidiFile()
    track = mido.MidiTrack()
    mid.tracks.append(track)
    for i, note in enumerate((60, 64, 67, 72)):
        track.append(mido.Message("note_on", note=note, velocity=90, time=0 if i == 0 else 240))
        track.append(mido.Message("note_off", note=note, velocity=0, time=240))
    buf = io.BytesIO()
    mid.save(file=buf)
    return buf.getvalue()


# Rendering dominates the sandbox's time (a workflow renders ~30 s of audio), so four
# workflows run to completion with their ledger checked, and the other eight are
# accepted by the sandbox and then failed by its ``fail_tasks`` fault (cheap).
COMPLETE = ("karaoke_track", "trending_song", "audio_inpainting", "revoicing")


def workflow_fields(studio, method):
    if method == "midi_song":
        c = studio["client"]
        return dict(midi_file_id=c.files.upload(midi_bytes(), filename="m.mid"), prompt="lofi")
    return WORKFLOWS[method](studio)


@pytest.mark.parametrize("method", COMPLETE)
def test_workflow_completes_with_one_line_per_step(studio, method):
    c = studio["client"]
    est = c.estimate(route=f"/v1/{ROUTES[method]}", license="standard")
    h = getattr(c.workflows, method)(**workflow_fields(studio, method), license="standard")
    task = h.wait(timeout=60)
    assert task.status == "completed"
    lines = [
        e
        for e in ledger(studio["admin"], studio["account_id"])
        if e.get("parent_task_id") == h.task_id or e["task_id"] == h.task_id
    ]
    assert len(lines) == len(pricing.WORKFLOW_PIPELINES[ROUTES[method]])
    assert {e["kind"] for e in lines} == {"workflow_step"}
    assert ledger_total(lines) == est.usd


def test_every_other_workflow_is_accepted(studio):
    c, admin = studio["client"], studio["admin"]
    methods = sorted(set(WORKFLOWS) - set(COMPLETE))
    with faults(admin, fail_tasks=1.0):
        handles = {m: getattr(c.workflows, m)(**workflow_fields(studio, m)) for m in methods}
        finals = {m: h.wait(timeout=60, raise_on_failure=False) for m, h in handles.items()}
    assert all(h.status == "queued" for h in handles.values())
    assert {m: t.status for m, t in finals.items()} == dict.fromkeys(methods, "failed")
    ids = {h.task_id for h in handles.values()}
    assert not [
        e
        for e in ledger(admin, studio["account_id"])
        if e["task_id"] in ids or e.get("parent_task_id") in ids
    ]  # released


def test_compat_routes_and_extend(studio):
    """The extend routes accept the client's bodies (rendering them is the engine's
    business and slow, so the sandbox's ``fail_tasks`` fault ends them quickly)."""
    c, admin = studio["client"], studio["admin"]
    song_id = studio["song"].file_ids[0]
    url = c.files.link(song_id).url
    with faults(admin, fail_tasks=1.0):
        with pytest.warns(ClampWarning, match="will apply 8000"):
            ext = c.compat.extend_song("v6", audio_url=url, lyrics="and on", extend_at_ms=3000)
        handles = [
            ext,
            c.compat.extend_music(audio_url=url, extend_seconds=5.0, prompt="strings"),
            c.compat.extend_music(audio_url=f"file_id:{song_id}", side="head", alias=True),
            c.generations.create(
                tool_id=c.tools.find("extend_song", "v5").id,
                payload={
                    "song": {"url": f"file_id:{song_id}"},
                    "extend_type": "head",
                    "extend_at_ms": 9000,
                },
            ),
        ]
        finals = [h.wait(timeout=60, raise_on_failure=False) for h in handles]
    assert [(t.operation, t.model) for t in finals] == [
        ("extend_song", "v6"),
        ("extend_music", "v5"),
        ("extend_music", "v5"),
        ("extend_song", "v5"),
    ]


def test_agent_run(studio):
    c = studio["client"]
    run = c.agent.run(
        tier="flash", prompt="Write a short jingle about coffee", max_steps=4, max_budget=200
    )
    assert run.status == "completed" and run.text
    trace = run.trace
    assert trace is not None and trace.steps and trace.usage.input_tokens > 0
    assert trace.stopped_by in (None, "budget", "max_steps")
    assert all(s.kind in ("tool_call", "prose", "verification") for s in trace.steps)
    lines = [
        e
        for e in ledger(studio["admin"], studio["account_id"])
        if e.get("parent_task_id") == run.task_id or e["task_id"] == run.task_id
    ]
    assert any(e["kind"] == "agent_fee" for e in lines)
    assert ledger_total(lines) == trace.total_cost_usd
    for fid in trace.file_ids:
        assert c.files.link(fid).url


def test_budget_guard_against_the_sandbox(client, admin, acct):
    with client.budget(usd="0.20") as b:
        client.compat.generate_song("v5", prompt="a", duration_seconds=5)
        client.compat.generate_song("v6", prompt="b", duration_seconds=5)
        with pytest.raises(Exception) as info:
            client.compat.generate_song("v5", prompt="c", duration_seconds=5)
        assert type(info.value).__name__ == "BudgetExceeded"
    assert b.spent == Decimal("0.17") and len(b.task_ids) == 2
    assert len(list(client.generations.list())) == 2  # the refused one was never sent
