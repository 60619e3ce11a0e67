"""Idempotency-Key: format, per-account scope, same answer, no double billing, concurrency."""

from __future__ import annotations

import concurrent.futures as cf
import json

import pytest

from tests.sandbox._util import balance, client, create, ledger, tid, wait


def test_repeat_returns_the_original_and_bills_once(acct, admin):
    first = create(acct, "write_lyrics", "v5", {"prompt": "x"}, idempotency_key="k-1")
    second = create(acct, "write_lyrics", "v5", {"prompt": "x"}, idempotency_key="k-1")
    assert first.status_code == second.status_code == 201
    assert first.json() == second.json()
    wait(acct, first.json()["task_id"])
    assert len(acct.get("/v1/generations").json()["data"]) == 1
    assert len(ledger(admin, acct.account_id)) == 1


def test_repeat_with_a_different_body_still_returns_the_original(acct):
    first = create(acct, "write_lyrics", "v5", {"prompt": "x"}, idempotency_key="k-2")
    other = acct.post(
        "/v1/generations", json={"tool_id": "garbage"}, headers={"Idempotency-Key": "k-2"}
    )
    assert other.status_code == 201 and other.json() == first.json()


def test_keys_are_scoped_to_the_account(sandbox, acct, new_account):
    mine = create(acct, "write_lyrics", "v5", {"prompt": "x"}, idempotency_key="shared-key")
    with client(sandbox, new_account().api_key) as other:
        theirs = create(other, "write_lyrics", "v5", {"prompt": "x"}, idempotency_key="shared-key")
    assert theirs.status_code == 201
    assert theirs.json()["task_id"] != mine.json()["task_id"]


@pytest.mark.parametrize(
    "key",
    ["has space", "x" * 201, "emoji-\u2603", "slash/no", ""],
    ids=["space", "too-long", "unicode", "slash", "empty"],
)
def test_malformed_key_means_no_dedup_and_no_error(acct, key):
    headers = {"Idempotency-Key": key.encode("utf-8")}
    body = {"tool_id": tid("write_lyrics", "v5"), "payload_json": json.dumps({"prompt": "x"})}
    a = acct.post("/v1/generations", json=body, headers=headers)
    b = acct.post("/v1/generations", json=body, headers=headers)
    assert a.status_code == b.status_code == 201
    assert a.json()["task_id"] != b.json()["task_id"]


def test_longest_valid_key_dedups(acct):
    key = "A-z_0.9:" * 25  # 200 characters of the allowed set
    assert len(key) == 200
    a = create(acct, "write_lyrics", "v5", {"prompt": "x"}, idempotency_key=key)
    b = create(acct, "write_lyrics", "v5", {"prompt": "x"}, idempotency_key=key)
    assert a.json() == b.json()


def test_refused_create_is_not_remembered(acct, admin):
    admin.put("/_sandbox/faults", json={"rate_limited": 1.0})
    try:
        r = create(acct, "write_lyrics", "v5", {"prompt": "x"}, idempotency_key="retry-me")
        assert r.status_code == 429
    finally:
        admin.delete("/_sandbox/faults")
    r = create(acct, "write_lyrics", "v5", {"prompt": "x"}, idempotency_key="retry-me")
    assert r.status_code == 201


def test_fifty_threads_one_key_make_one_task_and_one_line(acct, admin):
    before = balance(acct)["total_effective"]

    def one(_: int):
        r = create(
            acct,
            "generate_music",
            "v5",
            {"prompt": "x", "duration_seconds": 5},
            idempotency_key="storm",
        )
        return r.status_code, r.json()

    with cf.ThreadPoolExecutor(50) as pool:
        answers = list(pool.map(one, range(50)))
    assert {a[0] for a in answers} == {201}
    assert len({a[1]["task_id"] for a in answers}) == 1
    wait(acct, answers[0][1]["task_id"])
    assert len(acct.get("/v1/generations").json()["data"]) == 1
    assert len(ledger(admin, acct.account_id)) == 1
    assert balance(acct)["total_effective"] == before - 7


@pytest.mark.parametrize(
    "route,body",
    [
        ("/v7/generate/song", {"prompt": "x", "lyrics": "la", "duration_seconds": 5}),
        ("/v5/generate/singing", {"styleOfMusic": "x", "lyrics": "la", "duration_seconds": 5}),
    ],
    ids=["compat-song", "compat-singing"],
)
def test_compat_creates_are_idempotent(acct, route, body):
    a = acct.post(route, json=body, headers={"Idempotency-Key": "compat-1"})
    b = acct.post(route, json=body, headers={"Idempotency-Key": "compat-1"})
    assert a.status_code == b.status_code == 201 and a.json() == b.json()


def test_one_key_across_routes_returns_the_first_create(acct):
    a = create(acct, "write_lyrics", "v5", {"prompt": "x"}, idempotency_key="cross")
    b = acct.post("/v7/generate/song", json={"prompt": "x"}, headers={"Idempotency-Key": "cross"})
    assert b.json() == a.json()
