"""The client's record and re-attaching instead of re-buying, against a real sandbox.

One sandbox for the module (high speed); every test a fresh account, and (the autouse
fixture in tests/conftest.py) its own record file and reuse scope.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import subprocess
import sys
import textwrap
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pytest

from songlab.client import RECORD_SCHEMA, AsyncClient, Client, RecordStore, ValidationError
from songlab.client._create import canonical_body, request_key
from songlab.client._create_record import CreateRecord
from songlab.client._validate import canonical_json

DATA = Path(__file__).resolve().parents[2] / "data"
SONG = {"prompt": "a short test song", "duration_seconds": 5}


def _balance(client):
    return client.account.balance().total_effective


def _tasks(client):
    return [t.task_id for t in client.generations.list(limit=100)]


@pytest.fixture
def account(new_account):
    return new_account()


@pytest.fixture
def client(sandbox, account):
    with Client(account.api_key, base_url=sandbox.base_url) as c:
        yield c


def test_every_accepted_create_is_recorded_per_contract(client, sandbox, tmp_path, account):
    h = client.generations.create(operation="generate_song", model="v5", payload=SONG)
    t = client.record.table()
    assert t.schema == RECORD_SCHEMA and t.num_rows == 1
    row = t.to_pylist()[0]
    assert row["task_id"] == h.task_id and row["key_id"] == client.key_id
    assert row["base_url"] == sandbox.base_url and row["route"] == "/v1/generations"
    assert row["idempotency_key"] == h.idempotency_key
    assert (row["operation"], row["model"], row["license"]) == ("generate_song", "v5", 1)
    assert row["estimate_usd"] == Decimal("0.07")
    assert row["take"] == 1 and row["scope"] == row["origin"] and row["origin"].startswith("test:")
    assert row["sent_at"] <= row["accepted_at"]
    canonical = canonical_body({"tool_id": row["tool_id"]}, canonical_json(SONG))
    assert row["payload_sha256"] == hashlib.sha256(canonical.encode()).hexdigest()
    # the canonical text is the request with sorted keys and no spaces, the payload parsed
    assert canonical == (
        f'{{"payload_json":{{"duration_seconds":5,"prompt":"a short test song"}},'
        f'"tool_id":"{row["tool_id"]}"}}'
    )
    # nothing secret, no payload text
    raw = client.record.path.read_bytes() + b"".join(
        p.read_bytes() for p in client.record.path.parent.glob("*.sqlite-wal")
    )
    assert account.api_key.encode() not in raw and b"a short test song" not in raw
    assert client.record.table(key_id="key_000000000000").num_rows == 0


def test_keep_payloads_keeps_the_canonical_request(sandbox, account, tmp_path):
    store = RecordStore(tmp_path / "r.sqlite", keep_payloads=True)
    with Client(account.api_key, base_url=sandbox.base_url, record=store) as c:
        h = c.generations.create(operation="generate_song", model="v5", payload=SONG)
    assert json.loads(store.payload(h.task_id))["payload_json"] == SONG


def test_same_request_reattaches_without_a_post_and_says_so(client, capsys):
    h1 = client.generations.create(operation="generate_song", model="v5", payload=SONG)
    capsys.readouterr()
    before = _balance(client)
    # the payload's key order and spacing do not make another request
    h2 = client.generations.create(
        operation="generate_song",
        model="v5",
        payload='{"duration_seconds": 5, "prompt": "a short test song"}',
    )
    out = capsys.readouterr().out
    assert h2.task_id == h1.task_id and h2.raw["reused"] is True and h2.reused
    assert out.count("\n") == 1 and f"reused task {h1.task_id[:8]}" in out
    assert "$0.07 not spent again" in out and "fresh=True" in out
    # it names the create it answered, so "the same call" is the one the reader just ran
    assert "(generate_song v5, take 1) from " in out and "the same call with fresh=True" in out
    assert _balance(client) == before and len(_tasks(client)) == 1
    assert client.record.table().num_rows == 1  # a reuse adds no row


def test_takes_seeds_fresh_and_reuse_off_make_new_tasks(sandbox, account, capsys):
    with Client(account.api_key, base_url=sandbox.base_url) as c:
        first = c.generations.create(operation="generate_song", model="v5", payload=SONG)
        take2 = c.generations.create(operation="generate_song", model="v5", payload=SONG, take=2)
        again2 = c.generations.create(operation="generate_song", model="v5", payload=SONG, take=2)
        seeded = c.generations.create(
            operation="generate_song", model="v5", payload={**SONG, "seed": 7}
        )
        fresh = c.generations.create(
            operation="generate_song", model="v5", payload=SONG, fresh=True
        )
        lic = c.generations.create(operation="generate_song", model="v5", payload=SONG, license=3)
        assert again2.task_id == take2.task_id
        ids = {first.task_id, take2.task_id, seeded.task_id, fresh.task_id, lic.task_id}
        assert len(ids) == 5 and len(_tasks(c)) == 5
        assert [r["take"] for r in c.record.table().to_pylist()] == [1, 2, 1, None, 1]
    with Client(account.api_key, base_url=sandbox.base_url, reuse=False) as off:
        a = off.generations.create(operation="generate_song", model="v5", payload=SONG)
        b = off.generations.create(operation="generate_song", model="v5", payload=SONG)
        assert a.task_id != b.task_id and first.task_id not in (a.task_id, b.task_id)
    with pytest.raises(ValidationError, match="take"):
        c2 = Client(account.api_key, base_url=sandbox.base_url)
        c2.generations.create(operation="generate_song", model="v5", payload=SONG, take=0)
    with pytest.raises(ValidationError, match="reuse"):
        Client(account.api_key, base_url=sandbox.base_url, reuse="sometimes")


def test_scope_notebook_by_default_account_on_request(sandbox, account, monkeypatch):
    monkeypatch.setenv("SONGLAB_ORIGIN", "/home/me/a.ipynb")
    with Client(account.api_key, base_url=sandbox.base_url) as c:
        in_a = c.generations.create(operation="generate_song", model="v5", payload=SONG)
        monkeypatch.setenv("SONGLAB_ORIGIN", "/home/me/b.ipynb")
        in_b = c.generations.create(operation="generate_song", model="v5", payload=SONG)
        assert in_a.task_id != in_b.task_id  # another notebook: its own tasks
    with Client(account.api_key, base_url=sandbox.base_url, reuse="account") as acc:
        x = acc.generations.create(operation="generate_song", model="v5", payload=SONG)
        monkeypatch.setenv("SONGLAB_ORIGIN", "/home/me/c.ipynb")
        y = acc.generations.create(operation="generate_song", model="v5", payload=SONG)
        assert x.task_id == y.task_id and x.task_id not in (in_a.task_id, in_b.task_id)


def test_keys_are_deterministic_and_the_service_dedups_without_a_record(sandbox, account):
    with Client(account.api_key, base_url=sandbox.base_url, record=False) as a:
        h1 = a.generations.create(operation="generate_song", model="v5", payload=SONG)
        before = _balance(a)
        # another machine, no record: same key, the service returns the same task
        with Client(account.api_key, base_url=sandbox.base_url, record=False) as b:
            h2 = b.generations.create(operation="generate_song", model="v5", payload=SONG)
        assert h2.task_id == h1.task_id and h2.idempotency_key == h1.idempotency_key
        assert _balance(a) == before and len(_tasks(a)) == 1
    key = h1.idempotency_key
    assert len(key) <= 200 and all(ch.isalnum() or ch in "_.:-" for ch in key)


def test_a_task_the_service_lost_is_created_again_and_said(client, capsys):
    route = "/v1/generations"
    tool = next(t for t in client.tools.list() if (t.operation, t.model) == ("generate_song", "v5"))
    body = {"tool_id": tool.id, "payload_json": json.dumps(SONG)}
    sha = hashlib.sha256(
        canonical_body({"tool_id": tool.id}, canonical_json(SONG)).encode()
    ).hexdigest()
    scope = client._scope()[1]
    client.record.write(
        CreateRecord(
            task_id="00000000-0000-4000-8000-000000000000",
            key_id=client.key_id,
            base_url=client.base_url,
            idempotency_key=request_key(client.key_id, route, sha, scope, 1),
            route=route,
            tool_id=tool.id,
            operation="generate_song",
            model="v5",
            license=1,
            payload_sha256=sha,
            estimate_usd=Decimal("0.07"),
            project=None,
            tags=(),
            scope=scope,
            take=1,
            origin=None,
            sent_at=None,
            accepted_at=None,
        )
    )
    assert client.previous_create(route, body) is not None
    before = _balance(client)
    h = client.generations.create(tool_id=tool.id, payload=SONG)
    assert "is gone from the service; creating it again" in capsys.readouterr().out
    assert h.task_id != "00000000-0000-4000-8000-000000000000"
    assert [r["task_id"] for r in client.record.table().to_pylist()] == [h.task_id]
    assert _balance(client) == before - 7


def test_async_client_reuses_too(sandbox, account):
    async def run():
        async with AsyncClient(account.api_key, base_url=sandbox.base_url, quiet=True) as c:
            h1 = await c.generations.create(operation="generate_song", model="v5", payload=SONG)
            h2 = await c.generations.create(operation="generate_song", model="v5", payload=SONG)
            return h1, h2, c.record.table()

    h1, h2, table = asyncio.run(run())
    assert h1.task_id == h2.task_id and table.num_rows == 1


def test_voice_clone_reuse_keeps_its_consent_id(client):
    up = client.files.upload(DATA / "voice_female.mp3")
    fields = {"reference_file_id": up, "consent": True, "rights_attestation": "mine"}
    h1 = client.voice_clones.create(**fields)
    h2 = client.voice_clones.create(**fields)
    assert h2.task_id == h1.task_id and h2.consent_id == h1.consent_id is not None


def test_the_ledger_counts_a_reused_task_once(client):
    from songlab.ledger import tasks_frame

    for _ in range(3):
        client.generations.create(operation="generate_song", model="v5", payload=SONG)
    frame = tasks_frame(client)
    assert len(frame) == 1 and client.record.table().num_rows == 1


_WORKER = textwrap.dedent("""
    import sys
    from songlab.client import Client
    base_url, key, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    with Client(key, base_url=base_url, quiet=True) as c:
        for i in range(n):
            c.generations.create(operation="generate_song", model="v5",
                                 payload={"prompt": f"song {i}", "duration_seconds": 5})
""")


def test_several_processes_at_once_create_each_request_once(
    sandbox, account, tmp_path, monkeypatch
):
    record = tmp_path / "shared.sqlite"
    monkeypatch.setenv("SONGLAB_RECORD", str(record))
    monkeypatch.setenv("SONGLAB_ORIGIN", "/shared/notebook.ipynb")
    script = tmp_path / "worker.py"
    script.write_text(_WORKER)
    procs = [
        subprocess.Popen(
            [sys.executable, str(script), sandbox.base_url, account.api_key, "12"],
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
    with Client(account.api_key, base_url=sandbox.base_url, record=record) as c:
        table = c.record.table()
        assert table.num_rows == 12 and len(set(table["task_id"].to_pylist())) == 12
        assert len(_tasks(c)) == 12
        assert _balance(c) == 100000 - 12 * 7
    assert isinstance(table, pa.Table)


def test_an_unusable_record_never_fails_a_create(sandbox, account, tmp_path, caplog):
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the record's directory should be")
    with Client(
        account.api_key, base_url=sandbox.base_url, quiet=True, record=blocker / "record.sqlite"
    ) as c:
        h1 = c.generations.create(operation="generate_song", model="v5", payload=SONG)
        h2 = c.generations.create(operation="generate_song", model="v5", payload=SONG)
        assert h1.task_id == h2.task_id  # the derived key: the service deduplicated
        assert len(_tasks(c)) == 1 and "could not read the record" in caplog.text


def test_a_failed_task_reattaches_and_says_how_to_ask_again(client, admin, capsys):
    admin.put("/_sandbox/faults", json={"fail_tasks": 1.0}).raise_for_status()
    try:
        h = client.generations.create(operation="generate_song", model="v5", payload=SONG)
        assert h.wait(timeout=60, raise_on_failure=False).status == "failed"
    finally:
        admin.delete("/_sandbox/faults")
    capsys.readouterr()
    again = client.generations.create(operation="generate_song", model="v5", payload=SONG)
    assert again.task_id == h.task_id and again.status == "failed"
    assert "it failed (nothing was billed); the same call with take=2" in capsys.readouterr().out
    second = client.generations.create(operation="generate_song", model="v5", payload=SONG, take=2)
    assert second.wait(timeout=60).status == "completed"


def test_the_same_bytes_are_uploaded_once(client, sandbox, account):
    posts = []
    client._http.event_hooks["request"].append(
        lambda r: posts.append(r.url.path) if r.method == "POST" else None
    )
    data = (DATA / "voice_female.mp3").read_bytes()
    a = client.files.upload(DATA / "voice_female.mp3")
    b = client.files.upload(data, filename="voice_female.mp3")  # same bytes, same type
    assert a.file_id == b.file_id and posts == ["/v1/files"]
    c = client.files.upload(data, filename="voice.bin")  # another type: its own file
    assert c.file_id != a.file_id and posts == ["/v1/files"] * 2
    # a recorded file the service no longer has is uploaded again
    client.record.write_upload(
        client.key_id,
        client.base_url,
        hashlib.sha256(b"gone").hexdigest(),
        "audio/mpeg",
        "00000000-0000-4000-8000-00000000dead",
        4,
    )
    d = client.files.upload(b"gone", filename="gone.mp3")
    assert d.file_id != "00000000-0000-4000-8000-00000000dead" and len(posts) == 3
    with Client(account.api_key, base_url=sandbox.base_url, reuse=False) as off:
        assert off.files.upload(data, filename="voice_female.mp3").file_id != a.file_id
