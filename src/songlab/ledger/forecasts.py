"""Forecasts with intervals: a period's spend as a mean and a stated interval, from the daily history.

The method (``docs/ledger/guardrails.md``): the complete days of the history are fitted with
an exponential-smoothing state-space model (ETS, ``songlab.ledger.ets``: a level that moves
and a weekly season, fitted by least squares, as maximum likelihood does for additive errors)
and ``PATHS`` futures are simulated from it with its own residuals resampled (a bootstrap: no
normal assumption, spiky days stay spiky), each simulated day floored at $0. A future's period
total is what was spent so far (exact) plus its simulated rest of the period (the rest of
today at its share of a day); the forecast is the mean of those totals.

**The interval holds what it says.** A model's simulation knows only the model: a small,
noisy series (a project) fits a level that moves too little, and its simulated interval came
out too narrow (73% of forecasts inside an "80%" interval on the backtest). So the simulated
spread about the mean is scaled to the model's **track record** (:func:`track_record`): the
root mean square of how far its own forecasts of the same number of days, made on each past
day of the history (one fit: the states of every day are known), missed the truth, relative
to their size, against the simulated spread, with a Student-t allowance for how few
independent periods the record holds. The interval is then the central ``level`` share of
the scaled totals (80%: the 10th to the 90th percentile). On ``benchmarks/forecast_backtest.py``
(48 synthetic years, 6,336 forecasts) the 80% interval held the truth in 81.7% of the
account's forecasts and 81.3% and 77.3% of two projects' (``docs/benchmarks.md``).

Which model, by the days of history there are:

- 14 days or more: ETS(A,N,A), a level that moves (every forecast day adds its own
  uncertainty, so a quarter's interval is wider than a month's) and an additive weekly
  season (weekends are not weekdays); the last 26 weeks at most;
- 7-13 days: ETS(A,N,N), the same without the weekly season (too few weeks to learn it:
  ``too_few`` is set and the note says so);
- 3-6 days: no model: each future resamples the days seen (first the days, to carry the
  doubt about their mean, then each future day from those) - a rough interval, ``too_few``;
- 1-2 days: the straight line (the mean day times the days left) and no interval;
- none: nothing spent yet, so nothing to forecast from: the spend so far, no interval.

A track record needs ``MIN_ORIGINS`` past forecasts of at least ``CHECK_DAYS`` days (about
five weeks of history); before that the simulation is used as it is (the method says which).
The history is the complete UTC days before ``as_of``'s day, from the first day that had
spend (a project's history starts with the project). Everything here is pure: a series in,
a :class:`SpendForecast` out. ``songlab.ledger.guardrails`` feeds it the ledger's daily
spend (the report's engine), so its figures add up to the report's.
"""

from __future__ import annotations

import calendar
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from decimal import ROUND_HALF_EVEN, Decimal
from statistics import NormalDist
from typing import Any, Final

import numpy as np
import numpy.typing as npt

import songlab.ledger.ets as ets

__all__ = [
    "Daily",
    "LEVEL",
    "PATHS",
    "SpendForecast",
    "forecast",
    "forecast_periods",
    "period_bounds",
    "simulate",
]

LEVEL: Final[float] = 0.8  # the interval's stated coverage
PATHS: Final[int] = 2000  # simulated futures
SEASONAL_DAYS: Final[int] = 14  # two full weeks: enough to learn the weekly season
MODEL_DAYS: Final[int] = 7  # a model (level only) from a week
RESAMPLE_DAYS: Final[int] = 3  # below this, no interval at all
FIT_DAYS: Final[int] = 182  # the last 26 weeks are fitted
PERIODS: Final[tuple[str, ...]] = ("day", "week", "month", "quarter")
FIRST_ORIGIN: Final[int] = 10  # past forecasts are judged from the eleventh day of the fit
MIN_ORIGINS: Final[int] = 14  # past forecasts a track record needs
CHECK_DAYS: Final[int] = 7  # the shortest span a track record is judged on
_CENT: Final[Decimal] = Decimal("0.01")

# a daily history: spend per UTC date (Decimal, int, float or str amounts)
Daily = Mapping[date, Any]


@dataclass(frozen=True, slots=True)
class SpendForecast:
    """A period's spend: what was spent so far (exact) and the forecast of its total."""

    scope: str  # "total", "project podcast", "key key_0a1b2c3d4e5f", ...
    period: str  # "2026-11", "2026-Q4", "week of 2026-11-16", "2026-11-20"
    start: date  # first day of the period (UTC)
    end: date  # last day, inclusive
    as_of: datetime
    spent_usd: Decimal  # in the period up to as_of, exact
    mean_usd: Decimal  # the forecast of the period's total (to the cent)
    low_usd: Decimal | None  # the interval (None: too little history for one)
    high_usd: Decimal | None
    level: float  # the interval's stated coverage (0.8)
    method: str  # the model, in words
    history_days: int  # complete days the forecast learnt from
    too_few: bool  # fewer days than the method needs to be trusted (the note says which)
    note: str
    totals: npt.NDArray[np.float64] = field(repr=False, compare=False)  # simulated totals

    def p_over(self, limit: Decimal | int | str) -> float:
        """The share of the simulated futures whose total is over ``limit`` (0-1)."""
        amount = float(Decimal(str(limit)))
        if float(self.spent_usd) > amount:
            return 1.0
        if not len(self.totals):
            return 1.0 if float(self.mean_usd) > amount else 0.0
        return float(np.mean(self.totals > amount))

    def describe(self) -> str:
        """One line: ``$412.30 (80%: $380.10 to $455.90), spent $201.15``."""
        head = f"${self.mean_usd:,.2f}"
        if self.low_usd is not None and self.high_usd is not None:
            head += f" ({self.level:.0%}: ${self.low_usd:,.2f} to ${self.high_usd:,.2f})"
        return f"{head}, spent ${_cents(self.spent_usd):,.2f} so far"


def _cents(x: Decimal | float) -> Decimal:
    return Decimal(str(x)).quantize(_CENT, ROUND_HALF_EVEN)


def _as_decimal(value: object, day: date) -> Decimal:
    if value is None:
        return Decimal(0)
    if isinstance(value, Decimal):
        return value
    if isinstance(value, float):
        if not np.isfinite(value):
            raise ValueError(f"history: the spend of {day} is not a finite amount: {value!r}")
        return Decimal(repr(value))
    try:
        out = Decimal(str(value))
    except ArithmeticError:
        raise ValueError(f"history: the spend of {day} is not an amount: {value!r}") from None
    if not out.is_finite():
        raise ValueError(f"history: the spend of {day} is not a finite amount: {value!r}")
    return out


def period_bounds(kind: str, at: date) -> tuple[date, date, str]:
    """The calendar period of ``kind`` (day, week from Monday, month, quarter) holding ``at``:
    its first and last day (UTC) and its label."""
    if kind == "day":
        return at, at, at.isoformat()
    if kind == "week":
        first = at - timedelta(days=at.weekday())
        return first, first + timedelta(days=6), f"week of {first.isoformat()}"
    if kind == "month":
        last = calendar.monthrange(at.year, at.month)[1]
        return at.replace(day=1), at.replace(day=last), f"{at:%Y-%m}"
    if kind == "quarter":
        q = (at.month - 1) // 3
        first = date(at.year, 3 * q + 1, 1)
        end_month = 3 * q + 3
        final = date(at.year, end_month, calendar.monthrange(at.year, end_month)[1])
        return first, final, f"{at.year}-Q{q + 1}"
    raise ValueError(f"period: one of {', '.join(PERIODS)}, got {kind!r}")


def simulate(
    history: npt.NDArray[np.float64],
    horizon: int,
    *,
    paths: int = PATHS,
    seed: int = 0,
) -> tuple[npt.NDArray[np.float64], str, bool, str]:
    """``paths`` simulated futures of ``horizon`` days after ``history`` (complete days, oldest
    first), each day >= 0.

    Returns ``(futures (paths x horizon), method, too_few, note)``; with fewer than
    ``RESAMPLE_DAYS`` days the futures are the straight line (every path the same).
    """
    return _simulate(history, horizon, paths=paths, seed=seed)[:4]


def _simulate(
    history: npt.NDArray[np.float64], horizon: int, *, paths: int, seed: int
) -> tuple[npt.NDArray[np.float64], str, bool, str, ets.Fitted | None]:
    """:func:`simulate`, and the fitted model when there is one (its past forecasts' errors
    make the interval: :func:`forecast_periods`)."""
    y = np.asarray(history, dtype=np.float64)
    n = len(y)
    if horizon <= 0:
        return np.zeros((paths, 0)), "nothing left to forecast", False, "", None
    if n == 0:
        return (
            np.zeros((paths, horizon)),
            "no history",
            True,
            "no complete day of spend yet: the forecast is the spend so far",
            None,
        )
    if n < RESAMPLE_DAYS:
        mean = float(y.mean())
        return (
            np.full((paths, horizon), mean),
            "straight line: the mean day so far",
            True,
            f"only {n} complete day{'s' if n > 1 else ''} of history: no interval "
            f"(it needs {RESAMPLE_DAYS}; the weekly pattern needs {SEASONAL_DAYS})",
            None,
        )
    rng = np.random.default_rng(seed)
    if n < MODEL_DAYS or float(np.ptp(y)) == 0.0:
        # resample the days seen: first a sample of them (the doubt about their mean), then
        # each future day from that sample
        picks = rng.integers(0, n, size=(paths, n))
        samples = y[picks]
        cols = rng.integers(0, n, size=(paths, horizon))
        futures = np.take_along_axis(samples, cols, axis=1)
        if float(np.ptp(y)) == 0.0 and n >= MODEL_DAYS:
            return futures, "the same spend every day", False, "", None
        return (
            futures,
            "resampled days (too few for a model)",
            True,
            f"only {n} complete days of history: the interval resamples them and is rough "
            f"(a model needs {MODEL_DAYS} days, the weekly pattern {SEASONAL_DAYS})",
            None,
        )
    fitted = ets.fit(y[-FIT_DAYS:], seasonal=min(n, FIT_DAYS) >= SEASONAL_DAYS)
    futures = fitted.simulate(horizon, paths, rng)
    if fitted.m:
        return futures, "ETS(A,N,A): level and weekly season", False, "", fitted
    return (
        futures,
        "ETS(A,N,N): level only",
        True,
        f"only {n} complete days of history: the weekly pattern is not modelled "
        f"(it needs {SEASONAL_DAYS})",
        fitted,
    )


def _rest(
    futures: npt.NDArray[np.float64],
    fitted: ets.Fitted | None,
    weights: npt.NDArray[np.float64],
    level: float,
) -> tuple[npt.NDArray[np.float64], str]:
    """The simulated rest of a period (``weights``: the share of each day left, today first),
    its spread about its mean scaled to the model's own track record (:func:`track_record`),
    floored at 0; and how the interval was made, in words."""
    k = len(weights)
    rest = futures[:, :k] @ weights
    record = track_record(futures, fitted, weights, level)
    if record is None:
        return rest, "; interval from its simulated futures"
    factor, span, origins = record
    center = float(np.mean(rest))
    return (
        np.maximum(center + factor * (rest - center), 0.0),
        f"; interval scaled to its {origins} past {span}-day forecasts (x{factor:.2f})",
    )


def track_record(
    futures: npt.NDArray[np.float64],
    fitted: ets.Fitted | None,
    weights: npt.NDArray[np.float64],
    level: float = LEVEL,
) -> tuple[float, int, int] | None:
    """How much to widen (or narrow) the simulated interval: ``(factor, span, origins)``.

    The model's own forecasts of ``span`` days made on each of ``origins`` past days
    (``Fitted.errors``: relative errors, so a growing account's old errors count at today's
    size) missed by their root mean square; the simulation says it may miss by its spread
    for the same days. The factor is their ratio, times the Student-t allowance for how few
    independent periods that record holds (``n``: the periods of ``span`` days that fit,
    without overlapping, in the days the record covers; at least 3), ``t(n)`` over the
    normal quantile at ``level``. (Counting the overlapping windows as 1.5 times as many, as
    overlapping batch means would, gave 80.4%, 79.7% and 76.0% on the backtest.) The span is the
    period's days left, or as many as the history allows (``MIN_ORIGINS`` past forecasts, at
    least ``CHECK_DAYS`` days); None when it allows too few (the simulation as it is)."""
    if fitted is None or not len(weights):
        return None
    span = min(len(weights), len(fitted.y) - FIRST_ORIGIN - MIN_ORIGINS + 1)
    if span < min(CHECK_DAYS, len(weights)):
        return None
    w = weights[:span]
    errors = fitted.errors(w, first=FIRST_ORIGIN)
    now = float(fitted.point(len(fitted.y), span) @ w)
    spread = float(np.std(futures[:, :span] @ w))
    if now <= 0 or spread <= 0 or len(errors) < MIN_ORIGINS:
        return None
    n = max(3.0, (len(errors) + span - 1) / span)
    q = 1 - (1 - level) / 2
    allowance = student_t(q, n) / NormalDist().inv_cdf(q)
    return now * float(np.sqrt(np.mean(errors**2))) / spread * allowance, span, len(errors)


def student_t(q: float, df: float) -> float:
    """The ``q`` quantile of Student's t with ``df`` degrees of freedom: the normal quantile
    and four terms of its Cornish-Fisher expansion (Abramowitz and Stegun 26.7.5): within
    0.1% of the exact quantile for ``df >= 3`` up to ``q = 0.95``, within 1% up to 0.995."""
    z = NormalDist().inv_cdf(q)
    g1 = (z**3 + z) / 4
    g2 = (5 * z**5 + 16 * z**3 + 3 * z) / 96
    g3 = (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / 384
    g4 = (79 * z**9 + 776 * z**7 + 1482 * z**5 - 1920 * z**3 - 945 * z) / 92160
    return z + g1 / df + g2 / df**2 + g3 / df**3 + g4 / df**4


def forecast(
    history: Daily,
    *,
    as_of: datetime,
    period: str = "month",
    scope: str = "total",
    level: float = LEVEL,
    paths: int = PATHS,
    seed: int = 0,
) -> SpendForecast:
    """The forecast of the ``period`` (day, week, month, quarter) holding ``as_of``.

    ``history``: spend per UTC date (days missing between the first and ``as_of`` count as
    0; the day of ``as_of`` holds the spend so far that day). Spent so far is exact; the
    forecast and its interval are to the cent.
    """
    return forecast_periods(
        history, as_of=as_of, periods=(period,), scope=scope, level=level, paths=paths, seed=seed
    )[0]


def forecast_periods(
    history: Daily,
    *,
    as_of: datetime,
    periods: Sequence[str] = ("month", "quarter"),
    scope: str = "total",
    level: float = LEVEL,
    paths: int = PATHS,
    seed: int = 0,
) -> list[SpendForecast]:
    """:func:`forecast` of each of ``periods``, from one fit and one set of futures (so a month
    and its quarter tell the same story)."""
    if as_of.tzinfo is None:
        raise ValueError("as_of: must be timezone-aware (UTC)")
    if not 0 < level < 1:
        raise ValueError(f"level: a share between 0 and 1 (0.8 for 80%), got {level!r}")
    as_of = as_of.astimezone(UTC)
    today = as_of.date()
    bounds = [period_bounds(p, today) for p in periods]
    amounts = {d: _as_decimal(v, d) for d, v in history.items() if d <= today}
    days = sorted(d for d, v in amounts.items() if v != 0)
    complete: list[float] = []
    first = days[0] if days else today
    if days and first < today:
        span = (today - first).days
        complete = [float(amounts.get(first + timedelta(days=i), 0)) for i in range(span)]
    midnight = datetime.combine(today, time(), UTC)
    left_today = 1.0 - (as_of - midnight) / timedelta(days=1)
    # today, then the days to the end of the longest period holding it, whichever periods are
    # asked: the futures are then the same draws for every caller (a month forecast by the
    # report and by the guardrails, with or without its quarter, is one number)
    horizon = max((period_bounds(k, today)[1] - today).days + 1 for k in PERIODS)
    futures, method, too_few, note, fitted = _simulate(
        np.array(complete), horizon, paths=paths, seed=seed
    )
    weights = np.ones(horizon)
    weights[0] = left_today
    lo_q, hi_q = (1 - level) / 2, 1 - (1 - level) / 2
    out = []
    for start, end, label in bounds:
        spent = sum((v for d, v in amounts.items() if start <= d <= today), Decimal(0))
        k = (end - today).days + 1
        rest, how = _rest(futures, fitted, weights[:k], level)
        totals = float(spent) + rest
        has_interval = len(complete) >= RESAMPLE_DAYS
        how = how if has_interval else ""  # the words say how an interval was made, if any
        out.append(
            SpendForecast(
                scope=scope,
                period=label,
                start=start,
                end=end,
                as_of=as_of,
                spent_usd=spent,
                mean_usd=_cents(float(np.mean(totals))),
                low_usd=_cents(float(np.quantile(totals, lo_q))) if has_interval else None,
                high_usd=_cents(float(np.quantile(totals, hi_q))) if has_interval else None,
                level=level,
                method=f"{method}{how}",
                history_days=len(complete),
                too_few=too_few,
                note=note,
                totals=totals if has_interval else np.zeros(0),
            )
        )
    return out
