"""Attribution survives a real Jupyter kernel restart: the labels are in the store on disk.

A kernel (jupyter_client, the ``python3`` kernel of this venv) connects to a
sandbox kept in an SQLite file, tracks its creates into a ledger directory and
makes tasks under ``attribution(...)``; the kernel is then restarted (its
process killed, nothing flushed on exit) and a fresh kernel, with no labels in
memory, reads them back through the ledger.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

jupyter_client = pytest.importorskip("jupyter_client")
pytestmark = pytest.mark.slow  # starts and restarts Jupyter kernels


@pytest.fixture
def kernel() -> Iterator[Any]:
    from jupyter_client.manager import start_new_kernel

    km, kc = start_new_kernel(kernel_name="python3", startup_timeout=120)
    try:
        yield km, kc
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def _run(kc: Any, code: str) -> str:
    out: list[str] = []
    errors: list[str] = []

    def hook(msg: dict[str, Any]) -> None:
        if msg["msg_type"] == "stream" and msg["content"]["name"] == "stdout":
            out.append(msg["content"]["text"])
        elif msg["msg_type"] == "error":
            errors.append("\n".join(msg["content"]["traceback"]))

    reply = kc.execute_interactive(code, timeout=120, output_hook=hook)
    assert reply["content"]["status"] == "ok", "\n".join(errors)
    return "".join(out)


SETUP = """
import json, songlab
from songlab import ledger
client = songlab.connect(speed=500, db={db!r}, quiet=True)
store = ledger.LedgerStore({path!r}).track(client)
"""


def test_labels_survive_a_kernel_restart(kernel: Any, tmp_path: Path) -> None:
    km, kc = kernel
    db, path = str(tmp_path / "sandbox.sqlite"), str(tmp_path / "ledger")
    made = json.loads(
        _run(
            kc,
            SETUP.format(db=db, path=path)
            + """
with ledger.attribution(project="before-restart", tags=["kernel"]):
    a = client.generations.create(operation="write_lyrics", model="v5", payload={"prompt": "x"})
ledger.set_default_attribution(client, project="notebook-default")
b = client.generations.create(operation="write_lyrics", model="v5", payload={"prompt": "y"})
a.wait(); b.wait()
print(json.dumps([a.task_id, b.task_id, client.key_id]))
""",
        )
    )
    old_pid = km.provisioner.process.pid
    km.restart_kernel(now=True)  # kills the process: only what is on disk remains
    kc.wait_for_ready(timeout=120)
    assert km.provisioner.process.pid != old_pid
    after = json.loads(
        _run(
            kc,
            SETUP.format(db=db, path=path)
            + """
c = client.generations.create(operation="write_lyrics", model="v5", payload={"prompt": "z"})
c.wait()
store.refresh(client)
frame = store.read().set_index("task_id")
print(json.dumps({t: [frame.loc[t, "project"], frame.loc[t, "tags"], frame.loc[t, "key_id"]]
                  for t in frame.index}, default=lambda v: None))
""",
        )
    )
    a, b, key = made
    assert after[a] == ["before-restart", "kernel", key]
    assert after[b] == ["notebook-default", None, key]
    (c,) = set(after) - {a, b}
    assert after[c] == [None, None, key]  # the new kernel has no scope and no default
