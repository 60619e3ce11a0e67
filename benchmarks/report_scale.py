"""The cost report (HTML + Excel + CSV) of 1,000,000 and 10,000,000 synthetic tasks.

Each case runs in its own child process, so its whole-process peak RSS
(``ru_maxrss``) is honest and no case inherits another's heap:

- ``frame``: the child makes the tasks frame (``synthetic_table`` then pandas,
  not timed), then ``write_report(frame, out, xlsx=..., csv_dir=...)``. At 10M
  it runs last, only if the budget has room (the frame alone is about 2.3 GiB);
- ``compact``: the same as ``frame`` with ``synthetic_table(compact=True)``: the
  strings that repeat (tool, operation, model, tier, status, labels) as dictionary
  columns, which pandas keeps zero-copy (``pd.ArrowDtype``) and DuckDB reads in
  place. At 10M the plain frame alone is over 2 GiB; the compact one about 1.2;
- ``dataset``: the report of a month-partitioned ``LedgerStore`` directory,
  read in place by DuckDB (``write_report(LedgerStore(dir), ...)``). The
  directory is written once per run by ``write_synthetic_dataset`` (a chunk at
  a time) under a temporary directory, and removed at the end;
- ``spark``: the same dataset's report on Apache Spark (``engine=Spark(session)``: a
  local ``local[2]`` session, four shuffle partitions), the same queries transpiled by
  sqlglot. The session's start (a JVM) is timed apart from the report. A JVM and Spark's
  report do not fit this minute beside the 10M case, so Spark runs only when asked, at
  ``--spark-n`` (``--spark-n 1000000 --budget 400`` is the million) beside DuckDB at the
  same size, and the two reports' CSV tables are compared (each file's sorted lines
  hashed): equal means the same figures to the cent. Spark's report takes about a minute
  here whatever the size (5,000 tasks: 55.6 s; a million: 55-61 s; a job per query, about
  thirty, and their code generation), plus 11-18 s to start its JVM, so no Spark case
  fits a minute of its own. Every child reports as of one fixed
  time (the forecast and the "as of" line would otherwise differ by the seconds between
  the runs);
- ``old``: the report as it was before issue 21 (the modules of commit
  ``OLD_COMMIT``, read from git history into a temporary package), at a
  smaller N: at 1,000,000 tasks it took 505.8 s (issue 21's measurement),
  longer than this whole benchmark may run. The same N is run the new way too,
  for a measured ratio.

Each child prints its seconds (the report only) and two peaks: the whole
process, and the report's own (the peak reset after the input was made, with
``/proc/self/clear_refs``). The benchmark keeps to about a minute: cases that
would not fit are skipped and say so. The last line is
``report_scale: <seconds for 10M>`` (the dataset source; "not measured" if it
did not fit).

Usage: python benchmarks/report_scale.py [--n 1000000] [--big 10000000] [--old-n 10000]
[--spark-n 1000000] [--budget 60]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

GiB = 1024**3
OLD_COMMIT = "74f5643"  # the last commit before issue 21's report
OLD_MODULES = ("report", "tables", "plots", "export")
ISSUE_OLD_1M_SECONDS = 505.8  # issue 21: write_report of 1M tasks, HTML + Excel, old path

CHILD = r"""
import json, os, sys, time
GiB = 1024**3
kind, n, src, out, old = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
if old != "-":
    sys.path.insert(0, old)
from songlab.ledger import LedgerStore, _schema
from songlab.ledger.synthetic import synthetic_table
engine = "duckdb"
session_s = None
if kind in ("dataset", "spark"):
    data = LedgerStore(src)
    if kind == "spark":
        from songlab.ledger.spark import Spark, local_session
        t0 = time.perf_counter()
        session = local_session()
        session.range(1).count()  # the JVM up and a first job run
        session_s = time.perf_counter() - t0
        engine = Spark(session)
else:  # "compact": the repeated strings as dictionary columns (same values)
    data = _schema.to_frame(synthetic_table(n, seed=1, labels=True,
                                            compact=kind == "compact"))
def peak():  # VmHWM: this process's own peak (ru_maxrss would keep the parent's past exec)
    with open("/proc/self/status") as fh:
        return [int(l.split()[1]) * 1024 for l in fh if l.startswith("VmHWM")][0]
input_peak = peak()
try:
    with open("/proc/self/clear_refs", "w") as fh:
        fh.write("5")
    reset = True
except OSError:
    reset = False
if old != "-":
    from songlab_old_report.report import write_report
else:
    from songlab.ledger.report import write_report
t0 = time.perf_counter()
kw = {"engine": engine} if kind == "spark" else {}
# one as_of for every child: without it each report is "as of" its own now, and the
# forecast and the "as of" line differ between two engines' runs by the seconds between them
from datetime import datetime, timezone
as_of = datetime(2026, 9, 25, 12, tzinfo=timezone.utc)
write_report(data, os.path.join(out, "r.html"), xlsx=os.path.join(out, "r.xlsx"),
             csv_dir=os.path.join(out, "csv"), budgets=["100000"], as_of=as_of, **kw)
seconds = time.perf_counter() - t0
own = peak() if reset else None
import hashlib, pathlib
tables = {f.name: hashlib.sha256("\n".join(sorted(f.read_text().splitlines())).encode()).hexdigest()
          for f in sorted(pathlib.Path(out, "csv").glob("*.csv"))}  # the figures, to compare
print(json.dumps({"seconds": seconds, "peak": max(input_peak, own or 0) if reset else peak(),
                  "input_peak": input_peak, "report_peak": own, "session": session_s,
                  "tables": tables}))
"""


def _old_package(root: Path) -> str | None:
    """The old report modules as the package ``songlab_old_report`` under ``root``."""
    repo = Path(__file__).resolve().parent.parent
    pkg = root / "songlab_old_report"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    for name in OLD_MODULES:
        done = subprocess.run(
            ["git", "-C", str(repo), "show", f"{OLD_COMMIT}:src/songlab/ledger/{name}.py"],
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            return None
        text = done.stdout.replace(
            "from songlab.ledger import export, plots, tables",
            "from songlab_old_report import export, plots, tables",
        ).replace("from songlab.ledger.plots import", "from songlab_old_report.plots import")
        (pkg / f"{name}.py").write_text(text)
    return str(root)


def _run(kind: str, n: int, src: str, work: Path, old: str | None, timeout: float) -> dict:
    out = Path(tempfile.mkdtemp(dir=work, prefix=f"{kind}-{n}-"))
    # its own process group: a Spark child's JVM goes with it when the time box ends
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD, kind, str(n), src, str(out), old or "-"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return {"error": f"over its time box of {timeout:.0f} s"}
    finally:
        shutil.rmtree(out, ignore_errors=True)
    done = subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)
    if done.returncode != 0:
        return {"error": done.stderr.strip().splitlines()[-1]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def _row(label: str, r: dict) -> str:
    if "error" in r:
        return f"  {label:<34} not measured: {r['error']}"
    own = f"{r['report_peak'] / GiB:.2f}" if r.get("report_peak") else "n/a"
    return (
        f"  {label:<34} {r['seconds']:7.1f} s   peak {r['peak'] / GiB:5.2f} GiB "
        f"(the input alone {r['input_peak'] / GiB:4.2f}; the report's own {own})"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--big", type=int, default=10_000_000)
    ap.add_argument("--old-n", type=int, default=10_000)
    ap.add_argument(
        "--spark-n",
        type=int,
        default=0,
        help="tasks reported on Spark beside DuckDB (0: none; 1000000 with --budget 400 is "
        "the million: Spark's report alone takes about a minute here)",
    )
    ap.add_argument("--budget", type=float, default=60.0, help="seconds the whole run may take")
    args = ap.parse_args()
    from songlab.ledger.synthetic import write_synthetic_dataset

    start = time.perf_counter()

    def left() -> float:
        return args.budget - (time.perf_counter() - start)

    print(
        f"report_scale: HTML + Excel + CSV of synthetic tasks on {os.cpu_count()} cores "
        f"(time budget {args.budget:.0f} s)"
    )
    results: dict[str, dict] = {}
    skipped = {"error": "skipped: the minute is spent"}
    with tempfile.TemporaryDirectory(prefix="songlab-report-scale-") as tmp:
        work = Path(tmp)
        # the two engines side by side on the same dataset
        write_synthetic_dataset(work / "d1m", args.n, seed=1, days=30)
        results["dataset_1m"] = _run("dataset", args.n, str(work / "d1m"), work, None, timeout=60)
        if not args.spark_n:
            results["duck_spark_n"] = results["spark"] = {
                "error": "not asked (--spark-n 1000000 --budget 400: about 75 s of Spark)"
            }
        elif args.spark_n != args.n:
            write_synthetic_dataset(work / "dsp", args.spark_n, seed=1, days=30)
            results["duck_spark_n"] = _run(
                "dataset", args.spark_n, str(work / "dsp"), work, None, timeout=60
            )
        else:
            results["duck_spark_n"] = results["dataset_1m"]
        if args.spark_n:
            src = str(work / ("d1m" if args.spark_n == args.n else "dsp"))
            results["spark"] = _run(
                "spark", args.spark_n, src, work, None, timeout=max(20, left() - 20)
            )
        # 10M as a dataset (a year), written once a chunk at a time: the headline
        t0 = time.perf_counter()
        write_synthetic_dataset(work / "dbig", args.big, seed=1, days=365)
        gen_big = time.perf_counter() - t0
        results["dataset_big"] = _run(
            "dataset", args.big, str(work / "dbig"), work, None, timeout=max(30, left())
        )
        shutil.rmtree(work / "dbig", ignore_errors=True)
        # then, while the minute lasts: the old path and the new at a small N (the measured
        # ratio), the 1M frame, the 10M frames (dictionary strings ~1.2 GiB; plain ~2.3 GiB)
        old = _old_package(work / "old") if left() > 10 else None
        if old is not None:
            results["old"] = _run("frame", args.old_n, "-", work, old, timeout=20)
            results["new_small"] = _run("frame", args.old_n, "-", work, None, timeout=30)
        else:
            results["old"] = results["new_small"] = skipped
        for key, kind, n, need in (
            ("frame_1m", "frame", args.n, 8),
            ("compact_big", "compact", args.big, 12),
            ("frame_big", "frame", args.big, 18),
        ):
            if left() > need:
                results[key] = _run(kind, n, "-", work, None, timeout=max(5, left()))
            else:
                results[key] = {
                    "error": f"skipped: {max(0, left()):.0f} s of the "
                    f"{args.budget:.0f} s budget left"
                }
    total = time.perf_counter() - start

    def ratio(a: str, b: str) -> str:
        ra, rb = results[a], results[b]
        if "error" in ra or "error" in rb:
            return "n/a"
        return f"{ra['seconds'] / rb['seconds']:.1f}x"

    sp, duck = results["spark"], results["duck_spark_n"]
    if not args.spark_n:
        print("Spark: not run (a JVM and a minute of its own: --spark-n 1000000 --budget 400)")
    else:
        print(f"{args.spark_n:,} tasks, the LedgerStore dataset, the two engines (same queries):")
        print(_row("DuckDB (embedded)", duck))
        print(_row("Spark, local[2] (Python side)", sp))
    if args.spark_n and "error" not in sp and "error" not in duck:
        print(
            f"  Spark's session start (a JVM, not in its time above): {sp['session']:.1f} s; "
            f"Spark / DuckDB: {sp['seconds'] / duck['seconds']:.1f}x"
        )
        same = [k for k in duck["tables"] if sp["tables"].get(k) == duck["tables"][k]]
        differ = sorted(set(duck["tables"]) ^ set(sp["tables"]) | set(duck["tables"]) - set(same))
        print(
            f"  the two reports' CSV tables, to the cent: {len(same)} of {len(duck['tables'])} "
            f"equal" + (f"; DIFFERENT: {', '.join(differ)}" if differ else "")
        )
    print(f"old path vs new, {args.old_n:,} tasks (frame):")
    print(_row("old (commit " + OLD_COMMIT + ")", results["old"]))
    print(_row("new", results["new_small"]))
    print(f"  speed-up: {ratio('old', 'new_small')}")
    print(f"{args.n:,} tasks:")
    print(_row("frame", results["frame_1m"]))
    print(_row("LedgerStore dataset", results["dataset_1m"]))
    f1 = results["frame_1m"]
    if "error" not in f1:
        print(
            f"  old path at {args.n:,}: {ISSUE_OLD_1M_SECONDS} s (issue 21's measurement, not "
            f"re-run: longer than this benchmark may take); ratio "
            f"{ISSUE_OLD_1M_SECONDS / f1['seconds']:.0f}x"
        )
    print(f"{args.big:,} tasks (the dataset written in {gen_big:.1f} s, not timed):")
    print(_row("LedgerStore dataset", results["dataset_big"]))
    print(_row("frame, compact (dictionary strings)", results["compact_big"]))
    print(_row("frame, plain strings", results["frame_big"]))
    print(f"whole run: {total:.0f} s")
    big = results["dataset_big"]
    print(
        f"report_scale: {big['seconds']:.1f}"
        if "error" not in big
        else "report_scale: not measured"
    )


if __name__ == "__main__":
    main()
