"""``songlab.ledger.ets``: exponential smoothing fitted and simulated with numpy agrees with
statsmodels' ``ETSModel`` (the well-kept implementation of the same model), and the states
of every day give the forecasts made on past days without another fit."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from songlab.ledger import ets
from songlab.ledger.forecasts import student_t


def _series(seed: int, n: int, noise: float, *, weekly: bool = True) -> np.ndarray:
    rng = np.random.default_rng(seed)
    level = 50 * np.exp(np.cumsum(rng.normal(0, 0.03, n)))
    week = 1 + (0.4 if weekly else 0.0) * np.sin(np.arange(n) * 2 * np.pi / 7)
    return np.asarray(np.maximum(0, level * week + rng.normal(0, noise, n)))


@pytest.mark.parametrize("seasonal", [True, False], ids=["ANA", "ANN"])
@pytest.mark.parametrize("seed", range(4))
def test_the_fit_agrees_with_statsmodels(seed: int, seasonal: bool) -> None:
    from statsmodels.tsa.exponential_smoothing.ets import ETSModel

    y = _series(seed, 182, noise=4 + 4 * seed, weekly=seasonal)  # the model each is for
    mine = ets.fit(y, seasonal=seasonal)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = ETSModel(
            y,
            error="add",
            seasonal="add" if seasonal else None,
            seasonal_periods=7 if seasonal else None,
            initialization_method="heuristic",
        ).fit(disp=False)
    # as good a least-squares fit (their start is their heuristic, ours the first weeks'
    # means; where the surface is flat either may find the lower point), and the month ahead
    # within 10%
    ours, its = np.sum(mine.resid**2), np.sum(np.asarray(theirs.resid) ** 2)
    assert ours <= its * 1.02
    month = mine.point(len(y), 30).sum()
    assert month == pytest.approx(np.maximum(theirs.forecast(30), 0).sum(), rel=0.10)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 1000), n=st.integers(14, 120), seasonal=st.booleans())
def test_past_forecasts_are_the_recursion_s(seed: int, n: int, seasonal: bool) -> None:
    """The forecast made on any past day from the states of that day: its next day is the
    day's one-step prediction (y - resid), and the relative errors are what they say."""
    y = _series(seed, n, noise=5)
    f = ets.fit(y, seasonal=seasonal)
    one_step = np.array([f.point(t, 1)[0] for t in range(1, n)])
    assert np.allclose(one_step, np.maximum(y[1:] - f.resid[1:], 0))
    w = np.ones(5)
    errors = f.errors(w, first=3)
    by_hand = [y[o : o + 5].sum() / f.point(o, 5).sum() - 1 for o in range(3, n - 4)]
    assert np.allclose(errors, [e for e in by_hand if np.isfinite(e)])


def test_simulated_futures_follow_the_model() -> None:
    y = _series(1, 182, noise=6)
    f = ets.fit(y, seasonal=True)
    futures = f.simulate(31, 4000, np.random.default_rng(0))
    assert futures.shape == (4000, 31) and (futures >= 0).all()
    # their mean is the point forecast, give or take the residuals' own mean
    drift = np.cumsum(np.full(31, f.resid.mean())) * f.alpha + f.resid.mean()
    assert futures.sum(axis=1).mean() == pytest.approx(
        (f.point(len(y), 31) + drift).sum(), rel=0.02
    )
    again = f.simulate(31, 4000, np.random.default_rng(0))
    assert np.array_equal(futures, again)  # seeded


@pytest.mark.parametrize("q", [0.75, 0.9, 0.95, 0.975, 0.995])
@pytest.mark.parametrize("df", [3, 4, 6, 10, 30, 200])
def test_student_t_quantiles(q: float, df: float) -> None:
    from scipy.stats import t

    assert student_t(q, df) == pytest.approx(t.ppf(q, df), rel=0.001 if q <= 0.95 else 0.01)
