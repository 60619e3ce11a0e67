"""Attribution: labels scoped on the client side, recorded locally, never sent to the service."""

from __future__ import annotations

import asyncio
import json
import threading
import uuid
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import pyarrow as pa
import pytest

from songlab.client import AsyncClient, Client
from songlab.client import _attribution as client_attr
from songlab.ledger import LedgerStore, tasks_table
from songlab.ledger._record import record_table
from songlab.ledger.labels import attach, attribution, set_default_attribution
from tests.ledger._util import snap

KEY = "sk-attribution-test-key-0123456789"
PROJECT, TAG = "zebra-project", "quokka-tag"  # words no request would carry by chance


class Service:
    """Just enough of the API behind ``httpx.MockTransport``; keeps every request."""

    def __init__(self) -> None:
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        if request.url.path == "/v1/tools":
            return httpx.Response(
                200,
                json={
                    "data": [
                        {
                            "id": "t-lyrics",
                            "model": "v5",
                            "operation": "write_lyrics",
                            "name": "lyrics",
                        },
                        {
                            "id": "t-song-v7",
                            "model": "v7",
                            "operation": "generate_song",
                            "name": "song",
                        },
                    ]
                },
            )
        if request.method == "POST":
            return httpx.Response(201, json={"task_id": str(uuid.uuid4()), "status": "queued"})
        return httpx.Response(404, json={"error": "NOT_FOUND"})

    def wire(self) -> str:
        """Everything sent: URLs, headers and bodies."""
        return "\n".join(
            f"{r.method} {r.url} {dict(r.headers)} {r.content.decode(errors='replace')}"
            for r in self.requests
        )


@pytest.fixture
def service() -> Service:
    return Service()


@pytest.fixture
def client(service: Service) -> Iterator[Client]:
    c = Client(KEY, base_url="https://api.example.test", transport=httpx.MockTransport(service))
    yield c
    c.close()


def _recorded(c: Any) -> list[dict[str, Any]]:
    """The client's record as it is kept (every column, one row per create)."""
    table = c.record.table()
    assert record_table(table) is not None  # and what the ledger joins of it
    return list(table.to_pylist())


def _lyrics(c: Any) -> Any:
    """A create of its own (the record re-attaches an identical request to its task)."""
    prompt = f"sea {uuid.uuid4().hex[:8]}"
    return c.generations.create(operation="write_lyrics", model="v5", payload={"prompt": prompt})


def test_labels_are_recorded_and_never_sent(
    client: Client, service: Service, tmp_path: Path
) -> None:
    with attribution(project=PROJECT, tags=[TAG, "q4"]):
        h = _lyrics(client)
        song = client.workflows.karaoke_track(song_file_id="f1", license="standard")
    plain = _lyrics(client)
    assert PROJECT not in service.wire() and TAG not in service.wire()
    assert [r.url.path for r in service.requests if r.method == "POST"] == [
        "/v1/generations",
        "/v1/karaoke-tracks",
        "/v1/generations",
    ]
    rows = {r["task_id"]: r for r in _recorded(client)}  # the client's record keeps them
    assert set(rows) == {h.task_id, song.task_id, plain.task_id}
    first = rows[h.task_id]
    assert (first["project"], first["tags"]) == (PROJECT, f"q4,{TAG}")
    assert (first["operation"], first["model"], first["license"]) == ("write_lyrics", "v5", 1)
    assert first["route"] == "/v1/generations" and first["tool_id"] == "t-lyrics"
    assert first["idempotency_key"] == h.idempotency_key
    assert Decimal(str(first["estimate_usd"])) == Decimal("0.02")
    assert rows[song.task_id]["operation"] == "karaoke-tracks"
    assert rows[song.task_id]["license"] == 2
    assert rows[plain.task_id]["project"] is None and rows[plain.task_id]["tags"] is None
    # the key is named by a short hash, never stored
    assert first["key_id"] == client.key_id == client_attr.key_id(KEY)
    assert KEY not in client.record.path.read_bytes().decode("latin-1")
    assert KEY not in repr(client) and client.key_id.startswith("key_")


def test_scopes_nest_and_add_to_the_client_default(client: Client, tmp_path: Path) -> None:
    set_default_attribution(client, project="notebook", tags="nb")
    try:
        a = _lyrics(client)
        with attribution(project="outer", tags=["x"]):
            b = _lyrics(client)
            with attribution(tags=["y"]):
                c = _lyrics(client)
            with attribution(project="inner"):
                d = _lyrics(client)
    finally:
        set_default_attribution(client)
    e = _lyrics(client)
    got = {r["task_id"]: (r["project"], r["tags"]) for r in _recorded(client)}
    assert got[a.task_id] == ("notebook", "nb")
    assert got[b.task_id] == ("outer", "nb,x")
    assert got[c.task_id] == ("outer", "nb,x,y")
    assert got[d.task_id] == ("inner", "nb,x")
    assert got[e.task_id] == (None, None)


def test_scopes_are_per_thread_and_per_async_task(service: Service, tmp_path: Path) -> None:
    ac = AsyncClient(
        KEY, base_url="https://api.example.test", transport=httpx.MockTransport(service)
    )

    async def one(project: str) -> str:
        with attribution(project=project):
            await asyncio.sleep(0)  # the other task runs inside its own scope meanwhile
            h = await ac.generations.create(
                operation="write_lyrics", model="v5", payload={"prompt": project}
            )
        return h.task_id

    async def both() -> list[str]:
        try:
            return await asyncio.gather(one("alpha"), one("beta"))
        finally:
            await ac.aclose()

    ids = asyncio.run(both())
    got = {r["task_id"]: r["project"] for r in _recorded(ac)}
    assert [got[i] for i in ids] == ["alpha", "beta"]

    seen: list[Any] = []
    with attribution(project="main-thread"):
        t = threading.Thread(target=lambda: seen.append(client_attr.active_labels(None)))
        t.start()
        t.join()
    assert seen[0].project is None  # a new thread starts outside the block


def test_a_failing_listener_never_fails_the_create(
    client: Client, service: Service, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(record: Any) -> None:
        raise RuntimeError("disk full")

    remove = client_attr.add_listener(broken, client=client)
    try:
        h = _lyrics(client)
    finally:
        remove()
    assert h.task_id
    assert "attribution listener failed" in caplog.text and KEY not in caplog.text


@pytest.mark.parametrize(
    ("project", "tags", "field"),
    [
        ("", (), "project"),
        (" padded", (), "project"),
        ("x" * 65, (), "project"),
        ("ok", ("has space",), "tags"),
        ("ok", ("a,b",), "tags"),
        (3, (), "project"),
    ],
    ids=["empty", "padded", "too-long", "tag-space", "tag-comma", "not-a-string"],
)
def test_bad_labels_are_refused_naming_the_field(project: Any, tags: Any, field: str) -> None:
    with pytest.raises(ValueError, match=rf"^{field}:"):
        with attribution(project=project, tags=tags):
            pass


def test_attach_fills_labels_and_sub_tasks_inherit_their_run() -> None:
    tasks = tasks_table(
        [
            snap("run", operation="agent", model="flash", tool_id="t-agent"),
            snap("sub", parent_task_id="run"),
            snap("other"),
        ]
    )
    labels = pa.table({"task_id": ["run"], "project": ["p"], "tags": ["a,b"], "key_id": ["key_1"]})
    out = attach(tasks, labels)
    assert out["project"].to_pylist() == ["p", "p", None]
    assert out["tags"].to_pylist() == ["a,b", "a,b", None]
    assert out["key_id"].to_pylist() == ["key_1", "key_1", None]
    assert out.schema == tasks.schema


def test_labels_survive_a_new_store_and_join_the_ledger(client: Client, tmp_path: Path) -> None:
    ledger = LedgerStore(tmp_path / "ledger").track(client)
    with attribution(project=PROJECT):
        h = _lyrics(client)
    ledger.untrack()
    # a later process: a new store on the same directory, fed by the listing
    listing = [
        snap(h.task_id, operation="write_lyrics", model="v5", cost_usd="0.02"),
        snap("made-elsewhere", created_at="2026-11-20T09:00:00Z"),
    ]
    again = LedgerStore(tmp_path / "ledger")
    again.refresh(listing)
    frame = again.read().set_index("task_id")
    assert frame.loc[h.task_id, "project"] == PROJECT
    assert frame.loc[h.task_id, "key_id"] == client.key_id
    assert frame["project"].isna()["made-elsewhere"]
    recorded = again.record_table()
    assert recorded is not None and KEY not in json.dumps(recorded.to_pylist(), default=str)
