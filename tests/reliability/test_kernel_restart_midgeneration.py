"""A real Jupyter kernel restarted in the middle of a generation: the sandbox ``connect()``
started kept its state in its file, so the new kernel finds the account, the balance and
the running task (its worker resumes it), and the form, given the same values, re-attaches
to that take instead of buying it again.

The kernels (jupyter_client, this venv's ``python3``) get the test's own sandbox file,
record and origin in their environment: nothing is written to the user's data dir.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

jupyter_client = pytest.importorskip("jupyter_client")
pytestmark = pytest.mark.slow  # starts and restarts Jupyter kernels


def _run(kc: Any, code: str, timeout: float = 180) -> tuple[str, str]:
    """(stdout, stderr) of ``code`` run in the kernel; its error fails the test."""
    out: list[str] = []
    err: list[str] = []
    errors: list[str] = []

    def hook(msg: dict[str, Any]) -> None:
        if msg["msg_type"] == "stream":
            (out if msg["content"]["name"] == "stdout" else err).append(msg["content"]["text"])
        elif msg["msg_type"] == "error":
            errors.append("\n".join(msg["content"]["traceback"]))

    reply = kc.execute_interactive(code, timeout=timeout, output_hook=hook)
    assert reply["content"]["status"] == "ok", "\n".join(errors)
    return "".join(out), "".join(err)


@pytest.fixture
def kernel(tmp_path: Path) -> Iterator[tuple[Any, Any, Path]]:
    from jupyter_client.manager import start_new_kernel

    env = {
        **os.environ,
        "SONGLAB_SANDBOX_DB": str(tmp_path / "sandbox.sqlite3"),
        "SONGLAB_RECORD": str(tmp_path / "record.sqlite"),
        "SONGLAB_ORIGIN": "notebooks/01_quickstart.ipynb",
    }
    km, kc = start_new_kernel(kernel_name="python3", startup_timeout=120, env=env)
    try:
        yield km, kc, tmp_path
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


FORM = """
import json, time, songlab
from songlab.widgets import GenerationForm
client = songlab.connect(speed=1, project="restart")
form = GenerationForm(client, model="v5")
form.prompt.value = "a slow song that is still rendering when the kernel dies"
form.duration.value = 30.0
"""


@pytest.mark.parametrize("killed", [True, False], ids=["killed", "shut-down"])
def test_a_kernel_restarted_mid_generation_finds_the_task_and_the_form_follows_it_again(
    kernel: tuple[Any, Any, Path], killed: bool
) -> None:
    """``killed``: the process dies (no shutdown code runs); else JupyterLab's Restart, a
    shutdown request (the sandbox stops cleanly, its task left in flight)."""
    km, kc, folder = kernel
    out, _ = _run(
        kc,
        FORM
        + """
row = form.send()  # Generate
t0 = time.monotonic()
while row.state.fraction < 0.25 and time.monotonic() - t0 < 120:
    time.sleep(0.05)
print(json.dumps({"task": row.task_id, "status": row.state.status,
                  "fraction": row.state.fraction, "url": client.base_url,
                  "tokens": client.account.balance().total_effective}))
""",
    )
    first_line, before = out.splitlines()[0], json.loads(out.splitlines()[-1])
    assert "a fresh local sandbox" in first_line and str(folder) in first_line
    assert before["status"] == "processing" and 0.25 <= before["fraction"] < 1.0
    assert before["tokens"] == 100_000 - 7  # v5 royalty-free: $0.07 reserved

    old_pid = km.provisioner.process.pid
    km.restart_kernel(now=killed)  # mid-generation
    kc.wait_for_ready(timeout=120)
    assert km.provisioner.process.pid != old_pid

    out, _ = _run(
        kc,
        FORM
        + """
would = form.reason.value
row = form.send()  # the same values: re-attach, nothing bought
state = row.wait(timeout=120)
tasks = list(client.generations.list())
print(json.dumps({"task": row.task_id, "status": state.status, "would": would,
                  "tasks": [t.task_id for t in tasks],
                  "tokens": client.account.balance().total_effective}))
""",
    )
    line, after = out.splitlines()[0], json.loads(out.splitlines()[-1])
    # the screen says it is the kept sandbox, what it found and that it resumed the task;
    # it answers where the last one did (the client's record is keyed by that address)
    assert "the local sandbox kept in" in line and "1 task, 1 resumed" in line, line
    assert f"at {before['url']} " in line
    assert "balance $999.93" in line
    assert after["task"] == before["task"] and after["tasks"] == [before["task"]]
    assert "re-attach to task" in after["would"]
    assert after["status"] == "completed"
    assert after["tokens"] == 100_000 - 7  # billed once
