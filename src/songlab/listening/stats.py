"""Statistics of listening results (pure functions over counts, arrays and frames; scipy.stats).

* Preference: two-sided exact binomial test against 1/2 per pair of models
  (ties and choices of a third option left out), Wilson score interval by
  default (Clopper-Pearson on request).
* ABX: one-sided exact binomial test of the correct rate against 1/2;
  d' from the hit rate H = P("A" | X=A) and false-alarm rate
  F = P("A" | X=B) with the log-linear correction (Hautus 1995) by default:
  ``d'_yes-no = z(H) - z(F)`` and the ABX d' of Macmillan & Creelman (2005),
  differencing model by default: solve ``Phi(d/sqrt 2) Phi(d/sqrt 6) +
  Phi(-d/sqrt 2) Phi(-d/sqrt 6) = Phi((z(H) - z(F)) / 2)`` for d.
* MUSHRA: mean rating per model with a 95 % Student t interval; pairwise
  paired t tests (or Wilcoxon signed-rank) over trials, Holm-adjusted.

Formulas and references: docs/listening.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations
from typing import Any, Literal, TypeAlias

import numpy as np
import pandas as pd
import scipy  # its submodules load on first use: scipy.stats costs a second at import

from songlab.listening._errors import ListeningError

#: a binomial test's alternative hypothesis, as scipy.stats.binomtest names it
Alternative: TypeAlias = Literal["two-sided", "greater", "less"]
#: the interval methods by songlab's name -> scipy's BinomTestResult.proportion_ci name
CI_METHODS: dict[str, Literal["wilson", "exact"]] = {
    "wilson": "wilson",
    "clopper-pearson": "exact",
}
CORRECTIONS = ("log-linear", "1/(2N)", "none")
PAIRED_TESTS = ("paired-t", "wilcoxon")
#: a 1-D run of numbers: a list, or a frame column as ``to_numpy(dtype=float)`` gives it
Numbers: TypeAlias = Sequence[float] | np.ndarray


def _check_counts(k: int, n: int, name: str = "k") -> None:
    for arg, value in ((name, k), ("n", n)):
        if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 0:
            raise ListeningError(arg, f"must be a non-negative int; got {value!r}")
    if k > n:
        raise ListeningError(name, f"must be <= n ({k} > {n})")


def binomial_p(
    k: int, n: int, /, *, p: float = 0.5, alternative: Alternative = "two-sided"
) -> float:
    """Exact binomial test p-value of ``k`` successes in ``n`` trials (1.0 when n = 0)."""
    _check_counts(k, n)
    if alternative not in ("two-sided", "greater", "less"):
        raise ListeningError(
            "alternative", f"must be two-sided, greater or less; got {alternative!r}"
        )
    if n == 0:
        return 1.0
    return float(scipy.stats.binomtest(int(k), int(n), p, alternative=alternative).pvalue)


def proportion_ci(
    k: int, n: int, /, *, confidence: float = 0.95, method: str = "wilson"
) -> tuple[float, float]:
    """Two-sided confidence interval of the proportion ``k / n``: Wilson score or Clopper-Pearson.

    Wilson: ``(k + z^2/2)/(n + z^2) +- z/(n + z^2) sqrt(k(n-k)/n + z^2/4)``.
    Clopper-Pearson: Beta quantiles ``B(a/2; k, n-k+1)``, ``B(1-a/2; k+1, n-k)``.
    ``(nan, nan)`` when n = 0.
    """
    _check_counts(k, n)
    if method not in CI_METHODS:
        raise ListeningError("method", f"must be one of {', '.join(CI_METHODS)}; got {method!r}")
    if not 0 < confidence < 1:
        raise ListeningError("confidence", f"must be in (0, 1); got {confidence!r}")
    if n == 0:
        return (float("nan"), float("nan"))
    ci = scipy.stats.binomtest(int(k), int(n)).proportion_ci(confidence, method=CI_METHODS[method])
    return (float(ci.low), float(ci.high))


def _rate(k: int, n: int, correction: str) -> float:
    if correction == "log-linear":  # Hautus (1995): add 0.5 to the count, 1 to the total
        return (k + 0.5) / (n + 1.0)
    rate = k / n
    if correction == "1/(2N)":  # Macmillan & Kaplan (1985): only extreme rates move
        return min(max(rate, 1.0 / (2 * n)), 1.0 - 1.0 / (2 * n))
    return rate


def dprime_yes_no(
    hits: int, n_signal: int, false_alarms: int, n_noise: int, /, *, correction: str = "log-linear"
) -> float:
    """``d' = z(H) - z(F)``, rates corrected by ``correction`` (log-linear, 1/(2N) or none)."""
    _check_counts(hits, n_signal, "hits")
    _check_counts(false_alarms, n_noise, "false_alarms")
    if correction not in CORRECTIONS:
        raise ListeningError(
            "correction", f"must be one of {', '.join(CORRECTIONS)}; got {correction!r}"
        )
    if n_signal == 0 or n_noise == 0:
        return float("nan")
    h, f = _rate(hits, n_signal, correction), _rate(false_alarms, n_noise, correction)
    return float(scipy.stats.norm.ppf(h) - scipy.stats.norm.ppf(f))


ABX_MODELS = {"differencing": np.sqrt(6.0), "independent-observation": 2.0}


def abx_pc(d: float, /, *, model: str = "differencing") -> float:
    """Proportion correct of an unbiased ABX observer at sensitivity ``d``
    (Macmillan & Creelman 2005, ch. 9): ``Phi(d/sqrt 2) Phi(d/c) + Phi(-d/sqrt 2) Phi(-d/c)``
    with ``c = sqrt 6`` (differencing model, roving designs) or ``c = 2``
    (independent-observation model, fixed designs)."""
    if model not in ABX_MODELS:
        raise ListeningError("model", f"must be one of {', '.join(ABX_MODELS)}; got {model!r}")
    a, b = scipy.stats.norm.cdf(d / np.sqrt(2.0)), scipy.stats.norm.cdf(d / ABX_MODELS[model])
    return float(a * b + (1.0 - a) * (1.0 - b))


def dprime_abx(
    hits: int,
    n_signal: int,
    false_alarms: int,
    n_noise: int,
    /,
    *,
    correction: str = "log-linear",
    model: str = "differencing",
) -> float:
    """ABX d': solve ``abx_pc(d', model) = Phi((z(H) - z(F)) / 2)`` (the unbiased proportion correct).

    "Signal" trials have X = A ("A" is then a hit), "noise" trials X = B.
    Below-chance performance gives a negative d' (mirror of the solution).
    """
    abx_pc(0.0, model=model)  # checks model
    dyn = dprime_yes_no(hits, n_signal, false_alarms, n_noise, correction=correction)
    if not np.isfinite(dyn):
        return dyn
    pc = float(scipy.stats.norm.cdf(abs(dyn) / 2.0))
    if pc <= 0.5:
        return 0.0
    d = scipy.optimize.brentq(lambda x: abx_pc(x, model=model) - pc, 0.0, 60.0, xtol=1e-12)
    return float(np.copysign(d, dyn))


def holm(pvalues: Numbers, /) -> np.ndarray:
    """Holm step-down adjusted p-values, in the input order:
    ``p_(i) -> max_{j <= i} min(1, (m - j + 1) p_(j))`` over the ascending order."""
    p = np.asarray(pvalues, dtype=float)
    if p.ndim != 1 or np.any((p < 0) | (p > 1)):
        raise ListeningError("pvalues", "must be a 1-D sequence of probabilities in [0, 1]")
    m = p.size
    order = np.argsort(p, kind="stable")
    adjusted = np.minimum(1.0, np.maximum.accumulate((m - np.arange(m)) * p[order]))
    out = np.empty(m)
    out[order] = adjusted
    return out


def t_interval(values: Numbers, /, *, confidence: float = 0.95) -> tuple[float, float, float]:
    """``(mean, low, high)``: ``mean +- t_{(1+c)/2, n-1} s / sqrt(n)`` (nan bounds when n < 2)."""
    x = np.asarray(values, dtype=float)
    if x.ndim != 1 or x.size == 0:
        raise ListeningError("values", "must be a non-empty 1-D sequence")
    mean = float(x.mean())
    if x.size < 2:
        return (mean, float("nan"), float("nan"))
    half = float(
        scipy.stats.t.ppf((1 + confidence) / 2, x.size - 1) * x.std(ddof=1) / np.sqrt(x.size)
    )
    return (mean, mean - half, mean + half)


def _require(frame: pd.DataFrame, columns: Sequence[str]) -> None:
    if not isinstance(frame, pd.DataFrame):
        raise ListeningError("frame", "must be a pandas DataFrame (a revealed session's results())")
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise ListeningError("frame", f"lacks columns {missing} (reveal the session first?)")


def preference_table(
    frame: pd.DataFrame, /, *, ci: str = "wilson", confidence: float = 0.95
) -> pd.DataFrame:
    """Per pair of models (a < b by name): wins, ties, "both bad", share of a among decisive
    trials, CI, two-sided p.

    ``frame``: one row per (trial, label) with ``trial``, ``model``, ``chosen``, ``tie`` (and
    ``both_bad`` when the answer could be "both are bad").
    """
    _require(frame, ["trial", "model", "chosen", "tie"])
    rows = []
    by_trial = {t: g for t, g in frame.groupby("trial", sort=True)}
    models = sorted(frame["model"].unique())
    for a, b in combinations(models, 2):
        wins_a = wins_b = ties = bad = other = 0
        for g in by_trial.values():
            offered = set(g["model"])
            if not {a, b} <= offered:
                continue
            chosen = set(g.loc[g["chosen"].astype(bool), "model"])
            if bool(g["tie"].any()):
                ties += 1
            elif "both_bad" in g and bool(g["both_bad"].any()):
                bad += 1
            elif a in chosen:
                wins_a += 1
            elif b in chosen:
                wins_b += 1
            else:
                other += 1
        n = wins_a + wins_b
        low, high = proportion_ci(wins_a, n, confidence=confidence, method=ci)
        rows.append(
            {
                "model_a": a,
                "model_b": b,
                "n": n,
                "wins_a": wins_a,
                "wins_b": wins_b,
                "ties": ties,
                "both_bad": bad,
                "other": other,
                "share_a": wins_a / n if n else float("nan"),
                "ci_low": low,
                "ci_high": high,
                "p_value": binomial_p(wins_a, n),
                "ci_method": ci,
            }
        )
    return _frame(
        rows,
        [
            "model_a",
            "model_b",
            "n",
            "wins_a",
            "wins_b",
            "ties",
            "both_bad",
            "other",
            "share_a",
            "ci_low",
            "ci_high",
            "p_value",
            "ci_method",
        ],
    )


def abx_table(
    frame: pd.DataFrame,
    /,
    *,
    ci: str = "wilson",
    correction: str = "log-linear",
    model: str = "differencing",
    confidence: float = 0.95,
) -> pd.DataFrame:
    """Per pair of models: correct rate, CI, one-sided binomial p (> 1/2), d' (ABX and yes-no).

    ``frame``: one row per trial with ``model_a``, ``model_b``, ``x`` (``"A"``/``"B"``), ``answer``.
    """
    _require(frame, ["model_a", "model_b", "x", "answer"])
    rows = []
    pair = frame.apply(lambda r: tuple(sorted((r["model_a"], r["model_b"]))), axis=1)
    for (a, b), g in frame.groupby(pair, sort=True):
        x_a, x_b = g["x"] == "A", g["x"] == "B"
        hits, fas = int((x_a & (g["answer"] == "A")).sum()), int((x_b & (g["answer"] == "A")).sum())
        n, correct = len(g), int((g["answer"] == g["x"]).sum())
        low, high = proportion_ci(correct, n, confidence=confidence, method=ci)
        rows.append(
            {
                "model_a": a,
                "model_b": b,
                "n": n,
                "correct": correct,
                "rate": correct / n,
                "ci_low": low,
                "ci_high": high,
                "p_value": binomial_p(correct, n, alternative="greater"),
                "hits": hits,
                "n_x_a": int(x_a.sum()),
                "false_alarms": fas,
                "n_x_b": int(x_b.sum()),
                "d_prime": dprime_abx(
                    hits, int(x_a.sum()), fas, int(x_b.sum()), correction=correction, model=model
                ),
                "d_prime_yes_no": dprime_yes_no(
                    hits, int(x_a.sum()), fas, int(x_b.sum()), correction=correction
                ),
                "ci_method": ci,
                "correction": correction,
                "d_prime_model": model,
            }
        )
    return _frame(
        rows,
        [
            "model_a",
            "model_b",
            "n",
            "correct",
            "rate",
            "ci_low",
            "ci_high",
            "p_value",
            "hits",
            "n_x_a",
            "false_alarms",
            "n_x_b",
            "d_prime",
            "d_prime_yes_no",
            "ci_method",
            "correction",
            "d_prime_model",
        ],
    )


def mushra_table(frame: pd.DataFrame, /, *, confidence: float = 0.95) -> pd.DataFrame:
    """Per model: n, mean rating, sd and the Student t interval. ``frame``: ``model``, ``rating``."""
    _require(frame, ["model", "rating"])
    rows = []
    for model, g in frame.groupby("model", sort=True):
        values = g["rating"].to_numpy(dtype=float)
        mean, low, high = t_interval(values, confidence=confidence)
        sd = float(values.std(ddof=1)) if values.size > 1 else float("nan")
        rows.append(
            {
                "model": model,
                "n": values.size,
                "mean": mean,
                "sd": sd,
                "ci_low": low,
                "ci_high": high,
            }
        )
    return _frame(rows, ["model", "n", "mean", "sd", "ci_low", "ci_high"])


def mushra_pairwise(frame: pd.DataFrame, /, *, test: str = "paired-t") -> pd.DataFrame:
    """Per pair of models: paired test over trials rating both (``trial``, ``model``, ``rating``), Holm-adjusted."""
    _require(frame, ["trial", "model", "rating"])
    if test not in PAIRED_TESTS:
        raise ListeningError("test", f"must be one of {', '.join(PAIRED_TESTS)}; got {test!r}")
    wide = frame.pivot_table(index="trial", columns="model", values="rating", aggfunc="mean")
    rows = []
    for a, b in combinations(sorted(wide.columns), 2):
        both = wide[[a, b]].dropna()
        diff = (both[a] - both[b]).to_numpy(dtype=float)
        if diff.size < 2 or np.all(diff == 0):
            stat, p = float("nan"), 1.0
        elif test == "paired-t":
            if np.all(diff == diff[0]):  # constant non-zero difference: t is infinite
                stat, p = float(np.sign(diff[0]) * np.inf), 0.0
            else:
                paired = scipy.stats.ttest_rel(diff, np.zeros_like(diff))
                stat, p = float(paired.statistic), float(paired.pvalue)
        else:
            nonzero = diff[diff != 0]
            exact = nonzero.size == diff.size and np.unique(np.abs(nonzero)).size == nonzero.size
            signed = scipy.stats.wilcoxon(
                nonzero, method="exact" if exact and nonzero.size <= 50 else "approx"
            )
            stat, p = float(signed.statistic), float(signed.pvalue)
        rows.append(
            {
                "model_a": a,
                "model_b": b,
                "n": int(diff.size),
                "mean_diff": float(diff.mean()),
                "statistic": stat,
                "p_value": p,
                "test": test,
            }
        )
    out = _frame(rows, ["model_a", "model_b", "n", "mean_diff", "statistic", "p_value", "test"])
    out.insert(len(out.columns) - 1, "p_holm", holm(out["p_value"].to_numpy()) if len(out) else [])
    return out


#: the columns of the statistics frames that hold p-values
P_COLUMNS = ("p_value", "p_holm")


def format_p(p: float | None, /, *, digits: int = 3) -> str:
    """A p-value as a reader should see it: ``"< 0.001"`` below 0.001 (never ``"0.0"``),
    else rounded to ``digits`` places (``"0.039"``); ``"-"`` when undefined."""
    if p is None or pd.isna(p):
        return "-"
    floor = 10.0**-digits
    return f"< {floor:.{digits}f}" if p < floor else f"{p:.{digits}f}"


def readable(frame: pd.DataFrame, /, *, digits: int = 3) -> pd.DataFrame:
    """A copy of a statistics frame for reading: p-values as :func:`format_p` text,
    other floats rounded to ``digits`` places. Compute with the frame itself."""
    out = frame.copy()
    for column in out.columns:
        if column in P_COLUMNS:
            out[column] = [format_p(p, digits=digits) for p in out[column]]
        elif pd.api.types.is_float_dtype(out[column]):
            out[column] = out[column].round(digits)
    return out


def _frame(rows: list[dict[str, Any]], columns: list[str]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=columns)
