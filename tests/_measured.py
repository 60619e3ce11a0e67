"""Which tests are slow, by measurement rather than by guess.

``tests/cpu-seconds.json`` holds the CPU seconds each test took when the suite was last
measured (``make measure-tests``: the whole suite, with :mod:`tests._cpu_profile`, counting
the test's own process and the processes it started and reaped). A test that took more
than ``SLOW_CPU_SECONDS`` gets the ``slow`` marker at collection, beside the tests marked
``slow`` by hand (those that start a process, a kernel or a browser). So the edit loop
(``make test-fast``, a bare ``pytest``) leaves out what is measured to be heavy, and
``make test`` runs everything. A test the file does not name yet (a new one) is not
marked: it runs in the edit loop until the next measurement.

``tests/file-seconds.json`` holds each test file's wall seconds from the same measurement.
``make suite`` hands whole files to its workers (``--dist loadfile``) in collection order
(``--no-loadscope-reorder``), and :func:`heaviest_files_first` orders the collection by it:
the longest files start first and the short ones fill in around them, so the suite does
not end on one worker running a four-minute file alone. (pytest-xdist's own order, by how
many tests a file has, put the files of one or two long tests last.) A file the
measurement does not name goes after the named ones, those with more tests first.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

MEASURED = Path(__file__).with_name("cpu-seconds.json")
FILE_SECONDS = Path(__file__).with_name("file-seconds.json")
SLOW_CPU_SECONDS = 0.15
# what the measurement keeps: a test below this is fast at any threshold worth having
KEEP_CPU_SECONDS = 0.05


def measured() -> dict[str, float]:
    """Test id -> CPU seconds, as last measured (empty when the file is absent)."""
    if not MEASURED.exists():
        return {}
    data = json.loads(MEASURED.read_text(encoding="utf-8"))
    return {str(k): float(v) for k, v in data["cpu_seconds"].items()}


def mark_slow_by_measure(items: list[pytest.Item]) -> int:
    """Add the ``slow`` marker to every item measured over ``SLOW_CPU_SECONDS``; how many."""
    seconds = measured()
    marked = 0
    for item in items:
        if seconds.get(item.nodeid, 0.0) > SLOW_CPU_SECONDS and not item.get_closest_marker("slow"):
            item.add_marker(pytest.mark.slow)
            marked += 1
    return marked


def write(rows: dict[str, float], path: Path = MEASURED) -> None:
    """Write the measurement: the tests at or over ``KEEP_CPU_SECONDS``, sorted by id."""
    kept = {k: round(v, 3) for k, v in sorted(rows.items()) if v >= KEEP_CPU_SECONDS}
    body = {
        "about": "CPU seconds per test, as measured by `make measure-tests` (tests/_measured.py)",
        "cpu_seconds": kept,
    }
    path.write_text(json.dumps(body, indent=1) + "\n", encoding="utf-8")


def file_seconds() -> dict[str, float]:
    """Test file (as in a node id) -> wall seconds, as last measured (empty when absent)."""
    if not FILE_SECONDS.exists():
        return {}
    data = json.loads(FILE_SECONDS.read_text(encoding="utf-8"))
    return {str(k): float(v) for k, v in data["wall_seconds"].items()}


def heaviest_files_first(items: list[pytest.Item], seconds: dict[str, float]) -> None:
    """Reorder ``items`` in place: whole files, the longest measured first, then the files
    not measured (more tests first); a file's own tests keep their order."""
    first: dict[str, int] = {}
    count: dict[str, int] = {}
    for i, item in enumerate(items):
        file = item.nodeid.split("::", 1)[0]
        first.setdefault(file, i)
        count[file] = count.get(file, 0) + 1

    def key(pair: tuple[int, pytest.Item]) -> tuple[bool, float, int, int, int]:
        i, item = pair
        file = item.nodeid.split("::", 1)[0]
        known = file in seconds
        return (not known, -seconds.get(file, 0.0), -count[file], first[file], i)

    items[:] = [item for _, item in sorted(enumerate(items), key=key)]


def write_file_seconds(files: dict[str, float], path: Path = FILE_SECONDS) -> None:
    """Write each test file's wall seconds (those of at least a second), sorted by file."""
    kept = {k: round(v, 1) for k, v in sorted(files.items()) if v >= 1.0}
    body = {
        "about": "wall seconds per test file, as measured by `make measure-tests` "
        "(tests/_measured.py: the order make suite hands files to its workers)",
        "wall_seconds": kept,
    }
    path.write_text(json.dumps(body, indent=1) + "\n", encoding="utf-8")
