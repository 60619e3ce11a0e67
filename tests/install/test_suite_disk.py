"""A pytest run of this suite leaves nothing on the disk but pytest's empty folders.

Before 27 November each run left its run directory (records, the notebooks' downloads) in
``/tmp/songlab-test-*`` and pytest kept its last three runs' ``tmp_path`` folders (about
1 GB each); with uv's cache that filled this machine's disk, and a CI run stopped at mypy.
Here a real pytest process runs a module of the suite that writes in ``tmp_path``, with
``TMPDIR`` pointing at an empty folder, which must hold no file afterwards.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_a_passing_run_leaves_no_file_behind(tmp_path: Path) -> None:
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    env = {**os.environ, "TMPDIR": str(scratch)}
    env.pop("PYTEST_XDIST_WORKER", None)
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "tests/test_localfiles.py",
            "-q",
            "-p",
            "no:cacheprovider",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    assert " passed" in run.stdout
    left = sorted(str(p.relative_to(scratch)) for p in scratch.rglob("*"))
    assert [p for p in left if (scratch / p).is_file()] == [], left
    assert not [p for p in left if p.startswith("songlab-")], left
