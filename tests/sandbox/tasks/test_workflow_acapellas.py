"""``POST /v1/acapellas``: a workflow route of the sandbox's own, added as its registry entry
and its step function (docs/architecture.md, "a workflow route"), kept as a real product: the
vocal of a song alone, mastered, the twin of ``karaoke-tracks``."""

from __future__ import annotations

from decimal import Decimal

import numpy as np
import pytest

from songlab.client import Client
from songlab.sandbox.http.profiles import own_route_paths
from songlab.spec import ROUTES
from tests.sandbox._util import assert_invalid, client, ledger, sse, upload


@pytest.fixture
def account(new_account):
    return new_account()


@pytest.fixture
def song(sandbox, account):
    with Client(account.api_key, base_url=sandbox.base_url, quiet=True) as c:
        payload = {"prompt": "pop", "lyrics": "hold the line", "duration_seconds": 6}
        return c.generations.create(operation="generate_song", model="v7", payload=payload).wait()


def _corr(a: np.ndarray, b: np.ndarray) -> float:
    n = min(a.shape[-1], b.shape[-1])
    return float(np.corrcoef(a.mean(axis=0)[:n], b.mean(axis=0)[:n])[0, 1])


def test_an_acapella_is_the_songs_vocal_alone_billed_per_step(sandbox, admin, account, song):
    with Client(account.api_key, base_url=sandbox.base_url, quiet=True) as c:
        estimate = c.estimate(route="/v1/acapellas", license="master").usd
        h = c.workflows.create("acapellas", song_file_id=song.output.assets[0], license="master")
        task = h.wait(timeout=60)
        assert task.status == "completed" and task.operation == "acapellas"
        vocal = c.files.read(task.output.assets[0]).samples
        stems = c.generations.separate_stems(song.output.assets[0]).wait(timeout=60)
        by_name = {a.name: c.files.read(a).samples for a in stems.output.assets}
    # the song's own vocal stem (levelled by the master), none of its instrumental
    assert _corr(vocal, by_name["vocals"]) > 0.99
    assert abs(_corr(vocal, by_name["instrumental"])) < 0.3
    lines = [e for e in ledger(admin, account.account_id) if e["parent_task_id"] == h.task_id]
    assert [(e["kind"], e["operation"], e["model"], e["amount_usd"]) for e in lines] == [
        ("workflow_step", "separate_stems", "2stem", "0.10000000"),
        ("workflow_step", "audio_effect", "v5", "0.03000000"),
    ]
    assert estimate == Decimal("0.13") == sum(Decimal(e["amount_usd"]) for e in lines)


def test_its_steps_stream_and_its_body_is_checked(sandbox, account, song):
    with client(sandbox, account.api_key) as acct:
        _streams_and_checks(acct, song.output.assets[0].file_id)


def _streams_and_checks(acct, song_file_id: str) -> None:
    r = acct.post("/v1/acapellas", json={"song_file_id": song_file_id})
    assert r.status_code == 201, r.text
    events = [(e["step"], e["phase"]) for e in sse(acct, r.json()["task_id"]) if e.get("step")]
    assert events == [(s, p) for s in ("separate", "render") for p in ("started", "finished")]
    assert_invalid(acct.post("/v1/acapellas", json={}), "song_file_id")
    clip = upload(acct, b"not audio at all")
    assert_invalid(acct.post("/v1/acapellas", json={"song_file_id": clip}), "song_file_id")


def test_it_is_the_sandboxs_own_and_absent_from_the_spec_profile() -> None:
    assert ROUTES["acapellas"].origin == "sandbox"
    assert "/v1/acapellas" in own_route_paths()
