"""Native pipeline: create, snapshot, 403/404, listing, tools, license and payload_json rules."""

from __future__ import annotations

import json

import pytest

from songlab.sandbox.catalog import tool_id
from songlab.spec import INTERNAL_OPERATIONS
from tests.sandbox._util import assert_invalid, client, create, run, tid, wait

SNAPSHOT_KEYS = {
    "task_id",
    "tool_id",
    "model",
    "operation",
    "license",
    "status",
    "created_at",
    "updated_at",
    "cost_usd",
    "output",
}


def test_create_answers_201_queued_and_the_task_completes(acct):
    r = create(acct, "generate_song", "v7", {"prompt": "jazz", "duration_seconds": 5})
    assert r.status_code == 201
    body = r.json()
    assert body["status"] == "queued" and set(body) == {"task_id", "status"}
    snap = wait(acct, body["task_id"])
    assert SNAPSHOT_KEYS <= set(snap)
    assert snap["status"] == "completed"
    assert (snap["operation"], snap["model"], snap["license"]) == ("generate_song", "v7", 1)
    assert snap["tool_id"] == tid("generate_song", "v7")
    assert snap["cost_usd"] == "0.12000000"
    asset = snap["output"]["assets"][0]
    assert {"file_id", "blob_hash", "url"} <= set(asset)
    assert "/_storage/" in asset["url"]
    json.loads(snap["output"]["metadata_json"])


def test_foreign_task_is_403_and_absent_is_404(sandbox, acct, new_account):
    task_id = create(acct, "write_lyrics", "v5", {"prompt": "rain"}).json()["task_id"]
    with client(sandbox, new_account().api_key) as other:
        r = other.get(f"/v1/generations/{task_id}")
        assert r.status_code == 403 and r.json() == {"error": "FORBIDDEN"}
        r = other.get(f"/v1/generations/{task_id}/stream")
        assert r.status_code == 403 and r.json() == {"error": "FORBIDDEN"}
        r = other.get("/v1/generations/00000000-0000-0000-0000-000000000000")
        assert r.status_code == 404 and r.json() == {"error": "NOT_FOUND"}
        r = other.get("/v1/generations/nope/stream")
        assert r.status_code == 404 and r.json() == {"error": "NOT_FOUND"}
        assert other.get("/v1/generations").json()["data"] == []


def test_listing_pages_newest_first(acct):
    ids = [
        create(acct, "write_lyrics", "v5", {"prompt": str(i)}).json()["task_id"] for i in range(5)
    ]
    page = acct.get("/v1/generations", params={"limit": 2}).json()
    assert [t["task_id"] for t in page["data"]] == ids[::-1][:2]
    seen = [t["task_id"] for t in page["data"]]
    while page["next_cursor"]:
        page = acct.get(
            "/v1/generations", params={"limit": 2, "cursor": page["next_cursor"]}
        ).json()
        seen += [t["task_id"] for t in page["data"]]
    assert seen == ids[::-1]
    default = acct.get("/v1/generations").json()
    assert len(default["data"]) == 5 and default["next_cursor"] is None


def test_listing_default_limit_is_20(acct):
    for i in range(21):
        create(acct, "write_lyrics", "v5", {"prompt": str(i)})
    page = acct.get("/v1/generations").json()
    assert len(page["data"]) == 20 and page["next_cursor"]
    assert len(acct.get("/v1/generations", params={"limit": 100}).json()["data"]) == 21


@pytest.mark.parametrize("limit", ["0", "101", "-1", "abc"])
def test_listing_limit_out_of_range(acct, limit):
    assert_invalid(acct.get("/v1/generations", params={"limit": limit}), "limit")


def test_listing_bad_cursor(acct):
    assert_invalid(acct.get("/v1/generations", params={"cursor": "!!"}), "cursor")


def test_tools_listing(acct):
    data = acct.get("/v1/tools").json()["data"]
    pairs = {(t["operation"], t["model"]) for t in data}
    for entry in data:
        assert set(entry) == {"id", "model", "operation", "name"}
        assert entry["id"] == tool_id(entry["operation"], entry["model"])
    assert {("agent", "flash"), ("agent", "standard"), ("agent", "pro")} <= pairs
    assert {("vocal_clone", v) for v in ("v5", "v6", "v7")} <= pairs
    assert ("inpaint", "v5") in pairs and ("transcribe", "whisper-transcribe-v1") in pairs
    assert {("separate_stems", m) for m in ("2stem", "6-stem", "12stem")} <= pairs
    assert ("extend_music", "v6") not in pairs
    assert not [p for p in pairs if p[0] in INTERNAL_OPERATIONS]
    assert len({t["id"] for t in data}) == len(data)


@pytest.mark.parametrize(
    "operation,model", [("web_search", "internal"), ("mix", "v5"), ("translate_lyrics", "v5")]
)
def test_internal_tools_are_unknown_when_called(acct, operation, model):
    r = create(acct, operation, model, {"query": "x"})
    assert r.status_code == 400
    assert r.json() == {"error": "UnknownTool", "message": r.json()["message"], "retryable": False}


def test_unknown_tool(acct):
    r = acct.post("/v1/generations", json={"tool_id": "nope", "payload_json": "{}"})
    assert r.status_code == 400 and r.json()["error"] == "UnknownTool"
    r = acct.post("/v1/generations", json={"payload_json": "{}"})
    assert r.status_code == 400 and r.json()["error"] == "UnknownTool"


@pytest.mark.parametrize("license", [-1, 6, "2", True, 1.5])
def test_license_out_of_range(acct, license):
    assert_invalid(create(acct, "write_lyrics", "v5", {}, license=license), "license")


@pytest.mark.parametrize(
    "license,cost", [(0, "0.07000000"), (1, "0.07000000"), (2, "0.11000000"), (5, "0.70000000")]
)
def test_license_tiers_price_the_task(acct, license, cost):
    r = create(
        acct, "generate_music", "v5", {"prompt": "x", "duration_seconds": 5}, license=license
    )
    snap = wait(acct, r.json()["task_id"])
    assert snap["cost_usd"] == cost
    assert snap["license"] == (license or 1)


@pytest.mark.parametrize("raw", [{"prompt": "x"}, ["x"]], ids=["object", "array"])
def test_raw_object_payload_json_is_the_documented_500_answered_whole(acct, raw):
    """The spec's unhandled error, as a clean JSON 500: nothing stored, the connection kept."""
    r = acct.post(
        "/v1/generations", json={"tool_id": tid("write_lyrics", "v5"), "payload_json": raw}
    )
    assert r.status_code == 500 and r.headers["content-type"] == "application/json"
    assert r.json()["error"] == "InternalServerError" and "payload_json" in r.json()["message"]
    assert acct.get("/v1/generations").json()["data"] == []  # the same connection answers on


@pytest.mark.parametrize("payload_json", [None, "not json", "[1]", 5])
def test_bad_payload_json(acct, payload_json):
    body = {"tool_id": tid("write_lyrics", "v5")}
    if payload_json is not None:
        body["payload_json"] = payload_json
    assert_invalid(acct.post("/v1/generations", json=body), "payload_json")


def test_non_json_body(acct):
    r = acct.post("/v1/generations", content=b"{nope", headers={"Content-Type": "application/json"})
    assert_invalid(r, "body")


@pytest.mark.parametrize(
    "operation,model,payload,field",
    [
        ("generate_song", "v5", {}, "prompt"),
        ("generate_song", "v5", {"prompt": "x", "duration_seconds": 1}, "duration_seconds"),
        ("generate_song", "v5", {"prompt": "x", "lyrics": 5}, "lyrics"),
        ("generate_singing", "v5", {"prompt": "x"}, "lyrics"),
        ("sfx_gen", "v5", {"prompt": "door", "duration_seconds": 31}, "duration_seconds"),
        ("audio_effect", "v5", {"audio": "file_id:x", "effect": "reverb"}, "audio"),
        ("separate_stems", "2stem", {}, "audio"),
        ("copyright", "v5", {"audio": "https://example.com/a.mp3"}, "audio"),
        ("transcribe", "whisper-transcribe-v1", {"audio": {"url": "http://evil/x"}}, "audio"),
        ("remix_song", "v5", {"song": {"base64": "***"}}, "song"),
        ("midi_to_song", "v5", {"midi": 7}, "midi"),
    ],
)
def test_payload_rules(acct, operation, model, payload, field):
    assert_invalid(create(acct, operation, model, payload), field)


def test_vocal_clone_natively_needs_a_consent_id(acct):
    assert_invalid(create(acct, "vocal_clone", "v5", {}), "consent_id")
    assert_invalid(create(acct, "vocal_clone", "v5", {"consent_id": "not-a-uuid"}), "consent_id")
    assert_invalid(
        create(acct, "vocal_clone", "v5", {"consent_id": "00000000-0000-0000-0000-000000000000"}),
        "consent_id",
    )


def test_work_completes_without_anyone_polling(acct):
    task_id = create(acct, "write_lyrics", "v5", {"prompt": "x"}).json()["task_id"]
    snap = wait(acct, task_id)
    assert snap["status"] == "completed"
    assert isinstance(snap["output"].get("text"), str)


def test_run_helper_roundtrip(acct):
    snap = run(acct, "sfx_gen", "v5", {"prompt": "door", "duration_seconds": 1})
    assert snap["status"] == "completed" and snap["cost_usd"] == "0.54000000"
