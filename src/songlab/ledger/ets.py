"""Exponential smoothing of daily spend, ETS(A,N,A) and ETS(A,N,N), fitted and simulated with numpy.

The model (Hyndman, Koehler, Ord and Snyder, *Forecasting with Exponential Smoothing*, 2008,
chapter 2, additive errors, no trend): a day's spend is its level plus its weekday's season
plus an error; after each day the level moves by ``alpha`` times the error and that weekday's
season by ``gamma`` times it::

    y[t] = level[t-1] + season[t-7] + e[t]
    level[t] = level[t-1] + alpha * e[t]
    season[t] = season[t-7] + gamma * e[t]

(ETS(A,N,N), level only, is the same with no season.) The starting level and season come
from the first weeks (the classical heuristic: the first weeks' mean, and each weekday's mean
difference from its week's mean); ``alpha`` and ``gamma`` minimise the one-step squared
errors, which for additive normal errors is maximum likelihood, by a grid over the admissible
region (``0 < alpha < 1``, ``0 <= gamma <= 1 - alpha``) refined once around its best point.
statsmodels' ``ETSModel`` fits the same model; ``tests/ledger/test_ets.py`` checks the two
agree. It is not used here because importing it costs more than the whole report of 10,000
tasks (about 0.7 s idle, 2.8 s on a busy machine, with scipy.optimize) and a fit several
times what this one takes, and a backtest fits thousands of times.

:meth:`Fitted.point` is the forecast made on any day of the history (the states are known
for every day, so no fit is repeated); :meth:`Fitted.simulate` makes futures with the model's
own residuals resampled.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

import numpy as np
import numpy.typing as npt

__all__ = ["ALPHAS", "Fitted", "GAMMAS", "SEASON", "fit"]

Array = npt.NDArray[np.float64]

SEASON: Final[int] = 7  # a week of days
# The first grid: dense near 0, where a slowly moving level sits.
ALPHAS: Final[tuple[float, ...]] = (
    0.005, 0.01, 0.02, 0.035, 0.05, 0.075, 0.1, 0.13, 0.17, 0.21, 0.26,
    0.32, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.97,
)  # fmt: skip
GAMMAS: Final[tuple[float, ...]] = (0.0, 0.01, 0.025, 0.05, 0.08, 0.12, 0.17, 0.25, 0.35, 0.5)
REFINE: Final[int] = 9  # points per side of the refined grid


@dataclass(frozen=True)
class Fitted:
    """The model fitted to ``y``: its weights, and its level and season after every day."""

    y: Array
    alpha: float
    gamma: float
    resid: Array  # the one-step errors of the days fitted
    level: Array  # after day t
    season: Array  # the season of day t, after day t (zeros: level only)
    start_level: float
    start_season: Array  # the season of days 0 .. m-1 before any update
    m: int  # SEASON, or 0: level only

    def point(self, origin: int, days: int) -> Array:
        """The forecast made after day ``origin - 1`` of the next ``days`` days, each >= 0."""
        j = np.arange(days)
        base = self.level[origin - 1] if origin else self.start_level
        if not self.m:
            return np.asarray(np.maximum(np.full(days, base), 0.0), dtype=np.float64)
        idx = origin + j - self.m * ((j // self.m) + 1)  # the same weekday, last seen
        known = self.season[np.maximum(idx, 0)]
        season = np.where(idx >= 0, known, self.start_season[idx % self.m])
        return np.asarray(np.maximum(base + season, 0.0), dtype=np.float64)

    def points(self, origins: npt.NDArray[np.int64], days: int) -> Array:
        """:meth:`point` from each of ``origins`` (>= 1): origins x days."""
        j = np.arange(days)[None, :]
        base = self.level[origins - 1][:, None]
        if not self.m:
            return np.asarray(np.maximum(np.broadcast_to(base, (len(origins), days)), 0.0))
        idx = origins[:, None] + j - self.m * ((j // self.m) + 1)
        known = self.season[np.maximum(idx, 0)]
        season = np.where(idx >= 0, known, self.start_season[idx % self.m])
        return np.asarray(np.maximum(base + season, 0.0), dtype=np.float64)

    def errors(self, weights: Array, *, first: int) -> Array:
        """The relative misses of the model's own forecasts of the past: for each day from
        ``first`` with ``len(weights)`` days after it, the weighted total of those days over
        what the model forecast for them then, less 1 (a forecast of 0 is left out)."""
        k, n = len(weights), len(self.y)
        origins = np.arange(first, n - k + 1)
        if not len(origins):
            return np.zeros(0)
        predicted = self.points(origins, k) @ weights
        windows = np.lib.stride_tricks.sliding_window_view(self.y, k)[origins]
        actual = windows @ weights
        ok = predicted > 0
        return np.asarray(actual[ok] / predicted[ok] - 1.0, dtype=np.float64)

    def simulate(self, horizon: int, paths: int, rng: np.random.Generator) -> Array:
        """``paths`` futures of ``horizon`` days after the last (paths x horizon), the model's
        own residuals resampled as its errors, each day floored at 0."""
        resid = self.resid[np.isfinite(self.resid)]
        if not len(resid):
            resid = np.zeros(1)
        errors = rng.choice(resid, size=(horizon, paths))
        n, m = len(self.y), self.m
        level = np.full(paths, self.level[-1])
        out = np.empty((paths, horizon))
        if m:
            buf = np.tile(self.season[n - m : n] if n >= m else self.start_season, (paths, 1))
        for h in range(horizon):
            e = errors[h]
            if m:
                s = buf[:, h % m]
                out[:, h] = level + s + e
                buf[:, h % m] = s + self.gamma * e
            else:
                out[:, h] = level + e
            level = level + self.alpha * e
        return np.maximum(np.where(np.isfinite(out), out, 0.0), 0.0)


def _start(y: Array, m: int) -> tuple[float, Array]:
    """The starting level and season from the first weeks (at most four)."""
    if not m:
        return float(np.mean(y[: min(len(y), 10)])), np.zeros(1)
    weeks = max(1, min(4, len(y) // m))
    block = y[: weeks * m].reshape(weeks, m)
    season = (block - block.mean(axis=1, keepdims=True)).mean(axis=0)
    return float(block.mean()), season - season.mean()


def _sse(y: Array, alphas: Array, gammas: Array, l0: float, s0: Array, m: int) -> Array:
    """The one-step squared errors of each (alpha, gamma) pair, all at once."""
    level = np.full(len(alphas), l0)
    buf = np.tile(s0, (len(alphas), 1)) if m else None
    sse = np.zeros(len(alphas))
    for t, v in enumerate(y.tolist()):
        if buf is not None:
            s = buf[:, t % m]
            e = v - level - s
            buf[:, t % m] = s + gammas * e
        else:
            e = v - level
        sse += e * e
        level = level + alphas * e
    return sse


def _grid(
    y: Array, alphas: Array, gammas: Array, l0: float, s0: Array, m: int
) -> tuple[float, float]:
    """The admissible (alpha, gamma) of the grid with the least squared error."""
    grid_a, grid_g = np.meshgrid(alphas, gammas if m else np.zeros(1), indexing="ij")
    a, g = grid_a.ravel(), grid_g.ravel()
    ok = (a > 0) & (a < 1) & (g >= 0) & (g <= 1 - a)
    best = int(np.argmin(_sse(y, a[ok], g[ok], l0, s0, m)))
    return float(a[ok][best]), float(g[ok][best])


def fit(y: npt.ArrayLike, *, seasonal: bool) -> Fitted:
    """ETS(A,N,A) (``seasonal``: needs two weeks) or ETS(A,N,N) fitted to ``y``."""
    arr = np.asarray(y, dtype=np.float64)
    m = SEASON if seasonal and len(arr) >= 2 * SEASON else 0
    l0, s0 = _start(arr, m)
    alpha, gamma = _grid(arr, np.array(ALPHAS), np.array(GAMMAS), l0, s0, m)
    # once more, finer, around the best point of the first grid
    da, dg = max(alpha * 0.3, 0.005), max(gamma * 0.3, 0.005)
    alpha, gamma = _grid(
        arr,
        np.linspace(max(alpha - da, 1e-4), min(alpha + da, 0.999), REFINE),
        np.linspace(max(gamma - dg, 0.0), gamma + dg, REFINE),
        l0,
        s0,
        m,
    )
    level, season, resid = np.empty(len(arr)), np.zeros(len(arr)), np.empty(len(arr))
    lev = l0
    for t, v in enumerate(arr.tolist()):
        prior = (season[t - m] if t >= m else s0[t]) if m else 0.0
        e = v - (lev + prior)
        resid[t] = e
        lev += alpha * e
        level[t] = lev
        if m:
            season[t] = prior + gamma * e
    return Fitted(arr, alpha, gamma, resid, level, season, l0, s0, m)
