"""The order ``make suite`` hands test files to its workers (tests/_measured.py): the longest
measured files first, whole, their tests in their own order; and the measurement that
orders them (tests/_cpu_profile.py) sums each file's wall seconds."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from tests._cpu_profile import merge
from tests._measured import heaviest_files_first

ROOT = Path(__file__).resolve().parents[1]


@dataclass
class Item:  # a stand-in for pytest.Item: the ordering reads the node id only
    nodeid: str


def test_the_longest_files_first_whole_and_in_their_own_order() -> None:
    ids = [
        "tests/a.py::t1",
        "tests/b.py::t1",
        "tests/a.py::t2",  # a file's tests need not be adjacent when collected
        "tests/c.py::t1",
        "tests/d.py::t1",
        "tests/d.py::t2",
        "tests/d.py::t3",
        "notebooks/n.ipynb::Cell 0",
        "notebooks/n.ipynb::Cell 1",
        "tests/b.py::t2",
    ]
    items = [Item(i) for i in ids]
    seconds = {"tests/c.py": 240.0, "notebooks/n.ipynb": 40.0, "tests/b.py": 90.0}
    heaviest_files_first(items, seconds)  # type: ignore[arg-type]
    assert [i.nodeid for i in items] == [
        "tests/c.py::t1",  # measured, longest first
        "tests/b.py::t1",
        "tests/b.py::t2",
        "notebooks/n.ipynb::Cell 0",
        "notebooks/n.ipynb::Cell 1",
        "tests/d.py::t1",  # not measured: more tests first
        "tests/d.py::t2",
        "tests/d.py::t3",
        "tests/a.py::t1",
        "tests/a.py::t2",
    ]
    unmeasured = [Item(i) for i in ids]
    heaviest_files_first(unmeasured, {})  # type: ignore[arg-type]
    assert sorted(i.nodeid for i in unmeasured) == sorted(ids)  # nothing lost or doubled


def test_the_measurement_sums_each_files_wall_seconds(tmp_path: Path) -> None:
    rows = [
        ["tests/a.py::t1", 0.5, 2.0],
        ["tests/a.py::t2", 0.25, 3.0],
        ["notebooks/n.ipynb::Cell 0", 0.1, 7.5],
    ]
    (tmp_path / "cpu-1.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    cpu, files = merge(tmp_path)
    assert cpu == {"tests/a.py::t1": 0.5, "tests/a.py::t2": 0.25, "notebooks/n.ipynb::Cell 0": 0.1}
    assert files == {"tests/a.py": 5.0, "notebooks/n.ipynb": 7.5}


def test_make_suite_keeps_the_collection_order() -> None:
    """Without --no-loadscope-reorder pytest-xdist re-sorts files by their number of tests."""
    suite = re.search(r"^suite:.*?(?=^\S)", (ROOT / "Makefile").read_text(), re.M | re.S)
    assert suite is not None
    assert "--dist loadfile" in suite.group() and "--no-loadscope-reorder" in suite.group()
