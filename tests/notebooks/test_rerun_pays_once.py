"""Re-running a notebook never bills again: 01, 02 and 05 run twice under papermill against
one sandbox process reached as the real service is (``SONGLAB_API_KEY`` /
``SONGLAB_BASE_URL``); the second pass creates nothing and the balance does not move. Then
05 with one parameter changed (``LICENSE``) makes exactly the creates that changed."""

from __future__ import annotations

import shutil
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import httpx
import pytest

from songlab import pricing

papermill = pytest.importorskip("papermill")

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ("01_quickstart", "02_voice_clone", "05_ab_listening")
ADMIN = "rerun-admin"


@pytest.fixture
def service(tmp_path):
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "songlab.sandbox",
            "--port",
            "0",
            "--db",
            str(tmp_path / "sb.db"),
            "--speed",
            "1000",
            "--admin-token",
            ADMIN,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        line = proc.stdout.readline()
        assert line.startswith("songlab sandbox listening on "), line
        yield line.rsplit(" ", 1)[1].strip()
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def _state(base_url):
    h = {"Authorization": "Bearer sk-sandbox-demo"}
    with httpx.Client(base_url=base_url, headers=h, timeout=30) as c:
        tasks, cursor = [], None
        while True:
            page = c.get(
                "/v1/generations", params={"limit": 100, **({"cursor": cursor} if cursor else {})}
            ).json()
            tasks += [t["task_id"] for t in page["data"]]
            cursor = page.get("next_cursor")
            if not cursor:
                break
        return set(tasks), c.get("/v1/account/balance").json()["total_effective"]


def _run(work, name, **params):
    out = work / f"{name}.ran.ipynb"
    papermill.execute_notebook(
        str(work / f"{name}.ipynb"),
        str(out),
        cwd=str(work),
        kernel_name="python3",
        progress_bar=False,
        log_output=False,
        parameters=params,
    )
    return out.read_text()


def test_second_pass_creates_nothing_and_a_changed_parameter_only_its_creates(
    service, tmp_path, monkeypatch
):
    work = tmp_path / "notebooks"
    work.mkdir()
    (tmp_path / "data").symlink_to(ROOT / "data")
    for name in NOTEBOOKS:
        shutil.copy(ROOT / "notebooks" / f"{name}.ipynb", work)
    monkeypatch.setenv("SONGLAB_API_KEY", "sk-sandbox-demo")
    monkeypatch.setenv("SONGLAB_BASE_URL", service)
    monkeypatch.setenv("SONGLAB_RECORD", str(tmp_path / "record.sqlite"))
    monkeypatch.delenv("SONGLAB_ORIGIN")  # each kernel names itself, as a user's does
    for name in NOTEBOOKS:
        _run(work, name)
    tasks1, balance1 = _state(service)
    assert len(tasks1) >= 15 and balance1 < 100000  # songs, a clone, takes: real spend
    texts = {name: _run(work, name) for name in NOTEBOOKS}
    tasks2, balance2 = _state(service)
    assert tasks2 == tasks1 and balance2 == balance1
    assert (
        "reused task" in texts["02_voice_clone"]
        and "$12 not spent again" in texts["02_voice_clone"]
    )
    # one parameter changed: the nine songs of 05 at another tier, nothing else
    _run(work, "05_ab_listening", LICENSE="standard")
    tasks3, balance3 = _state(service)
    assert len(tasks3 - tasks1) == 9 and tasks1 <= tasks3
    price = sum(pricing.price("generate_song", m, 2) for m in ("v5", "v6", "v7")) * 3
    assert Decimal(balance1 - balance3) / 100 == price
