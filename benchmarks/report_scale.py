"""The cost report against the floor of its own work: a bare DuckDB grouping-sets scan of the same tasks.

The floor is the least any report of these tasks must do: one scan that sums cost and counts
tasks by day with project, and by day with operation, license and model
(``GROUP BY GROUPING SETS``), run on the report's own DuckDB backend (``_duckdb.DuckDB``:
the same threads and memory, the table registered as the report's is). The report is
``write_report`` of the same table, the whole HTML page: its tables, six charts, the forecast
and the guardrails (no CSV or Excel, which only copy the tables). Both run on the same
in-memory Arrow table (``synthetic_table``, dictionary strings, made on two threads),
alternately, ``--repeats`` times; the medians are compared, wall clock (the headline) and
CPU seconds (all threads of the process and of the report's chart workers, which draw the
charts while the page is written: steadier on a shared machine). A stricter floor is
printed beside it: the same scan with the report's own day expression (``dialects.DAY_SQL``:
DuckDB's CAST of a time-zone-aware time to DATE is most of the named floor's work, and the
report does without it). A fixed cost is measured the same way at ``--small`` tasks (the first
report of the process, then warm).

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
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

AS_OF = datetime(2026, 12, 31, 12, tzinfo=UTC)  # every report as of one time
FLOOR_SQL = (
    "SELECT CAST(created_at AS DATE) AS day, project, operation, license, model, "
    "sum(cost_usd) AS cost_usd, count(*) AS tasks FROM tasks "
    "GROUP BY GROUPING SETS ((day, project), (day, operation, license, model))"
)


def strict_floor_sql() -> str:
    """The floor with the report's own UTC day (``dialects.DAY_SQL``) in place of the CAST."""
    from songlab.ledger.dialects import DAY_SQL

    return FLOOR_SQL.replace("CAST(created_at AS DATE)", DAY_SQL["duckdb"])


def cpu_seconds() -> float:
    """CPU seconds of this process (all threads) and of the report's chart workers
    (``_drawing``: child processes that live on, so not in ``os.times()``'s children)."""
    from songlab.ledger import _drawing

    total = time.process_time()
    tick = os.sysconf("SC_CLK_TCK")
    for worker in list(_drawing._pool):
        try:
            fields = Path(f"/proc/{worker.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:  # gone, or no /proc: its seconds are not counted
            continue
        total += (int(fields[11]) + int(fields[12])) / tick  # utime, stime
    return total


@dataclass
class Runs:
    """Wall-clock and CPU seconds (the process's, all threads, and its chart workers') of one
    kind of run."""

    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)

    def time(self, work: Callable[[], object]) -> None:
        t0, c0 = time.perf_counter(), cpu_seconds()
        work()
        self.wall.append(time.perf_counter() - t0)
        self.cpu.append(cpu_seconds() - c0)

    def line(self, what: str) -> str:
        w, c = statistics.median(self.wall), statistics.median(self.cpu)
        return f"  {what:<32}{w:6.2f} s  {c:6.2f} CPU-s   runs: {', '.join(f'{x:.2f}' for x in self.wall)}"


def floor(table: Any, runs: Runs, sql: str = FLOOR_SQL) -> None:
    """The bare grouping-sets scan of ``table`` on the report's DuckDB backend, timed."""
    from songlab.ledger._duckdb import DuckDB

    backend = DuckDB()
    try:
        backend.register("tasks", table)
        runs.time(lambda: backend.arrow(sql))
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
) -> tuple[Runs, Runs, Runs]:
    """The floor, the stricter floor and the report, one after the other, ``repeats`` times
    (at least once each, while the time budget lasts), and the floor once more."""
    floors, strict, reports = Runs(), Runs(), Runs()
    for i in range(repeats):
        floor(table, floors)
        floor(table, strict, strict_floor_sql())
        reports.time(lambda: report(table, out))
        if i + 1 < repeats and left() < 2 * (floors.wall[-1] + reports.wall[-1]):
            break
    floor(table, floors)
    return floors, strict, reports


def small_cost(n: int, out: Path) -> tuple[Runs, Runs]:
    """The report of ``n`` tasks: the process's first (fonts, DuckDB and the rest made ready;
    its charts drawn in the process, which then starts the chart workers), then three more
    (warm: the workers ready, as a notebook's next report finds them)."""
    from songlab.ledger import _drawing
    from songlab.ledger.synthetic import synthetic_table

    table = synthetic_table(n, seed=2, labels=True, days=60, settled_before=AS_OF)
    first, warm = Runs(), Runs()
    first.time(lambda: report(table, out))
    _drawing.warm(wait=60)
    for _ in range(3):
        warm.time(lambda: report(table, out))
    return first, warm


def big_report(big: Any, work: Path, repeats: int, left: Callable[[], float]) -> float:
    """The report of ``big`` against the floors, printed; the report over the floor (wall)."""
    floors, strict, reports = alternate(big, work, repeats, left)
    print(floors.line("the floor (grouping sets)"))
    print(strict.line("  with the report's day"))
    print(reports.line("the report (whole HTML)"))

    def over(runs: Runs, kind: str) -> float:
        return statistics.median(getattr(reports, kind)) / statistics.median(getattr(runs, kind))

    print(f"  the report over the floor: {over(floors, 'wall'):.2f} (wall), "
          f"{over(floors, 'cpu'):.2f} (CPU); over the stricter floor: "
          f"{over(strict, 'wall'):.2f} (wall), {over(strict, 'cpu'):.2f} (CPU)")  # fmt: skip
    print(f"  peak memory of the process: {_peak_gib():.2f} GiB")
    return over(floors, "wall")


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
        print(f"{args.small:,} tasks:")
        print(first.line("the report (the process's first)"))
        print(warm.line("the report (warm, median of 3)"))
        t0 = time.perf_counter()
        big = synthetic_table(args.big, seed=1, labels=True, compact=True, days=365,
                              settled_before=AS_OF)  # fmt: skip
        print(f"{args.big:,} tasks (made in {time.perf_counter() - t0:.1f} s, not timed; "
              f"{big.nbytes / 1024**3:.2f} GiB of Arrow):")  # fmt: skip
        ratio = big_report(big, work, args.repeats, left)
        del big
    print(f"whole run: {time.perf_counter() - start:.0f} s")
    print(f"report_vs_floor: {ratio:.2f}")


if __name__ == "__main__":
    main()
