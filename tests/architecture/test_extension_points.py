"""The extension table of docs/architecture.md, measured: a workflow route is the registry
entry plus one file (its step functions), and everything else picks it up.

A workflow route that no registry has is made here, in a copy of
the source tree: an ``echo-songs`` route (a song with an echo, then mastered) is added as
its ``Route`` in ``spec/_routes.py`` and its step functions in ``sandbox/tasks/pipelines.py``, and
nothing else. A fresh process running that copy then shows the route in the sandbox (it
takes, renders and bills the create), in ``/openapi.json``, in the price list
(``pricing.task_price``), and in the client (``workflows.create``, its checks before
sending, the estimate and the record), with no other file touched: the tables they use are
all derived from the registry (docs/architecture.md, "Where to add things").

(The named-method half of the table is kept as a real method, ``generations.transcribe``:
tests/client/test_transcribe.py.)
"""

from __future__ import annotations

import filecmp
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"

ROUTE = """\
    # echo-songs: added by tests/architecture/test_extension_points.py (a scratch copy)
    _wf(
        "echo-songs",
        (_SONG, Field("amount", "number", min=0.0, max=1.0)),
        (Step("echo", "audio_effect", "v5"), _RENDER),
    ),
"""
STEPS = """\
def _echo_songs(w: WorkflowCall) -> Steps:  # added by tests/architecture/test_extension_points.py
    return {
        "echo": lambda ctx, done: ctx.render(
            "audio_effect",
            "v5",
            {"effect": "echo", "amount": w.payload.get("amount", 0.5)},
            inputs={"audio": w.song()},
        ),
        "render": lambda ctx, done: _master(ctx, done["echo"].assets[0]),
    }


"""
STEP_LINE = (
    '    "echo-songs": _echo_songs,  # added by tests/architecture/test_extension_points.py\n'
)

# What the copy is asked, in a fresh process (its songlab is the copy's).
PROBE = textwrap.dedent(
    """
    import json, sys
    from decimal import Decimal
    import httpx
    import songlab
    from songlab import pricing
    from songlab.client import Client, RecordStore, ValidationError
    from songlab.sandbox.http.server import serve_in_thread

    out = {"songlab": songlab.__file__}
    srv = serve_in_thread(db=":memory:", speed=500.0, admin_token="ext-admin")
    try:
        admin = httpx.Client(base_url=srv.base_url, headers={"X-Sandbox-Admin-Token": "ext-admin"})
        acct = admin.post("/_sandbox/accounts", json={}).json()
        doc = httpx.get(srv.base_url + "/openapi.json").json()
        out["openapi"] = "/v1/echo-songs" in doc["paths"]
        out["price"] = str(pricing.task_price("echo-songs", None, "standard", route=True).usd)
        record = RecordStore(sys.argv[1])
        with Client(acct["api_key"], base_url=srv.base_url, record=record, quiet=True) as c:
            out["estimate"] = str(c.estimate(route="/v1/echo-songs", license="standard").usd)
            try:
                c.workflows.create("echo-songs", amount=2.0, song_file_id="f")
            except ValidationError as e:
                out["refused"] = [e.field, e.rule]
            song = c.generations.create(
                operation="generate_song", model="v5",
                payload={"prompt": "a short song", "duration_seconds": 5},
            ).wait(timeout=120)
            h = c.workflows.create(
                "echo-songs", song_file_id=song.output.assets[0], amount=0.7, license="standard"
            )
            task = h.wait(timeout=120)
            out["status"] = task.status
            out["files"] = len(task.file_ids)
            out["audio_bytes"] = len(c.files.download(task.file_ids[0]))
        lines = admin.get(f"/_sandbox/accounts/{acct['account_id']}/ledger").json()["entries"]
        mine = [e for e in lines if e["task_id"] == h.task_id]
        out["billed"] = [[e["kind"], e["operation"], e["amount_usd"]] for e in mine]
        row = [r for r in record.rows() if r.task_id == h.task_id][0]
        out["record"] = [row.route, row.operation, str(row.estimate_usd), row.license]
    finally:
        srv.stop()
    print(json.dumps(out))
    """
)


def _insert_after(path: Path, anchor: str, text: str) -> None:
    source = path.read_text(encoding="utf-8")
    assert source.count(anchor) == 1, f"{path.name}: the anchor {anchor!r} moved; update the test"
    path.write_text(source.replace(anchor, anchor + text), encoding="utf-8")


def _insert_before(path: Path, anchor: str, text: str) -> None:
    source = path.read_text(encoding="utf-8")
    assert source.count(anchor) == 1, f"{path.name}: the anchor {anchor!r} moved; update the test"
    path.write_text(source.replace(anchor, text + anchor), encoding="utf-8")


def _changed_files(a: Path, b: Path) -> list[str]:
    changed = []
    for path in sorted(b.rglob("*.py")):
        rel = path.relative_to(b)
        if not filecmp.cmp(a / rel, path, shallow=False):
            changed.append(str(rel))
    return changed


@pytest.mark.slow  # a copy of the tree and a sandbox in a fresh process
def test_a_workflow_route_is_the_registry_entry_and_its_step_functions(tmp_path: Path) -> None:
    copy = tmp_path / "src"
    shutil.copytree(SRC / "songlab", copy / "songlab", ignore=shutil.ignore_patterns("__pycache__"))
    _insert_after(copy / "songlab/spec/_routes.py", "_ROUTES: tuple[Route, ...] = (\n", ROUTE)
    pipelines = copy / "songlab/sandbox/tasks/pipelines.py"
    table = "WORKFLOW_STEPS: dict[str, Callable[[WorkflowCall], Steps]] = {\n"
    _insert_after(pipelines, table, STEP_LINE)
    _insert_before(pipelines, "# workflow route (the registry's path) -> its step functions", STEPS)
    assert _changed_files(SRC, copy) == [
        "songlab/sandbox/tasks/pipelines.py",
        "songlab/spec/_routes.py",
    ]
    env = {**os.environ, "PYTHONPATH": str(copy), "SONGLAB_CACHE_DIR": str(tmp_path / "cache")}
    run = subprocess.run(
        [sys.executable, "-c", PROBE, str(tmp_path / "record.sqlite")],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=tmp_path,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    out = json.loads(run.stdout.strip().splitlines()[-1])
    assert out["songlab"].startswith(str(copy))  # the copy ran, not the checkout
    assert out["openapi"] is True
    # two audio_effect steps ($0.03 each, flat in every tier): the price list, the client
    # estimate, the bill and the record agree
    assert out["price"] == out["estimate"] == "0.06"
    assert out["refused"] == ["amount", "must be in 0-1, got 2.0"]  # before anything was sent
    assert out["status"] == "completed" and out["files"] >= 1 and out["audio_bytes"] > 1000
    assert out["billed"] == [
        ["workflow_step", "audio_effect", "0.03000000"],
        ["workflow_step", "audio_effect", "0.03000000"],
    ]
    assert out["record"] == ["/v1/echo-songs", "echo-songs", "0.06", 2]
