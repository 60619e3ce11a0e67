"""Campaigns: per-rater designs, blind pages, answer files checked against the campaign."""

from __future__ import annotations

import base64
import json
import re

import numpy as np
import pytest

import songlab.listening._format as fmt
import songlab.listening.page as pg
from songlab.listening import CollectError, ListeningError, campaign, lowpass_anchor, simulate
from songlab.listening._answers import Refused
from tests.listening.listening_signals import MODELS, SHORT, make_clips, scan

REF = MODELS[0]


@pytest.fixture(scope="module")
def mush():
    return campaign(
        "mushra",
        make_clips(2, seconds=1.0),
        raters=4,
        seed=3,
        reference=REF,
        anchor=True,
        mid_anchor=True,
    )


@pytest.fixture(scope="module")
def pref():
    return campaign("preference", make_clips(2, seconds=1.0), raters=3, seed=5, allow_tie=True)


def _answers(c, rater, **kwargs):
    s = c._sessions[rater].sibling(c._rater_seeds[rater])
    simulate(s, **kwargs)
    return c.answer_file(rater, s.answers)


def test_each_rater_gets_an_own_design_from_the_seed(pref) -> None:
    orders = {r: [(t.prompt, t.labels) for t in s.trials] for r, s in pref._sessions.items()}
    keys = {
        r: [s._unseal()["plans"][t.index].models for t in s.trials]
        for r, s in pref._sessions.items()
    }
    assert len({json.dumps(k) for k in keys.values()}) == 3  # three different keys
    # the seed and the secret rebuild the campaign, its pages byte for byte
    again = campaign(
        "preference",
        make_clips(2, seconds=1.0),
        raters=3,
        seed=5,
        allow_tie=True,
        secret=pref._secret,
    )
    assert again.id == pref.id and again.design("r01") == pref.design("r01")
    assert again.page("r02") == pref.page("r02")
    assert {
        r: [(t.prompt, t.labels) for t in s.trials] for r, s in again._sessions.items()
    } == orders
    # the seed alone does not: knowing it (the docs and the notebook show 15) tells no key
    other = campaign("preference", make_clips(2, seconds=1.0), raters=3, seed=5, allow_tie=True)
    assert other.id != pref.id and other.public_id("r01") != pref.public_id("r01")
    other_keys = {
        r: [s._unseal()["plans"][t.index].models for t in s.trials]
        for r, s in other._sessions.items()
    }
    assert other_keys != keys
    # loudness matched once and shared: every rater hears the same matched clip per model
    a, b = pref._sessions["r01"]._unseal()["clips"], pref._sessions["r03"]._unseal()["clips"]
    assert all(a[k] is b[k] for k in a if k in b)


@pytest.mark.parametrize("kind", ["pref", "mush"])
def test_pages_and_answer_files_name_no_model(kind, request, tmp_path) -> None:
    c = request.getfixturevalue(kind)
    paths = c.export(tmp_path)
    assert [p.name for p in paths] == [f"rater-{r}.html" for r in c.raters]
    for rater, path in zip(c.raters, paths, strict=True):
        blob = path.read_bytes()
        doc = json.dumps(_answers(c, rater, seed=1)).encode()
        for hay in (blob, doc, path.name.encode()):
            assert not scan(hay, long=list(c.models), short=SHORT), rater
        # no two audio elements of a page share bytes (X vs A, hidden vs open reference)
        uris = re.findall(rb"data:audio/mpeg;base64,[A-Za-z0-9+/=]+", blob)
        assert len(uris) == len(set(uris)) > 0


def test_the_scan_finds_planted_names() -> None:
    payload = base64.b64encode(b"xx model-alpha-7f3 yy").decode()
    page = f'<p>v7</p><audio src="data:audio/mpeg;base64,{payload}">'.encode()
    assert scan(page, long=["model-alpha-7f3"], short=["v7", "v5"]) == ["model-alpha-7f3", "v7"]


def test_collect_takes_good_files_and_gives_one_frame(mush, tmp_path) -> None:
    c = campaign(
        "mushra",
        make_clips(2, seconds=1.0),
        raters=4,
        seed=3,
        reference=REF,
        anchor=True,
        mid_anchor=True,
    )
    for r in c.raters:
        (tmp_path / f"{r}.json").write_text(json.dumps(_answers(c, r, scores={REF: 95}, seed=2)))
    frame = c.collect(tmp_path)
    assert set(frame["rater"]) == set(c.raters)
    # 2 trials (the 4 rater checks left out) x (3 models + 2 anchors) per rater
    assert len(frame) == 4 * 2 * 5 and len(c._sessions["r01"].trials) == 2 + 4
    assert frame.groupby("rater")["trial"].nunique().eq(2).all()
    assert c.progress()["answered"].tolist() == [6, 6, 6, 6]  # the checks answered too


def _refused(c, doc) -> str:
    with pytest.raises(CollectError) as info:
        c.collect([doc])
    assert info.value.accepted == 0 and len(info.value.refused) == 1
    return info.value.refused[0][1]


def test_wrong_campaign_tampered_and_unknown_raters_are_refused(pref) -> None:
    c = campaign("preference", make_clips(2, seconds=1.0), raters=3, seed=5, allow_tie=True)
    good = _answers(c, "r01", prefer=MODELS[1], seed=4)
    other = campaign("preference", make_clips(2, seconds=1.0), raters=3, seed=6, allow_tie=True)
    assert "not to" in _refused(c, _answers(other, "r01", seed=4))
    edited = json.loads(json.dumps(good))
    edited["answers"][0][1] = "B" if edited["answers"][0][1] == "A" else "A"
    assert "tampered" in _refused(c, edited) and "MAC" in _refused(c, edited)
    renamed = dict(good, rater=c.public_id("r02"))  # pose as another rater with r01's page
    assert "tampered" in _refused(c, renamed)
    assert "not a rater" in _refused(c, dict(good, rater="zz"))
    assert "design differs" in _refused(c, dict(good, design="0" * 64))
    assert "not a songlab answer file" in _refused(c, b"[1, 2]")
    assert "not JSON" in _refused(c, b"{")
    assert c.results().empty  # nothing was taken from refused files


def test_a_secret_from_elsewhere_cannot_forge_a_token() -> None:
    from songlab.listening import _answers as ans

    c1 = campaign("abx", make_clips(1, seconds=1.0), raters=2, seed=9)
    c2 = campaign("abx", make_clips(1, seconds=1.0), raters=2, seed=9)  # same seed, own secret
    assert c1.id != c2.id  # the id, like the designs, comes from the secret too
    assert "not to" in _refused(c2, _answers(c1, "r01", seed=0))
    # a file that names c2's campaign, rater and page digest, signed without c2's secret
    doc = _answers(c2, "r01", seed=0)
    doc["mac"] = ans.mac(ans.token(c1._secret, c2.id, doc["rater"], doc["design"]), doc)
    assert "tampered" in _refused(c2, doc)


def test_duplicates_are_refused_and_nothing_collected_is_lost() -> None:
    c = campaign("preference", make_clips(2, seconds=1.0), raters=3, seed=5, allow_tie=True)
    first = _answers(c, "r01", prefer=MODELS[0], p=1.0, seed=1)
    c.collect([first, _answers(c, "r02", seed=1)])
    before = c.results()
    with pytest.raises(CollectError) as info:
        c.collect(
            [first, _answers(c, "r01", prefer=MODELS[2], p=1.0, seed=1), _answers(c, "r03", seed=3)]
        )
    reasons = [why for _, why in info.value.refused]
    # the same file from the same place is passed over; a different one of r01 refused
    assert info.value.accepted == 1 and info.value.unchanged == 1 and len(reasons) == 1
    assert "different answer file" in reasons[0] and "already collected" in reasons[0]
    with pytest.raises(CollectError) as info:
        c.collect([json.dumps(first).encode()])  # the same file again, from elsewhere
    assert "replayed: the same answer file as item 0" in info.value.refused[0][1]
    after = c.results()
    assert set(after["rater"]) == {"r01", "r02", "r03"}
    assert after[after["rater"] != "r03"].reset_index(drop=True).equals(before)


def test_a_later_file_that_adds_answers_replaces_the_earlier_one() -> None:
    c = campaign("abx", make_clips(2, seconds=1.0), raters=1, seed=2)
    s = c._sessions["r01"].sibling(c._rater_seeds["r01"])
    simulate(s, seed=0)
    full = s.answers
    part = dict(list(full.items())[:2])
    c.collect([c.answer_file("r01", part)])
    assert c.progress()["answered"].item() == 2
    c.collect([c.answer_file("r01", full)])
    assert c.progress()["answered"].item() == len(full)


def test_answers_before_playing_or_out_of_design_are_refused() -> None:
    c = campaign("abx", make_clips(1, seconds=1.0), raters=1, seed=2)
    doc = _answers(c, "r01", seed=0)
    doc["answers"][0][2] = [h for h in doc["answers"][0][2] if h[0] != "X"]  # X never played
    from songlab.listening import _answers as ans

    def resign(d):
        d["mac"] = ans.mac(c._token("r01"), d)  # as the rater's own page would sign it
        return d

    assert "clip X was heard for 0.0 s" in _refused(c, resign(doc))
    doc = _answers(c, "r01", seed=0)
    doc["answers"][0][0] = 99
    assert "was not given" in _refused(c, resign(doc))
    doc = _answers(c, "r01", seed=0)
    doc["answers"][0][1] = "C"
    assert "must be 'A' or 'B'" in _refused(c, resign(doc))


def test_bad_arguments_name_the_field() -> None:
    clips = make_clips(1, seconds=1.0)
    for kwargs, field in [
        ({"raters": 0}, "raters"),
        ({"raters": ["a", "a"]}, "raters"),
        ({"raters": ["bad id"]}, "raters"),
        ({"raters": 2, "seed": -1}, "seed"),
        ({"raters": 2, "min_heard": 0}, "min_heard"),
        ({"raters": 2, "gold": -1}, "gold"),
        ({"raters": 2, "fail_limit": 0}, "fail_limit"),
        ({"raters": 2, "secret": b"short"}, "secret"),
        ({"raters": 2, "bitrate": 8000}, "bitrate"),
        ({"raters": 2, "title": " "}, "title"),
    ]:
        with pytest.raises(ListeningError) as info:
            campaign("preference", clips, **kwargs)
        assert info.value.argument == field
    with pytest.raises(ListeningError, match="kind"):
        campaign("triangle", clips, raters=2)
    with pytest.raises(Refused, match="answers a trial twice"):
        from songlab.listening._answers import parse

        parse(
            {
                "format": "songlab.campaign.answers/2",
                "campaign": "x",
                "rater": "r",
                "kind": "abx",
                "design": "d",
                "scripted": False,
                "headphones": None,
                "mac": "m",
                "answers": [[0, "A", [["A", 5000]]], [0, "B", [["A", 5000]]]],
            }
        )


def test_save_and_load_keep_the_secret_and_every_collected_file(tmp_path) -> None:
    clips = make_clips(2, seconds=1.0)
    c = campaign("mushra", clips, raters=3, seed=8, reference=REF, mid_anchor=True)
    c.collect([c.simulate("r01", scores={REF: 96}, seed=1), c.simulate("r02", seed=2)])
    late = c.simulate("r03", seed=3)  # made before the "kernel restart", collected after
    path = c.save(tmp_path / "campaign.json")
    from songlab.listening import load_campaign

    again = load_campaign(path, clips)
    assert again.id == c.id and again.results().equals(c.results())
    again.collect([late])
    assert set(again.results()["rater"]) == {"r01", "r02", "r03"}
    again.collect([c.received["r01"].doc])  # from where it came before: passed over
    copy = tmp_path / "copy.json"
    copy.write_text(json.dumps(c.received["r01"].doc))
    with pytest.raises(CollectError, match="replayed"):
        again.collect(copy)
    assert path.stat().st_mode & 0o777 == 0o600  # the campaign file holds the secret
    with pytest.raises(ListeningError, match="not the clips"):
        load_campaign(path, make_clips(2, seconds=1.0, seed=9))


def test_an_unreadable_path_is_refused_by_name_and_the_others_are_kept(tmp_path) -> None:
    c = campaign("abx", make_clips(1, seconds=1.0), raters=2, seed=2)
    good = tmp_path / "a.json"
    good.write_text(json.dumps(c.simulate("r01", seed=0)))
    with pytest.raises(CollectError) as info:
        c.collect([good, tmp_path / "missing.json"])
    assert info.value.accepted == 1
    assert info.value.refused[0][0].endswith("missing.json")
    assert "cannot be read" in info.value.refused[0][1]
    assert set(c.results()["rater"]) == {"r01"}


def test_campaign_stats_of_each_kind_follow_the_scripted_raters() -> None:
    clips = make_clips(2, seconds=1.0)
    a = campaign("abx", clips, raters=4, seed=1)
    a.collect([a.simulate(r, p_correct=1.0, seed=i) for i, r in enumerate(a.raters)])
    pooled = a.stats()["pooled"]
    assert pooled["rate"].eq(1.0).all() and pooled["raters"].eq(4).all()
    assert (pooled["p_value"] == 0.5 ** pooled["n"]).all()  # P(all n correct | guessing)
    p = campaign("preference", clips, raters=6, seed=1, repeats=2)
    p.collect([p.simulate(r, prefer=MODELS[2], p=0.9, seed=i) for i, r in enumerate(p.raters)])
    ranking = p.stats(baseline=MODELS[0])["ranking"]
    assert ranking["model"].iloc[0] == MODELS[2] and ranking.attrs["baseline"] == MODELS[0]
    m = campaign("mushra", clips, raters=3, seed=1, reference=REF, mid_anchor=True)
    with pytest.raises(ListeningError, match="none collected"):
        m.stats()
    m.collect(
        [
            m.simulate(r, scores={REF: 99, MODELS[1]: 30}, noise=1, seed=i)
            for i, r in enumerate(m.raters)
        ]
    )
    out = m.stats()
    assert not out["screening"]["excluded"].any()
    assert out["models"].set_index("model").loc[MODELS[1], "mean"] == pytest.approx(30, abs=2)


def test_the_mid_range_anchor_is_the_reference_low_passed_at_7_khz() -> None:
    import numpy as np

    from songlab.listening import MID_ANCHOR, mushra

    s = mushra(make_clips(1, seconds=1.0), reference=MODELS[1], mid_anchor=True, seed=0)
    clips = s._unseal()["clips"]
    ref, sr = clips[(MODELS[1], 0)], 48000  # the common format
    mid = clips[(MID_ANCHOR, 0)]

    def band(x, lo, hi):  # energy between lo and hi Hz
        spec = np.abs(np.fft.rfft(np.atleast_2d(x)[0])) ** 2
        f = np.fft.rfftfreq(x.shape[-1], 1 / sr)
        return spec[(f > lo) & (f < hi)].sum()

    # matching gives the anchor its own gain, so compare shapes: relative to 1-6 kHz,
    # the band above 7.5 kHz is cut, and the spectrum below 6 kHz keeps its shape
    def rel(x, lo, hi):
        return band(x, lo, hi) / band(x, 1000, 6000)

    assert rel(mid, 7500, 8000) < 1e-3 * rel(ref, 7500, 8000)
    assert rel(mid, 1000, 3000) == pytest.approx(rel(ref, 1000, 3000), rel=0.05)


def test_two_clips_that_encode_alike_never_share_bytes() -> None:
    """A sine and its 7 kHz low-pass anchor are one MP3 at one lead-in: the page's audio
    checks the bytes it hands out, not only each clip's lead-ins (a fresh secret's MUSHRA
    page once gave the open reference and the anchor the same data URI)."""
    t = np.arange(48_000) / 48_000
    core = np.repeat((0.1 * np.sin(2 * np.pi * 220 * t))[None, :], 2, axis=0).astype(np.float32)
    anchor = lowpass_anchor(core, sr=48_000, cutoff=7000.0).astype(np.float32)
    assert not np.array_equal(core, anchor)
    secret = b"two clips, one encoding"
    # two elements whose lead-ins coincide (birthday pairs) at a lead-in where the two clips
    # encode to the same bytes (about one lead-in in five for this pair of clips)
    by_lead: dict[int, list[int]] = {}
    for i in range(1000):
        by_lead.setdefault(fmt.lead(secret, "element", "r", i, "A", 0), []).append(i)
    found = []
    for lead, elements in sorted(by_lead.items()):
        if len(elements) > 1:
            same = fmt.encode_mp3(fmt.shape(core, lead=lead))
            if same == fmt.encode_mp3(fmt.shape(anchor, lead=lead)):
                found = [elements[0], elements[1], same]
                break
    assert found, "the premise: two clips with one encoding at a shared lead-in"
    first, second, same = found
    audio = pg.PageAudio(secret)
    a = audio.uri(("r", "reference", 0), ("r", first, "A"), core)
    b = audio.uri(("r", "anchor", 0), ("r", second, "A"), anchor)
    assert a != b
    assert base64.b64decode(a.split(",", 1)[1]) == same  # the first keeps its lead-in
