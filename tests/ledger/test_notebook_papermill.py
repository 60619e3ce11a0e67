"""notebooks/03_cost_report.ipynb runs under papermill with other parameters, and they show.

papermill (a tool nobody here wrote) injects the parameters after the cell tagged
``parameters``; the run uses another period, another tier list, another budget and
another output path, and each shows in the outputs, against the committed defaults.
"""

from __future__ import annotations

import json
import shutil
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from songlab import pricing

pytestmark = pytest.mark.slow  # papermill runs a notebook in a kernel

papermill = pytest.importorskip("papermill")

NOTEBOOK = Path(__file__).resolve().parents[2] / "notebooks" / "03_cost_report.ipynb"


def _stdout(nb: dict[str, Any]) -> str:
    return "".join(
        "".join(o.get("text", ""))
        for c in nb["cells"]
        if c["cell_type"] == "code"
        for o in c.get("outputs", [])
        if o.get("output_type") == "stream"
    )


def test_the_parameters_cell_is_tagged() -> None:
    nb = json.loads(NOTEBOOK.read_text())
    tagged = [c for c in nb["cells"] if "parameters" in c["metadata"].get("tags", [])]
    assert len(tagged) == 1
    src = "".join(tagged[0]["source"])
    for name in ("PERIOD", "DATE_FROM", "DATE_TO", "TIERS", "BUDGET", "OUTPUT_PATH"):
        assert f"\n{name} = " in f"\n{src}", name


def test_papermill_runs_it_with_other_parameters(tmp_path: Path) -> None:
    work = tmp_path / "notebooks"
    work.mkdir()
    shutil.copy(NOTEBOOK, work / NOTEBOOK.name)
    params = {
        "PERIOD": "2020-01",
        "TIERS": ["sync", "sync"],
        "BUDGET": "1.00",
        "OUTPUT_PATH": "out/scheduled",
    }
    out = work / "ran.ipynb"
    papermill.execute_notebook(
        str(work / NOTEBOOK.name),
        str(out),
        parameters=params,
        kernel_name="python3",
        cwd=str(work),
        progress_bar=False,
    )
    ran = json.loads(out.read_text())
    committed = _stdout(json.loads(NOTEBOOK.read_text()))
    printed = _stdout(ran)
    injected = [c for c in ran["cells"] if "injected-parameters" in c["metadata"].get("tags", [])]
    assert len(injected) == 1 and '"2020-01"' in "".join(injected[0]["source"])
    # another tier list: two songs, both in sync, priced by the list
    expected = (
        pricing.price("generate_song", "v5", 4)
        + pricing.price("generate_song", "v6", 4)
        + pricing.price("generate_music", "v7", 2)
        + pricing.price("write_lyrics", "v5", 1)
        + pricing.price("sfx_gen", "v5", 1)
    )
    assert f"5 generations, estimated ${expected}" in printed
    assert "7 generations, estimated $2.83" in committed and "7 generations" not in printed
    # another period: nothing was made in January 2020
    assert "spend in the period: $0 over 0 tasks" in printed
    assert "spend in the period: $3.03148609 over 9 tasks" in committed
    # another budget, another output path
    assert "budget 1.00 USD" in printed and "budget 5.00 USD" in committed
    assert (work / "out" / "scheduled.html").exists()
    assert (work / "out" / "scheduled.xlsx").exists()
    assert (work / "out" / "scheduled_csv" / "by_project.csv").exists()
    billed = [line for line in printed.splitlines() if line.startswith("month to date:")]
    assert billed and Decimal(billed[0].split()[3]) > Decimal("1.00")
