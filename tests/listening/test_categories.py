"""The five-category rating protocols' shared rules (ACR and DCR): the answer, P.808's rater
checks, and the mean per model with intervals kept on the 1-5 scale."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import songlab.listening._categories as categories
from songlab.listening import ListeningError, protocol, simulate
from songlab.listening._trials import Plan
from tests.listening.listening_signals import MODELS, make_clips

WORDS = {5: "Excellent", 4: "Good", 3: "Fair", 2: "Poor", 1: "Bad"}


def test_an_interval_stays_on_the_scale_and_one_vote_has_none() -> None:
    votes = pd.DataFrame(
        {
            "model": ["a"] * 6 + ["b"] * 6 + ["c"],
            "rating": [5, 5, 5, 5, 4, 5] + [1, 1, 2, 1, 1, 1] + [3],
        }
    )
    table = categories.mean_table(votes, "mos", 0.95).set_index("model")
    assert table.loc["a", "ci_high"] == 5.0 and table.loc["a", "ci_low"] < table.loc["a", "mos"]
    assert table.loc["b", "ci_low"] == 1.0 and table.loc["b", "ci_high"] > table.loc["b", "mos"]
    assert np.isnan(table.loc["c", "ci_low"]) and np.isnan(table.loc["c", "ci_high"])
    raters = votes.iloc[:12].assign(rater=[f"r{i % 3}" for i in range(12)])
    clustered = categories.panel_table(raters, "mos", 0.95)["models"].set_index("model")
    assert (clustered["ci_low_rater"] >= 1).all() and (clustered["ci_high_rater"] <= 5).all()


def test_the_answer_and_the_checks() -> None:
    assert categories.check_answer(np.int64(4), WORDS) == 4
    with pytest.raises(
        ListeningError, match=r"^rating: must be a category 1 \(Bad\) to 5 \(Excellent\)"
    ):
        categories.check_answer(True, WORDS)
    trap = categories.check_plan("trap", Plan(0, ("v5",)), np.random.default_rng(1))
    assert trap.check == "trap" and 1 <= trap.expect <= 5 and trap.models[0].startswith("trap:")
    assert categories.passed(trap, trap.expect) and not categories.passed(trap, trap.expect % 5 + 1)
    gold = categories.check_plan("gold", Plan(0, ("v5",)), np.random.default_rng(1))
    assert categories.passed(gold, 2) and not categories.passed(gold, 3)
    assert categories.right_answer(gold) == 1 and categories.right_answer(trap) == trap.expect
    assert categories.expected(gold, "1 Bad or 2 Poor") == "1 Bad or 2 Poor (made plainly bad)"


@pytest.mark.parametrize("kind", ["acr", "dcr"])
def test_acr_and_dcr_keep_their_mean_on_the_scale(kind: str) -> None:
    s = protocol(kind)(make_clips(2, seconds=0.5), seed=2, repeats=3)
    simulate(s, scores={MODELS[0]: 5.0, MODELS[1]: 1.0, MODELS[2]: 3.0}, noise=0.6, seed=3)
    s.reveal()
    models = s.stats()["models"]
    assert (models["ci_low"] >= 1).all() and (models["ci_high"] <= 5).all()
