"""The guardrails' forecast intervals against the truth: does the 80% interval hold 80%?

Synthetic years of a business account (``tests/ledger/_guardrails_data.synthetic_year``:
``ledger.synthetic``'s tasks on a business calendar, weekends at a third, 40% growth a
year, a level that wanders week to week), one per seed. In each year, the month is forecast
on the 1st, 8th, 15th and 22nd of every month from February, for the account and for two
projects (``jingles``, about a fifth of the spend, and ``research``, about a tenth), from
the ledger's own daily series (``guardrails.daily_series``: what the report and ``--check``
forecast from), exactly as ``songlab.ledger.forecasts.forecast`` makes it, and the interval
is checked against the month's real total. Coverage is printed per scope and for all; the
years run in two processes (one per core).

Usage: python benchmarks/forecast_backtest.py [--years 48] [--level 0.8] [--first-seed 2]
The last line is ``forecast_coverage: <the worst scope's coverage, %>``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the synthetic years live with the guardrail tests

SCOPES = (("account", None), ("project", "jingles"), ("project", "research"))
DAYS = (1, 8, 15, 22)


def one_year(seed: int, level: float) -> list[tuple[str, bool, float]]:
    """(scope, covered, interval width / truth) of each forecast of the year of ``seed``."""
    from tests.ledger._guardrails_data import synthetic_year

    from songlab.ledger import forecasts
    from songlab.ledger.guardrails import daily_series, series

    y = synthetic_year(seed=seed, start=datetime(2025, 1, 1, tzinfo=UTC))
    cube = daily_series(y.table, as_of=datetime(2026, 1, 1, tzinfo=UTC))
    out = []
    for scope, value in SCOPES:
        hist = series(cube, scope, value)
        name = scope if value is None else f"{scope} {value}"
        for month in range(2, 13):
            for day in DAYS:
                as_of = datetime(2025, month, day, tzinfo=UTC)
                seen = {d: v for d, v in hist.items() if d < as_of.date()}
                f = forecasts.forecast(seen, as_of=as_of, seed=month * 100 + day, level=level)
                truth = sum(v for d, v in hist.items() if f.start <= d <= f.end)
                assert f.low_usd is not None and f.high_usd is not None
                covered = f.low_usd <= truth <= f.high_usd
                out.append((name, covered, float((f.high_usd - f.low_usd) / truth)))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--years", type=int, default=48)
    ap.add_argument("--level", type=float, default=0.8)
    ap.add_argument("--first-seed", type=int, default=2)
    args = ap.parse_args()
    t0 = time.perf_counter()
    seeds = range(args.first_seed, args.first_seed + args.years)
    with ProcessPoolExecutor(max_workers=min(2, os.cpu_count() or 1)) as pool:
        rows = [r for year in pool.map(one_year, seeds, [args.level] * args.years) for r in year]
    print(
        f"forecast_backtest: {args.years} synthetic years, the month forecast on the "
        f"{', '.join(map(str, DAYS))} of each month from February, {args.level:.0%} interval "
        f"({time.perf_counter() - t0:.0f} s)"
    )
    worst: float | None = None  # the scope's coverage farthest from the level
    for name in [*dict.fromkeys(r[0] for r in rows), "all"]:
        mine = [r for r in rows if name in ("all", r[0])]
        cov = sum(r[1] for r in mine) / len(mine)
        width = sorted(r[2] for r in mine)[len(mine) // 2]
        if name != "all" and (worst is None or abs(cov - args.level) > abs(worst - args.level)):
            worst = cov
        print(
            f"  {name:<18} {len(mine):5d} forecasts   covered {cov:6.1%}   "
            f"median width {width:5.1%} of the truth"
        )
    print(f"forecast_coverage: {(worst or 0) * 100:.1f}")


if __name__ == "__main__":
    main()
