""".ci/pythons, which the Makefile asks for the interpreter of .venv and of the fast subsets.

Each test builds a PATH of its own: links to the interpreter running the tests, shims that
exist but fail (as pyenv's do for versions it has not selected), and the few tools the
script needs, so the machine's own Pythons cannot leak in.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / ".ci" / "pythons"
TEST_PYTHONS = ROOT / ".ci" / "test-pythons"
HERE = f"{sys.version_info[0]}.{sys.version_info[1]}"
TOOLS = ("bash", "cat", "head", "sort", "ls", "dirname", "timeout")


def _bin(tmp_path: Path) -> Path:
    path = tmp_path / "bin"
    path.mkdir()
    for tool in TOOLS:
        found = shutil.which(tool)
        assert found, tool
        (path / tool).symlink_to(found)
    return path


def _shim(path: Path, name: str) -> None:
    (path / name).write_text(
        f'#!/bin/sh\necho "pyenv: {name}: command not found" >&2\nexit 127\n', encoding="utf-8"
    )
    (path / name).chmod(0o755)


def _run(path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": str(path),
        "HOME": os.environ.get("HOME", "/root"),
        "PYTHONS_SYSTEM_DIRS": str(path),
    }  # not /usr/bin: only what the test put there
    return subprocess.run(
        ["bash", str(SCRIPT), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        executable=shutil.which("bash"),
    )


def test_newest_runs_each_candidate_instead_of_trusting_the_path(tmp_path: Path) -> None:
    path = _bin(tmp_path)
    for minor in ("3.13", "3.12", "3.11"):
        if minor != HERE:
            _shim(path, f"python{minor}")  # on the PATH, but it does not run
    (path / f"python{HERE}").symlink_to(sys.executable)
    done = _run(path, "newest")
    assert done.returncode == 0, done.stderr
    version, exe = done.stdout.split()
    assert version == HERE
    assert Path(exe).parent == path and Path(exe).name == f"python{HERE}"


def test_no_supported_python_says_what_to_install(tmp_path: Path) -> None:
    path = _bin(tmp_path)
    for name in ("python3.13", "python3.12", "python3.11", "python3", "python"):
        _shim(path, name)
    done = _run(path, "newest")
    assert done.returncode == 1 and done.stdout == ""
    assert "no Python 3.11, 3.12 or 3.13 on the PATH" in done.stderr
    assert "pyenv install 3.13" in done.stderr and "make test PYTHON=" in done.stderr


def test_a_python_pyenv_has_but_not_on_the_path_is_named(tmp_path: Path) -> None:
    path = _bin(tmp_path)
    root = tmp_path / "pyenv"
    version_bin = root / "versions" / f"{HERE}.99" / "bin"
    version_bin.mkdir(parents=True)
    (version_bin / f"python{HERE}").symlink_to(sys.executable)
    (path / "pyenv").write_text(f'#!/bin/sh\n[ "$1" = root ] && echo {root}\n', encoding="utf-8")
    (path / "pyenv").chmod(0o755)
    done = _run(path, "newest")
    assert done.returncode == 1
    assert f"pyenv has {version_bin / f'python{HERE}'} but it is not on the PATH" in done.stderr
    # ...and `all` finds it for the fast subsets, with a reason for each version it lacks
    listed = dict(line.split(" ", 1) for line in _run(path, "all").stdout.splitlines())
    assert list(listed) == ["3.13", "3.12", "3.11"]
    assert listed[HERE] == str(version_bin / f"python{HERE}")
    for minor, what in listed.items():
        if minor != HERE:
            assert what.startswith("- not found"), what


def test_check_names_what_is_wrong(tmp_path: Path) -> None:
    path = _bin(tmp_path)
    _shim(path, "python3.12")
    done = _run(path, "check", str(path / "python3.12"))
    assert done.returncode == 1 and "does not run" in done.stderr
    ok = _run(path, "check", sys.executable)
    assert ok.returncode == 0 and ok.stdout.split() == [HERE, sys.executable]
    old = _an_old_python()
    if old is None:
        pytest.skip("no Python older than 3.11 runs on this machine: no 'unsupported' case to show")
    done = _run(path, "check", old)
    said = re.search(r"is Python 3\.(\d+)\n", done.stderr)
    assert done.returncode == 1 and said and int(said.group(1)) < 11, done.stderr
    assert "songlab needs Python 3.11, 3.12 or 3.13" in done.stderr


def _an_old_python() -> str | None:
    """A Python 3.6-3.10 that really runs (pyenv's versions or the PATH), else None."""
    pyenv = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    found = [str(p) for p in sorted(pyenv.glob("3.*/bin/python3"))]
    found += [w for m in range(6, 11) if (w := shutil.which(f"python3.{m}"))]
    for exe in found:
        probe = subprocess.run(
            [exe, "-c", "import sys; print(sys.version_info[1])"],
            capture_output=True,
            text=True,
            timeout=30,
        )
        if probe.returncode == 0 and int(probe.stdout) < 11:
            return exe
    return None


def test_the_fast_subset_runner_reports_what_it_skipped(tmp_path: Path) -> None:
    env = {**os.environ, "OTHER_PYTHONS": "none"}
    done = subprocess.run(
        ["bash", str(TEST_PYTHONS), HERE, sys.executable, "--", "--version"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert f"Python {HERE}: full suite (.venv, {sys.executable})" in done.stdout
    assert "skipped: every other Python (OTHER_PYTHONS=none)" in done.stdout
    path = _bin(tmp_path)
    _shim(path, "python3.12")
    env["OTHER_PYTHONS"] = str(path / "python3.12")
    done = subprocess.run(
        ["bash", str(TEST_PYTHONS), HERE, sys.executable, "--", "--version"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert f"{path / 'python3.12'} cannot be used" in done.stdout
