"""All 8 notebooks under papermill against one ``songlab sandbox --profile spec`` process,
reached as the real service is (``SONGLAB_API_KEY``/``SONGLAB_BASE_URL``): no cell raises
on answers that carry only what the spec shows, and the cost report's total is not zero.

Outputs are not compared (nbval does that against the default sandbox). The notebooks run
from a copy of ``notebooks/`` in a temporary directory (their ``out/`` files never meet
the nbval run's), a few at a time, each in its own papermill process.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal, InvalidOperation
from pathlib import Path

import pytest

from tests._profiles import running

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
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


@pytest.mark.timeout(900)
def test_every_notebook_runs_on_what_the_spec_shows(tmp_path: Path) -> None:
    pytest.importorskip("papermill")
    work = tmp_path / "repo"
    (work / "notebooks").mkdir(parents=True)
    (work / "data").symlink_to(ROOT / "data")
    for nb in NOTEBOOKS:
        shutil.copy(nb, work / "notebooks" / nb.name)
    sb = running("spec")
    env = {
        **os.environ,
        **sb.env(SONGLAB_RECORD=str(tmp_path / "record.sqlite")),
        "MPLBACKEND": "Agg",
    }

    def run(nb: Path) -> tuple[str, float, str, dict | None]:
        out = tmp_path / f"ran-{nb.name}"
        started = time.monotonic()
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "papermill",
                str(work / "notebooks" / nb.name),
                str(out),
                "--cwd",
                str(work / "notebooks"),
                "-k",
                "python3",
                "--no-progress-bar",
                "--execution-timeout",
                str(NOTEBOOK_TIMEOUT),
            ],
            env=env,
            capture_output=True,
            text=True,
            timeout=NOTEBOOK_TIMEOUT + 60,
        )
        ran = json.loads(out.read_text(encoding="utf-8")) if out.exists() else None
        return nb.stem, time.monotonic() - started, proc.stderr[-3000:], ran

    started = time.monotonic()
    try:
        with ThreadPoolExecutor(PARALLEL) as pool:
            results = list(pool.map(run, NOTEBOOKS))
    finally:
        sb.stop()
    took = {name: round(s, 1) for name, s, _, _ in results}
    print(f"papermill, spec profile: {time.monotonic() - started:.1f} s wall, per notebook {took}")
    failures = []
    for name, _, stderr, ran in results:
        if ran is None:
            failures.append(f"{name}: no output notebook\n{stderr}")
        elif errs := _errors(ran):
            failures.append(f"{name}: {errs}")
    assert not failures, "\n\n".join(failures)
    assert len(results) == 8
    report = next(ran for name, _, _, ran in results if name == "03_cost_report")
    assert report is not None
    # printed to the cent, as every printed amount is: "total spent: $1,234.56 over 9 tasks"
    found = re.search(r"total spent: \$(\S+) over \d+ tasks", _outputs_text(report))
    assert found, "03_cost_report printed no total"
    try:
        total = Decimal(found.group(1).replace(",", ""))
    except InvalidOperation:
        pytest.fail(f"03_cost_report's total is not an amount: {found.group(1)!r}")
    assert total > 0, f"03_cost_report says the work cost {total}: an unknown cost shown as 0"
