"""Every protocol's panel summary: its verdict line is the one verdict's, over the table it
shows (a winner only where the intervals separate, the rows in the verdict's order, the rule
stated), for a listener with a clear taste and for one without (every protocol of the
registry, so a new one is held to it)."""

from __future__ import annotations

import pytest

from songlab.listening import PROTOCOLS, protocol, simulate
from songlab.listening.controls import Summary
from tests.listening.listening_signals import MODELS, make_clips

TASTES = {
    "clear": {
        "prefer": MODELS[0],
        "p": 1.0,
        "p_correct": 1.0,
        "scores": "on the protocol's scale",
        "noise": 0.5,
    },
    "none": {"prefer": None, "p_correct": 0.5, "scores": {}, "noise": 0.5},
}
# the columns of a ranking summary's frame that are not its score
NOT_THE_SCORE = {"model", "n", "chosen", "offered", "sd", "ci_low", "ci_high"}


def _scores(session: object) -> dict[str, float]:
    """A plain taste on the protocol's own scale: the top, middle and bottom of its rating
    scale, or of its numbered choices (a MOS, a DMOS)."""
    controls = session.controls(0)  # type: ignore[attr-defined]
    if controls.scale is not None:
        low, high = controls.scale.low, controls.scale.high
    else:
        values = [c.value for c in controls.choices if isinstance(c.value, int)]
        low, high = (min(values), max(values)) if values else (0, 100)
    return {MODELS[0]: 0.9 * high + 0.1 * low, MODELS[1]: (low + high) / 2, MODELS[2]: low}


def _summary(kind: str, taste: str, seed: int) -> Summary:
    session = protocol(kind)(make_clips(2, seconds=0.5), seed=seed, repeats=2)
    behaviour = dict(TASTES[taste])
    if behaviour["scores"]:
        behaviour["scores"] = _scores(session)
    simulate(session, seed=seed, **behaviour)
    session.reveal()
    return session.summary()


@pytest.mark.parametrize("taste", sorted(TASTES))
@pytest.mark.parametrize("kind", sorted(PROTOCOLS))
def test_a_summary_names_a_winner_only_where_its_table_separates(kind: str, taste: str) -> None:
    for seed in (1, 2):
        s = _summary(kind, taste, seed)
        assert s.rule and s.verdict.count(f"Rule: {s.rule}.") == 1
        f = s.frame
        if "model_a" in f.columns:  # pairs against chance (ABX): told apart only when p < 0.05
            for r in f.itertuples():
                told = f"{r.model_a} and {r.model_b} told apart" in s.verdict
                assert told == (r.p_value < 0.05 and r.rate > 0.5), s.verdict
            continue
        score = next(c for c in f.columns if c not in NOT_THE_SCORE)
        assert [row[0] for row in s.rows] == f["model"].tolist()  # the table in its order
        assert f[score].is_monotonic_decreasing, f
        top, rest = f.iloc[0], f.iloc[1:]
        named = s.verdict.startswith("Highest")
        if named:
            assert s.verdict.split(": ", 1)[1].startswith(f"{top['model']}, ")
            assert (top["ci_low"] > rest["ci_high"]).all(), (s.verdict, f)
        else:
            assert "No clear winner" in s.verdict and "Winner" not in s.verdict
        if taste == "clear" and kind != "preference":
            assert named, s.verdict  # a taste this plain separates (the scores are 50 apart)
