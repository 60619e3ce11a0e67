"""Panel statistics against hand-computed values, a second library (choix) and BS.1534-3."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from songlab.listening import ListeningError, panel
from songlab.listening import stats as st


def _pref_frame(outcomes) -> pd.DataFrame:
    """outcomes: (rater, winner, loser) per pair trial -> a campaign-like preference frame."""
    rows = []
    for i, (rater, w, lo) in enumerate(outcomes):
        for label, m in (("A", w), ("B", lo)) if i % 2 == 0 else (("A", lo), ("B", w)):
            rows.append(
                {
                    "rater": rater,
                    "trial": i,
                    "label": label,
                    "model": m,
                    "chosen": m == w,
                    "tie": False,
                }
            )
    return pd.DataFrame(rows)


def test_clustered_mean_by_hand() -> None:
    y = np.array([1, 1, 0, 1, 0, 0, 1, 1.0])
    g = ["a", "a", "a", "b", "b", "c", "c", "c"]
    mean, low, high, se = panel.clustered_mean(y, g)
    # se^2 = G/(G-1) * sum_g (sum_i (y_i - 5/8))^2 / N^2; residual sums 3/8, -2/8, -1/8... by hand:
    sums = [2 - 3 * 0.625, 1 - 2 * 0.625, 2 - 3 * 0.625]  # 0.125, -0.25, 0.125
    se_hand = math.sqrt(3 / 2 * sum(s * s for s in sums) / 64)
    assert mean == 0.625 and se == pytest.approx(se_hand, rel=1e-12)
    assert se_hand == pytest.approx(0.046875)
    half = stats.t.ppf(0.975, 2) * se_hand  # t with G - 1 = 2 df
    assert (low, high) == pytest.approx((0.625 - half, 0.625 + half), rel=1e-12)


def test_preference_shares_cluster_by_rater() -> None:
    # rater r1: a wins 3 of 3; r2: 1 of 3; r3: 2 of 2 (pair a-b)
    out = [("r1", "a", "b")] * 3 + [("r2", "a", "b"), ("r2", "b", "a"), ("r2", "b", "a")]
    out += [("r3", "a", "b")] * 2
    shares = panel.preference_shares(_pref_frame(out))
    row = shares.iloc[0]
    assert (row["n"], row["raters"], row["wins_a"]) == (8, 3, 6)
    mean, low, high, se = panel.clustered_mean(
        [1, 1, 1, 1, 0, 0, 1, 1], ["r1"] * 3 + ["r2"] * 3 + ["r3"] * 2
    )
    assert low < 0.0 and high > 1.0  # two raters' spread on 2 df: wider than a share can be
    assert row["share_a"] == 0.75 and (row["ci_low"], row["ci_high"]) == (0.0, 1.0)
    assert row["p_value"] == pytest.approx(2 * stats.t.sf(0.25 / se, 2))


def test_preference_shares_without_spread_fall_back_to_the_exact_binomial() -> None:
    shares = panel.preference_shares(_pref_frame([("r1", "a", "b"), ("r2", "a", "b")] * 3))
    row = shares.iloc[0]
    assert (row["share_a"], row["ci_low"], row["ci_high"]) == (1.0, 1.0, 1.0)
    assert row["p_value"] == pytest.approx(2 * 0.5**6)  # two-sided exact, 6 of 6


def test_a_share_interval_never_leaves_0_to_1() -> None:
    # 14 wins of 16 by three raters: share +- t(2 df) * se reaches 1.13 before the cut
    out = [("r1", "a", "b")] * 4 + [("r1", "b", "a")] + [("r2", "a", "b")] * 5
    out += [("r3", "a", "b")] * 5 + [("r3", "b", "a")]
    row = panel.preference_shares(_pref_frame(out)).iloc[0]
    y = [1, 1, 1, 1, 0] + [1] * 5 + [1] * 5 + [0]
    raters = ["r1"] * 5 + ["r2"] * 5 + ["r3"] * 6
    share, low, high, se = panel.clustered_mean(y, raters)
    assert high > 1.0 and low > 0.0  # the uncut interval, by the formula tested above
    assert (row["share_a"], row["ci_low"], row["ci_high"]) == pytest.approx((share, low, 1.0))
    assert row["p_value"] == pytest.approx(2 * stats.t.sf((share - 0.5) / se, 2))  # uncut se
    # and from below: the mirror image of the same answers
    mirror = [(r, loser, winner) for r, winner, loser in out]
    row = panel.preference_shares(_pref_frame(mirror)).iloc[0]
    assert (row["ci_low"], row["ci_high"]) == pytest.approx((0.0, 1 - low))


def test_an_abx_pooled_rate_interval_never_passes_1() -> None:
    rows = [
        {"rater": rater, "trial": i, "model_a": "x", "model_b": "y", "correct": i < k}
        for rater, k in (("r1", 10), ("r2", 7), ("r3", 10))
        for i in range(10)
    ]
    pooled = panel.abx_panel(pd.DataFrame(rows))["pooled"].iloc[0]
    _, low, high, _ = panel.clustered_mean(
        [float(i < k) for k in (10, 7, 10) for i in range(10)],
        [r for r in "abc" for _ in range(10)],
    )
    assert high > 1.0
    assert (pooled["rate"], pooled["ci_low"], pooled["ci_high"]) == pytest.approx((0.9, low, 1.0))


def test_bradley_terry_two_models_is_the_log_odds_with_a_clustered_se() -> None:
    out = (
        [("r1", "b", "a")] * 4
        + [("r1", "a", "b")]
        + [("r2", "b", "a")] * 3
        + [("r2", "a", "b")] * 2
    )
    bt = panel.bradley_terry(_pref_frame(out), baseline="a")
    b = bt.set_index("model").loc["b"]
    p = 7 / 10
    assert b["strength"] == pytest.approx(math.log(7 / 3), rel=1e-6)  # MLE: log(wins_b / wins_a)
    # intercept-only logit: sandwich se = cluster se of the mean / (p (1 - p))
    _, _, _, se_mean = panel.clustered_mean(
        [1] * 4 + [0] + [1] * 3 + [0] * 2, ["r1"] * 5 + ["r2"] * 5
    )
    assert b["se"] == pytest.approx(se_mean / (p * (1 - p)), rel=1e-5)
    assert b["p_beats_baseline"] == pytest.approx(p) and b["score"] == pytest.approx(70.0)
    assert bt["rank"].tolist() == [1, 2] and bt["model"].tolist() == ["b", "a"]


def test_bradley_terry_matches_choix() -> None:
    choix = pytest.importorskip("choix")
    rng = np.random.default_rng(0)
    truth = {"m0": 0.0, "m1": 0.7, "m2": 1.4, "m3": -0.5}
    names = list(truth)
    out = []
    for k in range(400):
        i, j = rng.choice(4, 2, replace=False)
        pi = 1 / (1 + math.exp(truth[names[j]] - truth[names[i]]))
        w, lo = (i, j) if rng.random() < pi else (j, i)
        out.append((f"r{k % 10}", names[w], names[lo]))
    bt = panel.bradley_terry(_pref_frame(out), baseline="m0").set_index("model")
    data = [(names.index(w), names.index(lo)) for _, w, lo in out]
    ref = choix.opt_pairwise(4, data, alpha=0.0)
    for m in names:
        assert bt.loc[m, "strength"] == pytest.approx(ref[names.index(m)] - ref[0], abs=1e-4)
    assert bt.index.tolist() == ["m2", "m1", "m0", "m3"]


def test_bradley_terry_with_one_rater_gives_the_models_own_interval() -> None:
    # a pilot: one rater, b chosen 4 times of 6; no spread between raters to cluster on
    out = [("r1", "b", "a")] * 4 + [("r1", "a", "b")] * 2
    bt = panel.bradley_terry(_pref_frame(out), baseline="a").set_index("model")
    p, n = 4 / 6, 6
    assert bt.loc["b", "strength"] == pytest.approx(math.log(2), rel=1e-6)
    assert bt.loc["b", "se"] == pytest.approx(math.sqrt(1 / (n * p * (1 - p))), rel=1e-5)
    z = stats.norm.ppf(0.975)
    assert (bt.loc["b", "ci_low"], bt.loc["b", "ci_high"]) == pytest.approx(
        (math.log(2) - z * bt.loc["b", "se"], math.log(2) + z * bt.loc["b", "se"])
    )
    assert bt.loc["b", "score_low"] < 66.7 < bt.loc["b", "score_high"]


def test_bradley_terry_refuses_an_unidentifiable_ranking() -> None:
    with pytest.raises(ListeningError, match="not identifiable"):
        panel.bradley_terry(_pref_frame([("r1", "a", "b"), ("r2", "a", "b"), ("r1", "a", "b")]))


def test_abx_per_rater_and_pooled_with_holm() -> None:
    rows = []
    for rater, k in (("r1", 9), ("r2", 5), ("r3", 10)):
        for i in range(10):
            rows.append(
                {"rater": rater, "trial": i, "model_a": "x", "model_b": "y", "correct": i < k}
            )
    out = panel.abx_panel(pd.DataFrame(rows))
    per = out["raters"].set_index("rater")
    assert per.loc["r1", "p_value"] == pytest.approx(11 / 1024)  # P(K >= 9), K ~ Bin(10, 1/2)
    assert per.loc["r3", "p_value"] == pytest.approx(1 / 1024)
    assert per.loc["r2", "p_value"] == pytest.approx(638 / 1024)  # P(K >= 5)
    # Holm over three tests: sorted 1/1024, 11/1024, 638/1024 -> x3, x2, x1 (monotone)
    assert per["p_holm"].tolist() == pytest.approx([22 / 1024, 638 / 1024, 3 / 1024])
    assert per["p_holm"].tolist() == pytest.approx(st.holm(per["p_value"].to_numpy()).tolist())
    pooled = out["pooled"].iloc[0]
    assert (pooled["n"], pooled["correct"]) == (30, 24)
    assert pooled["p_value"] == pytest.approx(stats.binom.sf(23, 30, 0.5))
    assert pooled["raters_significant"] == 2


def _mushra_frame(ratings) -> pd.DataFrame:
    """ratings: {rater: [(ref, mid_anchor, m1), ...] per item}."""
    rows = []
    for rater, items in ratings.items():
        for t, values in enumerate(items):
            for model, v in zip(("ref", "mid", "m1"), values, strict=True):
                rows.append({"rater": rater, "trial": t, "model": model, "rating": float(v)})
    return pd.DataFrame(rows)


def test_bs1534_post_screening_section_4_1_2() -> None:
    good = [(100, 40, 60)] * 20
    ratings = {
        "keep_all_good": good,
        "keep_exactly_15pct": [(80, 40, 60)] * 3 + [(100, 40, 60)] * 17,  # 3/20 = 15 %: not > 15 %
        "drop_ref_4_of_20": [(85, 40, 60)] * 4 + [(100, 40, 60)] * 16,  # 20 % below 90
        "drop_anchor_4_of_20": [(100, 95, 60)] * 4 + [(100, 40, 60)] * 16,  # mid anchor > 90
        "keep_ref_at_90": [(90, 90, 60)] * 20,  # 90 is not below 90, nor above it
    }
    screen = panel.bs1534_screen(_mushra_frame(ratings), reference="ref", mid_anchor="mid")
    s = screen.set_index("rater")
    assert s["excluded"].to_dict() == {
        "drop_anchor_4_of_20": True,
        "drop_ref_4_of_20": True,
        "keep_all_good": False,
        "keep_exactly_15pct": False,
        "keep_ref_at_90": False,
    }
    assert s.loc["drop_ref_4_of_20", "reason"] == "hidden reference < 90 in 4 of 20 items"
    assert s.loc["drop_anchor_4_of_20", "reason"] == "mid-range anchor > 90 in 4 of 20 items"
    assert s.loc["keep_exactly_15pct", "ref_below_share"] == 0.15
    # without a mid-range anchor the anchor rule does not apply
    no_anchor = panel.bs1534_screen(_mushra_frame(ratings), reference="ref", mid_anchor=None)
    assert not no_anchor.set_index("rater").loc["drop_anchor_4_of_20", "excluded"]


def test_mushra_panel_scores_only_the_kept_assessors() -> None:
    ratings = {
        "a": [(100, 30, 60), (100, 40, 70)],
        "b": [(95, 20, 50), (100, 30, 40)],
        "c": [(50, 95, 10), (60, 99, 10)],
    }
    out = panel.mushra_panel(_mushra_frame(ratings), reference="ref", mid_anchor="mid")
    assert out["screening"].set_index("rater")["excluded"].to_dict() == {
        "a": False,
        "b": False,
        "c": True,
    }
    m1 = out["models"].set_index("model").loc["m1"]
    values = [60, 70, 50, 40]
    assert (m1["n"], m1["raters"], m1["mean"]) == (4, 2, 55.0)
    half = stats.t.ppf(0.975, 3) * np.std(values, ddof=1) / 2
    assert (m1["ci_low"], m1["ci_high"]) == pytest.approx((55 - half, 55 + half))
    half_r = stats.t.ppf(0.975, 1) * np.std([65, 45], ddof=1) / math.sqrt(2)
    assert (m1["ci_low_rater"], m1["ci_high_rater"]) == pytest.approx((55 - half_r, 55 + half_r))
    pairs = out["pairs"].set_index(["model_a", "model_b"])
    assert pairs.loc[("m1", "ref"), "n"] == 2
    assert pairs.loc[("m1", "ref"), "mean_diff"] == pytest.approx(((65 - 100) + (45 - 97.5)) / 2)
    with pytest.raises(ListeningError, match=r"every assessor \(1\) was excluded"):
        panel.mushra_panel(_mushra_frame({"c": ratings["c"]}), reference="ref", mid_anchor="mid")
