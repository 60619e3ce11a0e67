"""Lyrics adherence end to end: the service's own transcription of a sandbox song against the
lyrics asked, priced before anything is sent, refused over the budget, bought once per clip."""

from __future__ import annotations

import math
from decimal import Decimal
from types import SimpleNamespace

import pytest

import songlab.audio.lyrics as ly
import songlab.audio.study as study
from songlab.audio import AudioError
from songlab.client import BudgetExceeded, Client

SUNLIGHT = "Sunlight on the water,\nwe are running home tonight"
BOATS = "paper boats and thunder\ncounting every star we lost"


def test_word_error_rate_after_one_normalisation():
    assert ly.wer(SUNLIGHT, "sunlight on the water we are running home tonight") == 0.0
    assert ly.normalise(SUNLIGHT) == "sunlight on the water we are running home tonight"
    # one word of nine swapped, one left out: (S + D) / N
    assert ly.wer(SUNLIGHT, "moonlight on the water we are running home") == pytest.approx(2 / 9)
    assert ly.wer(SUNLIGHT, BOATS) > 0.8
    assert ly.wer(SUNLIGHT, "") == 1.0  # nothing heard: every word missed
    assert math.isnan(ly.wer("", "la la"))  # nothing asked: no rate


def test_the_transcript_is_read_where_the_answer_keeps_it():
    segments = {"segments": [{"text": "paper boats"}, {"text": "and thunder"}]}
    cases = [
        (SimpleNamespace(text="la la", metadata=None), "la la"),  # output.text (the sandbox)
        (SimpleNamespace(text=None, metadata={"text": "da da"}), "da da"),
        (SimpleNamespace(text=None, metadata={"transcript": "do re"}), "do re"),
        (SimpleNamespace(text=None, metadata=segments), "paper boats\nand thunder"),
        (SimpleNamespace(text=None, metadata={"language": "en"}), None),  # none: unknown
        (None, None),
    ]
    for output, text in cases:
        assert ly.transcript_text(output) == text


def _ledger(admin, account_id):
    entries = admin.get(f"/_sandbox/accounts/{account_id}/ledger").json()["entries"]
    return [e for e in entries if e["operation"] == "transcribe"]


def _three_clips(client):
    """Two songs with their own lyrics, and the second judged against the first's words
    (the same file, other words asked)."""
    songs = [
        {
            "operation": "generate_song",
            "model": "v7",
            "payload": {
                "prompt": "pop in C major, 100 bpm",
                "lyrics": words,
                "duration_seconds": 12,
            },
        }
        for words in (SUNLIGHT, BOATS)
    ]
    made = client.batch(songs)
    sunlight, boats = study.clips_from_batch(made, songs, client)
    wrong = study.Clip(
        request=sunlight.request,
        file_id=boats.file_id,
        blob_hash=boats.blob_hash,
        task_id=boats.task_id,
        label="boats, asked sunlight",
    )
    return sunlight, boats, wrong


def _rerun_buys_nothing(client, clips, cache, tmp_path, got) -> None:
    """A re-run from the analysis cache makes no call; with a fresh cache, each call
    re-attaches to the recorded transcription: nothing is bought again."""
    spent = client.account.balance().total_effective
    again = study.analyse(
        clips, client=client, cache=cache, workers=1, progress=False, lyrics_budget_usd="0"
    ).set_index("clip")
    assert again["lyrics_wer"].equals(got["lyrics_wer"])
    assert again.attrs["lyrics"]["transcribed_now"] == 0
    fresh = study.AnalysisCache(tmp_path / "fresh.sqlite")
    assert study.lyrics_price(clips, client=client, cache=fresh).calls == 2
    third = study.analyse(
        clips, client=client, cache=fresh, workers=1, progress=False, lyrics_budget_usd="0.06"
    ).set_index("clip")
    assert third["lyrics_wer"].equals(got["lyrics_wer"])
    assert third.attrs["lyrics"]["reattached"] == 2
    assert third.attrs["lyrics"]["new_usd"] == "0"
    assert client.account.balance().total_effective == spent


def test_lyrics_scored_on_the_services_transcription_paid_once(
    sandbox, admin, new_account, tmp_path
):
    acct = new_account()
    with Client(base_url=sandbox.base_url, api_key=acct.api_key, quiet=True) as client:
        sunlight, boats, wrong = _three_clips(client)
        clips = [sunlight, boats, wrong]
        cache = study.AnalysisCache(tmp_path / "analysis.sqlite")
        before = client.account.balance().total_effective

        # priced first: two files to transcribe (the wrong clip shares the boats file)
        price = study.lyrics_price(clips, client=client, cache=cache)
        assert (price.calls, price.usd, price.asked, price.held) == (2, Decimal("0.06"), 3, 0)
        assert "2 transcription(s) to buy at list price $0.06" in str(price)

        # a budget under the price refuses the whole study: nothing sent, nothing measured
        with pytest.raises(BudgetExceeded, match=r"\$0\.06"):
            study.analyse(clips, client=client, cache=cache, workers=1, lyrics_budget_usd="0.05")
        assert client.account.balance().total_effective == before
        assert _ledger(admin, acct.account_id) == [] and len(cache) == 0

        # without a budget the lyrics are not bought, and say so
        unbought = study.analyse(clips, client=client, cache=cache, workers=1, progress=False)
        assert unbought["lyrics_wer"].isna().all()
        assert unbought.attrs["lyrics"] == {"scored": 0, "unscored": 3}
        assert client.account.balance().total_effective == before

        got = study.analyse(
            clips, client=client, cache=cache, workers=1, progress=False, lyrics_budget_usd="0.06"
        ).set_index("clip")
        lines = _ledger(admin, acct.account_id)
        assert len(lines) == 2 and sum(Decimal(e["amount_usd"]) for e in lines) == price.usd
        assert before - client.account.balance().total_effective == 6  # tokens: $0.06
        assert got.attrs["lyrics"]["new_usd"] == "0.06000000"
        assert got.attrs["lyrics"]["transcribed_now"] == 2
        # the sandbox's transcription gives back the lyrics each song was made with
        assert got.loc[sunlight.label, "lyrics_wer"] == 0.0
        assert got.loc[boats.label, "lyrics_wer"] == 0.0
        assert ly.normalise(got.loc[sunlight.label, "transcript"]) == ly.normalise(SUNLIGHT)
        # the wrong lyrics score worse by the same rule
        assert got.loc["boats, asked sunlight", "lyrics_wer"] > 0.8
        assert got.loc["boats, asked sunlight", "lyrics_wer"] == ly.wer(SUNLIGHT, BOATS)

        _rerun_buys_nothing(client, clips, cache, tmp_path, got)
        assert len(_ledger(admin, acct.account_id)) == 2


def test_a_clip_that_asks_lyrics_needs_a_file_the_service_can_transcribe(tmp_path):
    clip = study.Clip(
        request={"operation": "generate_song", "payload": {"prompt": "x", "lyrics": "la"}},
        data=b"RIFF....WAVE",
    )
    with pytest.raises(AudioError, match=r"clips\[0\]: asks for lyrics but has no file_id"):
        study.analyse([clip], client=object(), cache=False, workers=1, lyrics_budget_usd="1")
