"""What the ledger writes is private: the store, the report and its exports are
0600 in folders made 0700, whatever the umask."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from songlab.ledger.report import write_report
from tests.ledger._util import snap

pytestmark = pytest.mark.skipif(os.name != "posix", reason="file modes are POSIX")


def _modes(root: Path) -> dict[str, int]:
    return {p.relative_to(root).as_posix(): stat.S_IMODE(p.stat().st_mode) for p in root.rglob("*")}


def test_store_report_and_exports_are_private_whatever_the_umask(tmp_path: Path) -> None:
    tasks = [snap(f"t{i}", created_at=f"2026-{10 + i}-20T10:00:00Z") for i in range(3)]
    out = tmp_path / "out"
    old = os.umask(0)
    try:
        write_report(
            tasks,
            out / "reports" / "r.html",
            ledger=str(out / "ledger"),
            xlsx=str(out / "reports" / "r.xlsx"),
            csv_dir=str(out / "reports" / "csv"),
            all_tasks_csv=True,
        )
    finally:
        os.umask(old)
    modes = _modes(out)
    files = {k for k in modes if (out / k).is_file()}
    assert {"reports/r.html", "reports/r.xlsx", "reports/csv/tasks.csv"} <= files
    assert any(k.startswith("ledger/month=2026-1") for k in files)
    wrong = {k: f"{m:04o}" for k, m in modes.items() if m != (0o600 if k in files else 0o700)}
    assert wrong == {}
