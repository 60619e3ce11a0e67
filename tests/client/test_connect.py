"""songlab.connect(): env read at call time; the sandbox otherwise, one line, no key."""

from __future__ import annotations

import sys
import types

import pytest

import songlab
from songlab import _connect
from songlab.client import AsyncClient, Client, ValidationError


class FakeServer:
    def __init__(self, **kwargs):
        self.kwargs = kwargs
        self.base_url = "http://127.0.0.1:45678"
        self.admin_token = "adm"
        self.stopped = False

    def stop(self):
        self.stopped = True


@pytest.fixture
def fake_sandbox(monkeypatch):
    started = []

    def serve_in_thread(**kwargs):
        started.append(FakeServer(**kwargs))
        return started[-1]

    mod = types.ModuleType("songlab.sandbox.http.server")
    mod.serve_in_thread = serve_in_thread
    mod.SandboxServer = FakeServer
    monkeypatch.setitem(sys.modules, "songlab.sandbox.http.server", mod)
    monkeypatch.setattr(_connect, "_SANDBOXES", {})
    monkeypatch.delenv("SONGLAB_API_KEY", raising=False)
    monkeypatch.delenv("SONGLAB_BASE_URL", raising=False)
    return started


def test_real_service_from_the_environment(fake_sandbox, monkeypatch, capsys):
    monkeypatch.setenv("SONGLAB_API_KEY", "sk-real-SECRET")
    monkeypatch.setenv("SONGLAB_BASE_URL", "https://api.example.test/")
    client = songlab.connect()
    assert isinstance(client, Client) and client.base_url == "https://api.example.test"
    assert fake_sandbox == []
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and "SECRET" not in out and "SECRET" not in repr(client)


def test_sandbox_otherwise(fake_sandbox, capsys):
    client = songlab.connect(speed=50)
    (srv,) = fake_sandbox
    assert srv.kwargs == {
        "db": ":memory:",
        "speed": 50.0,
        "admin_token": None,
        "host": "127.0.0.1",
        "port": 0,
    }
    assert client.base_url == srv.base_url and client.sandbox is srv
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and "sandbox" in out and _connect.DEMO_API_KEY not in out
    again = songlab.connect(speed=50, asynchronous=True, quiet=True)
    assert isinstance(again, AsyncClient) and len(fake_sandbox) == 1  # reused
    assert capsys.readouterr().out == ""
    _connect._stop_all()
    assert srv.stopped


def test_half_configured_environment_is_an_error(fake_sandbox, monkeypatch):
    monkeypatch.setenv("SONGLAB_API_KEY", "sk-real")
    with pytest.raises(ValidationError) as info:
        songlab.connect()
    assert info.value.field == "SONGLAB_BASE_URL" and fake_sandbox == []


def test_bad_speed(fake_sandbox):
    with pytest.raises(ValidationError, match="speed"):
        songlab.connect(speed=0)


def test_connect_inside_a_running_event_loop_against_the_real_sandbox(monkeypatch, capsys):
    """As in Jupyter: the sync path never calls asyncio.run; the sandbox has its own loop."""
    import asyncio

    monkeypatch.delenv("SONGLAB_API_KEY", raising=False)
    monkeypatch.delenv("SONGLAB_BASE_URL", raising=False)
    monkeypatch.setattr(_connect, "_SANDBOXES", {})

    async def notebook_cell():
        client = songlab.connect(speed=500)
        task = client.compat.generate_song("v5", prompt="x", duration_seconds=5).wait(timeout=60)
        return client, task, client.account.balance()

    try:
        client, task, balance = asyncio.run(notebook_cell())
        assert task.status == "completed" and balance.total_effective == 100000 - 7
        assert "sandbox" in capsys.readouterr().out
    finally:
        _connect._stop_all()


def test_project_and_tags_label_every_create_and_bad_ones_start_nothing(monkeypatch, capsys):
    """connect(project=..., tags=...) is how a notebook sets its default attribution."""
    from songlab.client import _attribution

    monkeypatch.delenv("SONGLAB_API_KEY", raising=False)
    monkeypatch.delenv("SONGLAB_BASE_URL", raising=False)
    monkeypatch.setattr(_connect, "_SANDBOXES", {})
    with pytest.raises(ValidationError, match=r"^project: 1-64 characters"):
        songlab.connect(speed=500, quiet=True, project=" padded ")
    with pytest.raises(ValidationError, match=r"^tags: each 1-64 characters"):
        songlab.connect(speed=500, quiet=True, project="ok", tags=["no spaces allowed"])
    assert _connect._SANDBOXES == {}  # refused before any sandbox started
    try:
        client = songlab.connect(speed=500, quiet=True, project="01 quickstart", tags="notebook")
        plain = songlab.connect(speed=500, quiet=True)
        seen: list[_attribution.CreateRecord] = []
        remove = _attribution.add_listener(seen.append)
        try:
            client.compat.generate_song("v5", prompt="x", duration_seconds=5)
            plain.compat.generate_song("v5", prompt="y", duration_seconds=5)
        finally:
            remove()
        assert [(r.project, r.tags) for r in seen] == [("01 quickstart", ("notebook",)), (None, ())]
    finally:
        _connect._stop_all()


def test_real_service_client_gets_the_labels_too(fake_sandbox, monkeypatch):
    from songlab.client import _attribution

    monkeypatch.setenv("SONGLAB_API_KEY", "sk-live-secret")
    monkeypatch.setenv("SONGLAB_BASE_URL", "https://api.example.test")
    client = songlab.connect(quiet=True, project="finance", tags=["q4"])
    assert _attribution.client_defaults(client) == _attribution.Labels("finance", ("q4",))
    assert fake_sandbox == []
