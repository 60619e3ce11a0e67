"""Isolation: one account against every object of another, revoked keys, signed URLs, admin guard.

Account A (the victim) owns an uploaded file, a completed generation with an
output file, a saved voice with its consent record and an Idempotency-Key.
Account B (the intruder) tries every route against each of them; so do A's
revoked key and requests without a key. Nothing is readable, usable or billable
across accounts, and neither account's balance, ledger or task list moves.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from songlab.sandbox.catalog import tool_id
from tests.reliability._util import (
    Snapshot,
    assert_invalid,
    create,
    key_client,
    tone,
    upload,
    wait,
)

VOICE = Path(__file__).resolve().parents[2] / "data" / "voice_male.mp3"


@pytest.fixture(scope="module")
def world(sandbox) -> Iterator[dict[str, Any]]:
    """A's objects, B's key, A's revoked key (made once; the tests only read)."""
    adm = httpx.Client(
        base_url=sandbox.base_url,
        timeout=60.0,
        headers={"X-Sandbox-Admin-Token": sandbox.admin_token},
    )
    a = adm.post("/_sandbox/accounts", json={}).json()
    b = adm.post("/_sandbox/accounts", json={}).json()
    revoked = adm.post(f"/_sandbox/accounts/{a['account_id']}/keys").json()["api_key"]
    with key_client(sandbox.base_url, a["api_key"]) as ca:
        file_a = upload(ca, tone(2.0))
        ref = upload(ca, VOICE.read_bytes())
        r = ca.post(
            "/v1/voice-clones",
            headers={"Idempotency-Key": "a-clone"},
            json={"reference_file_id": ref, "consent": True, "rights_attestation": "my own voice"},
        )
        assert r.status_code == 201, r.text
        consent_a, clone_task_id = r.json()["consent_id"], r.json()["task_id"]
        r = create(
            ca, "generate_music", "v5", {"prompt": "a's", "duration_seconds": 5}, key="a-secret-key"
        )
        assert r.status_code == 201, r.text
        task_a = r.json()["task_id"]
        snap = wait(ca, task_a)
        clone = wait(ca, clone_task_id)
        assert clone["status"] == "completed" and snap["status"] == "completed"
        vocal_a = json.loads(clone["output"]["metadata_json"])["vocal_id"]
        out_a = snap["output"]["assets"][0]["file_id"]
        link_a = ca.get(f"/v1/files/{out_a}/url").json()["url"]
    assert adm.delete(f"/_sandbox/keys/{revoked}").status_code == 204
    yield {
        "a": a,
        "b": b,
        "revoked": revoked,
        "file_a": file_a,
        "ref_a": ref,
        "task_a": task_a,
        "clone_task_a": clone["task_id"],
        "out_a": out_a,
        "asset_url_a": snap["output"]["assets"][0]["url"],
        "vocal_a": vocal_a,
        "consent_a": consent_a,
        "link_a": link_a,
        "admin": adm,
    }
    adm.close()


def _snapshots(sandbox, world) -> tuple[Snapshot, Snapshot]:
    adm = world["admin"]
    out = []
    for who in ("a", "b"):
        with key_client(sandbox.base_url, world[who]["api_key"]) as c:
            out.append(Snapshot.take(sandbox, adm, world[who]["account_id"], c))
    return out[0], out[1]


def _reads(w: dict[str, Any]) -> list[tuple[str, str, int, str]]:
    """(method, path, status for an intruder, error code) of every read of A's objects."""
    rows = []
    for t in ("task_a", "clone_task_a"):
        rows += [
            ("GET", f"/v1/generations/{w[t]}", 403, "FORBIDDEN"),
            ("GET", f"/v1/generations/{w[t]}/stream", 403, "FORBIDDEN"),
            ("GET", f"/v1/generations/{w[t]}/stream?after=0", 403, "FORBIDDEN"),
        ]
    for f in ("file_a", "ref_a", "out_a"):
        rows += [
            ("GET", f"/v1/files/{w[f]}/url", 404, "ResourceNotFound"),
            ("GET", f"/v1/files/{w[f]}/download", 404, "ResourceNotFound"),
        ]
    return rows


def _uses(w: dict[str, Any]) -> list[tuple[str, dict[str, Any], str]]:
    """(path, body, field) of every create that tries to use one of A's objects."""
    native = lambda op, model, payload: {  # noqa: E731
        "tool_id": tool_id(op, model),
        "payload_json": json.dumps(payload),
    }
    return [
        (
            "/v1/generations",
            native(
                "generate_song",
                "v5",
                {"prompt": "p", "vocal_id": w["vocal_a"], "duration_seconds": 5},
            ),
            "vocal_id",
        ),
        (
            "/v5/generate/singing",
            {"styleOfMusic": "pop", "lyrics": "la", "vocal_id": w["vocal_a"]},
            "vocal_id",
        ),
        ("/v1/revoicings", {"song_file_id": w["file_a"], "vocal_id": w["vocal_a"]}, "song_file_id"),
        (
            "/v1/generations",
            native("vocal_clone", "v5", {"consent_id": w["consent_a"]}),
            "consent_id",
        ),
        (
            "/v1/generations",
            native(
                "vocal_clone", "v5", {"consent_id": w["consent_a"], "reference_file_id": w["ref_a"]}
            ),
            "consent_id",
        ),
        (
            "/v1/generations",
            native("separate_stems", "2stem", {"audio": f"file_id:{w['file_a']}"}),
            "audio",
        ),
        (
            "/v1/generations",
            native("separate_stems", "2stem", {"audio": {"url": f"file_id:{w['out_a']}"}}),
            "audio",
        ),
        ("/v1/generations", native("extend_song", "v5", {"song": f"file_id:{w['out_a']}"}), "song"),
        (
            "/v1/voice-clones",
            {"reference_file_id": w["ref_a"], "consent": True, "rights_attestation": "not mine"},
            "reference_file_id",
        ),
        (
            "/v1/song-translations",
            {"song_file_id": w["out_a"], "target_language": "French", "song_style": "pop"},
            "song_file_id",
        ),
        ("/v1/karaoke-tracks", {"song_file_id": w["file_a"]}, "song_file_id"),
        (
            "/v1/audio-inpainting",
            {"song_file_id": w["out_a"], "start_ms": 0, "end_ms": 1000},
            "song_file_id",
        ),
    ]


def test_intruder_can_read_nothing_of_another_account(sandbox, world):
    before = _snapshots(sandbox, world)
    with key_client(sandbox.base_url, world["b"]["api_key"]) as b:
        for method, path, status, code in _reads(world):
            r = b.request(method, path)
            assert r.status_code == status, (path, r.text)
            assert r.json() == {"error": code}, (path, r.text)  # no message, no data
        listed = {t["task_id"] for t in b.get("/v1/generations").json()["data"]}
        assert not listed & {world["task_a"], world["clone_task_a"]}
        # the private storage locator answers nobody
        r = httpx.get(
            world["asset_url_a"], headers={"Authorization": f"Bearer {world['b']['api_key']}"}
        )
        assert r.status_code == 404 and b"ResourceNotFound" in r.content
    assert _snapshots(sandbox, world) == before


def test_intruder_can_use_nothing_of_another_account(sandbox, world):
    before = _snapshots(sandbox, world)
    with key_client(sandbox.base_url, world["b"]["api_key"]) as b:
        for path, body, field in _uses(world):
            r = b.post(path, json=body)
            assert_invalid(r, field)
    assert _snapshots(sandbox, world) == before


def test_idempotency_keys_do_not_cross_accounts(sandbox, world):
    with (
        key_client(sandbox.base_url, world["b"]["api_key"]) as b,
        key_client(sandbox.base_url, world["a"]["api_key"]) as a,
    ):
        r = create(b, "write_lyrics", "v5", {"prompt": "b's own"}, key="a-secret-key")
        assert r.status_code == 201
        assert r.json()["task_id"] != world["task_a"]
        assert wait(b, r.json()["task_id"])["operation"] == "write_lyrics"
        # A's repeat still answers A's original task, untouched by B's use of the key
        again = create(
            a, "generate_music", "v5", {"prompt": "a's", "duration_seconds": 5}, key="a-secret-key"
        )
        assert again.json()["task_id"] == world["task_a"]
    ledger_a = world["admin"].get(f"/_sandbox/accounts/{world['a']['account_id']}/ledger").json()
    assert r.json()["task_id"] not in {e["task_id"] for e in ledger_a["entries"]}


ROUTES = [
    ("GET", "/v1/generations"),
    ("GET", "/v1/account/balance"),
    ("GET", "/v1/tools"),
    ("POST", "/v1/files"),
    ("POST", "/v1/generations"),
    ("POST", "/v5/generate/song"),
    ("POST", "/v1/voice-clones"),
    ("POST", "/v1/song-translations"),
    ("POST", "/v1/karaoke-tracks"),
]


def test_revoked_and_missing_keys_reach_nothing(sandbox, world):
    before = _snapshots(sandbox, world)
    paths = [(m, p) for m, p, _, _ in _reads(world)] + ROUTES
    for header, code in (
        (f"Bearer {world['revoked']}", "INVALID_API_KEY"),
        (f"Bearer  {world['revoked']}", "INVALID_API_KEY"),
        (f"bearer {world['revoked']}", "INVALID_API_KEY"),
        (None, "UNAUTHENTICATED"),
        (f"Basic {world['a']['api_key']}", "UNAUTHENTICATED"),
        (world["a"]["api_key"], "UNAUTHENTICATED"),
    ):
        headers = {} if header is None else {"Authorization": header}
        with httpx.Client(base_url=sandbox.base_url, headers=headers, timeout=30) as c:
            for method, path in paths:
                r = c.request(method, path, json={} if method == "POST" else None)
                assert r.status_code == 401, (header, path, r.text)
                assert r.json() == {"error": code}
    assert _snapshots(sandbox, world) == before


def test_signed_urls_cannot_be_forged_or_extended(sandbox, world):
    good = world["link_a"]
    assert httpx.get(good).status_code == 200  # the control
    base, token = good.rsplit("/", 1)
    file_id, expires, mac = token.split(".")
    other_file = world["file_a"]
    forged = [
        f"{file_id}.{int(expires) + 3600}.{mac}",  # extended
        f"{file_id}.{int(expires) * 10}.{mac}",
        f"{other_file}.{expires}.{mac}",  # another file, same signature
        f"{file_id}.{expires}.{mac[:-1]}{'A' if mac[-1] != 'A' else 'B'}",  # tampered mac
        f"{file_id}.{expires}.",
        f"{file_id}.{expires}",
        f"{file_id}..{mac}",
        f"{file_id}.-{expires}.{mac}",
        f"{file_id}.{expires}.{mac}.{mac}",
        f"{file_id}.{expires}.{'A' * len(mac)}",
        "",
    ]
    for t in forged:
        r = httpx.get(f"{base}/{t}")
        assert r.status_code in (403, 404), (t, r.status_code)
        assert r.content[:5] == b"<?xml" or r.status_code == 404
        assert b"ID3" not in r.content[:10] and len(r.content) < 2000  # no audio bytes
    # past its expiry on the sandbox clock, the real link is refused too
    adm = world["admin"]
    assert adm.post("/_sandbox/clock", json={"advance_seconds": 601}).status_code == 200
    assert httpx.get(good).status_code == 403


ADMIN_ROUTES = [
    ("POST", "/_sandbox/accounts"),
    ("POST", "/_sandbox/accounts/acct_demo/keys"),
    ("DELETE", "/_sandbox/keys/sk-sandbox-demo"),
    ("POST", "/_sandbox/accounts/acct_demo/topup"),
    ("GET", "/_sandbox/accounts/acct_demo/ledger"),
    ("GET", "/_sandbox/accounts/acct_demo/balance"),
    ("PUT", "/_sandbox/faults"),
    ("GET", "/_sandbox/faults"),
    ("DELETE", "/_sandbox/faults"),
    ("POST", "/_sandbox/clock"),
    ("GET", "/_sandbox/clock"),
    ("PUT", f"/_sandbox/tools/{tool_id('write_lyrics', 'v5')}"),
]


@pytest.mark.parametrize(
    ("method", "path"), ADMIN_ROUTES, ids=[f"{m} {p}" for m, p in ADMIN_ROUTES]
)
def test_admin_routes_refuse_without_their_token(sandbox, world, method, path):
    body = {"tokens": 10, "advance_seconds": 1, "rate_limited": 1.0, "active": False}
    for headers in (
        {},
        {"X-Sandbox-Admin-Token": "wrong"},
        {"X-Sandbox-Admin-Token": ""},
        {"X-Sandbox-Admin-Token": sandbox.admin_token + "x"},
        {"X-Sandbox-Admin-Token": sandbox.admin_token[:-1]},
        {"Authorization": f"Bearer {world['a']['api_key']}"},
        {"Authorization": "Bearer sk-sandbox-demo"},
    ):
        r = httpx.request(
            method,
            sandbox.base_url + path,
            headers=headers,
            json=body if method in ("POST", "PUT") else None,
        )
        assert r.status_code == 401, (headers, r.text)
    # nothing changed: the demo key still works, faults are off, the tool is active
    with key_client(sandbox.base_url, "sk-sandbox-demo") as demo:
        assert demo.get("/v1/account/balance").status_code == 200
        assert tool_id("write_lyrics", "v5") in {
            t["id"] for t in demo.get("/v1/tools").json()["data"]
        }
    assert world["admin"].get("/_sandbox/faults").json()["rate_limited"] == 0.0


def test_client_surfaces_foreign_objects_as_errors(sandbox, world):
    from songlab.client import Client, Forbidden, ResourceNotFound

    with Client(world["b"]["api_key"], base_url=sandbox.base_url) as b:
        with pytest.raises(Forbidden):
            b.generations.get(world["task_a"])
        with pytest.raises(ResourceNotFound):
            b.files.download(world["out_a"])
        with pytest.raises(ResourceNotFound):
            b.files.link(world["file_a"])


def test_a_shared_signed_url_is_a_copy_of_the_bytes_only(sandbox, world):
    """A signed URL is a bearer link (spec: no auth to fetch it). Handed to B, it lets B
    copy the bytes into a file of B's own (``source_url``), as downloading and uploading
    would; A's file id stays unreachable for B, and nothing is billed to A."""
    adm = world["admin"]
    ledger_a = adm.get(f"/_sandbox/accounts/{world['a']['account_id']}/ledger").json()
    with (
        key_client(sandbox.base_url, world["a"]["api_key"]) as a,
        key_client(sandbox.base_url, world["b"]["api_key"]) as b,
    ):
        link = a.get(f"/v1/files/{world['file_a']}/url").json()["url"]
        r = b.post("/v1/files", json={"source_url": link})
        assert r.status_code == 201
        copy_id = r.json()["file_id"]
        assert copy_id != world["file_a"]
        assert b.get(f"/v1/files/{copy_id}/url").status_code == 200
        assert a.get(f"/v1/files/{copy_id}/url").status_code == 404  # B's copy is B's
        assert b.get(f"/v1/files/{world['file_a']}/url").status_code == 404
    assert adm.get(f"/_sandbox/accounts/{world['a']['account_id']}/ledger").json() == ledger_a
