"""songlab as a user gets it: a wheel built by `uv build` (sdist, then the wheel from it), installed into a fresh venv
in a temp directory outside the checkout, used only through its console script.

One module-scoped venv (seconds with uv: built, made and installed), then each test
runs a command a user would: `songlab sandbox` (its start line), `songlab report --demo`,
`songlab notebooks DIR` and nbval on the copied quickstart. Nothing may come from the
checkout: the venv has no path to it and every command runs in the temp directory.
"""

from __future__ import annotations

import concurrent.futures
import os
import re
import signal
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from songlab.notebooks import checkout_files

pytestmark = [pytest.mark.slow, pytest.mark.every_python]  # FAST_SUBSET runs it on each Python

ROOT = Path(__file__).resolve().parents[2]
UV = str(Path(sys.executable).with_name("uv"))  # from songlab[test-core]
START_LINE = re.compile(r"songlab sandbox listening on (http://127\.0\.0\.1:\d+)$")


@dataclass(frozen=True)
class Installed:
    wheel: Path
    venv: Path
    home: Path  # the working directory of every command: a temp dir, not the checkout
    env: dict[str, str]

    def bin(self, name: str) -> str:
        return str(self.venv / "bin" / name)

    def run(self, *args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            args,
            cwd=self.home,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )
        assert done.returncode == 0, (
            f"{args} exited {done.returncode}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        )
        return done


def _clean_env(venv: Path) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k
        not in {
            "PYTHONPATH",
            "PYTHONHOME",
            "VIRTUAL_ENV",
            "JUPYTER_PATH",
            "JUPYTER_DATA_DIR",
            "SONGLAB_API_KEY",
            "SONGLAB_BASE_URL",
            "SONGLAB_SANDBOX_ADMIN_TOKEN",
            # a user's shell writes .pyc: the first command compiles what it imports, the
            # next ones reuse it (with the variable set, `songlab report --demo` took 44 s)
            "PYTHONDONTWRITEBYTECODE",
        }
    }
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["VIRTUAL_ENV"] = str(venv)
    env["PYTHONUNBUFFERED"] = "1"
    return env


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    base = tmp_path_factory.mktemp("wheel")
    assert ROOT not in base.parents, "the install must live outside the checkout"
    dist = base / "dist"
    # uv builds the sdist first, then the wheel from the sdist: MANIFEST.in and setup.py are
    # both exercised (as `python -m build` does, in seconds rather than minutes)
    build = subprocess.run(
        [UV, "build", "--quiet", "--out-dir", str(dist), str(ROOT)],
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )
    assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]
    assert len(list(dist.glob("songlab-*.tar.gz"))) == 1, "no sdist was built"
    (wheel,) = dist.glob("songlab-*.whl")
    venv = base / "venv"
    subprocess.run(
        [UV, "venv", "--quiet", "--python", sys.executable, str(venv)], check=True, timeout=120
    )
    home = base / "home"
    home.mkdir()
    inst = Installed(wheel, venv, home, _clean_env(venv))
    # songlab and nbval (which brings pytest); the kernel is ipykernel from songlab[test-core]
    inst.run(
        UV,
        "pip",
        "install",
        "--quiet",
        "--python",
        inst.bin("python"),
        f"{wheel}[test-core]",
        timeout=600,
    )
    return inst


def test_installed_outside_the_checkout(installed: Installed) -> None:
    names = set(zipfile.ZipFile(installed.wheel).namelist())
    expected = {f"songlab/_lab/{rel}" for rel in checkout_files(ROOT)}
    assert expected <= names, sorted(expected - names)
    assert "songlab/py.typed" in names
    where = installed.run(
        installed.bin("python"),
        "-c",
        "import songlab, sys; print(songlab.__file__); print(sys.prefix)",
    ).stdout
    module, prefix = where.split()
    assert Path(module).is_relative_to(installed.venv), module
    assert not Path(module).is_relative_to(ROOT)
    assert Path(prefix) == installed.venv


def test_songlab_sandbox_prints_its_start_line(installed: Installed) -> None:
    proc = subprocess.Popen(
        [installed.bin("songlab"), "sandbox", "--port", "0", "--db", ":memory:"],
        cwd=installed.home,
        env=installed.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
    )
    try:
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            first = pool.submit(proc.stdout.readline).result(timeout=60).strip()
            second = pool.submit(proc.stdout.readline).result(timeout=10).strip()
        match = START_LINE.match(first)
        assert match, f"first line {first!r}"
        assert second.startswith("admin token: ")
        health = httpx.get(f"{match.group(1)}/health", timeout=10)
        assert health.status_code == 200
        tools = httpx.get(
            f"{match.group(1)}/v1/tools",
            timeout=10,
            headers={"Authorization": "Bearer sk-sandbox-demo"},
        )
        assert tools.status_code == 200 and len(tools.json()["data"]) > 10
    finally:
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(30)
        proc.stdout.close()
        proc.stderr.close()
    assert code == 0


def test_songlab_report_demo_writes_the_report(installed: Installed) -> None:
    out = installed.home / "report.html"
    # a week of the demo (--demo-days): the whole path (sandbox, ledger, pandas, pyarrow,
    # matplotlib) in a fifth of the six weeks' time, on each Python
    done = installed.run(
        installed.bin("songlab"), "report", "--demo", "--demo-days", "7", "--out", str(out)
    )
    document = out.read_text(encoding="utf-8")
    assert document.startswith("<!doctype html>")
    assert "Spend by operation" in document and "Tier comparison" in document
    assert document.count('src="data:image/png;base64,') >= 1
    assert not re.search(r'(src|href)="(https?:)?//', document), "the report must be self-contained"
    assert "sk-sandbox-demo" not in document + done.stdout + done.stderr


def test_songlab_notebooks_then_nbval_on_the_copied_quickstart(installed: Installed) -> None:
    done = installed.run(installed.bin("songlab"), "notebooks", "my-lab")
    assert "next: jupyter lab my-lab" in done.stdout
    lab = installed.home / "my-lab"
    copied = sorted(p.relative_to(lab).as_posix() for p in lab.rglob("*") if p.is_file())
    assert copied == [str(rel) for rel in checkout_files(ROOT)]
    for rel in copied:  # byte for byte what the checkout has, and real files (no links)
        assert not (lab / rel).is_symlink()
        assert (lab / rel).read_bytes() == (ROOT / rel).read_bytes(), rel
    # a second run refuses rather than overwrite a user's edits
    again = subprocess.run(
        [installed.bin("songlab"), "notebooks", "my-lab"],
        cwd=installed.home,
        env=installed.env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert again.returncode == 1 and "--force" in again.stderr
    # the quickstart reads ../data/voice_female.mp3: inside my-lab, far from the checkout
    nb = lab / "notebooks" / "01_quickstart.ipynb"
    result = installed.run(
        installed.bin("python"),
        "-m",
        "pytest",
        str(nb),
        "--nbval",
        "--nbval-sanitize-with",
        str(lab / "notebooks" / "sanitize.cfg"),
        "-p",
        "no:cacheprovider",
        "-q",
        timeout=300,
    )
    assert re.search(r"\b\d+ passed\b", result.stdout) and "failed" not in result.stdout, (
        result.stdout
    )
    assert (lab / "notebooks" / "out").is_dir(), "the notebook writes next to itself, in my-lab"
