"""Statistics across raters of a campaign (frames from ``Campaign.results()``, with ``rater``).

* Preference: share of decisive trials each model of a pair won, with a
  rater-clustered interval (intercept-only OLS with cluster-robust variance,
  ``t`` with G-1 df; statsmodels), a clustered Wald p-value, Holm over pairs.
* Ranking: Bradley-Terry by maximum likelihood as a logistic regression without
  intercept (``+1`` winner, ``-1`` loser, the baseline model's column dropped),
  cluster-robust by rater; strengths are log-odds against the baseline, and
  ``score`` = 100 x the mean probability of beating each other model (its
  interval from 4000 seeded draws of the strengths from their clustered
  asymptotic normal distribution).
* ABX: per rater and pair the one-sided exact binomial test, Holm over every
  (rater, pair); pooled per pair the exact binomial test of all answers (exact
  under the null that nobody hears a difference) with a rater-clustered interval.
* MUSHRA: ITU-R BS.1534-3 sec. 4.1.2 post-screening (hidden reference below 90
  in more than 15 % of items; mid-range anchor above 90 in more than 15 %),
  then per model the mean over the kept assessors' scores with a Student t
  interval over all scores, a rater-clustered interval over assessor means, and
  paired t tests over assessor means, Holm-adjusted.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from itertools import combinations
from typing import Any, cast

import numpy as np
import pandas as pd
import scipy  # scipy.stats loads on first use

import songlab.listening.stats as st
from songlab.listening._errors import ListeningError

REF_FLOOR, ANCHOR_CEILING, MAX_SHARE = 90.0, 90.0, 0.15  # BS.1534-3 sec. 4.1.2


def _require(frame: pd.DataFrame, columns: Sequence[str]) -> None:
    st._require(frame, ["rater", *columns])


def clustered_mean(
    y: st.Numbers,
    groups: Sequence[str] | pd.Series,
    /,
    *,
    confidence: float = 0.95,
    bounds: tuple[float, float] | None = None,
) -> tuple[float, float, float, float]:
    """``(mean, low, high, se)`` of ``y`` with cluster-robust variance by ``groups``.

    ``se^2 = G/(G-1) * sum_g (sum_{i in g} (y_i - mean))^2 / N^2``; interval
    ``mean +- t_{(1+c)/2, G-1} se`` (statsmodels OLS, ``cov_type="cluster"``), cut to
    ``bounds`` when given (a share's interval never leaves 0 to 1: 14 wins of 16 by three
    raters is 0.875, 0.62 to 1, not to 1.13). Fewer than two clusters, or no spread: nan
    bounds (or the mean itself).
    """
    from statsmodels.regression.linear_model import OLS

    ys = np.asarray(y, dtype=float)
    codes = pd.factorize(pd.Series(list(groups)))[0]
    if ys.size == 0:
        return (float("nan"),) * 4
    mean = float(ys.mean())
    if len(set(codes)) < 2:
        return (mean, float("nan"), float("nan"), float("nan"))
    if np.all(ys == ys[0]):
        return (mean, mean, mean, 0.0)
    fit = OLS(ys, np.ones((ys.size, 1))).fit(
        cov_type="cluster", cov_kwds={"groups": codes}, use_t=True
    )
    low, high = fit.conf_int(alpha=1 - confidence)[0]
    if bounds is not None:
        low, high = max(float(low), bounds[0]), min(float(high), bounds[1])
    return (mean, float(low), float(high), float(fit.bse[0]))


def _holm(p: pd.Series) -> np.ndarray:
    from statsmodels.stats.multitest import multipletests

    if len(p) == 0:
        return np.array([])
    adjusted: np.ndarray = multipletests(p.to_numpy(dtype=float), method="holm")[1]
    return adjusted


def comparisons(frame: pd.DataFrame, /) -> pd.DataFrame:
    """Preference answers as pairwise outcomes: per decisive trial, the chosen model
    beats each other model offered (ties left out). Columns: rater, trial, winner, loser."""
    _require(frame, ["trial", "model", "chosen", "tie"])
    rows = []
    for (rater, trial), g in frame.groupby(["rater", "trial"], sort=True):
        if bool(g["tie"].any()):
            continue
        won = g.loc[g["chosen"].astype(bool), "model"].tolist()
        for w in won:
            rows += [(rater, trial, w, m) for m in g["model"] if m != w]
    return pd.DataFrame(rows, columns=["rater", "trial", "winner", "loser"])


def preference_shares(frame: pd.DataFrame, /, *, confidence: float = 0.95) -> pd.DataFrame:
    """Per pair of models (a < b): decisive trials, raters, a's wins and share, clustered CI and p.

    With one rater, or when every decisive trial went the same way (no spread, the
    clustered test is undefined), ``p_value`` is the exact binomial test instead.
    """
    pairs = comparisons(frame)
    models = sorted(frame["model"].unique())
    rows = []
    for a, b in combinations(models, 2):
        g = pairs[
            ((pairs["winner"] == a) & (pairs["loser"] == b))
            | ((pairs["winner"] == b) & (pairs["loser"] == a))
        ]
        y = (g["winner"] == a).to_numpy(dtype=float)
        share, low, high, se = clustered_mean(
            y, g["rater"], confidence=confidence, bounds=(0.0, 1.0)
        )
        if se and np.isfinite(se) and se > 0:
            p = float(2 * scipy.stats.t.sf(abs(share - 0.5) / se, g["rater"].nunique() - 1))
        else:  # one rater, or no spread: the clustered test is undefined; exact binomial
            p = st.binomial_p(int(y.sum()), len(y))
        rows.append(
            {
                "model_a": a,
                "model_b": b,
                "n": len(y),
                "raters": g["rater"].nunique(),
                "wins_a": int(y.sum()),
                "share_a": share,
                "ci_low": low,
                "ci_high": high,
                "p_value": p,
            }
        )
    out = pd.DataFrame(rows)
    out["p_holm"] = _holm(out["p_value"]) if len(out) else []
    return out


def bradley_terry(
    frame: pd.DataFrame, /, *, baseline: str | None = None, confidence: float = 0.95
) -> pd.DataFrame:
    """Bradley-Terry strengths of the models, log-odds against ``baseline`` (default: the
    first model by name), cluster-robust CI by rater, and ``score`` (0-100), ranked.

    With one rater (a pilot) the CI is the model's own (no clustering: there is no spread
    between raters to measure), so it says nothing about how other listeners would hear it."""
    return bradley_terry_pairs(
        comparisons(frame),
        sorted(frame["model"].unique()),
        baseline=baseline,
        confidence=confidence,
    )


def bradley_terry_pairs(
    pairs: pd.DataFrame,
    models: Sequence[str],
    /,
    *,
    baseline: str | None = None,
    confidence: float = 0.95,
) -> pd.DataFrame:
    """:func:`bradley_terry` of pairwise outcomes already made (:func:`comparisons`' rater,
    trial, winner, loser) among ``models``: the scorecard's bootstrap resamples raters'
    outcomes without making them again."""
    from statsmodels.genmod import families
    from statsmodels.genmod.generalized_linear_model import GLM
    from statsmodels.tools.sm_exceptions import PerfectSeparationWarning

    models = list(models)
    baseline = models[0] if baseline is None else baseline
    if baseline not in models:
        raise ListeningError("baseline", f"must be one of {models}; got {baseline!r}")
    others = [m for m in models if m != baseline]
    x = np.zeros((len(pairs), len(others)))
    for j, m in enumerate(others):
        x[:, j] = (pairs["winner"] == m).to_numpy(float) - (pairs["loser"] == m).to_numpy(float)
    y = np.ones(len(pairs))
    # orient half the rows loser-first so the response varies (the likelihood is unchanged)
    flip = np.arange(len(pairs)) % 2 == 1
    x[flip], y[flip] = -x[flip], 0.0
    groups = pd.factorize(pairs["rater"])[0]
    # one rater: no spread between raters to cluster on (the sandwich divides by G - 1), so
    # the model's own covariance, as preference_shares falls back to the exact binomial
    cov: dict[str, Any] = (
        {"cov_type": "cluster", "cov_kwds": {"groups": groups}}
        if len(set(groups)) > 1
        else {"cov_type": "nonrobust"}
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error", PerfectSeparationWarning)
        try:
            fit = GLM(y, x, family=families.Binomial()).fit(**cov)
        except (PerfectSeparationWarning, np.linalg.LinAlgError, ValueError) as exc:
            raise ListeningError(
                "frame",
                f"the Bradley-Terry ranking is not identifiable from these answers "
                f"(a model won or lost every comparison, or models never met): {exc}",
            ) from None
    z = float(scipy.stats.norm.ppf((1 + confidence) / 2))
    strength = dict(zip(others, fit.params, strict=True)) | {baseline: 0.0}
    se = dict(zip(others, fit.bse, strict=True)) | {baseline: 0.0}
    draws = _score_draws(models, others, fit.params, fit.cov_params(), confidence)
    rows = []
    for m in models:
        beat = [1 / (1 + np.exp(strength[o] - strength[m])) for o in models if o != m]
        rows.append(
            {
                "model": m,
                "strength": strength[m],
                "ci_low": strength[m] - z * se[m],
                "ci_high": strength[m] + z * se[m],
                "se": se[m],
                "p_beats_baseline": 1 / (1 + np.exp(-strength[m])),
                "score": 100 * float(np.mean(beat)),
                "score_low": draws[m][0],
                "score_high": draws[m][1],
                "wins": int((pairs["winner"] == m).sum()),
                "comparisons": int(((pairs["winner"] == m) | (pairs["loser"] == m)).sum()),
            }
        )
    out = pd.DataFrame(rows).sort_values("strength", ascending=False, ignore_index=True)
    out.insert(0, "rank", range(1, len(out) + 1))
    out.attrs["baseline"] = baseline
    return out


def _score_draws(
    models: list[str],
    others: list[str],
    params: np.ndarray,
    cov: np.ndarray,
    confidence: float,
    n: int = 4000,
    seed: int = 0,
) -> dict[str, tuple[float, float]]:
    """Interval of each model's score from draws of the strengths ~ N(estimate, clustered
    covariance) (seeded, so a table repeats exactly)."""
    rng = np.random.default_rng(seed)
    sample = rng.multivariate_normal(np.asarray(params), np.asarray(cov), size=n)
    full = np.zeros((n, len(models)))
    for j, m in enumerate(others):
        full[:, models.index(m)] = sample[:, j]
    out: dict[str, tuple[float, float]] = {}
    for i, m in enumerate(models):
        diff = full[:, [k for k in range(len(models)) if k != i]] - full[:, [i]]
        score = 100 * np.mean(1 / (1 + np.exp(diff)), axis=1)
        q = np.quantile(score, [(1 - confidence) / 2, (1 + confidence) / 2])
        out[m] = (float(q[0]), float(q[1]))
    return out


def _pair(r: pd.Series) -> tuple[str, str]:
    a, b = sorted((str(r["model_a"]), str(r["model_b"])))
    return a, b


def abx_panel(frame: pd.DataFrame, /, *, confidence: float = 0.95) -> dict[str, pd.DataFrame]:
    """``{"raters": per rater and pair, Holm over all; "pooled": per pair, Holm over pairs}``."""
    _require(frame, ["model_a", "model_b", "correct"])
    f = frame.assign(pair=frame.apply(_pair, axis=1), ok=frame["correct"].astype(bool))
    per = []
    for key, g in f.groupby(["rater", "pair"], sort=True):
        # the stubs type a group's key as Hashable: here it is (rater, (model a, model b))
        rater, (a, b) = cast(tuple[str, tuple[str, str]], key)
        n, k = len(g), int(g["ok"].sum())
        per.append(
            {
                "rater": rater,
                "model_a": a,
                "model_b": b,
                "n": n,
                "correct": k,
                "rate": k / n,
                "p_value": st.binomial_p(k, n, alternative="greater"),
            }
        )
    raters = pd.DataFrame(per)
    raters["p_holm"] = _holm(raters["p_value"]) if len(raters) else []
    pooled = []
    for pair, g in f.groupby("pair", sort=True):
        a, b = cast(tuple[str, str], pair)  # the stubs type a key as a scalar: here a pair
        n, k = len(g), int(g["ok"].sum())
        rate, low, high, _ = clustered_mean(
            g["ok"].to_numpy(float), g["rater"], confidence=confidence, bounds=(0.0, 1.0)
        )
        sig = raters[(raters["model_a"] == a) & (raters["model_b"] == b)]
        pooled.append(
            {
                "model_a": a,
                "model_b": b,
                "n": n,
                "raters": g["rater"].nunique(),
                "correct": k,
                "rate": rate,
                "ci_low": low,
                "ci_high": high,
                "p_value": st.binomial_p(k, n, alternative="greater"),
                "raters_significant": int((sig["p_holm"] < 1 - confidence).sum()),
            }
        )
    pooled_f = pd.DataFrame(pooled)
    pooled_f["p_holm"] = _holm(pooled_f["p_value"]) if len(pooled_f) else []
    return {"raters": raters, "pooled": pooled_f}


def bs1534_screen(
    frame: pd.DataFrame,
    /,
    *,
    reference: str,
    mid_anchor: str | None = None,
    ref_floor: float = REF_FLOOR,
    anchor_ceiling: float = ANCHOR_CEILING,
    max_share: float = MAX_SHARE,
) -> pd.DataFrame:
    """ITU-R BS.1534-3 sec. 4.1.2 post-screening, one row per assessor.

    An assessor is excluded who rates the hidden reference (``reference``) below
    ``ref_floor`` (90) for more than ``max_share`` (15 %) of the test items, or the
    mid-range anchor above ``anchor_ceiling`` (90) for more than 15 % of the items
    (that rule applies only when the campaign has a mid-range anchor).
    """
    _require(frame, ["trial", "model", "rating"])
    if reference not in set(frame["model"]):
        raise ListeningError("reference", f"{reference!r} is not rated in this frame")
    has_anchor = mid_anchor is not None and mid_anchor in set(frame["model"])
    rows = []
    for rater, g in frame.groupby("rater", sort=True):
        items = g["trial"].nunique()
        ref = g[g["model"] == reference]
        low = int((ref["rating"] < ref_floor).sum())
        anc = g[g["model"] == mid_anchor] if has_anchor else g.iloc[0:0]
        high = int((anc["rating"] > anchor_ceiling).sum())
        reasons = []
        if low / items > max_share:
            reasons.append(f"hidden reference < {ref_floor:g} in {low} of {items} items")
        if has_anchor and high / items > max_share:
            reasons.append(f"mid-range anchor > {anchor_ceiling:g} in {high} of {items} items")
        rows.append(
            {
                "rater": rater,
                "items": items,
                "ref_below": low,
                "ref_below_share": low / items,
                "anchor_above": high if has_anchor else pd.NA,
                "excluded": bool(reasons),
                "reason": "; ".join(reasons),
            }
        )
    return pd.DataFrame(rows).astype({"anchor_above": "Int64", "reason": "string"})


def mushra_panel(
    frame: pd.DataFrame,
    /,
    *,
    reference: str | None = None,
    mid_anchor: str | None = None,
    confidence: float = 0.95,
    exclude: bool = True,
) -> dict[str, pd.DataFrame]:
    """``{"screening", "models", "pairs"}``: screening (when ``reference`` is given), then
    per model the mean, a t interval over all scores and one over assessor means, and
    paired t tests between models over assessor means (Holm). ``exclude=False`` shows the
    screening but counts every assessor of ``frame`` (a campaign applies its exclusions,
    the screening among them, before: so its ``raters="all"`` really is everyone)."""
    _require(frame, ["trial", "model", "rating"])
    out: dict[str, pd.DataFrame] = {}
    kept = frame
    if reference is not None:
        out["screening"] = screen = bs1534_screen(frame, reference=reference, mid_anchor=mid_anchor)
        if exclude:
            kept = frame[frame["rater"].isin(screen.loc[~screen["excluded"], "rater"])]
    if kept.empty:
        raise ListeningError(
            "frame",
            f"every assessor ({frame['rater'].nunique()}) was excluded by the post-screening; "
            "bs1534_screen(frame, reference=...) gives each one's reason",
        )
    per_rater = kept.groupby(["rater", "model"])["rating"].mean().reset_index()
    rows = []
    for model, g in kept.groupby("model", sort=True):
        values = g["rating"].to_numpy(float)
        mean, low, high = st.t_interval(values, confidence=confidence)
        means = per_rater.loc[per_rater["model"] == model, "rating"].to_numpy(float)
        _, rlow, rhigh = st.t_interval(means, confidence=confidence)
        rows.append(
            {
                "model": model,
                "n": values.size,
                "raters": means.size,
                "mean": mean,
                "ci_low": low,
                "ci_high": high,
                "ci_low_rater": rlow,
                "ci_high_rater": rhigh,
            }
        )
    out["models"] = pd.DataFrame(rows).sort_values("mean", ascending=False, ignore_index=True)
    out["pairs"] = st.mushra_pairwise(per_rater.rename(columns={"rater": "trial"}))
    return out
