"""The ``by_tool_tier`` report figure: spend per tool and license tier, in the HTML report,
the Excel workbook and the CSV files from its one query (docs/architecture.md, "a report
figure")."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import openpyxl

from songlab.ledger import tables, tasks_frame
from songlab.ledger.report import write_report
from tests.ledger._util import snap


def test_spend_per_tool_and_tier_in_every_view(tmp_path: Path) -> None:
    frame = tasks_frame(
        [
            snap("a"),
            snap("b", license=3, cost_usd="0.50000000"),
            snap("c", tool_id="t-stems", operation="separate_stems", cost_usd="0.05000000"),
            snap("d", status="failed", cost_usd=None),
        ]
    )
    d = tables.build(frame)
    got = d.tables["by_tool_tier"].set_index(["tool_id", "tier"])
    assert got.loc[("t-song-v7", "royalty_free"), "cost_usd"] == Decimal("0.12")
    assert got.loc[("t-song-v7", "royalty_free"), "failed_tasks"] == 1  # released: 0
    assert got.loc[("t-song-v7", "distribution"), "cost_usd"] == Decimal("0.50")
    assert got.loc[("t-stems", "royalty_free"), "tasks"] == 1
    assert sum(got["cost_usd"].tolist()) == d.figures["spend"]  # the whole spend, once
    assert got["tasks"].sum() == 4

    xlsx, csv_dir = tmp_path / "r.xlsx", tmp_path / "csv"
    write_report(frame, tmp_path / "r.html", xlsx=str(xlsx), csv_dir=str(csv_dir))
    assert "Spend by tool and tier" in (tmp_path / "r.html").read_text(encoding="utf-8")
    assert "by_tool_tier" in openpyxl.load_workbook(xlsx).sheetnames
    csv = (csv_dir / "by_tool_tier.csv").read_text().splitlines()
    assert csv[0].startswith("tool_id,tier,tasks,cost_usd") and len(csv) == 1 + len(got)
