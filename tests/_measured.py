"""Which tests are slow, by measurement rather than by guess.

``tests/cpu-seconds.json`` holds the CPU seconds each test took when the suite was last
measured (``make measure-tests``: the whole suite, with :mod:`tests._cpu_profile`, counting
the test's own process and the processes it started and reaped). A test that took more
than ``SLOW_CPU_SECONDS`` gets the ``slow`` marker at collection, beside the tests marked
``slow`` by hand (those that start a process, a kernel or a browser). So the edit loop
(``make test-fast``, a bare ``pytest``) leaves out what is measured to be heavy, and
``make test`` runs everything. A test the file does not name yet (a new one) is not
marked: it runs in the edit loop until the next measurement.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

MEASURED = Path(__file__).with_name("cpu-seconds.json")
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
