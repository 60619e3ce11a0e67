"""Build the tasks frame from 1,000,000 synthetic task snapshots: songlab vs naive pandas.

One subprocess per path (a fresh process each, so ``ru_maxrss`` is honest and
neither path inherits the other's warmed-up heap):

- ``songlab`` and ``naive`` each generate the same 1,000,000 task dicts
  (design.md's snapshot shape, seed 0), reset the peak RSS
  (``/proc/self/clear_refs``, so the build peak is the build's own) and build
  the frame: ``songlab.ledger.tasks_frame(records)`` (Arrow, column by column),
  or naively, ``pandas.DataFrame(list_of_dicts)`` and then the pandas steps that
  give the same columns (to_datetime, Decimal money as objects, a merge for the
  price-list estimate, ``.map`` for the nested fields). All paths give the same
  checksums (total cost, rows per cost source, total duration), compared here;
- ``stream``: ``tasks_frame`` fed by a client whose ``generations.list()`` walks
  a paginated listing, 100 tasks a page, produced on demand: the million dicts
  never exist at once. Its whole-process peak is printed on its own line.

The last line is ``ledger_build_speedup: X`` (naive seconds / songlab seconds).

Usage: python benchmarks/ledger_build.py [--n 1000000]
"""

from __future__ import annotations

import argparse
import gc
import json
import resource
import subprocess
import sys
import time
from decimal import Decimal
from typing import Any

GiB = 1024**3


def _rss_now() -> int:
    with open("/proc/self/statm") as fh:
        pages = int(fh.read().split()[1])
    return pages * resource.getpagesize()


def _peak() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux


def _reset_peak() -> bool:
    """Reset the peak RSS to the current RSS (Linux ``clear_refs`` 5), so the peak read
    after the build is the build's own, not the input generator's."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


def naive_frame(records: list[dict[str, Any]]) -> tuple[Any, float]:
    """The same columns with plain pandas; returns (frame, seconds of the bare constructor)."""
    import numpy as np
    import pandas as pd

    from songlab._vocab import LICENSE_NAMES_WITH_UNSET
    from songlab.ledger import _estimate

    t0 = time.perf_counter()
    df = pd.DataFrame(records)
    bare = time.perf_counter() - t0
    out = df[["task_id", "tool_id", "operation", "model"]].copy()
    lic = df["license"].fillna(0).astype("int64")
    lic = lic.where(lic != 0, 1)
    out["license"] = lic.astype("int8")
    out["tier"] = lic.map(LICENSE_NAMES_WITH_UNSET)
    out["status"] = df["status"]
    out["created_at"] = pd.to_datetime(df["created_at"], utc=True, format="ISO8601")
    out["updated_at"] = pd.to_datetime(df["updated_at"], utc=True, format="ISO8601")
    failed = df["status"] == "failed"
    terminal = failed | (df["status"] == "completed")
    out["duration"] = (out["updated_at"] - out["created_at"]).where(terminal)
    billed = df["cost_usd"].map(lambda s: None if s is None else Decimal(s))
    out["billed_usd"] = billed
    keys = out[["operation", "model", "license"]].drop_duplicates()
    keys["estimate_usd"] = [
        _estimate.estimate(o, m, int(n)) for o, m, n in keys.itertuples(index=False)
    ]
    out = out.merge(keys, on=["operation", "model", "license"], how="left")
    meta = df["output"].map(lambda o: o.get("metadata_json") if isinstance(o, dict) else None)
    agent = (df["operation"] == "agent").to_numpy()
    out.loc[agent, "estimate_usd"] = [
        _estimate.estimate_agent_run(m, j)
        for m, j in zip(df.loc[agent, "model"], meta[agent], strict=True)
    ]
    est = out["estimate_usd"]
    fallback = est.where(~failed.to_numpy(), Decimal(0))
    out["cost_usd"] = billed.where(billed.notna(), fallback)
    out["cost_source"] = np.select(
        [billed.notna(), failed, est.notna()], ["billed", "unbilled", "estimate"], "unknown"
    )
    fail = df["failure"] if "failure" in df else pd.Series(None, index=df.index)
    out["failure_error"] = fail.map(lambda f: f.get("error") if isinstance(f, dict) else None)
    out["parent_task_id"] = df["parent_task_id"] if "parent_task_id" in df else None
    out["metadata_json"] = meta.where(agent)
    return out, bare


def _checksums(frame: Any) -> dict[str, Any]:
    costs = frame["cost_usd"].dropna()
    total = sum((Decimal(v) for v in costs.tolist()), Decimal(0))
    sources = {str(k): int(v) for k, v in frame["cost_source"].value_counts().items()}
    return {
        "rows": len(frame),
        "total_cost": str(total.normalize()),
        "sources": dict(sorted(sources.items())),
        "duration_s": round(frame["duration"].dropna().sum().total_seconds(), 3),
    }


class PagedListing:
    """A client-shaped source: ``generations.list(limit=100)`` yields the tasks of a
    cursor-paginated listing, one page (a fresh list of dicts, as decoded JSON) at a time."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.pages = 0
        self.generations = self

    def list(self, *, limit: int = 100) -> Any:
        from itertools import islice

        from songlab.ledger.synthetic import synthetic_tasks

        it = synthetic_tasks(self.n, seed=0)
        while page := list(islice(it, limit)):
            self.pages += 1
            yield from page


def child(path: str, n: int) -> None:
    from songlab.ledger import tasks_frame
    from songlab.ledger.synthetic import synthetic_tasks

    if path == "stream":
        source = PagedListing(n)
        t0 = time.perf_counter()
        frame = tasks_frame(source)
        print(json.dumps({"seconds": time.perf_counter() - t0, "peak": _peak(),
                          "pages": source.pages, "checks": _checksums(frame)}))  # fmt: skip
        return
    gc.disable()  # the input is a million dicts: no cyclic GC passes while generating them
    records = list(synthetic_tasks(n, seed=0))
    gc.freeze()
    gc.enable()
    before = _rss_now()
    reset = _reset_peak()
    t0 = time.perf_counter()
    if path == "songlab":
        frame, bare = tasks_frame(records), None
    else:
        frame, bare = naive_frame(records)
    seconds = time.perf_counter() - t0
    print(json.dumps({"seconds": seconds, "bare_seconds": bare, "rss_before": before,
                      "peak": _peak(), "peak_reset": reset, "checks": _checksums(frame)}))  # fmt: skip


def _run(path: str, n: int) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, __file__, "--child", path, "--n", str(n)],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, default=1_000_000)
    p.add_argument("--child", choices=("songlab", "naive", "stream"))
    args = p.parse_args(argv)
    if args.child:
        child(args.child, args.n)
        return 0
    t0 = time.perf_counter()
    ours, naive, s = _run("songlab", args.n), _run("naive", args.n), _run("stream", args.n)
    if not ours["checks"] == naive["checks"] == s["checks"]:
        print(f"MISMATCH: songlab {ours['checks']} naive {naive['checks']} stream {s['checks']}",
              file=sys.stderr)  # fmt: skip
        return 1
    mib = 1024**2
    print(f"tasks frame from {args.n:,} task dicts (same checksums on every path: "
          f"{ours['checks']['total_cost']} USD total, {ours['checks']['sources']})")  # fmt: skip
    print(f"{'path':<38}{'seconds':>9}{'build peak MiB':>16}{'process peak MiB':>18}")
    rows = [
        ("pandas.DataFrame(list_of_dicts) only", naive["bare_seconds"], None, None),
        ("naive pandas, same frame", naive["seconds"], naive["peak"] - naive["rss_before"], naive["peak"]),
        ("songlab tasks_frame", ours["seconds"], ours["peak"] - ours["rss_before"], ours["peak"]),
        ("songlab, streamed from the listing (*)", s["seconds"], None, s["peak"]),
    ]  # fmt: skip
    for name, sec, build, peak in rows:
        b = f"{build / mib:,.0f}" if build is not None else "-"
        pk = f"{peak / mib:,.0f}" if peak is not None else "-"
        print(f"{name:<38}{sec:>9.2f}{b:>16}{pk:>18}")
    print(f"(*) {s['pages']:,} pages of 100; its time includes making each page's dicts")
    if not (ours["peak_reset"] and naive["peak_reset"]):
        print("note: /proc/self/clear_refs unavailable: build peaks include earlier work")
    speedup = naive["seconds"] / ours["seconds"]
    print(f"speed-up vs naive pandas (same frame): {speedup:.2f}x; "
          f"vs the bare DataFrame(list_of_dicts) call alone: {naive['bare_seconds'] / ours['seconds']:.2f}x")  # fmt: skip
    print(f"build peak memory: songlab {(ours['peak'] - ours['rss_before']) / GiB:.2f} GiB, naive "
          f"{(naive['peak'] - naive['rss_before']) / GiB:.2f} GiB")  # fmt: skip
    print(f"streamed from the paginated listing: whole-process peak {s['peak'] / GiB:.2f} GiB "
          f"({'under' if s['peak'] < GiB else 'OVER'} 1 GiB)")  # fmt: skip
    print(f"wall time of this benchmark: {time.perf_counter() - t0:.0f} s")
    print(f"ledger_build_speedup: {speedup:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
