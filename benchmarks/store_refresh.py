"""``LedgerStore.refresh`` of a large month-partitioned ledger that gains 100 tasks.

The dataset is written by ``write_synthetic_dataset`` (a year of tasks, labelled;
tasks older than ten minutes are finished, as in a real account), not timed. The
source is a fake client: ``generations.list()`` yields the 100 new tasks, newest
first, then the newest stored tasks as the service shows them now (the ones that
were in flight, finished), and ``generations.get`` answers for those.

Each refresh runs in its own child process, so its whole-process peak (VmHWM) is
honest: it includes the interpreter, pyarrow and songlab, and nothing the parent
made. Cases:

- ``new, first``: the first refresh of a dataset songlab did not write: no
  ``_state.arrow`` yet, so it is rebuilt by one streaming pass over the
  ``task_id, status, created_at`` columns;
- ``new``: the next refresh (100 more tasks), with the state in place - the
  steady state of a ledger refreshed by songlab;
- ``old``: ``store.py`` as it was before (commit ``OLD_COMMIT``, from git), which
  read every row and kept a Python set of every task id. At 10M it took 57 s and
  6.6 GB (measured when the DuckDB report was built), more than this benchmark may
  run, so it runs at ``--old-n`` (1M), where ``new`` runs too, for the ratio.

Last line: ``store_refresh: <peak GiB of the new refresh at 10M>`` (the worse of
the first and the steady-state refresh).

Usage: python benchmarks/store_refresh.py [--n 10000000] [--old-n 1000000]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

GiB = 1024**3
OLD_COMMIT = "ed07825"  # the merge of issue 21: store.py before the bounded refresh
NEW_TASKS = 100

CHILD = r"""
import json, sys, time
from datetime import timedelta
import pyarrow.parquet as pq
path, old, seed = sys.argv[1], sys.argv[2], int(sys.argv[3])
if old != "-":
    sys.path.insert(0, old)
    from songlab_old_store import LedgerStore
else:
    from songlab.ledger import LedgerStore
from songlab.ledger.synthetic import synthetic_tasks
from songlab.ledger.store import PART
from pathlib import Path

def peak():  # VmHWM: this process's own peak
    with open("/proc/self/status") as fh:
        return [int(l.split()[1]) * 1024 for l in fh if l.startswith("VmHWM")][0]

head = []  # the newest stored tasks: the first rows of the last two months (newest first)
for month in sorted(Path(path).glob("month=2*/" + PART))[-2:]:
    head += pq.ParquetFile(month).read_row_group(0).slice(0, 2000).to_pylist()
top = max(r["created_at"] for r in head)
shown = {}
for r in head:  # the stored tasks as the service shows them now: finished
    shown[r["task_id"]] = {
        "task_id": r["task_id"], "tool_id": r["tool_id"], "model": r["model"],
        "operation": r["operation"], "license": r["license"], "status": "completed",
        "created_at": r["created_at"].isoformat(), "updated_at": r["updated_at"].isoformat(),
        "cost_usd": str(r["cost_usd"]) if r["cost_usd"] is not None else None, "output": {},
    }
new = []
for i, rec in enumerate(synthetic_tasks(100, seed=seed)):
    rec["task_id"] = f"new_{seed}_{i:04d}"
    # in the newest month (a millisecond apart): its file, the largest, is rewritten
    rec["created_at"] = (top + timedelta(milliseconds=100 - i)).isoformat()
    rec["updated_at"] = rec["created_at"]
    new.append(rec)

class Gen:
    def list(self, limit=100):
        yield from new
        yield from sorted(shown.values(), key=lambda r: r["created_at"], reverse=True)
    def get(self, task_id):
        return shown[task_id]

class Client:
    generations = Gen()

store = LedgerStore(path, record=None)
t0 = time.perf_counter()
result = store.refresh(Client())
seconds = time.perf_counter() - t0
print(json.dumps({"seconds": seconds, "peak": peak(), "added": result.added,
                  "updated": result.updated, "read": result.read,
                  "months": list(result.months_written)}))
"""


def _old_package(root: Path) -> str | None:
    """The old ``store.py`` as the module ``songlab_old_store`` under ``root``."""
    repo = Path(__file__).resolve().parent.parent
    done = subprocess.run(
        ["git", "-C", str(repo), "show", f"{OLD_COMMIT}:src/songlab/ledger/store.py"],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        return None
    root.mkdir(parents=True, exist_ok=True)
    (root / "songlab_old_store.py").write_text(done.stdout)
    return str(root)


def _run(path: Path, old: str | None, seed: int, timeout: float) -> dict:
    try:
        done = subprocess.run(
            [sys.executable, "-c", CHILD, str(path), old or "-", str(seed)],
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        return {"error": f"over its time box of {timeout:.0f} s"}
    if done.returncode != 0:
        return {"error": done.stderr.strip().splitlines()[-1]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def _write(path: Path, n: int) -> float:
    from datetime import timedelta

    from songlab.ledger.synthetic import _EPOCH, write_synthetic_dataset

    t0 = time.perf_counter()
    days = 365
    # finished, all but the last ten minutes of the year
    settled = _EPOCH + timedelta(days=days) - timedelta(minutes=10)
    write_synthetic_dataset(path, n, seed=1, days=days, settled_before=settled)
    return time.perf_counter() - t0


def _row(label: str, r: dict) -> str:
    if "error" in r:
        return f"{label:<34} {r['error']}"
    return (
        f"{label:<34} {r['seconds']:7.2f} s  peak {r['peak'] / GiB:5.2f} GiB  "
        f"added {r['added']}, updated {r['updated']}, read {r['read']}, "
        f"rewrote {', '.join(r['months']) or 'nothing'}"
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=10_000_000)
    ap.add_argument("--old-n", type=int, default=1_000_000)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="store_refresh-"))
    results: dict[str, dict] = {}
    try:
        old = _old_package(work / "old")
        for n in (args.old_n, args.n):
            for kind in ("old", "new") if n == args.old_n else ("new",):
                path = work / f"{kind}-{n}"
                wrote = _write(path, n)
                files = len(list(path.glob("month=*/*.parquet")))
                print(f"{n:,} tasks written in {wrote:.1f} s ({files} month files, not timed)")
                if kind == "old":
                    if old is None:
                        results[f"old {n}"] = {"error": f"commit {OLD_COMMIT} not in git"}
                    else:
                        results[f"old {n}"] = _run(path, old, 7, 120)
                    print(_row(f"old path, {n:,} + {NEW_TASKS}", results[f"old {n}"]))
                else:
                    results[f"first {n}"] = _run(path, None, 7, 120)
                    print(_row(f"new, first (state rebuilt), {n:,}", results[f"first {n}"]))
                    results[f"new {n}"] = _run(path, None, 8, 120)
                    print(_row(f"new, with its state, {n:,}", results[f"new {n}"]))
                shutil.rmtree(path, ignore_errors=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    o, f, s = (results.get(f"{k} {args.old_n}", {}) for k in ("old", "first", "new"))
    if "seconds" in o and "seconds" in s and "seconds" in f:
        print(
            f"at {args.old_n:,}: old / new  {o['seconds'] / s['seconds']:.1f}x time, "
            f"{o['peak'] / s['peak']:.1f}x peak (first refresh: "
            f"{o['seconds'] / f['seconds']:.1f}x, {o['peak'] / f['peak']:.1f}x)"
        )
    big = [results.get(f"{k} {args.n}", {}) for k in ("first", "new")]
    if all("peak" in r for r in big):
        print(f"store_refresh: {max(r['peak'] for r in big) / GiB:.2f}")
    else:
        print("store_refresh: not measured")


if __name__ == "__main__":
    main()
