"""``py.typed`` means something: mypy (strict) on the client, and what it infers for user code.

A user snippet is type-checked by mypy's API and its ``reveal_type`` lines must name the
dataclasses (not ``Any``): on a ``Client`` they are the values, on an ``AsyncClient``
coroutines of them; ``songlab.connect()`` is overloaded on ``asynchronous``. A wrong use
(awaiting a sync result, a typo'd keyword) must be an error.
"""

from __future__ import annotations

import pathlib
import re
import textwrap

import pytest

api = pytest.importorskip("mypy.api")

# every test here runs mypy (the first on a cold cache: 16 s of a worker in `make test-fast`)
pytestmark = pytest.mark.slow

ROOT = pathlib.Path(__file__).resolve().parents[2]

SNIPPET = """
import songlab
from songlab.client import AsyncClient

c = songlab.connect()
reveal_type(c)
h = c.generations.create(operation="write_lyrics", model="v5", payload={"prompt": "x"})
reveal_type(h)
reveal_type(h.wait())
reveal_type(c.generations.get(h.task_id))
reveal_type(c.account.balance())
reveal_type(c.tools.find("write_lyrics"))
reveal_type(c.files.link("f"))
reveal_type(c.compat.generate_song("v5", prompt="p"))
reveal_type(c.workflows.karaoke_track(song_file_id="f"))
reveal_type(c.agent.run(tier="flash", prompt="p"))
reveal_type(c.estimate(route="/v1/karaoke-tracks"))
reveal_type(c.task("t").stream())
reveal_type(songlab.connect(asynchronous=True))


async def main(a: AsyncClient) -> None:
    h2 = await a.generations.create(tool_id="t", payload={})
    reveal_type(h2)
    reveal_type(await h2.wait())
    b = reveal_type(a.account.balance())
    await b
    reveal_type(a.generations.stream("t"))
    reveal_type(await a.voice_clones.clone(reference_file_id="f", consent=True,
                                           rights_attestation="mine"))
"""

EXPECTED = [
    "songlab.client._sync.Client",
    "songlab.client._handle.TaskHandle[songlab.client._sync.Client]",
    "songlab.client._models.Task",
    "songlab.client._models.Task",
    "songlab.client._models.Balance",
    "songlab.client._models.Tool",
    "songlab.client._models.FileLink",
    "songlab.client._handle.TaskHandle[songlab.client._sync.Client]",
    "songlab.client._handle.TaskHandle[songlab.client._sync.Client]",
    "songlab.client._models.AgentRun",
    "songlab.client._cost_estimate.Estimate",
    "typing.Iterator[songlab.client._models.Event]",
    "songlab.client._async.AsyncClient",
    "songlab.client._handle.TaskHandle[songlab.client._async.AsyncClient]",
    "songlab.client._models.Task",
    "typing.Coroutine[Any, Any, songlab.client._models.Balance]",
    "typing.AsyncIterator[songlab.client._models.Event]",
    "songlab.client._models.VoiceClone",
]


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("mypy_cache")  # shared: the second run is incremental


def _mypy(tmp_path, cache, code):
    f = tmp_path / "user_code.py"
    f.write_text(textwrap.dedent(code))
    out, err, status = api.run(
        [
            "--strict",
            "--no-error-summary",
            "--cache-dir",
            str(cache),
            "--config-file",
            str(ROOT / "pyproject.toml"),
            str(f),
        ]
    )
    return out, status


def test_user_code_sees_the_dataclasses_not_any(tmp_path, cache):
    out, _ = _mypy(tmp_path, cache, SNIPPET)
    revealed = re.findall(r'Revealed type is "([^"]+)"', out)
    assert [r.replace("builtins.", "") for r in revealed] == EXPECTED, out
    assert ": error:" not in out, out


def test_misuse_is_a_type_error(tmp_path, cache):
    out, status = _mypy(
        tmp_path,
        cache,
        """
        import songlab

        async def f() -> None:
            c = songlab.connect()
            await c.account.balance()
            c.generations.get("t", after=1)
    """,
    )
    assert status == 1
    assert 'Incompatible types in "await" (actual type "Balance"' in out, out
    assert 'Unexpected keyword argument "after"' in out, out


def test_watch_is_typed_on_both_clients(tmp_path, cache):
    out, _ = _mypy(
        tmp_path,
        cache,
        """
        from songlab.client import AsyncClient, Client, WatchUpdate

        def show(u: WatchUpdate) -> None:
            reveal_type(u.event)

        def f(c: Client, a: AsyncClient) -> None:
            reveal_type(c.watch("t", show))
            reveal_type(c.watch(c.task("t"), timeout=None))
            w = reveal_type(a.watch("t", show))
            w.close()
    """,
    )
    revealed = [r.replace("builtins.", "") for r in re.findall(r'Revealed type is "([^"]+)"', out)]
    assert revealed == [
        "songlab.client._models.Event | None",
        "songlab.client._models.Task",
        "songlab.client._models.Task",
        "typing.Coroutine[Any, Any, songlab.client._models.Task]",
    ], out
    assert ": error:" not in out, out


def test_a_method_declared_once_is_typed_on_both_clients(tmp_path, cache):
    """Each method is one declaration (``@operation``, ``@creates``, ``@iterates``; the
    create options as ``Unpack[CreateOptions]``): mypy still sees each client's own types,
    and a wrong option is an error on both."""
    out, status = _mypy(
        tmp_path,
        cache,
        """
        from songlab.client import AsyncClient, Client

        def f(c: Client) -> None:
            reveal_type(c.generations)
            reveal_type(c.generations.transcribe("f", language="en"))
            reveal_type(c.workflows.beat_swap(song_file_id="f", prompt="p", take=2))
            reveal_type(c.batch([{"operation": "write_lyrics", "payload": {}}], concurrency=4))
            reveal_type(c.generations.list())
            reveal_type(c.voice_clones.clone(reference_file_id="f", consent=True,
                                             rights_attestation="mine", timeout=5))
            c.workflows.beat_swap(song_file_id="f", prompt="p", takes=2)
            c.generations.create(payload={}, tool_id="t", license=1.5)
            c.batch([], concurrency="8")

        async def g(a: AsyncClient) -> None:
            reveal_type(await a.generations.transcribe("f"))
            b = reveal_type(a.batch([]))
            await b
            reveal_type(a.generations.list())
            reveal_type(await a.estimate(route="/v1/karaoke-tracks"))
            await a.song_translations.create(song_file_id="f", target_language="fr",
                                             song_style="pop", fresh="yes")
    """,
    )
    revealed = [r.replace("builtins.", "") for r in re.findall(r'Revealed type is "([^"]+)"', out)]
    assert revealed == [
        "songlab.client._generations.Generations[songlab.client._sync.Client]",
        "songlab.client._handle.TaskHandle[songlab.client._sync.Client]",
        "songlab.client._handle.TaskHandle[songlab.client._sync.Client]",
        "songlab.client._batch.BatchResult",
        "typing.Iterator[songlab.client._models.Task]",
        "songlab.client._models.VoiceClone",
        "songlab.client._handle.TaskHandle[songlab.client._async.AsyncClient]",
        "typing.Coroutine[Any, Any, songlab.client._batch.BatchResult]",
        "typing.AsyncIterator[songlab.client._models.Task]",
        "songlab.client._cost_estimate.Estimate",
    ], out
    assert status == 1
    assert 'Unexpected keyword argument "takes"' in out, out
    assert 'Argument "license" has incompatible type "float"' in out, out
    assert 'Argument "concurrency" has incompatible type "str"' in out, out
    assert 'Argument "fresh" has incompatible type "str"' in out, out
    assert out.count(": error:") == 4, out
