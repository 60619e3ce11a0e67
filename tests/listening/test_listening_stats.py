"""Statistics against values computed by hand from the formulas (docs/listening.md)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from songlab.listening import ListeningError, stats

Z975 = 1.959963984540054  # Phi^-1(0.975)


def _phi_inv(p: float) -> float:
    # Inverse normal CDF by bisection on math.erf: independent of scipy.
    lo, hi = -10.0, 10.0
    for _ in range(200):
        mid = (lo + hi) / 2
        if 0.5 * (1 + math.erf(mid / math.sqrt(2))) < p:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def _phi(x: float) -> float:
    return 0.5 * (1 + math.erf(x / math.sqrt(2)))


def test_binomial_two_sided_8_of_10_is_112_over_1024() -> None:
    # P(X >= 8) + P(X <= 2) = 2 (C(10,8) + C(10,9) + C(10,10)) / 2^10 = 2 * 56 / 1024
    assert stats.binomial_p(8, 10) == 0.109375


def test_binomial_one_sided_and_edges() -> None:
    assert stats.binomial_p(8, 10, alternative="greater") == 56 / 1024  # 0.0546875
    assert stats.binomial_p(10, 10, alternative="greater") == 1 / 1024
    assert stats.binomial_p(5, 10) == 1.0
    assert stats.binomial_p(0, 0) == 1.0
    with pytest.raises(ListeningError, match="^k: must be <= n"):
        stats.binomial_p(11, 10)
    with pytest.raises(ListeningError, match="^alternative: "):
        stats.binomial_p(1, 2, alternative="both")


def test_wilson_interval_from_the_formula() -> None:
    k, n, z2 = 8, 10, Z975**2
    centre = (k + z2 / 2) / (n + z2)
    half = Z975 / (n + z2) * math.sqrt(k * (n - k) / n + z2 / 4)
    low, high = stats.proportion_ci(8, 10)
    assert low == pytest.approx(centre - half, abs=1e-9) and high == pytest.approx(
        centre + half, abs=1e-9
    )
    assert (low, high) == pytest.approx((0.4901625, 0.9433178), abs=1e-6)


def test_clopper_pearson_interval_known_values() -> None:
    # Beta(0.025; 8, 3) and Beta(0.975; 9, 2): the exact interval for 8/10.
    assert stats.proportion_ci(8, 10, method="clopper-pearson") == pytest.approx(
        (0.4439045, 0.9747893), abs=1e-6
    )
    # 10/10: the upper bound is 1 and the lower is (alpha/2)^(1/n).
    low, high = stats.proportion_ci(10, 10, method="clopper-pearson")
    assert high == 1.0 and low == pytest.approx(0.025 ** (1 / 10), abs=1e-9)


def test_dprime_yes_no_and_corrections() -> None:
    # H = .8, F = .2, no correction: d' = 2 z(.8) = 1.6832424671458286
    assert stats.dprime_yes_no(8, 10, 2, 10, correction="none") == pytest.approx(
        1.6832424671458286, abs=1e-9
    )
    # log-linear: H = 10.5/11, F = 0.5/11
    expected = _phi_inv(10.5 / 11) - _phi_inv(0.5 / 11)
    assert stats.dprime_yes_no(10, 10, 0, 10) == pytest.approx(expected, abs=1e-7)
    # 1/(2N): H = 1 - 1/20, F = 1/20 -> d' = 2 z(.95) = 3.289707253902945
    assert stats.dprime_yes_no(10, 10, 0, 10, correction="1/(2N)") == pytest.approx(
        3.289707253902945, abs=1e-9
    )
    assert stats.dprime_yes_no(5, 10, 5, 10) == 0.0
    with pytest.raises(ListeningError, match="^correction: "):
        stats.dprime_yes_no(5, 10, 5, 10, correction="add-one")


def _abx_pc(d: float, c: float) -> float:
    return _phi(d / math.sqrt(2)) * _phi(d / c) + _phi(-d / math.sqrt(2)) * _phi(-d / c)


def test_dprime_abx_differencing_and_independent_observation_models() -> None:
    # H = .8, F = .2 (no correction): unbiased pc = Phi((z(.8) - z(.2)) / 2) = .8; solve for d.
    d = stats.dprime_abx(8, 10, 2, 10, correction="none")
    assert _abx_pc(d, math.sqrt(6)) == pytest.approx(
        0.8, abs=1e-9
    )  # differencing: Phi(d/sqrt2)Phi(d/sqrt6)+...
    d_io = stats.dprime_abx(8, 10, 2, 10, correction="none", model="independent-observation")
    assert _abx_pc(d_io, 2.0) == pytest.approx(0.8, abs=1e-9)  # independent observation: c = 2
    assert d_io == pytest.approx(2.0726, abs=1e-4)
    assert d > d_io > 1.6832424671458286  # ABX needs more sensitivity than yes-no for the same pc
    assert stats.dprime_abx(5, 10, 5, 10) == 0.0
    assert stats.dprime_abx(2, 10, 8, 10, correction="none") == pytest.approx(-d)
    assert stats.abx_pc(0.0) == 0.5
    with pytest.raises(ListeningError, match="^model: "):
        stats.dprime_abx(8, 10, 2, 10, model="roving")


def test_holm_by_hand() -> None:
    # sorted .01, .03, .04 -> x3, x2, x1 = .03, .06, .04 -> running max .03, .06, .06
    np.testing.assert_allclose(stats.holm([0.01, 0.04, 0.03]), [0.03, 0.06, 0.06])
    np.testing.assert_allclose(stats.holm([0.5, 0.6]), [1.0, 1.0])
    with pytest.raises(ListeningError, match="^pvalues: "):
        stats.holm([0.5, 1.5])


def test_t_interval_by_hand() -> None:
    # mean 3, s = sqrt(2.5), t_{.975,4} = 2.7764451051977987
    half = 2.7764451051977987 * math.sqrt(2.5) / math.sqrt(5)
    assert stats.t_interval([1, 2, 3, 4, 5]) == pytest.approx(
        (3.0, 3.0 - half, 3.0 + half), abs=1e-9
    )
    mean, low, high = stats.t_interval([7.0])
    assert mean == 7.0 and math.isnan(low) and math.isnan(high)


def _mushra_frame(a: list[float], b: list[float]) -> pd.DataFrame:
    rows = [{"trial": i, "model": "a", "rating": x} for i, x in enumerate(a)]
    rows += [{"trial": i, "model": "b", "rating": x} for i, x in enumerate(b)]
    return pd.DataFrame(rows)


def test_mushra_pairwise_paired_t_and_wilcoxon_by_hand() -> None:
    a, b = (
        [60.0, 72.0, 55.0, 80.0, 66.0],
        [59.0, 70.0, 52.0, 76.0, 61.0],
    )  # differences 1, 2, 3, 4, 5
    # t = mean / (s / sqrt n) = 3 / (sqrt(2.5) / sqrt 5) = 3 sqrt 2
    out = stats.mushra_pairwise(_mushra_frame(a, b))
    assert out.loc[0, "statistic"] == pytest.approx(3 * math.sqrt(2), abs=1e-9)
    assert out.loc[0, "mean_diff"] == pytest.approx(3.0)
    # Student t with 4 df: F(t) = 1/2 + (3x/4)(1 - x^2/3), x = t / sqrt(t^2 + 4); two-sided p = 2 (1 - F)
    x = 3 * math.sqrt(2) / math.sqrt(18 + 4)
    assert out.loc[0, "p_value"] == pytest.approx(1 - 1.5 * x + 0.5 * x**3, abs=1e-12)
    assert out.loc[0, "p_value"] == pytest.approx(0.0132356, abs=1e-6)
    # Wilcoxon exact: all 5 differences positive and distinct -> W- = 0, p = 2 / 2^5 = 0.0625
    w = stats.mushra_pairwise(_mushra_frame(a, b), test="wilcoxon")
    assert w.loc[0, "p_value"] == 0.0625 and w.loc[0, "p_holm"] == 0.0625


def test_mushra_pairwise_holm_over_three_pairs() -> None:
    rows = [
        {"trial": t, "model": m, "rating": r}
        for t in range(6)
        for m, r in (("a", 80 + t), ("b", 50 + (t * 7) % 5), ("c", 50 + (t * 3) % 4))
    ]
    out = stats.mushra_pairwise(pd.DataFrame(rows))
    assert list(zip(out["model_a"], out["model_b"], strict=True)) == [
        ("a", "b"),
        ("a", "c"),
        ("b", "c"),
    ]
    np.testing.assert_allclose(out["p_holm"], stats.holm(out["p_value"].to_numpy()))
    assert (out["p_holm"] >= out["p_value"]).all()


def test_mushra_table_t_interval_per_model() -> None:
    frame = _mushra_frame([1, 2, 3, 4, 5], [10, 10, 10, 10, 10])
    out = stats.mushra_table(frame).set_index("model")
    half = 2.7764451051977987 * math.sqrt(2.5) / math.sqrt(5)
    assert out.loc["a", ["mean", "ci_low", "ci_high"]].tolist() == pytest.approx(
        [3.0, 3 - half, 3 + half]
    )
    assert out.loc["b", "sd"] == 0.0


def test_preference_table_counts_and_tests() -> None:
    rows = []
    outcomes = ["x"] * 8 + ["y"] * 2 + ["tie"]  # 8 wins for x, 2 for y, 1 no preference
    for t, won in enumerate(outcomes):
        for model in ("x", "y"):
            rows.append({"trial": t, "model": model, "chosen": model == won, "tie": won == "tie"})
    out = stats.preference_table(pd.DataFrame(rows)).iloc[0]
    assert (
        out["model_a"],
        out["model_b"],
        out["n"],
        out["wins_a"],
        out["wins_b"],
        out["ties"],
    ) == ("x", "y", 10, 8, 2, 1)
    assert out["p_value"] == 0.109375 and out["share_a"] == 0.8
    assert (out["ci_low"], out["ci_high"]) == pytest.approx((0.4901625, 0.9433178), abs=1e-6)


def test_abx_table_from_trials() -> None:
    # 10 trials: X=A five times (answered A 4 times), X=B five times (answered A once): 8 correct.
    xs = ["A"] * 5 + ["B"] * 5
    answers = ["A", "A", "A", "A", "B", "A", "B", "B", "B", "B"]
    frame = pd.DataFrame({"model_a": ["p"] * 10, "model_b": ["q"] * 10, "x": xs, "answer": answers})
    out = stats.abx_table(frame, correction="none").iloc[0]
    assert (out["n"], out["correct"], out["hits"], out["false_alarms"]) == (10, 8, 4, 1)
    assert out["p_value"] == 0.0546875
    assert out["d_prime_yes_no"] == pytest.approx(1.6832424671458286, abs=1e-9)  # z(.8) - z(.2)


def test_tables_require_revealed_columns() -> None:
    with pytest.raises(ListeningError, match="^frame: lacks columns"):
        stats.preference_table(pd.DataFrame({"trial": [0], "label": ["A"]}))


def test_p_values_read_as_less_than_a_thousandth_never_zero() -> None:
    assert stats.format_p(0.0) == "< 0.001" and stats.format_p(2e-9) == "< 0.001"
    assert stats.format_p(0.001) == "0.001" and stats.format_p(0.0386) == "0.039"
    assert stats.format_p(float("nan")) == "-" and stats.format_p(0.04, digits=4) == "0.0400"
    frame = pd.DataFrame(
        {
            "model_a": ["a", "b"],
            "share_a": [0.33333, 0.5],
            "p_value": [1e-7, 0.5],
            "p_holm": [2e-7, 1.0],
        }
    )
    shown = stats.readable(frame)
    assert shown["p_value"].tolist() == ["< 0.001", "0.500"]
    assert shown["p_holm"].tolist() == ["< 0.001", "1.000"]
    assert shown["share_a"].tolist() == [0.333, 0.5]
    assert frame["p_value"].tolist() == [1e-7, 0.5]  # the frame itself is untouched
