"""Build the tasks frame from 200,000 synthetic task snapshots: songlab vs naive pandas.

One subprocess per path (a fresh process each, so ``ru_maxrss`` is honest and
neither path inherits the other's warmed-up heap):

- ``songlab`` and ``naive`` each generate the same N task dicts (default 200,000)
  (design.md's snapshot shape, seed 0), reset the peak RSS
  (``/proc/self/clear_refs``, so the build peak is the build's own) and build
  the frame: ``songlab.ledger.tasks_frame(records)`` (Arrow, column by column),
  or naively, ``pandas.DataFrame(list_of_dicts)`` and then the pandas steps that
  give the same columns (to_datetime, Decimal money as objects, a merge for the
  price-list estimate, ``.map`` for the nested fields). All paths give the same
  checksums (total cost, rows per cost source, total duration), compared here;
- ``pages_naive`` and ``pages_songlab`` start from the same tasks as the bytes
  of N/100 listing pages of 100 (``GET /v1/generations`` bodies, compact JSON
  as the sandbox sends them), made once by this script and held in memory by
  each child before the clock starts. Naive: ``json.loads`` each page (what
  ``response.json()`` does), collect the dicts, then exactly ``naive_frame``.
  songlab: ``tasks_frame_from_pages`` (Arrow's JSON reader: no dict per task);
- ``stream``: ``tasks_frame`` fed by a client whose ``generations.raw_pages()``
  yields the listing's page bytes, 100 tasks a page, each made on demand (its
  time includes making them): neither the million dicts nor the million-task
  bytes ever exist at once. Its whole-process peak is printed on its own line;
- ``pages_record``: ``tasks_frame_from_pages(pages, record=...)`` joined with the
  client's record of every one of the tasks (a ``RECORD_SCHEMA``-shaped
  Arrow table made before the clock starts: key id, project, tags, the client's
  clock ...), as a ledger does when songlab made the tasks. Its own ratio is
  printed (naive from pages / songlab from pages with the record join).

Two ratios are printed: from already-parsed dicts, and from listing pages (the
way a ledger is really fed: from the API). The last line is
``ledger_build_speedup_from_listing: X`` (naive from pages / songlab from pages).

N: 200,000 by default, so the six children finish within the benchmark's minute on a
loaded 2-core machine (at 1,000,000 the naive paths alone took minutes, and the whole run
over 10 under load). Each child has the time left of ``--budget`` (60 s) as its time box;
``--n 1000000`` with ``--budget 900`` gives the million-task figures.

Usage: python benchmarks/ledger_build.py [--n 200000] [--budget 60]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import subprocess
import sys
import tempfile
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

    from songlab.ledger import _estimate
    from songlab.spec import LICENSE_NAMES_WITH_UNSET

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
    # the ledger's one rule (_schema.cost_of): billed; failed 0; a completed task's estimate;
    # queued or processing: pending (nothing spent yet); else unknown
    done = (df["status"] == "completed").to_numpy()
    running = df["status"].isin(["queued", "processing"]).to_numpy()
    fallback = est.where(done, None).where(~failed.to_numpy(), Decimal(0))
    out["cost_usd"] = billed.where(billed.notna(), fallback)
    out["cost_source"] = np.select(
        [billed.notna(), failed, done & est.notna().to_numpy(), running],
        ["billed", "unbilled", "estimate", "pending"],
        "unknown",
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


def listing_pages(n: int, limit: int = 100) -> Any:
    """The bytes of each ``GET /v1/generations`` page of the ``n`` synthetic tasks, made
    one at a time (compact JSON, as the sandbox's JSON responses are)."""
    from itertools import islice

    from songlab.ledger.synthetic import synthetic_tasks

    it = synthetic_tasks(n, seed=0)
    k = 0
    while page := list(islice(it, limit)):
        k += 1
        cursor = str(k) if k * limit < n else None
        yield json.dumps({"data": page, "next_cursor": cursor}, separators=(",", ":")).encode()


class _RawPage:
    def __init__(self, content: bytes) -> None:
        self.content = content


class PagedListing:
    """A client-shaped source: ``generations.raw_pages(limit=100)`` yields the pages of
    a cursor-paginated listing as bytes (like ``songlab.Client``), each made on demand."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.pages = 0
        self.generations = self

    def raw_pages(self, *, limit: int = 100) -> Any:
        for page in listing_pages(self.n, limit):
            self.pages += 1
            yield _RawPage(page)


def naive_from_pages(pages: list[bytes]) -> Any:
    """What a pandas user does with the listing: decode each page, collect, then the frame."""
    records: list[dict[str, Any]] = []
    for page in pages:
        records.extend(json.loads(page)["data"])
    return naive_frame(records)[0]


def _read_pages(path: str) -> list[bytes]:
    with open(path, "rb") as fh:
        return fh.read().splitlines()  # compact JSON: one page per line


def record_table(n: int) -> Any:
    """A record of every synthetic task (seed 0), oldest first, as the client keeps it."""
    import numpy as np
    import pyarrow as pa

    from songlab.client import RECORD_SCHEMA

    ids = pa.array([f"task_0_{i:08d}" for i in range(n - 1, -1, -1)], pa.string())
    rng = np.random.default_rng(1)
    projects = pa.array(["jingles", "podcast", "game-audio", "research"], pa.string())
    cols: dict[str, Any] = {
        name: pa.nulls(n, f.type)
        for name, f in zip(RECORD_SCHEMA.names, RECORD_SCHEMA, strict=True)
    }
    cols["task_id"] = ids
    cols["key_id"] = pa.array(["key_0123456789ab"] * n, pa.string())
    cols["project"] = projects.take(pa.array(rng.integers(0, 4, size=n)))
    cols["tags"] = pa.array(["q4"] * n, pa.string())
    when = np.datetime64("2026-08-01T00:00:00", "us") + np.arange(n).astype("timedelta64[s]")
    cols["accepted_at"] = pa.array(when, pa.timestamp("us", tz="UTC"))
    cols["sent_at"] = cols["accepted_at"]
    return pa.Table.from_arrays([cols[name] for name in RECORD_SCHEMA.names], schema=RECORD_SCHEMA)


def child(path: str, n: int, pages_file: str | None) -> None:
    from songlab.ledger import tasks_frame, tasks_frame_from_pages
    from songlab.ledger.synthetic import synthetic_tasks

    if path == "stream":
        source = PagedListing(n)
        t0 = time.perf_counter()
        frame = tasks_frame(source)
        print(
            json.dumps(
                {
                    "seconds": time.perf_counter() - t0,
                    "peak": _peak(),
                    "pages": source.pages,
                    "checks": _checksums(frame),
                }
            )
        )
        return
    if path.startswith("pages_"):
        assert pages_file is not None
        pages = _read_pages(pages_file)
        record = record_table(n) if path == "pages_record" else None
        before = _rss_now()
        reset = _reset_peak()
        t0 = time.perf_counter()
        if path == "pages_record":
            frame = tasks_frame_from_pages(pages, record=record)
            assert frame["project"].notna().all()  # every task joined its record row
        else:
            build = tasks_frame_from_pages if path == "pages_songlab" else naive_from_pages
            frame = build(pages)
        seconds = time.perf_counter() - t0
        print(
            json.dumps(
                {
                    "seconds": seconds,
                    "rss_before": before,
                    "peak": _peak(),
                    "peak_reset": reset,
                    "pages": len(pages),
                    "checks": _checksums(frame),
                }
            )
        )
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
    print(
        json.dumps(
            {
                "seconds": seconds,
                "bare_seconds": bare,
                "rss_before": before,
                "peak": _peak(),
                "peak_reset": reset,
                "checks": _checksums(frame),
            }
        )
    )


def _run(path: str, n: int, pages_file: str | None = None, timeout: float = 60) -> dict[str, Any]:
    extra = ["--pages-file", pages_file] if pages_file else []
    try:
        out = subprocess.run(
            [sys.executable, __file__, "--child", path, "--n", str(n), *extra],
            check=True,
            capture_output=True,
            text=True,
            timeout=max(1.0, timeout),
        )
    except subprocess.TimeoutExpired:
        raise SystemExit(
            f"ledger_build: the {path} child went over the time left ({timeout:.0f} s); "
            "run with a smaller --n or a larger --budget"
        ) from None
    return json.loads(out.stdout.strip().splitlines()[-1])


def _write_pages(n: int, path: str) -> None:
    with open(path, "wb") as fh:
        for page in listing_pages(n):
            fh.write(page + b"\n")


def _run_every_path(n: int, budget: float, t0: float) -> tuple[dict[str, dict[str, Any]], int]:
    """Each path in its own child, within what is left of ``budget`` seconds since ``t0``;
    returns the children's answers by path and the size of the listing pages in bytes."""

    def run(path: str, pages_file: str | None = None) -> dict[str, Any]:
        return _run(path, n, pages_file, budget - (time.perf_counter() - t0))

    runs = {"songlab": run("songlab"), "naive": run("naive"), "stream": run("stream")}
    with tempfile.TemporaryDirectory() as tmp:
        pages_file = os.path.join(tmp, "pages.jsonl")
        _write_pages(n, pages_file)
        pages_bytes = os.path.getsize(pages_file)
        for path in ("pages_songlab", "pages_naive", "pages_record"):
            runs[path] = run(path, pages_file)
    return runs, pages_bytes


def _build(r: dict[str, Any]) -> int:
    """A child's build peak: its peak RSS above what it held before the clock started."""
    return int(r["peak"] - r["rss_before"])


def _print_table(n: int, runs: dict[str, dict[str, Any]], pages_bytes: int) -> None:
    """One line per path: seconds, build peak and process peak."""
    ours, naive, s = runs["songlab"], runs["naive"], runs["stream"]
    p_ours, p_naive, p_rec = runs["pages_songlab"], runs["pages_naive"], runs["pages_record"]
    mib = 1024**2
    print(
        f"tasks frame from {n:,} task dicts (same checksums on every path: "
        f"{ours['checks']['total_cost']} USD total, {ours['checks']['sources']})"
    )
    print(f"{'path':<52}{'seconds':>9}{'build peak MiB':>16}{'process peak MiB':>18}")
    rows = [
        (f"from {n:,} task dicts (already parsed):", None, None, None),
        ("  pandas.DataFrame(list_of_dicts) only", naive["bare_seconds"], None, None),
        ("  naive pandas, same frame", naive["seconds"], _build(naive), naive["peak"]),
        ("  songlab tasks_frame(dicts)", ours["seconds"], _build(ours), ours["peak"]),
        (
            f"from {p_ours['pages']:,} listing pages ({pages_bytes / mib:,.0f} MiB of JSON):",
            None,
            None,
            None,
        ),
        (
            "  naive: json.loads each page, then the same",
            p_naive["seconds"],
            _build(p_naive),
            p_naive["peak"],
        ),
        ("  songlab tasks_frame_from_pages", p_ours["seconds"], _build(p_ours), p_ours["peak"]),
        (
            f"  songlab from pages + record join ({n:,} rows)",
            p_rec["seconds"],
            _build(p_rec),
            p_rec["peak"],
        ),
        ("songlab tasks_frame(client), streamed (*)", s["seconds"], None, s["peak"]),
    ]
    for name, sec, b, pk in rows:
        cells = (
            ""
            if sec is None
            else (
                f"{sec:>9.2f}{f'{b / mib:,.0f}' if b is not None else '-':>16}"
                f"{f'{pk / mib:,.0f}' if pk is not None else '-':>18}"
            )
        )
        print(f"{name:<52}{cells}")
    print(
        f"(*) {s['pages']:,} pages of 100 from generations.raw_pages(); its time includes "
        "making each page (tasks, then JSON)"
    )
    if not all(r["peak_reset"] for r in (ours, naive, p_ours, p_naive)):
        print("note: /proc/self/clear_refs unavailable: build peaks include earlier work")


def _print_ratios(runs: dict[str, dict[str, Any]]) -> float:
    """The speed-ups and memory lines; returns the headline (from listing pages)."""
    ours, naive, s = runs["songlab"], runs["naive"], runs["stream"]
    p_ours, p_naive, p_rec = runs["pages_songlab"], runs["pages_naive"], runs["pages_record"]
    from_dicts = naive["seconds"] / ours["seconds"]
    from_pages = float(p_naive["seconds"] / p_ours["seconds"])
    print(
        f"speed-up from dicts (input already parsed; bounded by pa.array(list_of_dicts)): "
        f"{from_dicts:.2f}x; vs the bare DataFrame(list_of_dicts) call alone: "
        f"{naive['bare_seconds'] / ours['seconds']:.2f}x"
    )
    print(f"speed-up from listing pages (the API's bytes, how a ledger is fed): {from_pages:.2f}x")
    with_record = p_naive["seconds"] / p_rec["seconds"]
    print(
        f"speed-up from listing pages with the record join (every task recorded): "
        f"{with_record:.2f}x; the join adds {p_rec['seconds'] - p_ours['seconds']:+.2f} s"
    )
    print(
        f"build peak memory from pages: songlab {_build(p_ours) / GiB:.2f} GiB, naive "
        f"{_build(p_naive) / GiB:.2f} GiB"
    )
    print(
        f"streamed from the paginated listing: whole-process peak {s['peak'] / GiB:.2f} GiB "
        f"({'under' if s['peak'] < GiB else 'OVER'} 1 GiB)"
    )
    return from_pages


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, default=200_000)
    p.add_argument("--budget", type=float, default=60.0, help="seconds the whole run may take")
    p.add_argument(
        "--child",
        choices=("songlab", "naive", "stream", "pages_songlab", "pages_naive", "pages_record"),
    )
    p.add_argument("--pages-file")
    args = p.parse_args(argv)
    if args.child:
        child(args.child, args.n, args.pages_file)
        return 0
    t0 = time.perf_counter()
    runs, pages_bytes = _run_every_path(args.n, args.budget, t0)
    if len({json.dumps(r["checks"], sort_keys=True) for r in runs.values()}) != 1:
        print(
            "MISMATCH: " + "; ".join(f"{k} {r['checks']}" for k, r in runs.items()), file=sys.stderr
        )
        return 1
    _print_table(args.n, runs, pages_bytes)
    from_pages = _print_ratios(runs)
    print(f"wall time of this benchmark: {time.perf_counter() - t0:.0f} s")
    print(f"ledger_build_speedup_from_listing: {from_pages:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
