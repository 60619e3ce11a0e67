"""Compat routes and the extend semantics (clamping, unknown extend_type)."""

from __future__ import annotations

import json

import pytest

from tests.sandbox._util import (
    assert_invalid,
    create,
    signed_url,
    tid,
    tone,
    upload,
    wait,
)


@pytest.fixture
def song_url(acct):
    return signed_url(acct, upload(acct, tone(2.0)))


@pytest.mark.parametrize("version", ["v5", "v6", "v7"])
def test_generate_song_routes(acct, version):
    r = acct.post(
        f"/{version}/generate/song",
        json={"prompt": "pop", "lyrics": "la la", "duration_seconds": 5},
    )
    assert r.status_code == 201 and r.json()["status"] == "queued"
    snap = wait(acct, r.json()["task_id"])
    assert (snap["operation"], snap["model"]) == ("generate_song", version)
    assert snap["tool_id"] == tid("generate_song", version)
    assert snap["status"] == "completed"


@pytest.mark.parametrize("version", ["v5", "v7"])
def test_generate_singing_takes_style_of_music(acct, version):
    r = acct.post(
        f"/{version}/generate/singing",
        json={"styleOfMusic": "soul", "lyrics": "oh yeah", "duration_seconds": 5},
    )
    assert r.status_code == 201, r.text
    snap = wait(acct, r.json()["task_id"])
    assert (snap["operation"], snap["model"], snap["status"]) == (
        "generate_singing",
        version,
        "completed",
    )


def test_compat_license_names_and_numbers(acct):
    r = acct.post(
        "/v7/generate/song", json={"prompt": "x", "license": "sync", "duration_seconds": 5}
    )
    assert wait(acct, r.json()["task_id"])["license"] == 4
    assert_invalid(
        acct.post("/v7/generate/song", json={"prompt": "x", "license": "gold"}), "license"
    )


def test_compat_payload_rules(acct):
    assert_invalid(acct.post("/v7/generate/song", json={"lyrics": "x"}), "prompt")
    assert_invalid(
        acct.post("/v7/generate/song", json={"prompt": "x", "vocal_id": "voice_x"}), "vocal_id"
    )


@pytest.mark.parametrize(
    ("path", "field"), [("/v5/generate/song", "prompt"), ("/v7/generate/singing", "lyrics")]
)
def test_a_required_text_blank_to_python_only_is_empty(acct, path, field):
    """U+001C-U+001F match the body's \\S pattern but Python strips them: the answer is
    the payload rule's "must not be empty", after the model's own refusals."""
    r = acct.post(path, json={field: "\x1c\x1f"})
    assert_invalid(r, field)
    assert r.json()["message"] == f"{field}: must not be empty"
    r = acct.post(path, json={field: "\x1c", "seed": -1})
    assert r.json()["message"] == "seed: input should be greater than or equal to 0"


@pytest.mark.parametrize(
    "path",
    [
        "/v5/extend/song",
        "/v6/extend/song",
        "/v7/extend/song",
        "/v5/extend/music",
        "/v1/generate/extend",
    ],
)
def test_extend_without_audio_url_is_missing_field(acct, path):
    r = acct.post(path, json={"lyrics": "more"})
    assert r.status_code == 400
    assert r.json() == {"error": "MISSING_FIELD"}
    r = acct.post(path, json={"audio_url": ""})
    assert r.json() == {"error": "MISSING_FIELD"}


def test_extend_music_is_v5_only(acct, song_url):
    assert acct.post("/v6/extend/music", json={"audio_url": song_url}).status_code == 404
    r = create(acct, "extend_music", "v6", {"music": song_url})
    assert r.status_code == 400 and r.json()["error"] == "UnknownTool"


@pytest.mark.parametrize("path", ["/v5/extend/music", "/v1/generate/extend"])
def test_extend_music_routes(acct, song_url, path):
    r = acct.post(
        path, json={"audio_url": song_url, "prompt": "more", "extend_seconds": 2, "side": "head"}
    )
    assert r.status_code == 201, r.text
    snap = wait(acct, r.json()["task_id"])
    assert (snap["operation"], snap["model"], snap["status"]) == ("extend_music", "v5", "completed")
    assert snap["cost_usd"] == "0.07000000"


@pytest.mark.parametrize(
    "body,field",
    [
        ({"extend_seconds": 0.5}, "extend_seconds"),
        ({"extend_seconds": 121}, "extend_seconds"),
        ({"side": "middle"}, "side"),
    ],
)
def test_extend_music_rules(acct, song_url, body, field):
    assert_invalid(acct.post("/v5/extend/music", json={"audio_url": song_url, **body}), field)


def test_extend_song_compat_route(acct, song_url):
    r = acct.post(
        "/v7/extend/song", json={"audio_url": song_url, "lyrics": "and then", "duration_seconds": 5}
    )
    assert r.status_code == 201, r.text
    snap = wait(acct, r.json()["task_id"])
    assert (snap["operation"], snap["model"], snap["status"]) == ("extend_song", "v7", "completed")


def test_extend_lyrics_limit(acct, song_url):
    ok = create(
        acct, "extend_song", "v5", {"song": song_url, "lyrics": "a" * 3000, "duration_seconds": 5}
    )
    assert ok.status_code == 201
    assert_invalid(
        create(acct, "extend_song", "v5", {"song": song_url, "lyrics": "a" * 3001}), "lyrics"
    )


def test_extend_input_is_limited_to_40_mb(acct):
    fid = upload(acct, tone(1.0) + b"\0" * 40_000_000, name="big.mp3")
    assert_invalid(create(acct, "extend_song", "v5", {"song": f"file_id:{fid}"}), "song")


@pytest.mark.parametrize(
    "requested,applied",
    [(0, 0), (100, 8000), (7999, 8000), (8000, 8000), (60000, 60000), (500000, 420000), (-5, 0)],
)
def test_extend_at_ms_is_clamped_at_generation(acct, song_url, requested, applied):
    r = create(
        acct,
        "extend_song",
        "v5",
        {"song": song_url, "extend_at_ms": requested, "duration_seconds": 5},
    )
    assert r.status_code == 201, r.text
    snap = wait(acct, r.json()["task_id"])
    assert snap["status"] == "completed"
    assert json.loads(snap["output"]["metadata_json"])["extend_at_ms"] == applied


def test_unknown_extend_type_fails_during_generation(acct, song_url):
    r = create(
        acct,
        "extend_song",
        "v5",
        {"song": song_url, "extend_type": "middle", "duration_seconds": 5},
    )
    assert r.status_code == 201
    snap = wait(acct, r.json()["task_id"])
    assert snap["status"] == "failed" and "extend_type" in snap["failure"]["message"]
    assert snap["cost_usd"] == "0.00000000"


def test_extend_at_ms_must_be_an_integer(acct, song_url):
    assert_invalid(
        create(acct, "extend_song", "v5", {"song": song_url, "extend_at_ms": "soon"}),
        "extend_at_ms",
    )
