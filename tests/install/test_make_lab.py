"""`make lab` as the user running the tests (root in CI): it starts, says where to open it, serves /lab.

The run goes through the Makefile itself (``make lab LAB_PORT=... LAB_BROWSER=no``), so
``--allow-root``, the port and the printed address are the ones a person gets. The printed
address (with its token) is the one fetched; JupyterLab and its kernels are stopped after.

It restarts at once on the same port after a browser's keep-alive connections were closed
by the server (they sit in TIME-WAIT, which the kernel's table shows), and a port where a
program really listens is refused with a free one suggested.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.timeout(120)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _needs_make() -> None:
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    if not (ROOT / ".venv" / ".installed").exists():
        pytest.skip("make lab would first create .venv (minutes): run `make lab` once")


@pytest.fixture
def runtime() -> Iterator[str]:
    """A short runtime dir, as a user's is (~/.local/share/jupyter/runtime): a kernel's IPC
    socket path must fit in 107 bytes, and pytest's tmp_path is longer."""
    path = tempfile.mkdtemp(prefix="sl-rt-", dir="/tmp" if os.path.isdir("/tmp") else None)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _env(tmp_path: Path, runtime: str) -> dict[str, str]:
    return {
        **os.environ,
        "JUPYTER_RUNTIME_DIR": runtime,
        "JUPYTERLAB_WORKSPACES_DIR": str(tmp_path / "workspaces"),
        "JUPYTER_CONFIG_DIR": str(tmp_path / "config"),
        "JUPYTER_DATA_DIR": str(tmp_path / "data"),
        "PYTHONWARNINGS": "ignore",
    }


def _start(port: int, env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("ab") as out:
        return subprocess.Popen(
            ["make", "--no-print-directory", "lab", f"LAB_PORT={port}", "LAB_BROWSER=no"],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def _serving(proc: subprocess.Popen[bytes], port: int, log: Path, start: int = 0) -> str:
    """Wait for the printed address (in the log after byte ``start``) to serve /lab."""
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        text = log.read_bytes()[start:].decode(errors="replace")
        found = re.search(rf"http://127\.0\.0\.1:{port}/lab\?token=\w+", text)
        if proc.poll() is not None:
            pytest.fail(f"make lab exited with {proc.returncode}:\n{text[-3000:]}")
        if found:
            try:
                r = httpx.get(found.group(0), timeout=3)
                if r.status_code == 200 and "JupyterLab" in r.text:
                    return found.group(0)
            except httpx.TransportError:
                pass
        time.sleep(0.3)
    pytest.fail(
        "make lab did not serve /lab within 90 s:\n" + log.read_text(errors="replace")[-3000:]
    )


def _stop(proc: subprocess.Popen[bytes], port: int | None = None) -> None:
    """Stop make and JupyterLab (its group); with ``port``, wait until JupyterLab is gone
    (make exits at once, JupyterLab shuts down after it)."""
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(20)
    except ProcessLookupError:
        pass
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(5)
    deadline = time.monotonic() + 30
    while port is not None and _sockets(port, "0A", "01", "08") and time.monotonic() < deadline:
        time.sleep(0.1)
    if port is not None and _sockets(port, "0A"):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)


def test_make_lab_starts_for_this_user_and_serves_lab(tmp_path: Path, runtime: str) -> None:
    _needs_make()
    port = _free_port()
    log, env = tmp_path / "lab.log", _env(tmp_path, runtime)
    proc = _start(port, env, log)
    try:
        url = _serving(proc, port, log)
        text = log.read_text(errors="replace")
        assert "open this address in a browser" in text
        assert "Running as root is not recommended" not in text
        assert "notebooks marked trusted" in text
        # the token is needed: without it /lab sends the visitor to the login page
        anon = httpx.get(url.split("?")[0], timeout=3, follow_redirects=False)
        assert anon.status_code in (302, 303) and "login" in anon.headers["location"]
        base, token = url.split("/lab")[0], url.split("token=")[1]
        # the notebooks open trusted: their saved widget views render before they are run
        nb = httpx.get(f"{base}/api/contents/01_quickstart.ipynb", params={"token": token})
        cells = nb.json()["content"]["cells"]
        assert all(c["metadata"].get("trusted") for c in cells if c["cell_type"] == "code")
        # a kernel starts over local sockets and answers: no "over TCP without encryption"
        auth = {"Authorization": f"token {token}"}  # a POST with the token in its header
        made = httpx.post(f"{base}/api/kernels", headers=auth, json={}, timeout=30)
        assert made.status_code == 201, made.text
        connection = Path(env["JUPYTER_RUNTIME_DIR"]) / f"kernel-{made.json()['id']}.json"
        deadline = time.monotonic() + 60
        while not connection.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        info = json.loads(connection.read_text())
        assert info["transport"] == "ipc", info["transport"]
        from jupyter_client import BlockingKernelClient

        kc = BlockingKernelClient()
        kc.load_connection_info(info)
        kc.start_channels()
        try:
            kc.kernel_info()
            assert kc.get_shell_msg(timeout=90)["content"]["status"] == "ok"
            kc.execute("6 * 7")
            assert kc.get_shell_msg(timeout=60)["content"]["status"] == "ok"
        finally:
            kc.stop_channels()
        text = log.read_text(errors="replace")
        assert "without encryption" not in text and "Traceback" not in text, text[-3000:]
    finally:
        _stop(proc)


def _sockets(port: int, *states: str) -> int:
    """Sockets whose local port is ``port`` in one of ``states`` (/proc/net/tcp codes: 0A
    listening, 01 established, 08 close-wait, 06 TIME-WAIT); 0 where there is no /proc."""
    n = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if int(fields[1].rsplit(":", 1)[1], 16) == port and fields[3] in states:
                n += 1
    return n


def test_make_lab_restarts_at_once_on_its_port_after_a_browser_was_served(
    tmp_path: Path, runtime: str
) -> None:
    """A browser keeps connections open (keep-alive); JupyterLab is stopped, so the server
    closes them and they wait in TIME-WAIT on its port. `make lab` on that port at once
    starts and serves."""
    _needs_make()
    if not Path("/proc/net/tcp").exists():
        pytest.skip("needs Linux's /proc/net/tcp to see TIME-WAIT")
    port = _free_port()
    env, log = _env(tmp_path, runtime), tmp_path / "lab.log"
    proc = _start(port, env, log)
    browser = httpx.Client(timeout=5, limits=httpx.Limits(max_keepalive_connections=8))
    try:
        url = _serving(proc, port, log)
        base = url.split("/lab")[0]
        token = url.split("token=")[1]
        with ThreadPoolExecutor(6) as pool:  # a page load: several connections kept alive
            list(
                pool.map(
                    lambda p: browser.get(f"{base}{p}?token={token}"), ["/lab", "/api/status"] * 6
                )
            )
    finally:
        _stop(proc, port)  # JupyterLab goes: it closes the browser's idle connections first
    browser.close()
    waiting = _sockets(port, "06")  # the closing side's end of each waits in TIME-WAIT
    assert waiting > 0, "no connection in TIME-WAIT: the test would prove nothing"
    mark = log.stat().st_size
    again = _start(port, env, log)
    try:
        _serving(again, port, log, start=mark)
        assert "is in use" not in log.read_bytes()[mark:].decode(errors="replace")
    finally:
        _stop(again)


def test_a_port_really_taken_is_refused_with_a_free_one_suggested(
    tmp_path: Path, runtime: str
) -> None:
    _needs_make()
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        out = subprocess.run(
            ["make", "--no-print-directory", "lab", f"LAB_PORT={port}", "LAB_BROWSER=no"],
            cwd=ROOT,
            env=_env(tmp_path, runtime),
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert out.returncode != 0
    message = out.stdout + out.stderr
    assert f"port {port} is in use" in message, message
    suggested = int(re.search(r"a free one: make lab LAB_PORT=(\d+)", message).group(1))
    assert suggested != port
    with socket.socket() as probe:  # the suggestion really is free
        probe.bind(("127.0.0.1", suggested))


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
