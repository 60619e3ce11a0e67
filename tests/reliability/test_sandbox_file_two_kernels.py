"""Two kernels on one sandbox file, as two notebooks open at once: the second uses the
sandbox the first serves (one worker, one account), and when the first is killed the second
serves the file itself on the same address, resumes the task the first left running and
bills it once.

Both "kernels" are real Python processes running ``songlab.connect()`` with the test's own
``SONGLAB_SANDBOX_DB``; the first is SIGKILLed (no shutdown code runs).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # starts and kills processes

FIRST = """
import json, sys, time, songlab
client = songlab.connect(speed=1)
h = client.generations.create(operation="generate_song", model="v5",
                              payload={"prompt": "left running", "duration_seconds": 30})
print(json.dumps({"task": h.task_id, "url": client.base_url}), flush=True)
time.sleep(600)
"""

SECOND = """
import json, sys, time, songlab
client = songlab.connect(speed=50)
tasks = [t.task_id for t in client.generations.list()]
print(json.dumps({"url": client.base_url, "tasks": tasks}), flush=True)
sys.stdin.readline()  # the first kernel is killed now
t0 = time.monotonic()
while time.monotonic() - t0 < 120:
    try:
        status = client.generations.get(tasks[0]).status
    except Exception as exc:  # the address may be dark while the file changes hands
        status = type(exc).__name__
    if status in ("completed", "failed"):
        break
    time.sleep(0.2)
print(json.dumps({"status": status, "url": client.base_url,
                  "tasks": [t.task_id for t in client.generations.list()],
                  "tokens": client.account.balance().total_effective}), flush=True)
"""


def _start(code: str, env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", code],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_a_second_kernel_shares_the_file_and_takes_it_over_when_the_first_dies(
    tmp_path: Path,
) -> None:
    env = {
        **os.environ,
        "SONGLAB_SANDBOX_DB": str(tmp_path / "sandbox.sqlite3"),
        "SONGLAB_RECORD": str(tmp_path / "record.sqlite"),
    }
    first = _start(FIRST, env)
    second = None
    try:
        assert first.stdout is not None
        connected = first.stdout.readline()
        made = json.loads(first.stdout.readline())
        assert "a fresh local sandbox" in connected
        second = _start(SECOND, env)
        assert second.stdout is not None and second.stdin is not None
        line = second.stdout.readline()
        shared = json.loads(second.stdout.readline())
        # one sandbox, one account: the second kernel sees the first one's task
        assert f"the local sandbox of process {first.pid}" in line, line
        assert shared == {"url": made["url"], "tasks": [made["task"]]}
        first.kill()
        first.wait(30)
        second.stdin.write("go\n")
        second.stdin.flush()
        after = json.loads(second.stdout.readline())
        assert after["status"] == "completed", after
        assert after["url"] == made["url"]  # the same address, served by the second now
        assert after["tasks"] == [made["task"]]
        assert after["tokens"] == 100_000 - 7  # resumed and billed once
        second.stdin.close()
        second.wait(30)
        assert "this kernel serves" in (second.stderr.read() if second.stderr else "")
    finally:
        for proc in (first, second):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait(30)
