"""``songlab --version``: the installed version, on stdout, exit 0; in the usage too."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from songlab import cli

ROOT = Path(__file__).resolve().parents[2]


def _project_version() -> str:
    return str(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"])


@pytest.mark.parametrize("flag", ["--version", "-V"])
def test_version_prints_the_projects_version(flag: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main([flag]) == 0
    out, err = capsys.readouterr()
    assert out == f"songlab {_project_version()}\n" and err == ""


def test_the_usage_names_it(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["--help"]) == 0
    assert "songlab --version" in capsys.readouterr().out


@pytest.mark.slow
def test_the_installed_command_answers_it() -> None:
    script = Path(sys.executable).with_name("songlab")
    done = subprocess.run([script, "--version"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"songlab {_project_version()}"
