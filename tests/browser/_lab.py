"""JupyterLab for the browser tests: a running Lab on a copy of notebooks/, and its menus.

``running_lab(tmp_path, extra_env)`` starts JupyterLab on a free loopback port with a random
token, its root a temp copy of ``notebooks/`` (plus this folder's fixture notebooks and
``data/`` beside it), each notebook trusted as ``make lab`` marks them, and yields (the
notebook URL with the token, the notebook's name). ``menu(page, "Run", "Run All Cells")``
clicks a menu item.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from tests.browser._chromium import CHROMIUM

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
QUICKSTART = ("01_quickstart.ipynb", "quickstart.ipynb")
# what a notebook must do for the quickstart test's checks to apply to it
NEEDED = ("GenerationForm", "ClonePanel", "attestation")


def notebook_to_open(root: Path) -> str:
    for name in QUICKSTART:
        path = root / name
        if path.is_file():
            text = path.read_text(encoding="utf-8")
            if all(word in text for word in NEEDED):
                return name
    return "lab_smoke.ipynb"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _lab_root(tmp_path: Path) -> tuple[Path, str]:
    """A copy of notebooks/ (and data/ beside it, this folder's fixture notebooks in it):
    (its folder, the notebook to open)."""
    root = tmp_path / "notebooks"
    if (ROOT / "notebooks").is_dir():
        shutil.copytree(ROOT / "notebooks", root, ignore=shutil.ignore_patterns("out"))
    else:
        root.mkdir()
    if (ROOT / "data").is_dir():  # notebooks read ../data/ fixtures
        shutil.copytree(ROOT / "data", tmp_path / "data")
    for fixture in HERE.glob("*.ipynb"):  # lab_smoke, listening_panel, clone_song
        shutil.copy(fixture, root / fixture.name)
    name = notebook_to_open(root)
    assert "kernelspec" in json.loads((root / name).read_text(encoding="utf-8"))["metadata"]
    return root, name


def _lab_env(state: Path, root: Path, extra_env: dict[str, str] | None) -> dict[str, str]:
    """Jupyter's folders under ``state`` (the notebooks trusted there), no real service."""
    trust(root, state / "data")
    env = {
        **os.environ,
        "JUPYTER_RUNTIME_DIR": str(state / "runtime"),
        "JUPYTERLAB_WORKSPACES_DIR": str(state / "workspaces"),
        "JUPYTERLAB_SETTINGS_DIR": str(state / "settings"),
        "JUPYTER_CONFIG_DIR": str(state / "config"),
        "JUPYTER_DATA_DIR": str(state / "data"),
        "PYTHONWARNINGS": "ignore",
    }
    env.pop("SONGLAB_API_KEY", None)
    env.pop("SONGLAB_BASE_URL", None)
    env.update(extra_env or {})
    return env


@contextmanager
def running_lab(
    tmp_path: Path, extra_env: dict[str, str] | None = None
) -> Iterator[tuple[str, str]]:
    """A running JupyterLab: (base URL with token query, notebook name). Its root is a copy
    of notebooks/ (plus this folder's fixture notebooks), each marked trusted as `make lab`
    marks them, so saved outputs and widget views render when a notebook is opened."""
    if not CHROMIUM.exists():
        pytest.skip("browser test: /usr/bin/chromium is absent (make browser-deps installs it)")
    pytest.importorskip("playwright.sync_api", reason="browser test: playwright is not installed")
    root, name = _lab_root(tmp_path)
    port, token = free_port(), secrets.token_hex(16)
    env = _lab_env(tmp_path / "jupyter", root, extra_env)
    log = (tmp_path / "lab.log").open("wb")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "jupyterlab",
            "--no-browser",
            "--ServerApp.ip=127.0.0.1",
            f"--ServerApp.port={port}",
            "--ServerApp.port_retries=0",
            f"--IdentityProvider.token={token}",
            f"--ServerApp.root_dir={root}",
            "--LabApp.extension_manager=readonly",
            "--log-level=WARN",
            *(["--allow-root"] if os.geteuid() == 0 else []),
        ],
        cwd=root,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            if proc.poll() is not None:
                pytest.fail(
                    "JupyterLab exited early:\n"
                    + (tmp_path / "lab.log").read_text(errors="replace")[-3000:]
                )
            try:
                if httpx.get(f"{base}/api/status", params={"token": token}, timeout=2).is_success:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                pytest.fail("JupyterLab did not answer within 60 s")
            time.sleep(0.3)
        yield f"{base}/lab/tree/{name}?token={token}", name
    finally:
        try:
            os.killpg(proc.pid, signal.SIGTERM)  # Lab and the kernels it started
            proc.wait(15)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(5)
        log.close()


def trust(root: Path, data_dir: Path) -> None:
    from nbformat import read
    from nbformat.sign import NotebookNotary

    data_dir.mkdir(parents=True, exist_ok=True)
    notary = NotebookNotary(data_dir=str(data_dir))
    for path in root.glob("*.ipynb"):
        notary.sign(read(path, as_version=4))


def menu(page: object, menu: str, item: str) -> None:
    page.locator(".lm-MenuBar-itemLabel", has_text=menu).first.click()  # type: ignore[attr-defined]
    page.locator(".lm-Menu-itemLabel", has_text=item).first.click()  # type: ignore[attr-defined]


def run_all(page: object, *, tries: int = 3, started_within: int = 30_000) -> None:
    """Run All Cells from the Run menu, and see that it started: a code cell's prompt showed
    ``[*]`` after the click (a MutationObserver sees it, however briefly; the numbers a
    committed notebook already shows prove nothing). A click that JupyterLab swallowed (a
    notification toast or the news question appearing under the pointer, the kernel still
    starting) is made again."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    watch = """() => {
      window.__runAllStarted = false;
      const seen = () => {
        if (Array.from(document.querySelectorAll('.jp-InputPrompt'))
              .some(p => p.textContent.includes('[*]'))) window.__runAllStarted = true;
      };
      if (window.__runAllObserver) window.__runAllObserver.disconnect();
      window.__runAllObserver = new MutationObserver(seen);
      window.__runAllObserver.observe(document.body,
        {subtree: true, childList: true, characterData: true});
    }"""
    page.evaluate(watch)  # type: ignore[attr-defined]
    for attempt in range(tries):
        menu(page, "Run", "Run All Cells")
        try:
            page.wait_for_function(  # type: ignore[attr-defined]
                "() => window.__runAllStarted", timeout=started_within
            )
            return
        except PlaywrightTimeout:
            if attempt == tries - 1:
                raise
