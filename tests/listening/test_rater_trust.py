"""Raters you can trust: gold clips and trapping questions at random places, exclusion with
the reason and its source, statistics with and without the excluded raters, scripted
answers never mixed with a person's, CSV exports inert."""

from __future__ import annotations

import csv
from collections import Counter

import pytest

from songlab.listening import CollectError, ListeningError, campaign, preference, simulate
from songlab.listening._kit import check_source
from tests.listening.listening_signals import MODELS, make_clips


def _file(c, rater, answer, **options):
    """The answer file of a person on ``rater``'s page who answers ``answer(trial, plan)``."""
    s = c._sessions[rater].sibling(c._rater_seeds[rater])
    plans = s._unseal()["plans"]
    return c.answer_file(rater, {t.index: answer(t, plans[t.index]) for t in s.trials}, **options)


SCORE = {MODELS[0]: 5, MODELS[1]: 3, MODELS[2]: 2}


def _careful(t, plan):
    """An ACR rater who hears: the gold clip is bad, the beeps are counted."""
    if plan.check == "gold":
        return 1
    if plan.check == "trap":
        return plan.expect
    return SCORE[plan.models[0]] - (t.index % 2)


# One fixed secret: the trapping question's expected answer is drawn from it, and with a
# fresh secret each run it was 5 (what r05 flat-lines) about one run in five, so r05 passed
# the trap and failed 1 of 2 checks (seen in repeated runs here)
SECRET = b"songlab tests: rater trust, acr panel 0"


@pytest.fixture(scope="module")
def acr():
    c = campaign(
        "acr", make_clips(2, seconds=1.0), raters=5, seed=12, gold=1, traps=1, secret=SECRET
    )
    plans = c._sessions["r05"]._unseal()["plans"]
    assert [p.expect for p in plans if p.check == "trap"] != [5]  # r05 fails it by answering 5
    files = [_file(c, r, _careful) for r in c.raters[:4]]
    files.append(_file(c, "r05", lambda t, plan: 5))  # never listens: all Excellent
    c.collect(files)
    return c


def test_checks_sit_at_random_places_and_look_like_any_trial(acr) -> None:
    where = {}
    for r, s in acr._sessions.items():
        plans = s._unseal()["plans"]
        checks = [t for t in s.trials if plans[t.index].check]
        assert Counter(plans[t.index].check for t in checks) == {"gold": 1, "trap": 1}
        assert all(t.prompt in acr.prompts and t.labels == ("A",) for t in checks)
        assert all(check_source(plans[t.index].models[0]) for t in checks)
        where[r] = tuple(t.index for t in checks)
    assert len(set(where.values())) > 1  # not the same places for every rater


def test_a_rater_who_fails_the_checks_and_flat_lines_is_excluded_with_the_reasons(acr) -> None:
    ex = acr.exclusions().set_index("rater")
    assert ex["excluded"].to_dict() == {
        "r01": False,
        "r02": False,
        "r03": False,
        "r04": False,
        "r05": True,
    }
    assert ex.loc["r05", "checks"] == 2 and ex.loc["r05", "checks_failed"] == 2
    assert ex.loc["r05", "flat"]
    reason = ex.loc["r05", "reason"]
    assert "failed 2 of 2 checks (ITU-T P.808 gold and trapping questions)" in reason
    assert "flat-lining: the same answer (5) in all 6 trials" in reason
    assert "P.808 toolkit: vote variance below 0.1" in reason
    assert (ex.loc[["r01", "r02"], "checks_failed"] == 0).all()


def test_the_statistics_come_with_and_without_the_excluded_raters(acr) -> None:
    kept, everyone = acr.stats(), acr.stats(raters="all")
    assert kept["models"].attrs["counted"] == 4 and everyone["models"].attrs["counted"] == 5
    assert kept["exclusions"]["excluded"].sum() == 1
    mos_kept = kept["models"].set_index("model")["mos"]
    mos_all = everyone["models"].set_index("model")["mos"]
    assert mos_all[MODELS[2]] > mos_kept[MODELS[2]]  # the flat 5s lift the worst model
    frame = acr.results()
    assert set(frame.loc[frame["excluded"], "rater"]) == {"r05"}
    assert len(acr.results(raters="kept")) == 4 * 6 and len(acr.results(raters="excluded")) == 6
    assert (kept["models"]["answered_by"] == "person").all()


def test_flat_lining_in_a_choice_protocol_and_a_failed_headphone_check() -> None:
    c = campaign(
        "preference",
        make_clips(2, seconds=1.0),
        raters=3,
        seed=2,
        gold=1,
        traps=1,
        headphone_check=True,
    )

    def careful(t, plan):  # passes both checks, answers the rest by position
        if plan.check == "gold":
            return t.labels[1 - plan.at]
        if plan.check == "trap":
            return t.labels[plan.at]
        return t.labels[t.index % 2]

    def flat(t, plan):
        return careful(t, plan) if plan.check else "A"

    right = c._right_headphones("r03")
    wrong = [(i + 1) % 3 for i in right]
    c.collect(
        [
            _file(c, "r01", careful),
            _file(c, "r02", flat),
            _file(c, "r03", careful, headphones=wrong),
        ]
    )
    ex = c.exclusions().set_index("rater")
    assert ex["excluded"].to_dict() == {"r01": False, "r02": True, "r03": True}
    assert "the same answer ('A') in all 6 trials" in ex.loc["r02", "reason"]
    assert ex.loc["r03", "headphones"] == "0 of 6" and ex.loc["r01", "headphones"] == "6 of 6"
    assert (
        "headphone check 0 of 6 right (headphone check, Woods et al. 2017)"
        in ex.loc["r03", "reason"]
    )
    page = c.page("r01")
    assert "headphone check" in page and page.count("data:audio/mpeg") > 0


def test_mushra_post_screening_shows_among_the_exclusions() -> None:
    c = campaign(
        "mushra",
        make_clips(2, seconds=1.0),
        raters=3,
        seed=1,
        reference=MODELS[0],
        mid_anchor=True,
        gold=0,
        traps=0,
    )
    good = {MODELS[0]: 98, MODELS[1]: 60, MODELS[2]: 40}
    c.collect(
        [
            c.simulate("r01", scores=good, noise=1, seed=1),
            c.simulate("r02", scores=good, noise=1, seed=2),
            c.simulate("r03", scores={MODELS[0]: 50}, noise=1, seed=3),  # misses the reference
        ]
    )
    ex = c.exclusions().set_index("rater")
    assert ex["excluded"].to_dict() == {"r01": False, "r02": False, "r03": True}
    assert (
        "hidden reference < 90 in 2 of 2 items (ITU-R BS.1534-3 sec. 4.1.2"
        in ex.loc["r03", "reason"]
    )
    assert c.stats()["models"].attrs["counted"] == 2
    # with everyone: the excluded rater really is counted (the screening is shown, not applied)
    everyone = c.stats(raters="all")
    assert everyone["models"].attrs["counted"] == 3
    assert set(everyone["models"]["raters"]) == {3}
    assert (
        everyone["screening"].set_index("rater")["excluded"].to_dict() == ex["excluded"].to_dict()
    )
    ref = lambda f: f.set_index("model").loc[MODELS[0], "mean"]  # noqa: E731
    assert ref(everyone["models"]) < ref(c.stats()["models"]) - 10  # r03's 50s pull it down


def test_scripted_and_person_answers_are_never_mixed_unless_asked() -> None:
    c = campaign("acr", make_clips(2, seconds=1.0), raters=3, seed=3, gold=1, traps=1)
    c.collect([_file(c, "r01", _careful), c.simulate("r02", seed=1), c.simulate("r03", seed=2)])
    frame = c.results()
    assert frame.groupby("rater")["scripted"].all().to_dict() == {
        "r01": False,
        "r02": True,
        "r03": True,
    }
    with pytest.raises(ListeningError, match="answers of people and of scripted raters"):
        c.stats()
    assert c.stats(answers="person")["models"].attrs["counted"] == 1
    scripted = c.stats(answers="scripted")["models"]
    assert scripted.attrs["counted"] == 2 and (scripted["answered_by"] == "scripted listener").all()
    assert (c.stats(answers="all")["models"]["answered_by"] == "person and scripted").all()


def test_a_session_counts_and_keeps_apart_who_answered() -> None:
    s = preference(make_clips(3), seed=4)
    for label in s.trials[0].labels:
        s.mark_played(0, label)
    s.answer(0, "A")
    simulate(s, prefer=MODELS[0], seed=1)
    assert s.answered_by() == {"person": 1, "scripted": len(s) - 1}
    s.reveal()
    with pytest.raises(RuntimeError, match="mixes 1 answers by a person and 8 by the scripted"):
        s.stats()
    assert s.stats(answers="scripted")["pairs"]["answered_by"].eq("scripted listener").all()
    assert [(whose, n) for whose, n, _ in s.summaries()] == [
        ("person", 1),
        ("scripted listener", 8),
    ]
    assert s.results()["scripted"].sum() == 2 * 8  # two rows (labels) per pair trial


def test_answers_not_heard_for_the_minimum_are_refused_at_collect() -> None:
    c = campaign("abx", make_clips(1, seconds=1.0), raters=1, seed=2, gold=0, traps=0)
    s = c._sessions["r01"].sibling(c._rater_seeds["r01"])
    simulate(s, seed=0)
    doc = c.answer_file("r01", s.answers, heard={0: {"A": 1.0, "B": 1.0, "X": 0.4}})
    with pytest.raises(CollectError) as info:
        c.collect([doc])
    assert "trial 0: clip X was heard for 0.4 s, less than the 0.75 s" in info.value.refused[0][1]


def test_a_page_and_collect_agree_on_the_minimum_to_the_millisecond() -> None:
    """The page counts a clip as played at ``need_ms`` (whole ms, rounded up); an answer file
    that shows exactly that is collected, one ms less is refused by name. Rounded down, a
    page counted 749 ms of a 749.98 ms minimum and collect refused the file it sent."""
    c = campaign("abx", make_clips(1, seconds=1.0), raters=1, seed=2, gold=0, traps=0)
    s = c._sessions["r01"].sibling(c._rater_seeds["r01"])
    assert s.need == pytest.approx(0.7499792) and s.need_ms == 750
    assert c.page("r01").count('"need_ms":750') == 1
    simulate(s, seed=0)
    short = {0: {"A": 1.0, "B": 1.0, "X": 0.749}}
    with pytest.raises(CollectError) as info:
        c.collect([c.answer_file("r01", s.answers, heard=short)])
    assert "trial 0: clip X was heard for 0.749 s, less than the 0.75 s" in info.value.refused[0][1]
    exact = {t: {label: s.need_ms / 1000 for label in ("A", "B", "X")} for t in s.answers}
    c.collect([c.answer_file("r01", s.answers, heard=exact)])
    assert len(c.results()) > 0


def test_listening_csv_exports_are_inert(tmp_path) -> None:
    prompts = ['=HYPERLINK("http://x","y")', "+1", "-2", "@SUM(A1)", "\tcalm", "plain"]
    clips = make_clips(6, seconds=1.0)
    s = preference(clips, prompts=prompts, seed=1)
    simulate(s)
    c = campaign("preference", clips, prompts=prompts, raters=2, seed=1, gold=0, traps=0)
    c.collect([c.simulate(r, seed=i) for i, r in enumerate(c.raters)])
    for path in (s.to_csv(tmp_path / "s.csv"), c.to_csv(tmp_path / "c.csv")):
        with open(path, newline="", encoding="utf-8") as fh:
            cells = {row["prompt"] for row in csv.DictReader(fh)}
        assert cells == {"'" + p for p in prompts[:5]} | {"plain"}, path
