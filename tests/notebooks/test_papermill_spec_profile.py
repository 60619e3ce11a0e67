"""The notebooks as a scheduler runs them, against what the spec shows, twice.

First pass: all 9 notebooks under papermill against one ``songlab sandbox --profile spec``
process, reached as the real service is (``SONGLAB_API_KEY``/``SONGLAB_BASE_URL``), a few
at a time, each in its own papermill process and kernel (each kernel names itself, as a
user's does): no cell raises on answers that carry only what the spec shows, and the cost
report's total is not zero.

Second pass, on the same service and the same record: re-running 01, 02 and 05 creates
nothing and the balance does not move; 02 says what it reused and what was not spent
again. Then 05 with one parameter changed (``LICENSE``) makes exactly the creates that
changed, at their list price. (Until 2026-11-26 the second pass was its own test with its
own default-profile sandbox, and ran 01, 02 and 05 a first time for itself: three notebook
runs more, for the same assertions on a service that showed more than the spec.)

Outputs are not compared (nbval does that against the default sandbox). The notebooks run
from a copy of ``notebooks/`` in a temporary directory (their ``out/`` files never meet
the nbval run's).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from pathlib import Path

import pytest

from songlab import pricing
from tests._profiles import ProfileSandbox, running

pytestmark = [pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
AGAIN = ("01_quickstart", "02_voice_clone", "05_ab_listening")
PARALLEL = 3  # papermill processes at once (each runs one kernel)
NOTEBOOK_TIMEOUT = 300


def _outputs_text(nb: dict) -> str:
    parts = []
    for cell in nb["cells"]:
        for out in cell.get("outputs", []):
            text = out.get("text") or (out.get("data") or {}).get("text/plain", "")
            parts.append("".join(text) if isinstance(text, list) else text)
    return "\n".join(parts)


def _errors(nb: dict) -> list[str]:
    return [
        f"cell {c.get('id')}: {o.get('ename')}: {o.get('evalue')}"
        for c in nb["cells"]
        for o in c.get("outputs", [])
        if o.get("output_type") == "error"
    ]


@dataclass
class Ran:
    name: str
    seconds: float
    stderr: str
    notebook: dict | None

    def failure(self) -> str | None:
        if self.notebook is None:
            return f"{self.name}: no output notebook\n{self.stderr}"
        if errs := _errors(self.notebook):
            return f"{self.name}: {errs}"
        return None


@dataclass
class FirstPass:
    sandbox: ProfileSandbox
    results: list[Ran]
    run: Callable[..., Ran]


@pytest.fixture(scope="module")
def first_pass(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FirstPass]:
    pytest.importorskip("papermill")
    tmp = tmp_path_factory.mktemp("papermill-spec")
    work = tmp / "repo"
    (work / "notebooks").mkdir(parents=True)
    (work / "data").symlink_to(ROOT / "data")
    for nb in NOTEBOOKS:
        shutil.copy(nb, work / "notebooks" / nb.name)
    sb = running("spec")
    env = {
        **{k: v for k, v in os.environ.items() if k != "SONGLAB_ORIGIN"},
        **sb.env(SONGLAB_RECORD=str(tmp / "record.sqlite")),
        "MPLBACKEND": "Agg",
    }
    runs = iter(range(1_000_000))

    def run(name: str, **params: str) -> Ran:
        out = tmp / f"ran-{next(runs)}-{name}.ipynb"
        started = time.monotonic()
        proc = subprocess.run(
            [
                sys.executable, "-m", "papermill",
                str(work / "notebooks" / f"{name}.ipynb"), str(out),
                "--cwd", str(work / "notebooks"), "-k", "python3", "--no-progress-bar",
                "--execution-timeout", str(NOTEBOOK_TIMEOUT),
                *(a for k, v in params.items() for a in ("-p", k, v)),
            ],
            env=env, capture_output=True, text=True, timeout=NOTEBOOK_TIMEOUT + 60,
        )  # fmt: skip
        ran = json.loads(out.read_text(encoding="utf-8")) if out.exists() else None
        return Ran(name, time.monotonic() - started, proc.stderr[-3000:], ran)

    started = time.monotonic()
    try:
        with ThreadPoolExecutor(PARALLEL) as pool:
            results = list(pool.map(run, (nb.stem for nb in NOTEBOOKS)))
        took = {r.name: round(r.seconds, 1) for r in results}
        print(f"papermill, spec profile: {time.monotonic() - started:.1f} s wall, {took}")
        yield FirstPass(sb, results, run)
    finally:
        sb.stop()


@pytest.mark.timeout(900)
def test_every_notebook_runs_on_what_the_spec_shows(first_pass: FirstPass) -> None:
    results = first_pass.results
    failures = [f for r in results if (f := r.failure())]
    assert not failures, "\n\n".join(failures)
    assert len(results) == 9  # 01-09
    report = next(r.notebook for r in results if r.name == "03_cost_report")
    assert report is not None
    # printed to the cent, as every printed amount is: "total spent: $1,234.56 over 9 tasks"
    found = re.search(r"total spent: \$(\S+) over \d+ tasks", _outputs_text(report))
    assert found, "03_cost_report printed no total"
    try:
        total = Decimal(found.group(1).replace(",", ""))
    except InvalidOperation:
        pytest.fail(f"03_cost_report's total is not an amount: {found.group(1)!r}")
    assert total > 0, f"03_cost_report says the work cost {total}: an unknown cost shown as 0"


def _state(sb: ProfileSandbox) -> tuple[set[str], int]:
    """Every task id of the demo account, and its balance (cents)."""
    with sb.http() as c:
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


@pytest.mark.timeout(900)
def test_a_second_pass_creates_nothing_and_a_changed_parameter_only_its_creates(
    first_pass: FirstPass,
) -> None:
    failed = [f for r in first_pass.results if r.name in AGAIN and (f := r.failure())]
    assert not failed, "the first pass failed:\n" + "\n\n".join(failed)
    sb = first_pass.sandbox
    tasks1, balance1 = _state(sb)
    assert len(tasks1) >= 15 and balance1 < 100000  # songs, a clone, takes: real spend
    with ThreadPoolExecutor(PARALLEL) as pool:
        again = {r.name: r for r in pool.map(first_pass.run, AGAIN)}
    failures = [f for r in again.values() if (f := r.failure())]
    assert not failures, "\n\n".join(failures)
    tasks2, balance2 = _state(sb)
    assert tasks2 == tasks1 and balance2 == balance1
    clone = _outputs_text(again["02_voice_clone"].notebook or {"cells": []})
    assert "reused task" in clone and "$12 not spent again" in clone, clone[-2000:]
    # one parameter changed: the nine songs of 05 at another tier, nothing else (a tier no
    # notebook used for them: 08 makes 05's songs at "standard", and the record re-attaches
    # those, as it should)
    changed = first_pass.run("05_ab_listening", LICENSE="distribution")
    assert changed.failure() is None, changed.failure()
    tasks3, balance3 = _state(sb)
    assert len(tasks3 - tasks1) == 9 and tasks1 <= tasks3
    price = sum(pricing.price("generate_song", m, 3) for m in ("v5", "v6", "v7")) * 3
    assert Decimal(balance1 - balance3) / 100 == price
