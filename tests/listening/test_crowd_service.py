"""The served campaign over real HTTP (uvicorn in a thread, SQLite): raters arrive from a
platform, get a slot each, answer; every answer stored once and "Received" only when it is;
refusals with their reason; quotas close the campaign; a rater who leaves frees their slot."""

from __future__ import annotations

import json
import stat

import httpx
import numpy as np
import pytest

from songlab.listening import ListeningError, campaign, serve
from songlab.listening.crowd.service import FORGED
from tests.listening._crowd import PageState
from tests.listening.listening_signals import MODELS, make_clips


class Clock:
    """The server's clock, moved by the test (raters who take their time, timeouts)."""

    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def camp():
    return campaign("abx", make_clips(1, seconds=1.0), raters=3, seed=4, gold=1, traps=0)


@pytest.fixture
def served(camp, tmp_path):
    clock = Clock()
    srv = serve(
        camp,
        db=f"sqlite:///{tmp_path}/c.sqlite",
        clock=clock,
        raters=2,
        prolific={"complete": "DONE42", "screened_out": "SCREEN7"},
        timeout=600,
    )
    with srv, httpx.Client(base_url=srv.url, timeout=30) as http:
        yield srv, http, clock


def _arrive(http, pid: str) -> PageState:
    r = http.get(
        "/join", params={"PROLIFIC_PID": pid, "STUDY_ID": "study1", "SESSION_ID": "s" + pid}
    )
    assert r.status_code == 303, r.text
    return PageState.read(http.get("/" + r.headers["location"]).text)


def test_a_rater_arrives_answers_once_each_and_collect_takes_it(served, camp, tmp_path) -> None:
    srv, http, clock = served
    page = _arrive(http, "pid1")
    assert not [m for m in MODELS if m in page.design_text]
    items = page.answers(np.random.default_rng(1))
    fast = http.post("/api/answers", json=items[0])
    assert (
        fast.status_code == 400 and "hearing their clips takes at least" in fast.json()["message"]
    )
    clock.now += 600
    replies = [http.post("/api/answers", json=i) for i in items]
    assert [r.status_code for r in replies] == [200] * len(items)
    last = replies[-1].json()["complete"]
    assert last["code"] == "DONE42" and last["url"].endswith("/submissions/complete?cc=DONE42")
    again = http.post("/api/answers", json=items[0])  # a retry: acknowledged, stored once
    assert again.status_code == 200 and again.json()["again"] is True
    changed = page.item(
        items[0]["trial"], "B" if items[0]["value"] == "A" else "A", items[0]["heard"]
    )
    r = http.post("/api/answers", json=changed)
    assert r.status_code == 410 and r.json()["keep"]
    assert _arrive(http, "pid1").served["complete"]["code"] == "DONE42"  # the same person
    frame = camp.collect(srv)
    assert set(frame["rater"]) == {page_rater(camp, page)} and len(frame) == 3
    path = tmp_path / "c.sqlite"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def page_rater(camp, page: PageState) -> str:
    return camp._by_public[page.design["rater"]]


def test_forged_answers_get_one_sentence_and_unheard_ones_the_reason(served, camp) -> None:
    _, http, clock = served
    page = _arrive(http, "pid2")
    clock.now += 600
    item = page.answers(np.random.default_rng(2))[0]
    for forged in (
        dict(item, mac="0" * 64),
        dict(item, value="B" if item["value"] == "A" else "A"),
    ):
        r = http.post("/api/answers", json=forged)
        assert (r.status_code, r.json()["message"]) == (400, FORGED)
    short = page.item(item["trial"], item["value"], [[label, 100] for label, _ in item["heard"]])
    r = http.post("/api/answers", json=short)
    assert r.status_code == 400 and "was heard for 0.1 s" in r.json()["message"]
    long = page.item(item["trial"], item["value"], [[label, 2**70] for label, _ in item["heard"]])
    r = http.post("/api/answers", json=long)
    assert r.status_code == 400 and "more than its page could play" in r.json()["message"]
    assert http.post("/api/answers", json=item).status_code == 200


def test_hostile_posts_get_a_reply_with_the_reason_and_the_server_goes_on(served, camp) -> None:
    srv, http, clock = served
    surrogate = (
        b'{"assignment": "\\ud800", "id": "x", "trial": 0, "value": "A", "heard": [], "mac": "0"}'
    )
    for body, status in (
        (b"[" * 30_000 + b"]" * 30_000, 400),
        (b"\xff\xfe{" * 10, 400),
        (surrogate, 400),
        (b"{", 400),
        (b"x" * 70_000, 413),
    ):
        r = http.post("/api/answers", content=body)
        assert r.status_code == status and r.json()["message"], body[:20]
    doc = camp.simulate("r03", seed=1)  # the organiser's scripted rater, through the file route
    claimed = json.loads(json.dumps(doc))
    claimed.pop("organiser")  # a rater's own file claiming to be scripted
    r = http.post("/answers", content=json.dumps(claimed).encode())
    assert r.status_code == 400 and "only the organiser" in r.json()["message"]
    assert http.post("/answers", content=json.dumps(doc).encode()).status_code == 200
    assert (
        http.post("/answers", content=json.dumps(doc).encode())
        .json()["message"]
        .startswith("Already received")
    )
    page = _arrive(http, "pid3")
    clock.now += 600
    assert all(
        http.post("/api/answers", json=i).status_code == 200
        for i in page.answers(np.random.default_rng(3))
    )


def test_quotas_close_the_campaign_and_a_leaver_frees_the_slot(served, camp) -> None:
    srv, http, clock = served
    first, second = _arrive(http, "pidA"), _arrive(http, "pidB")
    third = http.get("/join", params={"PROLIFIC_PID": "pidC", "STUDY_ID": "s", "SESSION_ID": "x"})
    assert third.status_code == 303  # three slots for two raters wanted
    fourth = http.get("/join", params={"PROLIFIC_PID": "pidD", "STUDY_ID": "s", "SESSION_ID": "x"})
    assert fourth.status_code == 200 and "Every place in this study is taken" in fourth.text
    clock.now += 601  # nobody's page has been heard from for longer than the timeout
    back = http.get("/join", params={"PROLIFIC_PID": "pidD", "STUDY_ID": "s", "SESSION_ID": "x"})
    assert back.status_code == 303  # a slot freed
    late = first.answers(np.random.default_rng(4))[0]
    r = http.post("/api/answers", json=late)
    assert r.status_code == 410 and "ran out" in r.json()["message"]
    for page in (_arrive(http, "pidE"), _arrive(http, "pidF")):
        clock.now += 600
        for item in page.answers(np.random.default_rng(5)):
            assert http.post("/api/answers", json=item).status_code == 200
    assert second.served["assignment"]  # held, then timed out: no answers from it
    full = http.get("/join", params={"PROLIFIC_PID": "pidG", "STUDY_ID": "s", "SESSION_ID": "x"})
    assert "This study is full" in full.text
    view = __import__("songlab.listening", fromlist=["watch"]).watch(srv)
    assert view.counts["complete"] == 2 and view.counts["state"] == "closed"
    assert view.clips["ratings"].min() >= 1 and "Ratings per clip" in view._repr_html_()


def test_mechanical_turk_preview_accept_and_submit(served) -> None:
    _, http, clock = served
    preview = http.get(
        "/join", params={"assignmentId": "ASSIGNMENT_ID_NOT_AVAILABLE", "hitId": "H1"}
    )
    assert preview.status_code == 200 and "Accept the HIT" in preview.text
    bad = http.get(
        "/join",
        params={
            "assignmentId": "A1",
            "hitId": "H1",
            "workerId": "W1",
            "turkSubmitTo": "https://evil.example",
        },
    )
    assert "turkSubmitTo must be one of" in bad.text
    r = http.get(
        "/join",
        params={
            "assignmentId": "A1",
            "hitId": "H1",
            "workerId": "W1",
            "turkSubmitTo": "https://workersandbox.mturk.com",
        },
    )
    page = PageState.read(http.get("/" + r.headers["location"]).text)
    clock.now += 600
    replies = [http.post("/api/answers", json=i) for i in page.answers(np.random.default_rng(6))]
    form = replies[-1].json()["complete"]["form"]
    assert form["action"] == "https://workersandbox.mturk.com/mturk/externalSubmit"
    assert form["fields"]["assignmentId"] == "A1" and form["fields"]["completion"]


def test_a_burst_of_250_simultaneous_answer_posts_all_get_a_reply(served) -> None:
    """The stdlib server's listen backlog of 5 left 55 of 250 raw connections waiting 60 s
    with no reply and 30 of 250 httpx posts failed; now every one is answered."""
    import asyncio

    srv, _, _ = served

    async def burst() -> list[int]:
        async with httpx.AsyncClient(
            base_url=srv.url, timeout=120, limits=httpx.Limits(max_connections=250)
        ) as client:
            body = {
                "assignment": "nobody",
                "id": "x",
                "trial": 0,
                "value": "A",
                "heard": [],
                "mac": "0",
            }
            replies = await asyncio.gather(
                *(client.post("/api/answers", json=body) for _ in range(250)),
                return_exceptions=True,
            )
        return [r.status_code if isinstance(r, httpx.Response) else -1 for r in replies]

    codes = asyncio.run(burst())
    assert codes.count(404) == 250, {c: codes.count(c) for c in set(codes)}


def test_settings_and_databases_are_checked(camp, tmp_path) -> None:
    with pytest.raises(ListeningError) as info:
        serve(camp, db=f"sqlite:///{tmp_path}/x.sqlite", raters=0)
    assert info.value.argument == "raters"
    with pytest.raises(ListeningError) as info:
        serve(camp, db="mysql://x")
    assert info.value.argument == "db"
    with pytest.raises(ListeningError) as info:
        serve(camp, db=f"sqlite:///{tmp_path}/y.sqlite", quota=3)
    assert info.value.argument == "quota"


def test_payments_follow_the_owners_rules_in_each_platforms_bulk_format(served, tmp_path) -> None:
    from decimal import Decimal

    from songlab.listening.crowd import payments

    srv, http, clock = served
    page = _arrive(http, "5f0c1d2e3a4b")
    clock.now += 600  # ten minutes
    for item in page.answers(np.random.default_rng(7)):
        assert http.post("/api/answers", json=item).status_code == 200
    with pytest.raises(ListeningError) as info:
        payments(srv, base=2.5)
    assert info.value.argument == "base"  # money is never a float
    paid = payments(
        srv, base="2.50", bonus="0.50", per_minute="0.10", bonus_cap="0.80", min_minutes=5
    )
    row = paid.table.iloc[0]
    assert (
        bool(row["approve"]) and row["bonus"] == Decimal("0.80") and row["base"] == Decimal("2.50")
    )
    assert "5f0c1d2e3a4b" not in paid.table.to_string()  # pseudonyms only
    files = {p.name: p.read_text() for p in paid.export(tmp_path / "pay")}
    assert files["prolific-approve.txt"] == "5f0c1d2e3a4b\n"
    assert files["prolific-bonuses.csv"] == "5f0c1d2e3a4b,0.80\n"
    strict = payments(srv, base="2.50", min_minutes=20)
    assert not strict.table["approve"].any() and "under the 20" in strict.table["reason"].iloc[0]


def test_the_live_view_ranks_only_through_the_shared_verdict(tmp_path) -> None:
    """The live view's one ranking sentence is listening.verdict's, from the panel's score and
    interval it shows beside it (here two raters: their intervals overlap, no winner named)."""
    from songlab.listening import watch
    from songlab.listening.verdict import Estimate, Measure, verdict

    c = campaign("preference", make_clips(2, seconds=1.0), raters=3, seed=5, gold=0, traps=0)
    with serve(c, db=f"sqlite:///{tmp_path}/p.sqlite") as srv, httpx.Client(timeout=30) as http:
        for i, rater in enumerate(c.raters[:2]):
            doc = c.simulate(rater, prefer=MODELS[0], p=0.7, seed=i)
            assert (
                http.post(f"{srv.url}/answers", content=json.dumps(doc).encode()).status_code == 200
            )
        view = watch(srv)
    table = view.stats["ranking"]
    expected = verdict(
        [
            Estimate(r["model"], r["score"], r["score_low"], r["score_high"])
            for r in table.to_dict("records")
        ],
        measure=Measure("the panel's score so far"),
    ).text
    assert view.verdict == expected and __import__("html").escape(expected) in view._repr_html_()
    assert view.counts["complete"] == 2


def test_a_whole_file_sent_faster_than_its_clips_play_since_its_page_was_served(
    served, camp
) -> None:
    """The file route keeps the rule too: a page served by this server, its file posted at
    once, is refused with the reason; an hour later the same file is received."""
    srv, http, clock = served
    assert http.get(srv.links()["r02"], follow_redirects=True).status_code == 200
    doc = json.dumps(camp.simulate("r02", seed=3)).encode()
    r = http.post("/answers", content=doc)
    assert r.status_code == 400 and "hearing their clips takes at least" in r.json()["message"]
    clock.now += 3600
    assert http.post("/answers", content=doc).json()["message"].startswith("Received")
