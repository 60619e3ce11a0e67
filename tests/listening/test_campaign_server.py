"""The campaign server over real HTTP on loopback: pages, answers, refusals, stop."""

from __future__ import annotations

import json

import httpx
import pytest

from songlab.listening import CampaignServer, ListeningError, campaign, serve, simulate
from tests.listening.listening_signals import MODELS, make_clips


@pytest.fixture
def camp():
    return campaign("abx", make_clips(1, seconds=1.0), raters=2, seed=4)


def _doc(c, rater):
    s = c._sessions[rater].sibling(c._rater_seeds[rater])
    simulate(s, seed=1)
    return c.answer_file(rater, s.answers)


def test_serves_pages_takes_answers_and_collect_merges_them(camp, tmp_path) -> None:
    with serve(camp, inbox=tmp_path / "inbox") as srv:
        links = srv.links()
        assert set(links) == {"r01", "r02"} and all("r01" not in u for u in links.values())
        with httpx.Client(timeout=10) as http:
            page = http.get(links["r01"])
            assert page.status_code == 200 and "text/html" in page.headers["content-type"]
            assert not [m for m in MODELS if m in page.text]
            assert http.get(f"{srv.url}/p/guess").status_code == 404
            good = json.dumps(_doc(camp, "r01")).encode()
            r = http.post(f"{srv.url}/answers", content=good)
            assert r.status_code == 200 and r.json()["message"].startswith("Received 3 answers")
            again = http.post(f"{srv.url}/answers", content=good)
            assert again.json()["message"].startswith("Already received")
            bad = _doc(camp, "r02")
            bad["rater"] = "r01"
            r = http.post(f"{srv.url}/answers", content=json.dumps(bad).encode())
            assert r.status_code == 400 and "tampered" in r.json()["message"]
            assert http.post(f"{srv.url}/answers", content=b"x" * 10).status_code == 400
        frame = camp.collect(srv)
        assert set(frame["rater"]) == {"r01"} and len(frame) == 3
        assert camp.collect(srv).equals(frame)  # queued files are handed out once
        assert [p.name for p in (tmp_path / "inbox").iterdir()] == ["answers-r01-001.json"]
        port = srv.port
    with pytest.raises(httpx.TransportError):
        httpx.get(f"http://127.0.0.1:{port}/p/x", timeout=2)
    assert "stopped" in repr(srv)


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
    with pytest.raises(ListeningError) as info:
        CampaignServer(camp, public_url="192.0.2.7")
    assert info.value.argument == "public_url"
