"""Anomalies: a day's spend of a project, key, tool or tier (or the whole account) far above its
own usual, with how much above and what made it.

The method (``docs/ledger/guardrails.md``), per series (one project, key, tool, tier, or
the total), for each day evaluated:

- **the usual** is the median of the same weekday over the 8 weeks before (at least 2 of
  them), else the median of the 28 days before: robust to a past spike, and Mondays are
  compared with Mondays;
- **the spread** is the median absolute deviation of the 28 days before from their own
  usual, as a standard deviation (x 1.4826), never under 5% of the usual nor under a cent:
  the series' own day-to-day noise;
- a day is **out of the ordinary** when it is more than ``z`` spreads (default 5) above its
  usual; it is an **anomaly** when its impact (actual - usual) also passes the thresholds, as
  AWS Cost Anomaly Detection's do: an absolute amount (``min_usd``) and/or a percentage of the
  usual (``min_percent``), combined by ``and`` (both) or ``or`` (either);
- **no anomaly on a day that is the first of its kind**: a series is judged only once it has
  ``MIN_HISTORY`` (7) days behind it since its first spend (a new project, key, tool or tier
  is new, not anomalous; the total still sees what it adds);
- **today** (the day of ``as_of``) is judged on its spend so far against a whole day's usual
  range: it can only be late, never wrong (so far <= the whole day).

Each anomaly names its **drivers**: within the series on that day, the projects, keys, tools
and tiers whose spend was above their own usual (same method), largest excess first, and
how many tasks the series had that day; ``songlab.ledger.guardrails`` adds the costliest
tasks by id. Everything here is pure: a daily cube in (one row per day and label), anomalies
out.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime, timedelta
from decimal import ROUND_HALF_EVEN, Decimal
from types import TracebackType
from typing import Final

import numpy as np
import numpy.typing as npt
import pandas as pd

import songlab.ledger.derived as derived

__all__ = [
    "Anomaly",
    "Breakdown",
    "DIMENSIONS",
    "Driver",
    "MIN_HISTORY",
    "SERIES_COLUMNS",
    "Thresholds",
    "detect",
    "series_frame",
    "usual_and_spread",
]

# monitors: the dimension and the cube column it reads (total: the whole account)
DIMENSIONS: Final[dict[str, str | None]] = {
    "total": None,
    "project": "project",
    "key": "key_id",
    "tool": "tool_id",
    "tier": "tier",
}
MIN_HISTORY: Final[int] = 7  # days a series must have behind it to be judged
WEEKS: Final[int] = 8  # same weekdays looked back at
WINDOW: Final[int] = 28  # days of the usual without 2 same weekdays
SPREAD_DAYS: Final[int] = 56  # days of the spread
MAD_SD: Final[float] = 1.4826  # median absolute deviation -> standard deviation (normal)
Q90_SD: Final[float] = 1.2816  # 90th percentile - median -> standard deviation (normal)
MIN_SPREAD_SHARE: Final[float] = 0.05
MIN_SPREAD_USD: Final[float] = 0.01
DRIVERS: Final[int] = 3  # per dimension
AUTO_SHARE: Final[float] = 0.2  # the default absolute threshold: this share of the account's day
AUTO_MIN_USD: Final[Decimal] = Decimal("1.00")
_CENT: Final[Decimal] = Decimal("0.01")
NAMES: Final[dict[str, str]] = {
    "total": "the account",
    "project": "project",
    "key": "key",
    "tool": "tool",
    "tier": "tier",
}
UNLABELLED: Final[dict[str, str]] = {
    "project": "(no project)",
    "key": "(key not recorded)",
    "tool": "(tool unknown)",
    "tier": "(tier unknown)",
}


@dataclass(frozen=True, slots=True)
class Thresholds:
    """When a day out of the ordinary is an anomaly (AWS: absolute and/or percentage impact)."""

    # impact (actual - usual) at least this; None: AUTO_SHARE of the account's usual day, at
    # least AUTO_MIN_USD (material for the account whatever its size)
    min_usd: Decimal | None = None
    min_percent: Decimal = Decimal("50")  # impact at least this share of the usual, in %
    combine: str = "and"  # "and": both; "or": either
    z: float = 6.0  # spreads above the usual that are out of the ordinary

    def __post_init__(self) -> None:
        if self.combine not in ("and", "or"):
            raise ValueError(f"combine: 'and' or 'or', got {self.combine!r}")
        if self.min_usd is not None and (not self.min_usd.is_finite() or self.min_usd < 0):
            raise ValueError(f"min_usd: a non-negative amount in USD, got {self.min_usd!r}")
        if not self.min_percent.is_finite() or self.min_percent < 0:
            raise ValueError(f"min_percent: a non-negative percentage, got {self.min_percent!r}")
        if not np.isfinite(self.z) or self.z <= 0:
            raise ValueError(f"z: a positive number of spreads, got {self.z!r}")

    def floor_usd(self, account_usual: float) -> Decimal:
        """The absolute threshold on a day whose account-wide usual is ``account_usual``."""
        if self.min_usd is not None:
            return self.min_usd
        auto = AUTO_SHARE * (account_usual if np.isfinite(account_usual) else 0.0)
        return max(AUTO_MIN_USD, _cents(auto))

    def passes(self, impact: Decimal, percent: Decimal | None, floor: Decimal) -> bool:
        big = impact >= floor
        steep = percent is None or percent >= self.min_percent  # from nothing: steep
        return (big and steep) if self.combine == "and" else (big or steep)


@dataclass(frozen=True, slots=True)
class Driver:
    """One label's part of an anomaly: its spend that day and its own usual."""

    dimension: str  # project, key, tool, tier
    value: str  # its name (unlabelled work: "(no project)", ...)
    actual_usd: Decimal
    usual_usd: Decimal
    excess_usd: Decimal  # actual - usual


@dataclass(frozen=True, slots=True)
class Anomaly:
    """A day of one series far above its usual."""

    dimension: str  # total, project, key, tool, tier
    value: str | None  # the project, key id, tool id or tier (None: the total)
    day: date
    partial: bool  # the day of as_of, judged on its spend so far
    actual_usd: Decimal  # exact
    usual_usd: Decimal  # to the cent
    upper_usd: Decimal  # the top of its usual range: usual + z spreads
    impact_usd: Decimal  # actual - usual, to the cent
    impact_percent: Decimal | None  # of the usual (None: the usual is $0)
    z: float  # spreads above the usual
    history_days: int  # days of the series before this one
    tasks: int  # tasks of the series that day
    drivers: tuple[Driver, ...] = ()
    top_tasks: tuple[tuple[str, Decimal], ...] = ()  # (task id, cost), costliest first
    unknown_tasks: int = 0  # tasks of unknown cost that day (not in actual_usd)

    @property
    def scope(self) -> str:
        if self.dimension == "total":
            return NAMES["total"]
        return f"{NAMES[self.dimension]} {self.value}"

    @property
    def key(self) -> str:
        """Stable identity of the anomaly (a series and a day)."""
        return f"anomaly:{self.dimension}:{self.value or ''}:{self.day.isoformat()}"

    def describe(self) -> str:
        pct = f" (+{self.impact_percent:,}%)" if self.impact_percent is not None else ""
        so_far = " so far" if self.partial else ""
        causes = "; ".join(
            f"{d.dimension} {d.value} +${_cents(d.excess_usd):,.2f}" for d in self.drivers[:4]
        )
        return (
            f"{self.scope} spent ${_cents(self.actual_usd):,.2f}{so_far} on {self.day}, "
            f"${self.impact_usd:,.2f}{pct} above its usual ${self.usual_usd:,.2f}"
            + (f"; made by {causes}" if causes else "")
        )


def _cents(x: Decimal | float) -> Decimal:
    return Decimal(str(x)).quantize(_CENT, ROUND_HALF_EVEN)


def usual_and_spread(
    y: npt.NDArray[np.float64],
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """For every day of ``y`` (daily series, oldest first, one per row of a 2-D array; NaN
    before a series began): its usual (from the days before it only) and its spread; NaN where
    there is nothing before."""
    y = np.atleast_2d(np.asarray(y, dtype=np.float64))
    s, n = y.shape
    # the same weekday, 1..WEEKS weeks back
    lags = np.full((s, n, WEEKS), np.nan)
    for k in range(1, WEEKS + 1):
        if n > 7 * k:
            lags[:, 7 * k :, k - 1] = y[:, : n - 7 * k]
    before = _windows(y, WINDOW)
    with np.errstate(all="ignore"), _quiet():
        same_day = _quantile(lags, 0.5)
        recent = _quantile(before, 0.5)
    enough = np.sum(~np.isnan(lags), axis=2) >= 2
    usual = np.where(enough, same_day, recent)
    resid = _windows(y - usual, SPREAD_DAYS)
    has = np.sum(~np.isnan(resid), axis=2) >= 2
    with np.errstate(all="ignore"), _quiet():
        centre = _quantile(resid, 0.5)
        mad = _quantile(np.abs(resid - centre[:, :, None]), 0.5)
        upper = _quantile(resid, 0.9) - centre
    # the larger of two robust measures of the day-to-day noise, each as a standard deviation:
    # the median absolute deviation, and how far the busiest tenth of days lies above the
    # median (spend is a sum of unequal prices: its busy days are lumpier than its quiet ones)
    spread = np.where(has, np.maximum(MAD_SD * mad, upper / Q90_SD), np.nan)
    floor = np.maximum(MIN_SPREAD_SHARE * np.abs(np.nan_to_num(usual)), MIN_SPREAD_USD)
    spread = np.where(np.isnan(spread), np.nan, np.maximum(spread, floor))
    return usual, spread


def _usual_at(y: npt.NDArray[np.float64], i: int) -> npt.NDArray[np.float64]:
    """The usual of day ``i`` of each row (as :func:`usual_and_spread`, for one day)."""
    lags = np.stack(
        [y[:, i - 7 * k] if i >= 7 * k else np.full(len(y), np.nan) for k in range(1, WEEKS + 1)],
        axis=1,
    )
    before = y[:, max(0, i - WINDOW) : i]
    with np.errstate(all="ignore"), _quiet():
        same_day = _quantile(lags, 0.5)
        recent = _quantile(before, 0.5) if before.shape[1] else np.full(len(y), np.nan)
    enough = np.sum(~np.isnan(lags), axis=1) >= 2
    return np.where(enough, same_day, recent)


def _quantile(a: npt.NDArray[np.float64], q: float) -> npt.NDArray[np.float64]:
    """The ``q`` quantile along the last axis, NaNs left out (linear between the two nearest,
    as numpy's default); NaN where a row has none. Sorting once is many times faster than
    ``np.nanquantile`` on many short rows."""
    s = np.sort(a, axis=-1)  # NaNs sort last
    n = np.sum(~np.isnan(a), axis=-1)
    pos = q * np.maximum(n - 1, 0)
    lo = np.floor(pos).astype(np.int64)
    hi = np.minimum(lo + 1, np.maximum(n - 1, 0))
    low = np.take_along_axis(s, lo[..., None], axis=-1)[..., 0]
    high = np.take_along_axis(s, hi[..., None], axis=-1)[..., 0]
    out = low + (high - low) * (pos - lo)
    return np.where(n > 0, out, np.nan)


def _windows(y: npt.NDArray[np.float64], width: int) -> npt.NDArray[np.float64]:
    """``[s, t]``: the ``width`` values of row s before day t (NaN where there are none)."""
    s, n = y.shape
    padded = np.concatenate([np.full((s, width), np.nan), y], axis=1)
    view = np.lib.stride_tricks.sliding_window_view(padded, width, axis=1)
    return np.asarray(view[:, :n, :], dtype=np.float64)


def _quiet() -> contextlib.AbstractContextManager[object]:
    """Silence numpy's "All-NaN slice" warnings inside a block."""
    import warnings

    ctx = warnings.catch_warnings()
    ctx.__enter__()
    warnings.simplefilter("ignore", RuntimeWarning)
    return _Exit(ctx)


@dataclass(frozen=True)
class _Exit:
    ctx: contextlib.AbstractContextManager[object]

    def __enter__(self) -> None:
        return None

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.ctx.__exit__(kind, error, trace)


def _floats(values: pd.Series) -> npt.NDArray[np.float64]:
    """Amounts (Decimal, Arrow decimal, float; null) as floats, null as 0."""
    try:
        out = values.astype("float64").to_numpy(na_value=np.nan)
    except (TypeError, ValueError):
        out = np.array([np.nan if _null(v) else float(v) for v in values.tolist()])
    return np.nan_to_num(np.asarray(out, dtype=np.float64), nan=0.0)


def _null(v: object) -> bool:
    return v is None or v is pd.NA or (isinstance(v, float) and v != v)


def _ints(frame: pd.DataFrame, column: str) -> npt.NDArray[np.int64]:
    if column not in frame.columns:
        return np.zeros(len(frame), np.int64)
    return np.asarray(frame[column].fillna(0).astype("int64").to_numpy(), np.int64)


@dataclass(frozen=True)
class _Matrix:
    """Series of one dimension as rows of a dense day matrix (NaN before each began)."""

    names: list[str | None]
    first_day: date
    y: npt.NDArray[np.float64]  # series x days
    born: npt.NDArray[np.int64]  # the day index of each series' first spend (-1: none)


# what detect reads: one row per monitor, label and day (``series_frame``)
SERIES_COLUMNS: Final[tuple[str, ...]] = (
    "dimension",
    "value",
    "day",
    "cost_usd",
    "tasks",
    "unknown_tasks",
)
# a breakdown: (dimension, value, first day, last day) -> that series' rows by day and label
Breakdown = Callable[[str, "str | None", date, date], pd.DataFrame]


def series_frame(cube: pd.DataFrame, monitors: Iterable[str] = tuple(DIMENSIONS)) -> pd.DataFrame:
    """The monitors' daily series of a cube (one row per day and label, columns ``day``,
    ``project``, ``key_id``, ``tool_id``, ``tier``, ``cost_usd``, ``tasks``,
    ``unknown_tasks``): one row per monitor (``dimension``), label (``value``, null: not
    labelled) and day, sums exact."""
    frames = []
    for dim in monitors:
        column = DIMENSIONS[dim]
        keys = ["day"] if column is None else ["day", column]
        sums = {c: "sum" for c in ("cost_usd", "tasks", "unknown_tasks") if c in cube.columns}
        g = cube.groupby(keys, dropna=False, sort=True).agg(sums).reset_index()
        g = g.rename(columns={column: "value"}) if column else g.assign(value=None)
        frames.append(g.assign(dimension=dim))
    out = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=SERIES_COLUMNS)
    return out[[c for c in SERIES_COLUMNS if c in out.columns]]


def _joint(cube: pd.DataFrame) -> Breakdown:
    """A breakdown read from a cube in memory."""

    def breakdown(dimension: str, value: str | None, lo: date, hi: date) -> pd.DataFrame:
        frame = _dated(cube, hi)
        frame = frame[np.array([d >= lo for d in frame["day"].tolist()], bool)]
        column = DIMENSIONS[dimension]
        if column is not None:
            frame = frame[np.array([v == value for v in _labels(frame[column], dimension)], bool)]
        return series_frame(frame, [d for d in DIMENSIONS if d not in ("total", dimension)])

    return breakdown


def detect(
    cube: pd.DataFrame,
    *,
    as_of: datetime,
    since: date | None = None,
    thresholds: Thresholds | None = None,
    monitors: Iterable[str] = tuple(DIMENSIONS),
    drivers: bool = True,
    breakdown: Breakdown | None = None,
) -> list[Anomaly]:
    """The anomalies of the days from ``since`` (default: the 7 days to ``as_of``) to the day of
    ``as_of`` (judged so far), biggest impact first.

    ``cube``: either one row per day and label (columns ``day`` (date), ``project``,
    ``key_id``, ``tool_id``, ``tier``; null: not labelled; ``cost_usd`` exact, null rows add
    nothing; ``tasks``, optionally ``unknown_tasks``), or the monitors' series already summed
    (:func:`series_frame`'s columns) with a ``breakdown`` that gives a series' rows by day and
    label for its drivers (``songlab.ledger.guardrails`` asks the ledger, so a large ledger is
    never held as a cube). Days after ``as_of``'s are left out.
    """
    if as_of.tzinfo is None:
        raise ValueError("as_of: must be timezone-aware (UTC)")
    th = thresholds or Thresholds()
    monitors = list(monitors)
    bad = [m for m in monitors if m not in DIMENSIONS]
    if bad:
        raise ValueError(f"monitors: each one of {', '.join(DIMENSIONS)}, got {bad!r}")
    end = as_of.astimezone(UTC).date()
    since = since or end - timedelta(days=6)
    if since > end:
        raise ValueError(f"since: must not be after the day of as_of ({since} > {end})")
    if "dimension" not in cube.columns:
        breakdown = breakdown or _joint(cube)
        cube = series_frame(_dated(cube, end), {"total", *monitors})
    long = _dated_series(cube, end)
    if not len(long):
        return []
    # a series is as old as its first spend anywhere; the usual of `since` needs WEEKS weeks
    # and SPREAD_DAYS of residuals before it, so older days are not read
    all_days = long["day"].tolist()
    first_day = max(min(all_days), since - timedelta(days=7 * WEEKS + SPREAD_DAYS))
    born = _born(long)
    long = long[np.array([d >= first_day for d in all_days], bool)]
    n = (end - first_day).days + 1
    total = _Series(long, "total", first_day, n)
    account_usual, _ = usual_and_spread(total.matrix.y)
    found: list[Anomaly] = []
    for dim in monitors:
        s = total if dim == "total" else _Series(long, dim, first_day, n)
        found.extend(_judge(dim, s, born, account_usual[0], end=end, since=since, th=th))
    if drivers and breakdown is not None:
        lo = max(first_day, min(all_days))
        found = [
            replace(a, drivers=_drivers(a, breakdown(a.dimension, a.value, lo, a.day), lo))
            for a in found
        ]
    found.sort(key=lambda a: (-a.impact_usd, a.day, a.dimension, a.value or ""))
    return found


def _dated(cube: pd.DataFrame, end: date) -> pd.DataFrame:
    frame = cube[cube["day"].notna()]
    if not len(frame):
        return frame
    days = [d.date() if isinstance(d, datetime) else d for d in frame["day"].tolist()]
    frame = frame.assign(day=days)
    frame = frame[np.array([d <= end for d in days], bool)]
    # one order whatever order the engine answered in: float sums, and so medians at a
    # half cent, come out the same on every run
    keys = [c for c in ("day", "project", "tags", "key_id", "tool_id", "tier") if c in frame]
    return frame.sort_values(keys, key=lambda col: col.astype(str), kind="stable")


def _dated_series(long: pd.DataFrame, end: date) -> pd.DataFrame:
    frame = long[long["day"].notna()]
    days = [d.date() if isinstance(d, datetime) else d for d in frame["day"].tolist()]
    frame = frame.assign(day=days)
    frame = frame[np.array([d <= end for d in days], bool)]
    names = [
        None if dim == "total" else label
        for dim, label in zip(
            frame["dimension"].tolist(),
            _labels_any(frame["value"], frame["dimension"].tolist()),
            strict=True,
        )
    ]
    frame = frame.assign(value=pd.Series(names, index=frame.index, dtype=object))
    return frame.sort_values(
        ["dimension", "value", "day"], key=lambda col: col.astype(str), kind="stable"
    )


def _labels(values: pd.Series, dimension: str) -> list[str]:
    return [UNLABELLED[dimension] if _null(v) else str(v) for v in values.astype(object).tolist()]


def _labels_any(values: pd.Series, dims: list[str]) -> list[str]:
    return [
        UNLABELLED.get(d, "") if _null(v) else str(v)
        for v, d in zip(values.astype(object).tolist(), dims, strict=True)
    ]


class _Series:
    """One monitor's series as a dense day matrix, with their exact sums and counts."""

    def __init__(self, long: pd.DataFrame, dim: str, first_day: date, n: int) -> None:
        sub = long[long["dimension"] == dim]
        days = np.array([(d - first_day).days for d in sub["day"].tolist()], np.int64)
        labels: list[str | None]
        if dim == "total":
            codes = np.zeros(len(sub), np.int64)
            labels = [None]
        else:  # labelled by _dated_series: unlabelled work is "(no project)", ...
            codes_, uniques = pd.factorize(pd.Series(sub["value"].tolist(), dtype=object))
            codes = np.asarray(codes_, np.int64)
            labels = [str(u) for u in uniques]
        y = np.zeros((len(labels), n))
        np.add.at(y, (codes, days), _floats(sub["cost_usd"]))
        spent = y != 0
        born = np.where(spent.any(axis=1), spent.argmax(axis=1), -1).astype(np.int64)
        cols = np.arange(n)[None, :]
        y = np.where((born[:, None] >= 0) & (cols >= born[:, None]), y, np.nan)
        self.matrix = _Matrix(labels, first_day, y, born)
        self.exact: dict[tuple[int, int], Decimal] = {}
        self.tasks: dict[tuple[int, int], int] = {}
        self.unknown: dict[tuple[int, int], int] = {}
        tasks = _ints(sub, "tasks")
        unknown = _ints(sub, "unknown_tasks")
        for k, (c, d, v) in enumerate(
            zip(codes.tolist(), days.tolist(), sub["cost_usd"].tolist(), strict=True)
        ):
            key = (c, d)
            if not _null(v):
                self.exact[key] = self.exact.get(key, Decimal(0)) + Decimal(str(v))
            self.tasks[key] = self.tasks.get(key, 0) + int(tasks[k])
            self.unknown[key] = self.unknown.get(key, 0) + int(unknown[k])


def _born(long: pd.DataFrame) -> dict[tuple[str, str | None], date]:
    """The first day with spend of each series."""
    spent = long[_floats(long["cost_usd"]) != 0]
    out: dict[tuple[str, str | None], date] = {}
    for dim, name, d in zip(
        spent["dimension"].tolist(), spent["value"].tolist(), spent["day"].tolist(), strict=True
    ):
        key = (str(dim), None if _null(name) else str(name))
        if key not in out or d < out[key]:
            out[key] = d
    return out


def _judge(
    dim: str,
    s: _Series,
    born: dict[tuple[str, str | None], date],
    account_usual: npt.NDArray[np.float64],
    *,
    end: date,
    since: date,
    th: Thresholds,
) -> list[Anomaly]:
    m = s.matrix
    usual, spread = usual_and_spread(m.y)
    lo = (since - m.first_day).days
    y = m.y
    with np.errstate(invalid="ignore"):
        upper = usual + th.z * spread
        hits = np.argwhere(y[:, lo:] > upper[:, lo:])
    out = []
    for r, col in hits.tolist():
        i = lo + col
        name = m.names[r]
        day = m.first_day + timedelta(days=i)
        began = born.get((dim, name), m.first_day + timedelta(days=int(m.born[r])))
        history = (day - began).days
        if history < MIN_HISTORY:
            continue  # among the first days of its kind: new, not anomalous
        impact = _cents(y[r, i] - usual[r, i])
        base = _cents(usual[r, i])
        pct = derived.percent_of(impact, base)  # of the stated amounts (both to the cent)
        if not th.passes(impact, pct, th.floor_usd(float(account_usual[i]))):
            continue
        out.append(
            Anomaly(
                dimension=dim,
                value=name,
                day=day,
                partial=day == end,
                actual_usd=s.exact.get((r, i), Decimal(0)),
                usual_usd=base,
                upper_usd=_cents(upper[r, i]),
                impact_usd=impact,
                impact_percent=pct,
                z=float(round((y[r, i] - usual[r, i]) / spread[r, i], 1)),
                history_days=history,
                tasks=s.tasks.get((r, i), 0),
                unknown_tasks=s.unknown.get((r, i), 0),
            )
        )
    return out


def _drivers(a: Anomaly, rows: pd.DataFrame, first_day: date) -> tuple[Driver, ...]:
    """Within the anomaly's series (``rows``: its series by project, key, tool and tier, from
    ``first_day`` to its day, as :func:`series_frame` gives them): the labels above their own
    usual that day."""
    long = _dated_series(rows, a.day)
    if not len(long):
        return ()
    n = (a.day - first_day).days + 1
    out: list[Driver] = []
    for dim, col in DIMENSIONS.items():
        if col is None or dim == a.dimension:
            continue
        s = _Series(long, dim, first_day, n)
        usual = _usual_at(s.matrix.y, n - 1)
        found = []
        for r, name in enumerate(s.matrix.names):
            actual = s.exact.get((r, n - 1), Decimal(0))
            u = usual[r]
            base = _cents(0.0 if np.isnan(u) else u)
            excess = actual - base
            if actual and excess > 0:
                found.append(Driver(dim, str(name), actual, base, excess))
        found.sort(key=lambda d: (-d.excess_usd, d.value))
        out.extend(found[:DRIVERS])
    return tuple(out)
