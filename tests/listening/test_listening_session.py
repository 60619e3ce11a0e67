"""Sessions: blinding, balanced order, loudness matching, played-before-answer, save/resume, export."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from songlab.audio import encode, integrated_loudness, peak, peak_db
from songlab.listening import (
    ListeningError,
    NotPlayedError,
    SessionError,
    abx,
    load,
    mushra,
    preference,
    simulate,
)
from songlab.listening import _format as fmt
from tests.listening.listening_signals import MODELS, SR, make_clips

KINDS = {
    "preference-pairs": lambda c, **kw: preference(c, **kw),
    "preference-all": lambda c, **kw: preference(c, design="all", allow_tie=True, **kw),
    "abx": lambda c, **kw: abx(c, **kw),
    "mushra": lambda c, **kw: mushra(c, reference=MODELS[0], anchor=True, **kw),
}


def _public_view(session) -> dict[str, str]:
    """Everything a listener can read without touching a private name, as text."""
    view = {"repr": repr(session), "str": str(session)}
    for name in dir(session):
        if name.startswith("_"):
            continue
        try:
            value = getattr(session, name)
        except SessionError:
            continue  # key / seed: refused before reveal
        if callable(value):
            continue
        view[name] = repr(value)
    view["results"] = session.results().to_csv(index=False)
    return view


def _leaks(text: str, allowed: tuple[str, ...] = ()) -> list[str]:
    return [m for m in MODELS if m in text and m not in allowed]


def _common(session, audio, sr=SR):
    """``audio`` in the session's common format (48 kHz stereo, its length, the same fades)."""
    return fmt.shape(fmt.fit(fmt.conform(audio, sr), int(round(session.seconds * fmt.RATE))))


def _play_all(session, trial: int) -> None:
    for label in session.trials[trial].labels:
        session.mark_played(trial, label)


@pytest.mark.parametrize("kind", KINDS, ids=list(KINDS))
def test_nothing_public_reveals_the_key_before_reveal(kind: str, clips, tmp_path: Path) -> None:
    s = KINDS[kind](clips, seed=11)
    simulate(s, prefer=MODELS[1], scores={MODELS[1]: 90})
    reference = (s.options.get("reference"),) if kind == "mushra" else ()
    for name, text in _public_view(s).items():
        allowed = MODELS if name == "models" else reference if name == "options" else ()
        assert not _leaks(text, allowed), (name, text[:300])
    with pytest.raises(SessionError, match="hidden until the session is revealed"):
        _ = s.key
    with pytest.raises(SessionError):
        _ = s.seed
    with pytest.raises(SessionError):
        s.stats()
    assert "model" not in s.results().columns

    # the saved file: names only in the model list (and MUSHRA's open reference), the key sealed
    path = s.save(tmp_path / "s.json")
    doc = json.loads(path.read_text())
    sealed = doc.pop("sealed")
    assert not _leaks(sealed)
    doc.pop("models")
    assert not _leaks(json.dumps(doc), reference)
    # ...and the reloaded session's public view is the same, still blinded
    again = load(path, clips)
    assert _public_view(again) == _public_view(s)
    assert not again.revealed


@pytest.mark.parametrize("kind", KINDS, ids=list(KINDS))
def test_reveal_shows_the_model_behind_each_label(kind: str, clips) -> None:
    s = KINDS[kind](clips, seed=5)
    simulate(s, prefer=MODELS[2])
    frame = s.reveal()
    assert s.revealed and "model" in frame.columns or "model_a" in frame.columns
    for trial in s.trials:
        prompt = s.prompts.index(trial.prompt)
        for label, model in s.key[trial.index].items():
            played, _ = s.clip(trial.index, label)
            if model not in clips:  # the MUSHRA anchor
                continue
            original = _common(s, clips[model][prompt][0])
            ratio = float(
                np.dot(played.ravel(), original.ravel())
                / np.dot(original.ravel(), original.ravel())
            )
            np.testing.assert_allclose(played, original * ratio, atol=1e-5)  # the same clip, scaled
    assert isinstance(s.seed, int)


def test_key_through_results_after_reveal_matches_the_clips(clips) -> None:
    s = preference(clips, seed=2)
    simulate(s, prefer=MODELS[0], p=1.0)
    frame = s.reveal()
    chosen = frame[frame["chosen"]]
    offered = frame.groupby("trial")["model"].apply(set)
    for _, row in chosen.iterrows():
        if MODELS[0] in offered[row["trial"]]:
            assert row["model"] == MODELS[0]
    assert (
        s.stats()["pairs"].set_index(["model_a", "model_b"]).loc[(MODELS[0], MODELS[1]), "wins_a"]
        == 4
    )


@pytest.mark.parametrize("kind", ["preference-pairs", "preference-all", "mushra"])
@pytest.mark.parametrize("n_prompts", [3, 4, 5])
def test_each_model_in_each_position_equally_often_within_one(kind: str, n_prompts: int) -> None:
    s = KINDS[kind](make_clips(n_prompts), seed=n_prompts)
    simulate(s)
    s.reveal()
    counts: dict[str, Counter] = {}
    for mapping in s.key.values():
        for label, model in mapping.items():
            if label != "Ref":
                counts.setdefault(model, Counter())[label] += 1
    labels = sorted({label for c in counts.values() for label in c})
    for model, c in counts.items():
        values = [c[label] for label in labels]
        assert max(values) - min(values) <= 1, (model, c)


def test_abx_positions_and_reference_balanced() -> None:
    s = abx(make_clips(3), seed=9)
    simulate(s)
    frame = s.reveal()
    a_counts = Counter(frame["model_a"])
    b_counts = Counter(frame["model_b"])
    assert all(abs(a_counts[m] - b_counts[m]) <= 1 for m in MODELS)
    x_a = int((frame["x"] == "A").sum())
    assert abs(x_a - (len(frame) - x_a)) <= 1


@pytest.mark.parametrize("protocol", ["abx", "mushra"])
def test_a_clip_never_gets_the_same_bytes_twice_in_a_session(protocol: str, monkeypatch) -> None:
    """The same clip comes back in other trials (X of one trial is A of another). Each
    trial's labels drew their lead-ins on their own, so a clip could get the same lead-in,
    and so the same bytes, in two trials: X's bytes equal to another trial's A named X's
    model to a rater comparing bytes. Here every first draw is the same number, so the old
    code gives each trial's first label the same lead-in; the session must still keep every
    copy of every clip apart, and give the same answer on every call."""
    real = fmt.lead
    monkeypatch.setattr(
        fmt,
        "lead",
        lambda key, *parts, variant=0: 77 if variant == 0 else real(key, *parts, variant=variant),
    )
    session = KINDS[protocol](make_clips(2, models=MODELS[:3], seconds=0.6), seed=4, repeats=2)
    reveal = {}  # (trial, label) -> (model, prompt), read from the session's design
    secret = session._unseal()
    for t in session.trials:
        plan = secret["plans"][t.index]
        for label in session._playable(t):
            reveal[t.index, label] = (session._model_of_plan(t, plan, label), plan.prompt)
    by_clip: dict[tuple[str, str], list[tuple[int, str]]] = {}
    for element, clip in reveal.items():
        by_clip.setdefault(clip, []).append(element)
    assert max(len(v) for v in by_clip.values()) >= 3  # clips do come back
    leads = {t.index: session._leads(t) for t in session.trials}
    for elements in by_clip.values():
        got = [leads[t][label] for t, label in elements]
        assert len(set(got)) == len(got), f"one clip, one lead-in twice: {elements}"
    assert {t.index: session._leads(t) for t in session.trials} == leads  # deterministic
    some = next(v for v in by_clip.values() if len(v) >= 3)[:3]
    data = [session.delivered(t, label) for t, label in some]
    assert len(set(data)) == 3


def test_a_clip_with_no_lead_in_left_is_refused_by_name(monkeypatch) -> None:
    # three lead-ins in all (the real 1,151 need a clip in the session 1,152 times)
    monkeypatch.setattr(fmt, "LEAD_MAX", 3)
    session = abx(make_clips(1, models=MODELS[:2], seconds=0.6), seed=4, repeats=2)
    with pytest.raises(ListeningError, match=r"clips: one clip is in a session more than 3 times"):
        session.delivered(0, "A")


@pytest.mark.parametrize("kind", KINDS, ids=list(KINDS))
def test_played_clips_are_loudness_matched_never_amplified_never_clipping(kind: str, clips) -> None:
    s = KINDS[kind](clips, seed=3)
    for trial in s.trials:
        loud = []
        for label in trial.labels:
            arr, rate = s.clip(trial.index, label)
            loud.append(integrated_loudness(arr, sr=rate))
            assert peak(arr) <= 1.0 and peak_db(arr) <= -1.0 + 1e-6
        assert max(loud) - min(loud) < 0.5, (trial, loud)
    s.reveal()
    gains = s.gains()
    assert (gains["gain_db"] <= 0).all()
    for _, row in gains.iterrows():
        if row["model"] in clips:
            original = clips[row["model"]][s.prompts.index(row["prompt"])][0]
            assert row["loudness_lufs"] == pytest.approx(
                integrated_loudness(_common(s, original), sr=fmt.RATE), abs=1e-6
            )


def test_encoded_bytes_are_accepted_as_clips() -> None:
    raw = make_clips(2, models=MODELS[:2])
    as_bytes = {m: [encode(a, sr=r, format="flac") for a, r in v] for m, v in raw.items()}
    s = abx(as_bytes, seed=1)
    assert len(s) == 2
    arr, rate = s.clip(0, "X")  # in the common format: 48 kHz stereo, the shortest clip's length
    assert rate == fmt.RATE and arr.shape == (2, round(s.seconds * fmt.RATE))
    assert s.seconds == pytest.approx(1.0, abs=0.01)


def test_answer_requires_every_clip_of_the_trial_played(clips) -> None:
    s = abx(clips, seed=4)
    with pytest.raises(
        NotPlayedError, match="trial 0: play every clip before answering; not played yet: A, B, X"
    ):
        s.answer(0, "A")
    s.mark_played(0, "A")
    s.mark_played(0, "X")
    with pytest.raises(NotPlayedError, match="not played yet: B"):
        s.answer(0, "A")
    assert s.played(0) == frozenset({"A", "X"})
    s.mark_played(0, "B")
    s.answer(0, "A")
    assert s.answers == {0: "A"} and s.progress == (1, len(s)) and s.next_trial == 1


def test_mushra_needs_every_stimulus_but_not_the_open_reference(clips) -> None:
    s = mushra(clips, reference=MODELS[0], seed=4)
    ratings = {label: 50 for label in s.trials[0].labels}
    s.mark_played(0, "Ref")
    with pytest.raises(NotPlayedError):
        s.answer(0, ratings)
    _play_all(s, 0)
    s.answer(0, ratings)
    ref, _ = s.clip(0, "Ref")
    assert any(
        np.array_equal(ref, s.clip(0, label)[0]) for label in s.trials[0].labels
    )  # hidden reference


def test_answers_are_validated(clips) -> None:
    s = preference(clips, seed=1)
    _play_all(s, 0)
    with pytest.raises(ListeningError, match="^choice: must be one of A, B or 'bad' .*; got 'C'"):
        s.answer(0, "C")
    with pytest.raises(ListeningError, match="^choice: "):
        s.answer(0, None)  # no ties unless allow_tie
    with pytest.raises(ListeningError, match="^trial: "):
        s.answer(99, "A")
    with pytest.raises(ListeningError, match="^label: "):
        s.mark_played(0, "X")
    s.answer(0, "A")
    with pytest.raises(SessionError, match="already answered"):
        s.answer(0, "B")
    s.answer(0, "B", replace=True)
    assert s.answers[0] == "B"
    s.reveal()
    _play_all(s, 1)
    with pytest.raises(SessionError, match="revealed"):
        s.answer(1, "A")

    m = mushra(clips, seed=1)
    _play_all(m, 0)
    with pytest.raises(ListeningError, match="^ratings: must map every label"):
        m.answer(0, {"A": 50})
    with pytest.raises(ListeningError, match="^ratings: B: must be a number in 0..100"):
        m.answer(0, {"A": 50, "B": 101, "C": 3})


@pytest.mark.parametrize(
    ("make", "argument"),
    [
        (lambda c: preference({"only": c[MODELS[0]]}), "clips"),
        (lambda c: preference({**c, MODELS[0]: c[MODELS[0]][:2]}), "clips"),
        (lambda c: preference(c, seed=-1), "seed"),
        (lambda c: preference(c, repeats=0), "repeats"),
        (lambda c: preference(c, prompts=["a", "a", "b", "c"]), "prompts"),
        (lambda c: preference(c, design="roundrobin"), "design"),
        (lambda c: mushra(c, reference="v9"), "reference"),
        (lambda c: mushra(c, anchor=True), "anchor"),
        (lambda c: abx({m: [np.zeros(SR)] for m in MODELS}, sr=SR), "clips"),
    ],
    ids=[
        "one-model",
        "uneven",
        "seed",
        "repeats",
        "prompts",
        "design",
        "reference",
        "anchor",
        "silent",
    ],
)
def test_bad_session_input_names_the_argument(make, argument: str, clips) -> None:
    with pytest.raises(ListeningError) as info:
        make(clips)
    assert info.value.argument == argument


@pytest.mark.parametrize("kind", KINDS, ids=list(KINDS))
def test_save_and_resume(kind: str, clips, tmp_path: Path) -> None:
    s = KINDS[kind](clips, seed=21, prompts=["intro", "verse", "chorus", "outro"])
    half = len(s) // 2
    simulate(s, seed=1)  # answers everything; then rebuild a half-done twin
    twin = KINDS[kind](clips, seed=21, prompts=["intro", "verse", "chorus", "outro"])
    for t in range(half):
        for label in twin._playable(twin.trials[t]):
            twin.mark_played(t, label)
        twin.answer(t, s.answers[t])
    twin.mark_played(half, twin.trials[half].labels[0])
    path = twin.save(tmp_path / "half.json")

    resumed = load(path, clips)
    assert type(resumed) is type(twin) and resumed.trials == twin.trials
    assert resumed.answers == twin.answers and resumed.progress == (half, len(s))
    assert resumed.played(half) == frozenset({twin.trials[half].labels[0]})
    assert resumed.next_trial == half and not resumed.revealed
    for t in range(half, len(s)):
        for label in resumed._playable(resumed.trials[t]):
            resumed.mark_played(t, label)
        resumed.answer(t, s.answers[t])
    s.reveal()
    resumed.reveal()
    assert resumed.key == s.key and resumed.seed == s.seed == 21
    # the same answers; the twin's by a person, s's by the scripted listener, and each says so
    assert resumed.scripted == frozenset() and s.scripted == frozenset(range(len(s)))
    assert not resumed.results()["scripted"].any() and s.results()["scripted"].all()
    pd.testing.assert_frame_equal(
        resumed.results().drop(columns="scripted"), s.results().drop(columns="scripted")
    )

    # a revealed session saves and reloads revealed
    again = load(resumed.save(tmp_path / "done.json"), clips)
    assert again.revealed and again.key == s.key


def test_resume_refuses_other_clips_and_other_files(clips, tmp_path: Path) -> None:
    path = preference(clips, seed=1).save(tmp_path / "s.json")
    other = make_clips(seed=99)
    with pytest.raises(ListeningError, match="^clips: are not the clips"):
        load(path, other)
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "something else"}')
    with pytest.raises(ListeningError, match="^path: "):
        load(bad, clips)
    with pytest.raises(ListeningError, match="^path: "):
        load(tmp_path / "missing.json", clips)


def test_seed_reproduces_the_design_and_a_drawn_seed_is_recorded(clips) -> None:
    a, b = preference(clips, seed=7), preference(clips, seed=7)
    assert a.trials == b.trials
    for s in (a, b):
        simulate(s)
        s.reveal()
    assert a.key == b.key
    drawn = preference(clips)
    simulate(drawn)
    drawn.reveal()
    replay = preference(clips, seed=drawn.seed)
    simulate(replay)
    replay.reveal()
    assert replay.trials == drawn.trials and replay.key == drawn.key


@pytest.mark.parametrize("kind", KINDS, ids=list(KINDS))
def test_results_export_to_csv_and_parquet(kind: str, clips, tmp_path: Path) -> None:
    s = KINDS[kind](clips, seed=8)
    simulate(s)
    blinded = s.results()
    s.reveal()
    frame = s.results()
    assert len(frame) == len(blinded) and set(blinded.columns) < set(frame.columns)
    from_parquet = pd.read_parquet(s.to_parquet(tmp_path / "r.parquet"))
    pd.testing.assert_frame_equal(from_parquet, frame)
    from_csv = pd.read_csv(s.to_csv(tmp_path / "r.csv"))
    assert list(from_csv.columns) == list(frame.columns) and len(from_csv) == len(frame)
    assert from_csv["trial"].tolist() == frame["trial"].tolist()
