"""collect on a folder with hostile entries: each one named with its reason, the rest counted
and kept (nothing raises past CollectError, nothing blocks, nothing is followed)."""

from __future__ import annotations

import json
import os
import time

import pytest

from songlab.listening import CollectError, campaign
from songlab.listening._answers import MAX_ANSWER_BYTES, parse
from tests.listening.listening_signals import make_clips


@pytest.fixture(scope="module")
def camp():
    return campaign("abx", make_clips(1, seconds=1.0), raters=3, seed=6, gold=1, traps=0)


def test_every_hostile_entry_is_named_and_the_good_files_are_kept(camp, tmp_path) -> None:
    good = {r: camp.simulate(r, seed=i) for i, r in enumerate(("r01", "r02"))}
    (tmp_path / "a-r01.json").write_text(json.dumps(good["r01"]))
    (tmp_path / "b-r02.json").write_text(json.dumps(good["r02"]))
    (tmp_path / "c-replayed.json").write_text(json.dumps(good["r01"]))  # a copy, other name
    forged = json.loads(json.dumps(camp.simulate("r03", seed=3)))
    forged["answers"][0][1] = "B" if forged["answers"][0][1] == "A" else "A"
    (tmp_path / "d-forged.json").write_text(json.dumps(forged))
    (tmp_path / "e-deep.json").write_bytes(b"[" * 100_000 + b"]" * 100_000)  # 200 kB
    (tmp_path / "f-huge.json").write_bytes(b" " * (2 * MAX_ANSWER_BYTES))
    (tmp_path / "g-folder.json").mkdir()
    (tmp_path / "h-link.json").symlink_to(tmp_path / "a-r01.json")
    os.mkfifo(tmp_path / "i-pipe.json")  # a reader that opened it would block forever
    (tmp_path / "notes.txt").write_text("not an answer file: not even looked at")
    started = time.monotonic()
    with pytest.raises(CollectError) as info:
        camp.collect(tmp_path)
    assert time.monotonic() - started < 60
    refused = dict(info.value.refused)
    assert info.value.accepted == 2
    assert sorted(refused) == [
        "c-replayed.json",
        "d-forged.json",
        "e-deep.json",
        "f-huge.json",
        "g-folder.json",
        "h-link.json",
        "i-pipe.json",
    ]
    assert refused["c-replayed.json"] == (
        "replayed: the same answer file as a-r01.json, already collected"
    )
    assert "tampered" in refused["d-forged.json"] and "MAC" in refused["d-forged.json"]
    assert "nests deeper than 16 levels" in refused["e-deep.json"]
    assert "2,000,000 bytes, larger than an answer file can be" in refused["f-huge.json"]
    assert "not a regular file" in refused["g-folder.json"]
    assert "symbolic link; not followed" in refused["h-link.json"]
    assert "not a regular file" in refused["i-pipe.json"]
    assert set(camp.results()["rater"]) == {"r01", "r02"}
    # a collected file edited after its page signed it is tampered, not a replay of itself
    (tmp_path / "a-r01.json").write_text(json.dumps(forged | {"mac": good["r01"]["mac"]}))
    with pytest.raises(CollectError) as edited:
        camp.collect([tmp_path / "a-r01.json"])
    assert "tampered" in dict(edited.value.refused)["a-r01.json"]
    (tmp_path / "a-r01.json").write_text(json.dumps(good["r01"]))
    # collecting the folder again takes nothing twice and passes over what it has
    with pytest.raises(CollectError) as again:
        camp.collect(tmp_path)
    assert again.value.accepted == 0 and again.value.unchanged == 2


def test_deep_json_is_refused_by_the_parser_itself() -> None:
    from songlab.listening._answers import Refused

    with pytest.raises(Refused, match="nests deeper"):
        parse(b'{"a":' * 50_000 + b"1" + b"}" * 50_000)
    with pytest.raises(Refused, match="not JSON"):
        parse(b'{"a": [1, 2')


def _signed(camp, rater: str, doc: dict) -> dict:
    """``doc`` re-signed with ``rater``'s own token: what a rater holding their page can send."""
    from songlab.listening import _answers as ans

    doc = {k: v for k, v in doc.items() if k not in ("mac", "organiser")}
    doc["mac"] = ans.mac(camp._token(rater), doc)
    return doc


def test_a_lone_surrogate_is_refused_in_one_sentence_and_the_rest_collected(tmp_path) -> None:
    """`"rater": "\\ud800"` (sendable with the campaign id alone) raised UnicodeEncodeError
    from collect: the files after it were not collected and the error named no file."""
    c = campaign("abx", make_clips(1, seconds=1.0), raters=2, seed=6, gold=1, traps=0)
    (tmp_path / "a-surrogate.json").write_bytes(
        b'{"format": "songlab.campaign.answers/2", "campaign": "%s", "rater": "\\ud800", '
        b'"kind": "abx", "design": "x", "scripted": false, "headphones": null, "answers": [], '
        b'"mac": "00"}' % c.id.encode()
    )
    (tmp_path / "b-r01.json").write_text(json.dumps(c.simulate("r01", seed=1)))
    with pytest.raises(CollectError) as info:
        c.collect(tmp_path)
    refused = dict(info.value.refused)
    assert list(refused) == ["a-surrogate.json"]
    assert "not valid Unicode" in refused["a-surrogate.json"]
    assert info.value.accepted == 1 and set(c.results()["rater"]) == {"r01"}


def test_a_rater_cannot_mark_their_own_answers_scripted(tmp_path) -> None:
    c = campaign("abx", make_clips(1, seconds=1.0), raters=2, seed=6, gold=1, traps=0)
    mine = c.answer_file("r01", _all_a(c, "r01"))
    claimed = _signed(c, "r01", dict(mine, scripted=True))  # re-signed with r01's own token
    with pytest.raises(CollectError) as info:
        c.collect([claimed])
    (reason,) = [why for _, why in info.value.refused]
    assert "scripted" in reason and "only the organiser" in reason
    # the organiser's own scripted raters still are
    c.collect([c.simulate("r02", seed=2), mine])
    assert c.results().groupby("rater")["scripted"].all().to_dict() == {"r01": False, "r02": True}


def test_a_rater_cannot_claim_more_time_heard_than_the_page_could_play() -> None:
    c = campaign("abx", make_clips(1, seconds=1.0), raters=1, seed=6, gold=0, traps=0)
    doc = c.answer_file("r01", _all_a(c, "r01"))
    doc["answers"][0][2] = [[label, 2**70] for label, _ in doc["answers"][0][2]]
    with pytest.raises(CollectError) as info:
        c.collect([_signed(c, "r01", doc)])
    (reason,) = [why for _, why in info.value.refused]
    assert "more than its page could play" in reason and "trial" in reason
    assert c.results().empty


def test_a_file_name_that_is_not_utf8_is_named_and_progress_works_after_save(tmp_path) -> None:
    c = campaign("abx", make_clips(1, seconds=1.0), raters=1, seed=6, gold=0, traps=0)
    folder = os.fsencode(tmp_path / "in")
    os.mkdir(folder)
    with open(os.path.join(folder, b"answers-\xff\xfe.json"), "wb") as fh:
        fh.write(json.dumps(c.simulate("r01", seed=1)).encode())
    c.collect(tmp_path / "in")
    source = c.progress().set_index("rater").loc["r01", "source"]
    assert source == "answers-\\xff\\xfe.json"
    c.progress().to_string()  # printable
    c.save(tmp_path / "c.json")
    from songlab.listening import load_campaign

    again = load_campaign(tmp_path / "c.json", make_clips(1, seconds=1.0))
    assert again.progress().set_index("rater").loc["r01", "source"] == source


def _all_a(c, rater: str) -> dict[int, str]:
    return {t.index: "A" for t in c._sessions[rater].trials}
