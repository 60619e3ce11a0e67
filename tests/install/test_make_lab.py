"""`make lab` as the user running the tests (root in CI): it starts, says where to open it, serves /lab.

The run goes through the Makefile itself (``make lab LAB_PORT=... LAB_BROWSER=no``), so
``--allow-root``, the port and the printed address are the ones a person gets. The printed
address (with its token) is the one fetched; JupyterLab and its kernels are stopped after.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.timeout(120)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_make_lab_starts_for_this_user_and_serves_lab(tmp_path: Path) -> None:
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    if not (ROOT / ".venv" / ".installed").exists():
        pytest.skip("make lab would first create .venv (minutes): run `make lab` once")
    port = _free_port()
    env = {
        **os.environ,
        "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime"),
        "JUPYTERLAB_WORKSPACES_DIR": str(tmp_path / "workspaces"),
        "JUPYTER_CONFIG_DIR": str(tmp_path / "config"),
        "PYTHONWARNINGS": "ignore",
    }
    log = tmp_path / "lab.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            ["make", "--no-print-directory", "lab", f"LAB_PORT={port}", "LAB_BROWSER=no"],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            url = None
            deadline = time.monotonic() + 90
            while time.monotonic() < deadline:
                text = log.read_text(errors="replace")
                found = re.search(rf"http://127\.0\.0\.1:{port}/lab\?token=\w+", text)
                if proc.poll() is not None:
                    pytest.fail(f"make lab exited with {proc.returncode}:\n{text[-3000:]}")
                if found:
                    url = found.group(0)
                    try:
                        r = httpx.get(url, timeout=3)
                        if r.status_code == 200:
                            break
                    except httpx.TransportError:
                        pass
                time.sleep(0.3)
            else:
                pytest.fail(
                    "make lab did not serve /lab within 90 s:\n"
                    + log.read_text(errors="replace")[-3000:]
                )
            assert url is not None and "JupyterLab" in r.text
            text = log.read_text(errors="replace")
            assert "open this address in a browser" in text
            assert "Running as root is not recommended" not in text
            # the token is needed: without it /lab sends the visitor to the login page
            anon = httpx.get(url.split("?")[0], timeout=3, follow_redirects=False)
            assert anon.status_code in (302, 303) and "login" in anon.headers["location"]
        finally:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(5)


def test_make_lab_on_a_fresh_checkout_first_makes_the_venv(tmp_path: Path) -> None:
    """On a machine with no .venv, `make lab` creates it and installs before starting (dry run)."""
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    for name in ("Makefile", "pyproject.toml", "setup.py"):
        shutil.copy(ROOT / name, tmp_path / name)
    shutil.copytree(ROOT / ".ci", tmp_path / ".ci")
    shutil.copytree(ROOT / "scripts", tmp_path / "scripts")
    out = subprocess.run(
        ["make", "-n", "lab", "LAB_BROWSER=no"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    steps = out.stdout
    made, installed, started = (
        steps.find("-m venv .venv"),
        steps.find("pip install"),
        steps.find("scripts/lab.py"),
    )
    assert -1 < made < installed < started, steps
