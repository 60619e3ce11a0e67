"""04_agent_one as a scheduler runs it: papermill fills its `parameters` cell, and the
parameters change what the notebook does (tiers, budgets, where the trace goes)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pyarrow.parquet as pq
import pytest

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK = ROOT / "notebooks" / "04_agent_one.ipynb"
DOC = ROOT / "docs" / "notebooks.md"
TASK = "Write lyrics about a summer storm over Porto, then make a 5 second blues song with them."


def _cells(nb: dict) -> list[dict]:
    return nb["cells"]


def _text(cell: dict) -> str:
    parts = []
    for out in cell.get("outputs", []):
        parts.append("".join(out.get("text") or (out.get("data") or {}).get("text/plain", "")))
    return "".join(parts)


def _scheduled() -> dict[str, list[str]]:
    """The papermill table of docs/notebooks.md: notebook -> the parameter names it lists."""
    section = DOC.read_text(encoding="utf-8").split("## Scheduling with papermill", 1)[1]
    table = {}
    for line in section.splitlines():
        row = re.match(r"\| `(\d\d_\w+)` \|([^|]*)\|", line)
        if row:
            table[row.group(1)] = re.findall(r"`([A-Z][A-Z0-9_]*)`", row.group(2))
    return table


def test_every_documented_parameter_is_in_the_notebooks_parameters_cell() -> None:
    table = _scheduled()
    assert table.get("04_agent_one") == [
        "TASK",
        "TIERS",
        "MAX_BUDGET",
        "CAPPED_TIER",
        "CAPPED_BUDGET",
        "OUTPUT",
    ]
    for name, params in table.items():
        if not params:
            continue  # a row whose notebook has no parameters yet
        nb = json.loads((ROOT / "notebooks" / f"{name}.ipynb").read_text(encoding="utf-8"))
        tagged = [c for c in _cells(nb) if "parameters" in c["metadata"].get("tags", [])]
        assert len(tagged) == 1, f"{name}: one cell tagged `parameters`"
        source = "".join(tagged[0]["source"])
        assigned = re.findall(r"^([A-Z][A-Z0-9_]*) *=", source, flags=re.M)
        assert sorted(assigned) == sorted(params), (
            f"{name}: the docs list {params}, the cell sets {assigned}"
        )
        before = _cells(nb)[: _cells(nb).index(tagged[0])]
        used_early = [
            p
            for c in before
            if c["cell_type"] == "code"
            for p in params
            if re.search(rf"\b{p}\b", "".join(c["source"]))
        ]
        assert not used_early, f"{name}: {used_early} used before the parameters cell"


def test_papermill_parameters_change_the_run(tmp_path: Path) -> None:
    papermill = pytest.importorskip("papermill")
    trace_path = tmp_path / "trace.parquet"
    out = tmp_path / "run.ipynb"
    papermill.execute_notebook(
        str(NOTEBOOK),
        str(out),
        cwd=str(NOTEBOOK.parent),
        kernel_name="python3",
        progress_bar=False,
        log_output=False,
        parameters={
            "TASK": TASK,
            "TIERS": json.dumps(["flash", "pro"]),  # what -p TIERS '["flash", "pro"]' passes
            "MAX_BUDGET": 150,
            "CAPPED_TIER": "pro",
            "CAPPED_BUDGET": 10,
            "OUTPUT": str(trace_path),
        },
    )
    nb = json.loads(out.read_text(encoding="utf-8"))
    injected = [c for c in _cells(nb) if "injected-parameters" in c["metadata"].get("tags", [])]
    assert len(injected) == 1 and "MAX_BUDGET = 150" in "".join(injected[0]["source"])
    text = "\n".join(_text(c) for c in _cells(nb))
    # the estimate table has the chosen tiers and budget, no standard row
    assert "max_budget=150" in text and "max_budget=200" not in text
    assert re.search(r"^flash\b", text, flags=re.M) and re.search(r"^pro\b", text, flags=re.M)
    assert not re.search(r"^standard\b", text, flags=re.M)
    assert "against a cap of $0.10" in text
    assert "the budget of 10 cents was reached" in text
    # the trace went where OUTPUT said, with exact money and only the chosen tiers
    table = pq.read_table(trace_path)
    # the ledger's Parquet (ledger.write_parquet, private): money is songlab's decimal
    # extension over decimal128(18, 8), which DuckDB and pyarrow without songlab read as is
    money = table.schema.field("cost_usd").type
    assert str(getattr(money, "storage_type", money)) == "decimal128(18, 8)", money
    runs = {
        (r["run_task_id"], r["run_model"])
        for r in table.select(["run_task_id", "run_model"]).to_pylist()
    }
    assert sorted(model for _, model in runs) == [
        "flash",
        "pro",
        "pro",
    ]  # two compared + the capped run
    assert "read back: decimal128(18, 8)[pyarrow] - same total: True" in text
    # another task: the runs planned it (its subject and genre), not the default Lisbon jazz
    assert "write lyrics about a summer storm over Porto" in text and "blues song" in text
    assert "Lisbon" not in text and "jazz" not in text
    assert f"written to {trace_path}" in text
