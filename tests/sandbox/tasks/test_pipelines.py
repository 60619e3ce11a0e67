"""Song translation and the workflow routes: steps, progress events, billing lines."""

from __future__ import annotations

import json
from decimal import Decimal
from types import SimpleNamespace

import pytest

from songlab.pricing import TRANSLATION_PIPELINE, WORKFLOW_PIPELINES, price
from songlab.sandbox.catalog import tool_id
from songlab.sandbox.tasks.pipelines import WORKFLOW_STEPS, WorkflowCall
from songlab.spec import WORKFLOWS
from tests.sandbox._util import (
    assert_invalid,
    client,
    ledger,
    midi_file,
    run,
    sse,
    tone,
    upload,
    wait,
)


@pytest.mark.parametrize("path", sorted(WORKFLOWS))
def test_each_workflow_route_has_a_step_function_per_billed_step(path: str) -> None:
    """The registry's steps of a route, the price list's pipeline and the sandbox's step
    functions name the same steps in the same order, for every workflow route."""
    assert set(WORKFLOW_STEPS) == set(WORKFLOWS)
    ctx = SimpleNamespace(payload={"genre": "pop"}, durations={})
    names = [step.name for step in WORKFLOWS[path].steps]
    assert list(WORKFLOW_STEPS[path](WorkflowCall.of(ctx))) == names
    assert [step.name for step in WORKFLOW_PIPELINES[path]] == names


@pytest.fixture
def song(acct):
    """A short sandbox song of this account (its recipe makes stems and lyrics exact)."""
    snap = run(
        acct,
        "generate_song",
        "v5",
        {"prompt": "pop", "lyrics": "hello world", "duration_seconds": 5},
    )
    return snap["output"]["assets"][0]["file_id"]


@pytest.fixture
def clip(acct):
    """An uploaded 2-second file (enough for the rules that never render)."""
    return upload(acct, tone(2.0))


def _translate(acct, song, **over):
    body = {
        "song_file_id": song,
        "target_language": "Spanish",
        "song_style": "warm female pop",
        **over,
    }
    return acct.post("/v1/song-translations", json=body)


def test_translation_runs_six_steps_in_order_with_events_and_lines(acct, admin, song):
    r = _translate(acct, song, license="standard")
    assert r.status_code == 201 and set(r.json()) == {"task_id", "status"}
    task_id = r.json()["task_id"]
    snap = wait(acct, task_id)
    assert snap["status"] == "completed", snap
    assert snap["license"] == 2
    names = [s.name for s in TRANSLATION_PIPELINE]
    steps = [(e["step"], e["phase"]) for e in sse(acct, task_id) if e.get("step")]
    assert steps == [(n, p) for n in names for p in ("started", "finished")]
    lines = [x for x in ledger(admin, acct.account_id) if x["task_id"] == task_id]
    assert [x["kind"] for x in lines] == ["translation_step"] * 6
    assert [(x["operation"], x["model"]) for x in lines] == [
        (s.operation, s.model) for s in TRANSLATION_PIPELINE
    ]
    assert [Decimal(x["amount_usd"]) for x in lines] == [
        price(s.operation, s.model, 2) for s in TRANSLATION_PIPELINE
    ]
    assert all(x["parent_task_id"] == task_id and x["license"] == 2 for x in lines)
    assert all(x["tool_id"] == tool_id(x["operation"], x["model"]) for x in lines)
    assert Decimal(snap["cost_usd"]) == sum(Decimal(x["amount_usd"]) for x in lines)
    assert snap["output"]["assets"][0]["file_id"]
    meta = json.loads(snap["output"]["metadata_json"])
    assert meta["target_language"] == "Spanish"
    assert [x["step"] for x in meta["steps"]] == names
    assert [x["amount_usd"] for x in meta["steps"]] == [x["amount_usd"] for x in lines]


def test_translation_transcription_cache_makes_that_line_zero(acct, admin, song):
    first = wait(acct, _translate(acct, song).json()["task_id"])
    second = wait(acct, _translate(acct, song, target_language="French").json()["task_id"])
    assert first["status"] == second["status"] == "completed"
    lines = [x for x in ledger(admin, acct.account_id) if x["task_id"] == second["task_id"]]
    assert lines[0]["operation"] == "transcribe" and lines[0]["amount_usd"] == "0.00000000"
    assert len(lines) == 6
    assert Decimal(second["cost_usd"]) == Decimal(first["cost_usd"]) - Decimal("0.03")


@pytest.mark.parametrize(
    "over,field",
    [
        ({"song_file_id": None}, "song_file_id"),
        ({"song_file_id": "00000000-0000-0000-0000-000000000000"}, "song_file_id"),
        ({"target_language": None}, "target_language"),
        ({"target_language": ""}, "target_language"),
        ({"song_style": None}, "song_style"),
        ({"syllable_matched": "yes"}, "syllable_matched"),
        ({"license": 3}, "license"),
    ],
    ids=lambda v: str(v)[:30],
)
def test_translation_field_rules(acct, admin, clip, over, field):
    song = clip
    assert_invalid(_translate(acct, song, **over), field)


def test_translation_source_limit_is_60_mib(acct):
    big = upload(acct, tone(1.0) + b"\0" * (60 * 1024 * 1024))
    assert_invalid(_translate(acct, big), "song_file_id")


# --- workflows ------------------------------------------------------------------


# what a workflow body's required fields are given, by field name
SAMPLE = {"prompt": "trap beat", "instrument": "cello", "genre": "reggae", "lyrics": "ooh ah"}
SAMPLE_MS = {"start_ms": 1000, "end_ms": 2000}


def _bodies(acct, song: str, vocal_id: str | None) -> dict[str, dict]:
    """A body for every workflow route of the registry, made from its fields: each file
    by what its pipeline calls it (the song, a hum or recording, a MIDI file), a saved
    voice where one is required, and a sample of each required text or time."""
    midi = upload(acct, midi_file(), name="a.mid", mime="audio/midi")
    hum = upload(acct, tone(2.0, freq=300.0))
    files = {"song": song, "hum": hum, "recording": hum, "midi": midi}
    bodies = {}
    for path, route in WORKFLOWS.items():
        body: dict[str, object] = {}
        for f in route.fields:
            if f.type == "file_id":
                body[f.name] = files[f.input]
            elif f.type == "voice" and f.required:
                body[f.name] = vocal_id
            elif f.type == "string" and f.required:
                body[f.name] = SAMPLE[f.name]
            elif f.type == "integer" and f.required:
                body[f.name] = SAMPLE_MS[f.name]
        bodies[path] = body
    return bodies


@pytest.fixture
def vocal_id(acct):
    from tests.sandbox.tasks.test_voice_clone import clone_body, voice_recording

    ref = upload(acct, voice_recording())
    snap = wait(acct, acct.post("/v1/voice-clones", json=clone_body(ref)).json()["task_id"])
    return json.loads(snap["output"]["metadata_json"])["vocal_id"]


def test_every_workflow_route_bills_one_line_per_step(acct, admin, song, vocal_id):
    bodies = _bodies(acct, song, vocal_id)
    assert set(bodies) == set(WORKFLOW_PIPELINES)
    created = {}
    for route, body in bodies.items():
        r = acct.post(f"/v1/{route}", json=body)
        assert r.status_code == 201, (route, r.text)
        created[route] = r.json()["task_id"]
    lines = ledger(admin, acct.account_id)
    for route, task_id in created.items():
        snap = wait(acct, task_id)
        assert snap["status"] == "completed", (route, snap)
        assert snap["license"] == 1
        steps = WORKFLOW_PIPELINES[route]
        mine = [x for x in ledger(admin, acct.account_id) if x["task_id"] == task_id]
        assert [(x["operation"], x["model"], x["kind"]) for x in mine] == [
            (s.operation, s.model, "workflow_step") for s in steps
        ], route
        assert [Decimal(x["amount_usd"]) for x in mine] == [
            price(s.operation, s.model, 1) for s in steps
        ]
        assert all(x["parent_task_id"] == task_id for x in mine)
        assert snap["output"]["assets"], route
        events = [(e["step"], e["phase"]) for e in sse(acct, task_id) if e.get("step")]
        assert events == [(s.name, p) for s in steps for p in ("started", "finished")]
    assert lines is not None


def test_audio_inpainting_is_flat_one_dollar(acct, admin, song):
    r = acct.post(
        "/v1/audio-inpainting",
        json={"song_file_id": song, "start_ms": 0, "end_ms": 1500, "license": "master"},
    )
    snap = wait(acct, r.json()["task_id"])
    assert snap["cost_usd"] == "1.00000000" and snap["license"] == 5


@pytest.mark.parametrize(
    "route,body,field",
    [
        ("beat-swaps", {"prompt": "x"}, "song_file_id"),
        ("beat-swaps", {"song_file_id": "SONG"}, "prompt"),
        ("karaoke-tracks", {}, "song_file_id"),
        ("revoicings", {"song_file_id": "SONG"}, "vocal_id"),
        ("revoicings", {"song_file_id": "SONG", "vocal_id": "voice_nope"}, "vocal_id"),
        ("instrument-layers", {"song_file_id": "SONG"}, "instrument"),
        ("hummed-songs", {"hum_file_id": "SONG"}, "prompt"),
        ("trending-songs", {}, "genre"),
        ("voice-songs", {"prompt": "x"}, "recording_file_id"),
        ("genre-remixes", {"song_file_id": "SONG"}, "genre"),
        ("midi-songs", {"midi_file_id": "SONG", "prompt": "x"}, "midi_file_id"),
        ("vocal-layers", {"song_file_id": "SONG"}, "lyrics"),
        ("audio-inpainting", {"song_file_id": "SONG", "start_ms": 2000, "end_ms": 1000}, "end_ms"),
        ("audio-inpainting", {"song_file_id": "SONG", "start_ms": 0, "end_ms": 999999}, "end_ms"),
        ("audio-inpainting", {"song_file_id": "SONG", "end_ms": 1000}, "start_ms"),
        ("karaoke-tracks", {"song_file_id": "SONG", "license": "gold"}, "license"),
    ],
)
def test_workflow_field_rules(acct, admin, clip, route, body, field):
    song = clip
    body = {k: (song if v == "SONG" else v) for k, v in body.items()}
    assert_invalid(acct.post(f"/v1/{route}", json=body), field)


def test_workflow_file_of_another_account_is_refused(sandbox, acct, clip, new_account):
    song = clip
    with client(sandbox, new_account().api_key) as other:
        assert_invalid(
            other.post("/v1/karaoke-tracks", json={"song_file_id": song}), "song_file_id"
        )


def test_workflow_create_is_idempotent(acct, admin, song):
    h = {"Idempotency-Key": "wf-1"}
    a = acct.post("/v1/karaoke-tracks", json={"song_file_id": song}, headers=h)
    b = acct.post("/v1/karaoke-tracks", json={"song_file_id": song}, headers=h)
    assert a.json() == b.json()
    wait(acct, a.json()["task_id"])
    assert (
        len([x for x in ledger(admin, acct.account_id) if x["task_id"] == a.json()["task_id"]]) == 2
    )
