"""pytest plugin for ``make measure-tests``: each test's CPU and wall seconds, to a file per
process.

Loaded with ``-p tests._cpu_profile`` and ``CPU_PROFILE_DIR=DIR``. A test's CPU is that of
the process running it (its threads included: the session's in-thread sandbox works for
the test that waits on it) plus the children it started and reaped, from ``getrusage``,
taken at the start and the end of the test's setup, call and teardown. Under pytest-xdist
only the workers measure (the controller runs no test). ``python -m tests._cpu_profile DIR``
merges the files into ``tests/cpu-seconds.json`` (which tests are slow) and each test file's
wall seconds into ``tests/file-seconds.json`` (the order ``make suite`` hands files out in).
"""

from __future__ import annotations

import json
import os
import resource
import sys
import time
from pathlib import Path
from typing import IO

import pytest

_started: dict[str, tuple[float, float]] = {}
_out: list[IO[str]] = []


def _cpu() -> float:
    me, children = (resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    return me.ru_utime + me.ru_stime + children.ru_utime + children.ru_stime


def _measuring(config: pytest.Config) -> bool:
    controller = hasattr(config, "workerinput") is False and config.getoption("numprocesses", None)
    return bool(os.environ.get("CPU_PROFILE_DIR")) and not controller


def pytest_runtest_logstart(nodeid: str, location: object) -> None:
    _started[nodeid] = (_cpu(), time.perf_counter())


def pytest_runtest_logfinish(nodeid: str, location: object) -> None:
    if nodeid in _started and _out:
        cpu, wall = _started.pop(nodeid)
        row = [nodeid, _cpu() - cpu, time.perf_counter() - wall]
        _out[0].write(json.dumps(row) + "\n")
        _out[0].flush()


def pytest_configure(config: pytest.Config) -> None:
    if _measuring(config):
        folder = Path(os.environ["CPU_PROFILE_DIR"])
        folder.mkdir(parents=True, exist_ok=True)
        _out.append(open(folder / f"cpu-{os.getpid()}.jsonl", "a", encoding="utf-8"))


def merge(folder: Path) -> tuple[dict[str, float], dict[str, float]]:
    """(CPU seconds per test, wall seconds per test file) of the files in ``folder``."""
    cpu: dict[str, float] = {}
    files: dict[str, float] = {}
    for path in sorted(folder.glob("cpu-*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            nodeid, seconds, wall = json.loads(line)
            cpu[nodeid] = cpu.get(nodeid, 0.0) + float(seconds)
            file = nodeid.split("::", 1)[0]
            files[file] = files.get(file, 0.0) + float(wall)
    return cpu, files


if __name__ == "__main__":
    from tests._measured import SLOW_CPU_SECONDS, write, write_file_seconds

    found, files = merge(Path(sys.argv[1]))
    write(found)
    write_file_seconds(files)
    slow = sum(1 for v in found.values() if v > SLOW_CPU_SECONDS)
    print(
        f"tests/cpu-seconds.json: {len(found)} tests measured, {slow} over {SLOW_CPU_SECONDS} CPU-s"
    )
