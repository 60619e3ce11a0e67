"""The one verdict: a sentence names a winner only when its rule separates the numbers the
table shows, the same table always gives the same sentence, and no sentence contradicts the
table's order (properties over random tables), for every kind of table songlab shows."""

from __future__ import annotations

import math
import re
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from songlab.listening import ListeningError
from songlab.listening.verdict import Estimate, Measure, Verdict, per, price_per, verdict

PROPS = settings(max_examples=100, derandomize=True, database=None, deadline=None)
MODELS = ("v5", "v6", "v7", "v8", "v9")
SHARE = Measure("choice share", digits=0, scale=100, suffix=" %")
MOS = Measure("MOS")
PER_POINT = Measure("dollars per point", better="lower", digits=4, prefix="$")


def _ranked(measure: Measure, *rows: tuple[str, float, float, float]) -> Verdict:
    return verdict([Estimate(n, v, lo, hi) for n, v, lo, hi in rows], measure=measure)


# -- the cases of the issue -----------------------------------------------------------------


def test_one_win_each_of_two_is_no_clear_winner() -> None:
    """Notebook 05's panel: v5 and v6 each chosen in 1 of 2 (Wilson 9-91 %): no winner."""
    v = _ranked(SHARE, ("v5", 0.5, 0.0945, 0.9055), ("v6", 0.5, 0.0945, 0.9055))
    assert v.winner is None
    assert v.text.startswith("No clear winner on choice share: v5 and v6 overlap")
    assert "Winner" not in v.text and "Highest" not in v.text
    assert "Rule: a model is named best only when its 95 % interval lies wholly above" in v.text


def test_overlapping_listening_scores_name_no_winner_and_separated_ones_do() -> None:
    """Notebook 09's panel: v7 75.0 (56.2-93.8) overlaps v5 43.8 (25.0-62.5)."""
    listening = Measure("listening score", digits=1)
    rows = [("v5", 43.75, 25.0, 62.5), ("v6", 31.25, 12.5, 50.0), ("v7", 75.0, 56.25, 93.75)]
    v = _ranked(listening, *rows)
    assert v.winner is None and v.order == ("v7", "v5", "v6")
    assert v.leaders == ("v7", "v5") and v.behind == ()
    assert "v7 and v5 overlap (v7 75.0, 56.2-93.8; v5 43.8, 25.0-62.5)" in v.text
    clear = _ranked(listening, ("v5", 43.75, 25.0, 55.0), ("v6", 31.25, 12.5, 50.0), rows[2])
    assert clear.winner == "v7" and clear.behind == ("v5", "v6")
    assert clear.text.startswith("Highest listening score: v7, 75.0 (95 % interval 56.2-93.8)")
    assert "the nearest: v5, 25.0-55.0" in clear.text


def test_models_behind_every_leader_are_said_to_be_behind() -> None:
    v = _ranked(MOS, ("a", 4.0, 3.5, 4.5), ("b", 3.8, 3.4, 4.2), ("c", 2.0, 1.5, 2.5))
    assert v.winner is None and v.leaders == ("a", "b") and v.behind == ("c",)
    assert v.text.endswith(".") and "c is behind both" in v.text
    # c is clear of a but not of b: not "behind" (b overlaps it)
    w = _ranked(MOS, ("a", 4.0, 3.5, 4.5), ("b", 3.3, 2.4, 4.2), ("c", 2.0, 1.5, 2.5))
    assert w.leaders == ("a", "b") and w.behind == ()


def test_lower_is_better_and_points_per_dollar_propagate_the_interval() -> None:
    """v5 398 points per $ (227-568) and v7 300 (225-375): overlapping, no winner; a ratio
    without a price has no interval and the sentence says it cannot separate."""
    ppd = Measure("listening points per dollar", digits=0)
    v5 = per(Estimate("v5", 43.75, 25.0, 62.5), Decimal("0.11"))
    v7 = per(Estimate("v7", 75.0, 56.25, 93.75), Decimal("0.25"))
    assert (round(v5.value), round(v5.low), round(v5.high)) == (398, 227, 568)
    v = verdict([v5, v7], measure=ppd)
    assert v.winner is None and "v5 and v7 overlap" in v.text
    unknown = verdict([v5, per(Estimate("v7", 75.0, 56.25, 93.75), None)], measure=ppd)
    assert unknown.winner is None and unknown.unknown == ("v7",)
    assert "v7 has no interval to separate by" in unknown.text
    # dollars per point: lower is better, the interval inverted
    cheap = price_per(Estimate("v6", 77.5, 75.7, 79.3), Decimal("0.15"))
    dear = price_per(Estimate("v7", 97.6, 96.5, 98.8), Decimal("0.25"))
    assert cheap.low == pytest.approx(0.15 / 79.3) and cheap.high == pytest.approx(0.15 / 75.7)
    best = verdict([dear, cheap], measure=PER_POINT)
    assert best.winner == "v6" and best.text.startswith("Lowest dollars per point: v6, $0.0019")
    assert "lies wholly below" in best.rule
    open_above = price_per(Estimate("v5", 10.0, -3.0, 20.0), Decimal("0.1"))
    assert open_above.high == math.inf and "unbounded" in verdict(
        [open_above, cheap], measure=PER_POINT
    ).text.replace(PER_POINT.show(math.inf), "unbounded")


def test_a_test_rule_names_a_winner_only_when_every_pairwise_p_is_below_alpha() -> None:
    """MUSHRA's paired t tests (Holm): v7 against v6 p = 0.2 is no clear winner."""
    mean = Measure("mean score", digits=1, test="Holm-adjusted paired t test")
    rows = [Estimate("v5", 55.5), Estimate("v6", 77.5), Estimate("v7", 97.6)]
    tests = {
        frozenset(("v5", "v6")): 0.001,
        frozenset(("v5", "v7")): 0.0001,
        frozenset(("v6", "v7")): 0.2,
    }
    v = verdict(rows, measure=mean, tests=tests)
    assert v.winner is None and v.leaders == ("v7", "v6") and v.behind == ("v5",)
    assert "v7 and v6 are not separated" in v.text and "v7-v6 p = 0.200" in v.text
    assert "Holm-adjusted paired t test against every other model gives p < 0.05" in v.text
    clear = verdict(rows, measure=mean, tests={**tests, frozenset(("v6", "v7")): 0.01})
    assert clear.winner == "v7" and "largest p: v6, p = 0.010" in clear.text
    missing = verdict(rows, measure=mean, tests={frozenset(("v5", "v7")): 0.0001})
    assert missing.winner is None and set(missing.unknown) == set()
    assert "v7 and v6 are not separated" in missing.text


def test_pairs_against_chance_say_who_is_preferred_or_that_nothing_separates() -> None:
    share = Measure("share", digits=0, scale=100, suffix=" %", chance=0.5)
    rows = [
        Estimate("v5", 0.083, 0.0, 0.212, other="v7"),
        Estimate("v5", 0.417, 0.092, 0.741, other="v6"),
    ]
    v = verdict(rows, measure=share)
    assert v.winner is None and v.separated == (("v7", "v5"),)
    assert v.text.startswith("v7 preferred to v5 (v5 vs v7: share 8 % (95 % interval 0-21 %))")
    assert "not separated: v5 vs v6" in v.text
    assert "excludes 50 %" in v.rule
    none = verdict(rows[1:], measure=share)
    assert none.text.startswith("No pair separated from chance (50 %) on share")


def test_abx_pairs_are_told_apart_only_above_chance_by_the_one_sided_test() -> None:
    abx = Measure(
        "correct", digits=0, scale=100, suffix=" %", chance=0.5, directional=False,
        test="one-sided exact binomial test",
    )  # fmt: skip
    rows = [
        Estimate("v5", 0.83, 0.64, 0.93, other="v7", p=0.002),
        Estimate("v5", 0.2, 0.1, 0.4, other="v6", p=0.99),  # below chance: not told apart
        Estimate("v6", 0.6, 0.4, 0.8, other="v7", p=None),
    ]
    v = verdict(rows, measure=abx)
    assert v.separated == (("v5", "v7"),)
    assert v.text.startswith(
        "v5 and v7 told apart (v5 vs v7: correct 83 % (95 % interval 64-93 %), p = 0.002)"
    )
    assert "not separated: v5 vs v6" in v.text and "nothing to separate by for v6 vs v7" in v.text
    assert "one-sided exact binomial test gives p < 0.05" in v.rule


def test_bad_tables_are_refused_naming_the_field() -> None:
    with pytest.raises(ListeningError, match="low"):
        Estimate("v5", 0.5, 0.7, 0.6)
    with pytest.raises(ListeningError, match="value"):
        Estimate("v5", "0.5")  # type: ignore[arg-type]
    with pytest.raises(ListeningError, match="better"):
        Measure("x", better="bigger")  # type: ignore[arg-type]
    with pytest.raises(ListeningError, match="twice"):
        verdict([Estimate("v5", 1.0), Estimate("v5", 2.0)], measure=MOS)
    with pytest.raises(ListeningError, match="other"):
        verdict([Estimate("v5", 0.5)], measure=Measure("share", chance=0.5))
    assert verdict([Estimate("v5", 1.0, 0.5, 1.5)], measure=MOS).text == (
        "No winner on MOS: one model only (v5), nothing to compare."
    )


# -- properties over random tables ----------------------------------------------------------


@st.composite
def tables(draw: st.DrawFn) -> tuple[list[Estimate], Measure]:
    n = draw(st.integers(1, 5))
    digits = draw(st.integers(0, 3))
    measure = Measure("score", better=draw(st.sampled_from(["higher", "lower"])), digits=digits)
    rows = []
    for name in MODELS[:n]:
        value = draw(st.floats(-50, 150, allow_nan=False))
        if draw(st.integers(0, 9)) == 0:
            rows.append(Estimate(name, value))  # no interval
            continue
        below = draw(st.floats(0, 60, allow_nan=False))
        above = draw(st.floats(0, 60, allow_nan=False))
        rows.append(Estimate(name, value, value - below, value + above))
    return rows, measure


def _shown(measure: Measure, x: float) -> float:
    return measure.level(x)


def _separates(w: Estimate, o: Estimate, m: Measure) -> bool:
    if not (w.known and o.known):
        return False
    if m.better == "higher":
        return _shown(m, w.low) > _shown(m, o.high)
    return _shown(m, w.high) < _shown(m, o.low)


@PROPS
@given(tables())
def test_a_winner_is_named_only_when_its_interval_separates_from_every_other(
    table: tuple[list[Estimate], Measure],
) -> None:
    rows, m = table
    v = verdict(rows, measure=m)
    by = {e.name: e for e in rows}
    if v.winner is not None:
        w = by[v.winner]
        assert all(_separates(w, o, m) for o in rows if o is not w)
        assert v.text.startswith(("Highest", "Lowest")) and f": {w.name}, " in v.text
    else:
        assert not v.text.startswith(("Highest", "Lowest"))
        assert "winner" in v.text.split(":")[0].lower()
        if len(rows) > 1:  # the best by value is then not clear of someone
            top = by[v.order[0]]
            assert not all(_separates(top, o, m) for o in rows if o is not top)
    assert len(rows) < 2 or ("Rule: " in v.text and v.rule in v.text)


@PROPS
@given(tables(), st.randoms(use_true_random=False))
def test_the_same_table_in_any_order_gives_the_same_sentence(
    table: tuple[list[Estimate], Measure], rnd: object
) -> None:
    rows, m = table
    shuffled = list(rows)
    rnd.shuffle(shuffled)  # type: ignore[attr-defined]
    assert verdict(shuffled, measure=m) == verdict(rows, measure=m)
    assert verdict(rows, measure=m).text == verdict(list(rows), measure=m).text


@PROPS
@given(tables())
def test_no_sentence_contradicts_the_tables_order(table: tuple[list[Estimate], Measure]) -> None:
    rows, m = table
    v = verdict(rows, measure=m)
    by = {e.name: e for e in rows}
    levels = [m.level(by[n].value) for n in v.order]
    known = [x for x in levels if not math.isnan(x)]
    assert known == sorted(known, reverse=m.better == "higher")  # best first
    sign = 1 if m.better == "higher" else -1
    for better, worse in v.separated:  # a separated pair is in the table's order
        assert sign * (m.level(by[better].value) - m.level(by[worse].value)) >= 0
        assert _separates(by[better], by[worse], m)
    for name in v.behind:  # "behind" only when clear of every leader
        assert all(_separates(by[x], by[name], m) for x in v.leaders)
        assert v.winner is not None or re.search(rf"\b{name}\b.*behind", v.text)
    if v.winner is None and len(rows) > 1:
        for n in v.leaders:
            assert n in v.text  # the models that could not be told apart are named


@st.composite
def pair_tables(draw: st.DrawFn) -> tuple[list[Estimate], Measure]:
    models = MODELS[: draw(st.integers(2, 4))]
    by_test = draw(st.booleans())
    measure = Measure(
        "share", digits=draw(st.integers(0, 2)), scale=100, suffix=" %", chance=0.5,
        directional=draw(st.booleans()), test="test",
    )  # fmt: skip
    rows = []
    for i, a in enumerate(models):
        for b in models[i + 1 :]:
            value = draw(st.floats(0, 1))
            low = value - draw(st.floats(0, 0.5))
            high = value + draw(st.floats(0, 0.5))
            p = draw(st.floats(0, 1)) if by_test else None
            rows.append(Estimate(a, value, low, high, other=b, p=p))
    return rows, measure


@PROPS
@given(pair_tables())
def test_a_pair_is_said_to_differ_only_when_its_rule_separates_it(
    table: tuple[list[Estimate], Measure],
) -> None:
    rows, m = table
    v = verdict(rows, measure=m)
    by_test = rows[0].p is not None
    chance = m.level(0.5)
    said = set(v.separated)
    for e in rows:
        assert e.other is not None
        up = (e.name, e.other) in said
        down = (e.other, e.name) in said
        value = m.level(e.value)
        if by_test:
            assert e.p is not None
            expect_up = e.p < m.alpha and value > chance
            expect_down = m.directional and e.p < m.alpha and value < chance
        else:
            expect_up = m.level(e.low) > chance
            expect_down = m.directional and m.level(e.high) < chance
        assert (up, down) == (expect_up, expect_down)
    assert v.winner is None and v.rule in v.text
    assert verdict(list(reversed(rows)), measure=m) == v
