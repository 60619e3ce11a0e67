"""The campaign server over real HTTP on loopback: pages, answers refused when sent (with the
reason), one sentence for every forgery, an inbox that never overwrites, stop."""

from __future__ import annotations

import json
import stat

import httpx
import pytest

from songlab.listening import CampaignServer, ListeningError, campaign, serve, simulate
from songlab.listening.server import FORGED
from tests.listening.listening_signals import MODELS, make_clips


@pytest.fixture
def camp():
    return campaign("abx", make_clips(1, seconds=1.0), raters=2, seed=4, gold=1, traps=0)


def _doc(c, rater, **behaviour):
    s = c._sessions[rater].sibling(c._rater_seeds[rater])
    simulate(s, seed=1, **behaviour)
    return c.answer_file(rater, s.answers)


def test_serves_pages_takes_answers_and_collect_merges_them(camp, tmp_path) -> None:
    inbox = tmp_path / "inbox"
    with serve(camp, inbox=inbox) as srv:
        links = srv.links()
        assert set(links) == {"r01", "r02"} and all("r01" not in u for u in links.values())
        with httpx.Client(timeout=10) as http:
            page = http.get(links["r01"])
            assert page.status_code == 200 and "text/html" in page.headers["content-type"]
            assert not [m for m in MODELS if m in page.text]
            assert http.get(f"{srv.url}/p/guess").status_code == 404
            good = json.dumps(_doc(camp, "r01")).encode()
            # posted the moment the page was opened: faster than its clips can be heard
            r = http.post(f"{srv.url}/answers", content=good)
            assert (
                r.status_code == 400 and "hearing their clips takes at least" in r.json()["message"]
            )
            srv._issued["r01"] -= 3600  # an hour later
            r = http.post(f"{srv.url}/answers", content=good)
            assert r.status_code == 200 and r.json()["message"].startswith("Received 4 answers")
            again = http.post(f"{srv.url}/answers", content=good)
            assert again.json()["message"].startswith("Already received")
            changed = _doc(camp, "r01", p_correct=0.0)  # r01's page, other answers
            r = http.post(f"{srv.url}/answers", content=json.dumps(changed).encode())
            assert r.status_code == 409 and "these change" in r.json()["message"]
            assert http.post(f"{srv.url}/answers", content=b"x" * 10).status_code == 400
        links = {r: u.removeprefix(srv.url) for r, u in links.items()}
        frame = camp.collect(srv)
        assert set(frame["rater"]) == {"r01"} and len(frame) == 3  # the gold check left out
        assert camp.collect(srv).equals(frame)  # the inbox's files were collected before
        files = sorted(p.name for p in inbox.iterdir())
        assert len([f for f in files if f.endswith(".json")]) == 1
        assert [f for f in files if f.startswith("issued-")] == [
            f"issued-{camp.public_id('r01')}.txt"
        ]
        assert stat.S_IMODE(inbox.stat().st_mode) == 0o700
        assert all(stat.S_IMODE(p.stat().st_mode) == 0o600 for p in inbox.iterdir())
        port = srv.port
    with pytest.raises(httpx.TransportError):
        httpx.get(f"http://127.0.0.1:{port}/p/x", timeout=2)
    assert "stopped" in repr(srv)
    # started again on the same inbox: it knows what r01 sent and when r01's page went out
    with serve(camp, inbox=inbox) as again:
        assert set(again._accepted) == {"r01"} and set(again._issued) == {"r01"}
        assert {r: u.removeprefix(again.url) for r, u in again.links().items()} == links
        r = httpx.post(f"{again.url}/answers", content=good, timeout=10)
        assert r.json()["message"].startswith("Already received")


def test_a_forged_file_gets_one_sentence_whichever_rule_it_broke(camp) -> None:
    """Rater ids cannot be told apart from outside: an unknown id, a real id with a wrong MAC,
    another campaign's file and an edited page all get the same status and message."""
    good = _doc(camp, "r01")
    other = campaign("abx", make_clips(1, seconds=1.0), raters=2, seed=4)
    forged = [
        dict(good, rater="p000000000000"),  # a guessed rater id
        dict(good, rater=camp.public_id("r02")),  # a real one, not this page's
        dict(good, mac="0" * 64),
        dict(good, design="0" * 64),
        _doc(other, "r01"),
    ]
    with serve(camp) as srv, httpx.Client(timeout=10) as http:
        answers = [http.post(f"{srv.url}/answers", content=json.dumps(d).encode()) for d in forged]
    assert {(r.status_code, r.json()["message"]) for r in answers} == {(400, FORGED)}


def test_answers_whose_clips_were_not_heard_for_the_minimum_are_refused_when_sent(camp) -> None:
    doc = _doc(camp, "r02")
    trial = doc["answers"][0]
    trial[2] = [[label, 300] for label, _ in trial[2]]  # 0.3 s of each clip
    from songlab.listening import _answers as ans

    doc["mac"] = ans.mac(camp._token("r02"), doc)  # as the rater's own page would sign it
    with serve(camp) as srv, httpx.Client(timeout=10) as http:
        r = http.post(f"{srv.url}/answers", content=json.dumps(doc).encode())
    assert r.status_code == 400
    assert f"trial {trial[0]}: clip A was heard for 0.3 s" in r.json()["message"]
    assert "Music Arena" in r.json()["message"]


def test_start_twice_is_refused(camp) -> None:
    srv = CampaignServer(camp).start()
    try:
        with pytest.raises(RuntimeError, match="already running"):
            srv.start()
    finally:
        srv.stop()
    srv.stop()  # idempotent


def test_links_use_the_public_url_and_a_bad_one_is_refused(camp) -> None:
    srv = CampaignServer(camp, public_url="http://192.0.2.7:8765/")
    assert all(u.startswith("http://192.0.2.7:8765/p/") for u in srv.links().values())
    assert CampaignServer(camp).links().keys() == srv.links().keys()
    with pytest.raises(ListeningError) as info:
        CampaignServer(camp, public_url="192.0.2.7")
    assert info.value.argument == "public_url"


def test_hostile_posts_get_a_reply_with_the_reason_never_a_dropped_line(camp) -> None:
    """200 kB of nested JSON, bytes that are not UTF-8, not JSON, no body, a body declared
    larger than 1 MB: each gets an HTTP reply saying why (the connection is never dropped),
    and the server keeps taking answers afterwards."""
    import socket

    with serve(camp) as srv, httpx.Client(timeout=10) as http:
        deep = http.post(f"{srv.url}/answers", content=b"[" * 100_000 + b"]" * 100_000)
        assert deep.status_code == 400 and "nests deeper than 16" in deep.json()["message"]
        binary = http.post(f"{srv.url}/answers", content=b"\xff\xfe{" * 10)
        assert binary.status_code == 400 and binary.json()["message"].startswith("Refused:")
        assert http.post(f"{srv.url}/answers", content=b"{").status_code == 400
        assert http.post(f"{srv.url}/answers", content=b"").status_code == 411
        with socket.create_connection(("127.0.0.1", srv.port), timeout=10) as raw:
            raw.sendall(b"POST /answers HTTP/1.1\r\nHost: x\r\nContent-Length: 2000000\r\n\r\n{")
            raw.shutdown(socket.SHUT_WR)
            head = b"".join(iter(lambda: raw.recv(4096), b"")).decode()
        assert head.startswith("HTTP/1.0 413") and "at most 1 MB" in head
        srv._issued["r01"] = 0.0  # the page went out long ago
        ok = http.post(f"{srv.url}/answers", content=json.dumps(_doc(camp, "r01")).encode())
        assert ok.status_code == 200 and ok.json()["message"].startswith("Received")


def test_received_is_said_only_of_files_collect_accepts(camp, tmp_path) -> None:
    """Every file the server answers "Received ... Thank you" is one ``collect`` takes, and
    every file collect would refuse is refused when sent: a sequence of honest, partial,
    completed, changed, unheard, forged and replayed files."""
    from songlab.listening import _answers as ans

    def signed(rater, doc):
        doc = json.loads(json.dumps(doc))
        doc["mac"] = ans.mac(camp._token(rater), doc)
        return doc

    full1, full2 = _doc(camp, "r01"), _doc(camp, "r02")
    partial2 = signed("r02", dict(full2, answers=full2["answers"][:2]))
    unheard1 = json.loads(json.dumps(full1))
    unheard1["answers"][0][2] = [[label, 100] for label, _ in unheard1["answers"][0][2]]
    sent = [
        ("r02", partial2),  # half the trials: received
        ("r01", signed("r01", unheard1)),  # a clip heard 0.1 s: refused now
        ("r01", full1),  # received
        ("r01", _doc(camp, "r01", p_correct=0.0)),  # changes r01's answers: refused
        ("r02", full2),  # completes r02's partial file: received
        ("r02", partial2),  # fewer answers than already sent: refused
        ("r01", dict(full1, rater=camp.public_id("r02"))),  # forged: refused
    ]
    received = []
    with serve(camp, inbox=tmp_path / "inbox") as srv, httpx.Client(timeout=10) as http:
        srv._issued.update({"r01": 0.0, "r02": 0.0})
        for _rater, doc in sent:
            r = http.post(f"{srv.url}/answers", content=json.dumps(doc).encode())
            message = r.json()["message"]
            assert message.startswith(("Received", "Refused")), message
            assert (r.status_code == 200) == message.startswith("Received")
            if message.startswith("Received"):
                assert message.endswith("Thank you.")
                received.append(doc["mac"])
        assert len(received) == 3
        frame = camp.collect(srv)  # raises CollectError if a single file is refused
    assert set(received) == {r.doc["mac"] for r in camp.received.values()} | {partial2["mac"]}
    assert camp.received["r02"].doc["mac"] == full2["mac"]  # the completed file replaced it
    # every trial of both raters but the gold check (a check, not data)
    assert frame.groupby("rater")["trial"].nunique().to_dict() == {"r01": 3, "r02": 3}
    assert len(full1["answers"]) == len(full2["answers"]) == 4
