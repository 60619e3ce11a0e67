"""A scorecard of v5/v6/v7 on the sandbox, in every answer profile: adherence from the
audio, waiting from the client's record, cost from the ledger. In the spec profile (no
timestamps, no costs) waiting is still filled and the cost is the estimate, labelled so."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

import songlab.audio.lyrics as ly
import songlab.audio.study as study
import songlab.listening.scorecard as sc
from songlab import ledger
from tests._profiles import ProfileSandbox

PROMPTS = ("rock in E major, 132 bpm", "hiphop in F minor, 88 bpm")


@pytest.fixture(scope="module")
def made(profile_sandbox: ProfileSandbox) -> Any:
    client = profile_sandbox.client()
    requests = [
        {
            "operation": "generate_song",
            "model": m,
            "license": 2,
            "payload": {"prompt": p, "duration_seconds": 6},
        }
        for m in ("v5", "v6", "v7")
        for p in PROMPTS
    ]
    batch = ledger.batch_frame(client.batch(requests, budget_usd="5.00"))  # as widgets.batch
    assert (batch["status"] == "completed").all()
    yield client, batch, requests
    client.close()


@pytest.mark.slow
def test_the_scorecard_joins_adherence_waiting_and_cost(made, profile_sandbox, tmp_path):
    client, batch, requests = made
    clips = study.clips_from_batch(batch, requests, client)
    cache = study.AnalysisCache(tmp_path / "a.sqlite")
    adherence = study.analyse(clips, client=client, cache=cache, workers=1, progress=False)
    tasks = ledger.tasks_frame(client)
    card = sc.scorecard(adherence=adherence, tasks=tasks, records=client.record)
    f = card.frame.set_index("model")
    assert list(f.index) == ["v5", "v6", "v7"]
    # adherence: the frame's own means
    means = adherence.groupby("model")["duration_score"].mean()
    assert f["duration_score"].to_dict() == pytest.approx(means.to_dict())
    assert (f["duration_score"] == 1.0).all()
    # waiting: the client's clock, whatever the service shows
    assert (f["waited"] == 2).all() and (f["wait_p50_s"] > 0).all()
    assert (f["wait_p95_s"] >= f["wait_p50_s"]).all()
    # cost: the ledger's figure for these tasks, labelled billed or estimated
    price = {"v5": Decimal("0.11"), "v6": Decimal("0.15"), "v7": Decimal("0.25")}
    ledger_cost = tasks.set_index("task_id").loc[batch["task_id"], "cost_usd"]
    assert sum(ledger_cost) == 2 * sum(price.values())
    for m, p in price.items():
        assert f.loc[m, "usd_per_clip"] == p
        assert f.loc[m, "usd_per_minute"] == (p / Decimal("0.1")).quantize(Decimal("1e-8"))
    basis = "estimated" if profile_sandbox.profile == "spec" else "billed"
    assert (f["cost_basis"] == basis).all()
    assert "$0.25" in card._repr_html_() and basis in card._repr_html_()
    # run again: measured once, read from the cache (no download, no decode)
    again = study.analyse(
        study.clips_from_batch(batch, requests, client), cache=cache, workers=1, progress=False
    )
    assert again.drop(columns="blob_key").equals(adherence.drop(columns="blob_key"))


@pytest.mark.slow
def test_lyrics_are_scored_on_the_services_transcription(made, profile_sandbox, tmp_path):
    """The transcript is where each profile keeps it (the spec profile shows output.text and
    metadata_json, nothing else): the same word error rate, the cost labelled."""
    client = made[0]
    request = {
        "operation": "generate_song",
        "model": "v6",
        "payload": {
            "prompt": "folk in G major, 90 bpm",
            "lyrics": "Paper boats and thunder,\ncounting every star we lost",
            "duration_seconds": 12,
        },
    }
    batch = client.batch([request], budget_usd="1.00")
    clips = study.clips_from_batch(batch, [request], client)
    cache = study.AnalysisCache(tmp_path / "lyrics.sqlite")
    price = study.lyrics_price(clips, client=client, cache=cache)
    assert (price.calls, price.usd) == (1, Decimal("0.03"))
    got = study.analyse(
        clips, client=client, cache=cache, workers=1, progress=False, lyrics_budget_usd=price.usd
    )
    # a 12 s song at 90 bpm has room for the first line only: the words it could not sing
    # are deletions, counted by the rule (S + D + I) / N
    asked = ly.normalise(request["payload"]["lyrics"]).split()
    heard = ly.normalise(got["transcript"].iloc[0]).split()
    assert heard and heard == asked[: len(heard)]
    assert got["lyrics_wer"].tolist() == [pytest.approx((len(asked) - len(heard)) / len(asked))]
    source = "estimate" if profile_sandbox.profile == "spec" else "billed"
    assert got.attrs["lyrics"]["cost_source"] == source
    assert Decimal(got.attrs["lyrics"]["new_usd"]) == Decimal("0.03")
    card = sc.scorecard(adherence=got)
    assert card.frame["lyrics_wer"].tolist() == got["lyrics_wer"].tolist()
    assert card.frame["lyrics_wer_n"].tolist() == [1]
