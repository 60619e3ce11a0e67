"""The cost report against the floor of its own work: a bare DuckDB grouping-sets scan of the same tasks.

The floor is the least any report of these tasks must do: one scan that sums cost and counts
tasks by day with project, and by day with operation, license and model
(``GROUP BY GROUPING SETS``), run on the report's own DuckDB backend (``_duckdb.DuckDB``:
the same threads and memory). The report is ``write_report`` of the same table, the whole
HTML page: its tables, six charts, the forecast and the guardrails (no CSV or Excel, which
only copy the tables). Both run on the same in-memory Arrow table (``synthetic_table``,
dictionary strings, made on two threads), alternately, ``--repeats`` times; the medians are
compared. A fixed cost is measured the same way at ``--small`` tasks (the first report of the
process, then warm).

The Spark engine beside DuckDB: ``benchmarks/report_spark.py``.

Usage: python benchmarks/report_scale.py [--big 10000000] [--small 10000] [--repeats 3]
[--budget 60]
The last line is ``report_vs_floor: <the report's median over the floor's, at --big>``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

AS_OF = datetime(2026, 12, 31, 12, tzinfo=UTC)  # every report as of one time
FLOOR_SQL = (
    "SELECT CAST(created_at AS DATE) AS day, project, operation, license, model, "
    "sum(cost_usd) AS cost_usd, count(*) AS tasks FROM tasks "
    "GROUP BY GROUPING SETS ((day, project), (day, operation, license, model))"
)


def floor(table: Any) -> float:
    """Seconds of the bare grouping-sets scan of ``table`` on the report's DuckDB backend."""
    from songlab.ledger._duckdb import DuckDB

    backend = DuckDB()
    try:
        backend.register("tasks", table)
        t0 = time.perf_counter()
        backend.arrow(FLOOR_SQL)
        return time.perf_counter() - t0
    finally:
        backend.close()


def report(table: Any, out: Path, **kw: Any) -> float:
    """Seconds of the whole HTML report of ``table``."""
    from songlab.ledger.report import write_report

    t0 = time.perf_counter()
    write_report(table, out / "report.html", budgets=["100000"], as_of=AS_OF, **kw)
    return time.perf_counter() - t0


def _peak_gib() -> float:
    with open("/proc/self/status") as fh:
        kib = next(int(line.split()[1]) for line in fh if line.startswith("VmHWM"))
    return kib / 1024**2


def alternate(
    table: Any, out: Path, repeats: int, left: Callable[[], float]
) -> tuple[list[float], list[float]]:
    """The floor and the report, one after the other, ``repeats`` times (at least once each,
    while the time budget lasts)."""
    floors, reports = [], []
    for i in range(repeats):
        floors.append(floor(table))
        reports.append(report(table, out))
        if i + 1 < repeats and left() < 2 * (floors[-1] + reports[-1]):
            break
    floors.append(floor(table))
    return floors, reports


def small_cost(n: int, out: Path) -> tuple[float, float]:
    """The report of ``n`` tasks: the process's first (fonts, DuckDB and the rest made ready),
    then the median of three more."""
    from songlab.ledger.synthetic import synthetic_table

    table = synthetic_table(n, seed=2, labels=True, days=60, settled_before=AS_OF)
    first = report(table, out)
    return first, statistics.median(report(table, out) for _ in range(3))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--big", type=int, default=10_000_000)
    ap.add_argument("--small", type=int, default=10_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--budget", type=float, default=60.0, help="seconds the run may take")
    args = ap.parse_args()
    start = time.perf_counter()

    def left() -> float:
        return args.budget - (time.perf_counter() - start)

    from songlab.ledger.synthetic import synthetic_table

    print(
        f"report_scale: the HTML report against a bare grouping-sets scan, {os.cpu_count()} cores"
    )
    with tempfile.TemporaryDirectory(prefix="songlab-report-scale-") as tmp:
        work = Path(tmp)
        first, warm = small_cost(args.small, work)
        print(f"{args.small:,} tasks: the report {first:.2f} s (the process's first), "
              f"{warm:.2f} s (warm, median of 3)")  # fmt: skip
        t0 = time.perf_counter()
        big = synthetic_table(args.big, seed=1, labels=True, compact=True, days=365,
                              settled_before=AS_OF)  # fmt: skip
        print(f"{args.big:,} tasks (made in {time.perf_counter() - t0:.1f} s, not timed; "
              f"{big.nbytes / 1024**3:.2f} GiB of Arrow):")  # fmt: skip
        floors, reports = alternate(big, work, args.repeats, left)
        f, r = statistics.median(floors), statistics.median(reports)
        print(
            f"  the floor (grouping sets)  {f:6.2f} s   runs: {', '.join(f'{x:.2f}' for x in floors)}"
        )
        print(
            f"  the report (whole HTML)    {r:6.2f} s   runs: {', '.join(f'{x:.2f}' for x in reports)}"
        )
        print(f"  peak memory of the process: {_peak_gib():.2f} GiB")
        del big
    print(f"whole run: {time.perf_counter() - start:.0f} s")
    print(f"report_vs_floor: {r / f:.2f}")


if __name__ == "__main__":
    main()
