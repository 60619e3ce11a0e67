"""The scorecard's figures equal those of the engines they come from: the adherence frame,
the listening panel, the client's record and the ledger; nothing is guessed."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

import songlab.listening.panel as panel
import songlab.listening.scorecard as sc
from songlab import ledger
from songlab.listening import ListeningError


def _adherence() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    rows = []
    for m, p_key in (("v5", 0.5), ("v6", 0.8), ("v7", 1.0)):
        for i in range(12):
            rows.append(
                {
                    "task_id": f"{m}-{i}",
                    "model": m,
                    "license": 2,
                    "key_score": float(rng.random() < p_key),
                    "tempo_score": 1.0 if i % 3 else 0.0,
                    "duration_score": 1.0,
                    "melody_score": float("nan"),  # nobody asked a melody
                    "lyrics_wer": float("nan"),
                    "duration_s": 30.0,
                    "loudness_lufs": -14.0 - (m == "v5"),
                    "true_peak_dbtp": -1.0,
                    "clipped_samples": 0,
                }
            )
    return pd.DataFrame(rows)


def test_bootstrap_mean_brackets_the_mean_and_is_seeded():
    x = [0.0, 1.0, 1.0, 0.5, 1.0, 0.0, 1.0, 1.0]
    mean, low, high, n = sc.bootstrap_mean(x, seed=3)
    assert mean == pytest.approx(np.mean(x)) and low <= mean <= high and n == 8
    assert sc.bootstrap_mean(x, seed=3) == (mean, low, high, n)
    assert sc.bootstrap_mean([float("nan"), 1.0])[3] == 1
    assert np.isnan(sc.bootstrap_mean([])[0])
    mean0, low0, high0, n0 = sc.bootstrap_mean(x, boot=0)  # no resamples: no interval
    assert mean0 == mean and np.isnan(low0) and np.isnan(high0) and n0 == 8
    with pytest.raises(ListeningError, match="boot"):
        sc.bootstrap_mean(x, boot=-1)


def test_adherence_figures_equal_the_frame():
    frame = _adherence()
    card = sc.scorecard(adherence=frame)
    means = frame.groupby("model")[["key_score", "tempo_score", "duration_score"]].mean()
    got = card.frame.set_index("model")
    for col in means.columns:
        assert got[col].to_dict() == pytest.approx(means[col].to_dict())
        assert (got[f"{col}_low"] <= got[col]).all() and (got[col] <= got[f"{col}_high"]).all()
    assert got["key_score_n"].tolist() == [12, 12, 12]
    assert got["melody_score_n"].tolist() == [0, 0, 0]  # not asked: not scored
    assert got["audio_s"].tolist() == [360.0] * 3
    shown = card.display_frame()
    assert "melody (95% CI)" not in shown.columns and "key (95% CI)" in shown.columns


def _record(models: dict[str, list[float]], unseen: int = 0) -> pd.DataFrame:
    t0 = datetime(2026, 11, 1, tzinfo=UTC)
    rows = []
    for m, waits in models.items():
        for i, w in enumerate(waits):
            rows.append(
                {
                    "task_id": f"{m}-{i}",
                    "model": m,
                    "license": 2,
                    "sent_at": t0,
                    "finished_at": t0 + timedelta(seconds=w),
                    "final_status": "completed",
                }
            )
        for j in range(unseen):
            rows.append(
                {
                    "task_id": f"{m}-x{j}",
                    "model": m,
                    "license": 2,
                    "sent_at": t0,
                    "finished_at": None,
                    "final_status": None,
                }
            )
    return pd.DataFrame(rows)


def test_waiting_is_the_clients_clock_p50_and_p95():
    waits = {"v5": [1.0, 2.0, 3.0, 4.0, 10.0], "v7": [5.0, 6.0, 7.0]}
    out = sc.waiting(_record(waits, unseen=2)).set_index("model")
    assert out.loc["v5", "wait_p50_s"] == pytest.approx(np.percentile(waits["v5"], 50))
    assert out.loc["v5", "wait_p95_s"] == pytest.approx(np.percentile(waits["v5"], 95))
    assert out.loc["v7", "waited"] == 3 and out.loc["v7", "unseen"] == 2
    with pytest.raises(ListeningError, match="finished_at"):
        sc.waiting(_record(waits).drop(columns=["finished_at"]))


def _tasks(sources: dict[str, str]) -> pd.DataFrame:
    """A ledger tasks frame (``ledger.tasks_frame`` of task snapshots): per model 12 songs
    whose cost the service shows ("billed"), does not show ("estimate": the ledger prices
    it) or cannot be priced ("unknown": no operation known)."""
    price = {"v5": "0.11", "v6": "0.15", "v7": "0.25"}
    snaps = []
    for m in ("v5", "v6", "v7"):
        for i in range(12):
            src = sources[m]
            snaps.append(
                {
                    "task_id": f"{m}-{i}",
                    "tool_id": f"tool-{m}",
                    "model": m,
                    "operation": None if src == "unknown" else "generate_song",
                    "license": 2,
                    "status": "completed",
                    "created_at": "2026-11-01T10:00:00Z",
                    "updated_at": "2026-11-01T10:00:30Z",
                    "cost_usd": price[m] if src == "billed" else None,
                    "output": {},
                }
            )
    return ledger.tasks_frame(snaps, record=None, tools={})


def test_cost_is_the_ledgers_labelled_billed_or_estimated_and_unknown_stays_unknown():
    frame = _adherence()
    tasks = _tasks({"v5": "billed", "v6": "estimate", "v7": "unknown"})
    out = sc.cost_summary(tasks, clips=frame).set_index("model")
    assert out.loc["v5", "usd_per_clip"] == Decimal("0.11")
    assert out.loc["v5", "usd_per_minute"] == Decimal("0.22")  # 30 s clips
    assert out.loc["v5", "cost_basis"] == "billed" and out.loc["v6", "cost_basis"] == "estimated"
    assert out.loc["v7", "usd_per_clip"] is None and out.loc["v7", "unknown_cost"] == 12
    with pytest.raises(ListeningError, match="not in the ledger"):
        sc.cost_summary(tasks[tasks["model"] != "v6"], clips=frame)


def _preferences(raters: int = 8, seed: int = 1) -> pd.DataFrame:
    """Preference answers (rater, trial, model, chosen, tie): v7 > v6 > v5 mostly."""
    rng = np.random.default_rng(seed)
    strength = {"v5": 0.0, "v6": 0.6, "v7": 1.2}
    rows = []
    for r in range(raters):
        for t, (a, b) in enumerate([("v5", "v6"), ("v5", "v7"), ("v6", "v7")] * 4):
            p_a = 1 / (1 + np.exp(strength[b] - strength[a]))
            win = a if rng.random() < p_a else b
            for m in (a, b):
                rows.append(
                    {"rater": f"r{r}", "trial": t, "model": m, "chosen": m == win, "tie": False}
                )
    return pd.DataFrame(rows)


def test_listening_figures_equal_the_panels():
    answers = _preferences()
    out = sc.listening_summary(answers, kind="preference", boot=20).set_index("model")
    ref = panel.bradley_terry(answers).set_index("model")
    assert out["listening_score"].to_dict() == ref["score"].to_dict()  # the panel's, exactly
    assert (out["listening_low"] <= out["listening_score"]).all()
    assert (out["listening_score"] <= out["listening_high"]).all()
    assert out["raters"].tolist() == [8, 8, 8]
    assert out["answers"].tolist() == [64, 64, 64]  # 8 raters x 8 trials with the model


def test_one_scorecard_joins_all_four_and_exports(tmp_path):
    frame = _adherence()
    waits = {m: [1.0 + i for i in range(12)] for m in ("v5", "v6", "v7")}
    card = sc.scorecard(
        adherence=frame,
        listening=_preferences(),
        kind="preference",
        tasks=_tasks({"v5": "billed", "v6": "billed", "v7": "estimate"}),
        records=_record(waits),
        boot=60,
    )
    f = card.frame.set_index("model")
    assert f.loc["v7", "cost_basis"] == "estimated"
    assert f.loc["v7", "quality_per_usd"] == pytest.approx(f.loc["v7", "listening_score"] / 0.25)
    assert f.loc["v5", "wait_p50_s"] == pytest.approx(6.5)
    html = card.to_html(tmp_path / "card.html")
    assert "Scorecard" in html and "key (95% CI)" in html and "$0.25" in html
    assert (tmp_path / "card.html").stat().st_mode & 0o777 == 0o600
    card.to_parquet(tmp_path / "card.parquet")
    back = pq.read_table(tmp_path / "card.parquet")
    assert str(back.schema.field("usd_per_clip").type) == "decimal128(18, 8)"
    assert back.column("usd_per_clip").to_pylist() == list(card.frame["usd_per_clip"])
    assert (tmp_path / "card.parquet").stat().st_mode & 0o777 == 0o600
    fig = card.plot()
    assert fig.axes[0].get_legend() is not None
    assert "points per $" in card._repr_html_()


def test_per_tier_rows():
    frame = pd.concat(
        [_adherence(), _adherence().assign(license=4, task_id=lambda d: d.task_id + "s")]
    )
    card = sc.scorecard(adherence=frame, by=("model", "license"))
    assert len(card.frame) == 6 and set(card.frame["license"]) == {2, 4}
    with pytest.raises(ListeningError, match="by"):
        sc.scorecard(adherence=frame, by=("model", "tier"))
    with pytest.raises(ListeningError, match="at least one"):
        sc.scorecard()


SECRET = b"scorecard-test-secret-0123456789"


@pytest.fixture(scope="module")
def rated():
    """A preference campaign: six attentive raters who mostly prefer charlie, and two who
    never listen: they press "A" in every trial, the rater checks included (the panel's
    flat-lining rule excludes them, whatever the checks' places)."""
    from songlab.listening import campaign
    from tests.listening.listening_signals import MODELS, make_clips

    c = campaign(
        "preference", make_clips(3, seconds=1.0), raters=8, seed=5, gold=2, traps=2, secret=SECRET
    )
    files = [c.simulate(r, prefer=MODELS[2], p=0.75, seed=i) for i, r in enumerate(c.raters[:6])]
    for r in c.raters[6:]:
        trials = [row[0] for row in c.simulate(r)["answers"]]
        files.append(c.answer_file(r, dict.fromkeys(trials, "A"), scripted=True))
    c.collect(files)
    return c


def test_the_listening_score_comes_after_the_panels_rater_exclusions(rated):
    ex = rated.exclusions()
    assert set(ex.loc[ex["excluded"], "rater"]) == {"r07", "r08"}
    assert "flat-lining" in ex.set_index("rater").loc["r07", "reason"]
    card = sc.scorecard(listening=rated, boot=10)
    f = card.frame.set_index("model")
    kept = rated.stats()["ranking"].set_index("model")["score"]  # the panel's, kept raters
    assert f["listening_score"].to_dict() == kept.to_dict()
    everyone = rated.stats(raters="all")["ranking"].set_index("model")["score"]
    assert not np.allclose(f["listening_score"], everyone[f.index])  # the exclusions count
    answers = rated.results(raters="kept")
    assert f["raters"].tolist() == [6, 6, 6] and f["raters_excluded"].tolist() == [2, 2, 2]
    assert f["answers"].to_dict() == answers.groupby("model").size().to_dict()
    assert (f["listening_low"] <= f["listening_score"]).all()
    assert (f["listening_score"] <= f["listening_high"]).all()
    assert card.provenance["listening"]["excluded_raters"] == ["r07", "r08"]
    assert "6 / " in card._repr_html_()
    # the campaign's answers as a frame (every rater, 'excluded' marked): the same figures
    cols = ["listening_score", "raters", "answers", "raters_excluded"]
    again = sc.listening_summary(rated.results(), kind="preference", boot=0).set_index("model")
    assert again[cols].sort_index().equals(f[cols].sort_index())


def test_a_bootstrap_draw_is_the_panels_bradley_terry_of_the_drawn_raters(rated):
    kept = rated.results(raters="kept")
    draw = ["r03", "r01", "r03", "r06", "r02", "r02"]
    got = sc._resampler(kept, None)(draw).set_index("model")["score"]
    answers = pd.concat(
        [kept[kept["rater"] == r].assign(rater=f"{r}#{k}") for k, r in enumerate(draw)]
    )
    ref = panel.bradley_terry(answers).set_index("model")["score"]
    assert got.to_dict() == pytest.approx(ref.to_dict(), rel=1e-12, abs=1e-12)


def test_only_protocols_that_score_models_make_a_listening_column():
    with pytest.raises(ListeningError, match="kind"):
        sc.listening_summary(_preferences(), kind="abx")
    with pytest.raises(ListeningError, match="name the protocol"):
        sc.listening_summary(_preferences())  # a frame of answers does not say its protocol
    every = _preferences().assign(excluded=True)
    with pytest.raises(ListeningError, match="every rater"):
        sc.listening_summary(every, kind="preference")


def test_quality_per_dollar_is_the_same_figure_as_the_listening_value_table():
    """One answer wherever it is shown: the scorecard's points per dollar equal
    ``listening.quality_per_dollar``'s at the clips' own tier, from the same panel score."""
    from songlab.listening import quality_per_dollar

    answers = _preferences()
    tasks = _tasks({"v5": "billed", "v6": "billed", "v7": "billed"})
    frame = _adherence()
    card = sc.scorecard(adherence=frame, listening=answers, kind="preference", tasks=tasks, boot=0)
    f = card.frame.set_index("model")
    ranking = panel.bradley_terry(answers)  # the panel's own table
    clip_tasks = {m: list(g["task_id"]) for m, g in frame.groupby("model")}
    value = quality_per_dollar(ranking, tasks, clip_tasks)
    own = value[value["measured"]].set_index("model")
    assert f["usd_per_clip"].to_dict() == own["usd_per_clip"].to_dict()
    assert f["quality_per_usd"].to_dict() == pytest.approx(own["points_per_usd"].to_dict())


def test_a_single_session_scores_its_listener():
    """A session is one listener: the panel's score of their answers once revealed (each
    trial a unit), one rater, an interval over their trials; a blind session is refused."""
    from songlab import listening
    from tests.listening.listening_signals import MODELS, make_clips

    session = listening.preference(make_clips(4, seconds=0.5), seed=1, repeats=2)  # 24 trials
    listening.simulate(session, prefer={MODELS[2]: 2.0, MODELS[1]: 1.5, MODELS[0]: 1.0}, seed=2)
    with pytest.raises(ListeningError, match="reveal"):
        sc.scorecard(listening=session)
    session.reveal()
    f = sc.scorecard(listening=session, boot=50).frame.set_index("model")
    answers = session.results()
    ref = panel.bradley_terry(answers.assign(rater=answers["trial"].map("trial {}".format)))
    assert f["listening_score"].to_dict() == ref.set_index("model")["score"].to_dict()
    assert (f["raters"] == 1).all()
    assert (f["listening_low"] <= f["listening_score"]).all()
    assert (f["listening_score"] <= f["listening_high"]).all()
    assert f["answers"].to_dict() == answers.groupby("model").size().to_dict()


def test_the_scorecard_says_only_what_its_intervals_separate():
    """Notebook 09: v7 75.0 (56.2-93.8) above v5 43.8 (25.0-62.5) and 'most listening points
    per dollar: v5' were printed with overlapping intervals. The scorecard's own sentences
    name no winner there, and the points per dollar carry the propagated interval."""
    summary = pd.DataFrame(
        {
            "model": ["v5", "v6", "v7"],
            "listening_score": [43.75, 31.25, 75.0],
            "listening_low": [25.0, 12.5, 56.25],
            "listening_high": [62.5, 50.0, 93.75],
            "raters": [4, 4, 4],
            "answers": [16, 16, 16],
        }
    )
    tasks = _tasks({"v5": "billed", "v6": "billed", "v7": "billed"})
    card = sc.scorecard(listening=summary, tasks=tasks)
    f = card.frame.set_index("model")
    assert f.loc["v5", "quality_per_usd_low"] == pytest.approx(25.0 / 0.11)
    assert f.loc["v7", "quality_per_usd_high"] == pytest.approx(93.75 / 0.25)
    said = card.verdicts()
    assert said["listening_score"].winner is None
    assert "v7 and v5 overlap (v7 75.0, 56.2-93.8; v5 43.8, 25.0-62.5)" in str(
        said["listening_score"]
    )
    assert said["quality_per_usd"].winner is None
    assert said["quality_per_usd"].text.startswith(
        "No clear winner on listening points per dollar: v5 and each of v7 and v6 overlap "
        "(v5 398, 227-568; v7 300, 225-375; v6 208, 83-333)"
    )
    assert said["usd_per_clip"].winner == "v5"  # exact prices: the cheapest is plain
    assert said["usd_per_clip"].text.startswith("Lowest price per clip: v5, $0.11")
    shown = card.display_frame().set_index("model")
    assert shown.loc["v5", "points per $ (95% CI)"] == "398 (227-568)"
    assert "No clear winner on listening score" in repr(card)
    assert "No clear winner on listening points per dollar" in card._repr_html_()
    clear = sc.scorecard(
        listening=summary.assign(listening_high=[55.0, 50.0, 93.75]), tasks=tasks
    ).verdicts()
    assert clear["listening_score"].winner == "v7"
    assert clear["quality_per_usd"].winner is None  # v7's 225-375 still overlaps v5's 227-500
