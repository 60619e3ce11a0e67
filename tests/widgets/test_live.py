"""The panels against a real sandbox (fixtures ``sandbox``, ``admin``, ``new_account``).

Each test makes its own account, so balances and ledgers are its own. Faults
are sandbox-wide: a test that sets them removes them in ``finally``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from decimal import Decimal as D
from typing import Any

import httpx
import pytest

from songlab.client import Client
from songlab.codec import sniff
from songlab.spec import TRANSLATION_STEPS
from songlab.widgets.clone import ClonePanel
from songlab.widgets.cost import CostPanel
from songlab.widgets.form import GenerationForm
from songlab.widgets.players import AudioView, StemsView
from songlab.widgets.progress import ProgressPanel

WAIT = 60.0


@pytest.fixture
def account(new_account) -> Any:
    return new_account()


@pytest.fixture
def client(sandbox, account) -> Iterator[Client]:
    with Client(account.api_key, base_url=sandbox.base_url) as c:
        yield c


def ledger(admin: httpx.Client, account: Any) -> list[dict]:
    r = admin.get(f"/_sandbox/accounts/{account.account_id}/ledger")
    r.raise_for_status()
    return r.json()["entries"]


def song_form(client: Client, **values: Any) -> GenerationForm:
    form = GenerationForm(client)
    form.prompt.value = "bright synth pop"
    form.duration.value = 5.0
    for name, value in values.items():
        getattr(form, name).value = value
    return form


def finish(form: GenerationForm) -> Any:
    assert form.errors == []
    states = form.progress.wait(WAIT)
    assert all(s.done for s in states.values()), states
    return states


@pytest.mark.parametrize(
    ("model", "license", "price"),
    [("v7", 2, "0.25"), ("v5", 5, "0.70")],
    ids=["v7-standard", "v5-master"],
)
def test_price_shown_is_the_price_billed(client, admin, account, model, license, price) -> None:
    form = song_form(client, model=model, license=license)
    assert form.price == D(price) and f"Price: ${price}" in form.price_label.value
    form.submit.click()
    finish(form)
    lines = ledger(admin, account)
    assert [e["task_id"] for e in lines] == form.task_ids
    assert sum(D(e["amount_usd"]) for e in lines) == form.price


def test_double_click_creates_one_task(client, admin, account) -> None:
    form = song_form(client)
    form.submit.click()
    form.submit.click()
    finish(form)
    assert len(form.task_ids) == 1
    assert [t.task_id for t in client.generations.page(limit=10).data] == form.task_ids
    assert len(ledger(admin, account)) == 1
    # the key of that submission is what dedups (the client derives it from the request and
    # the take): the same request answers the same task again
    again = client.generations.create(**form.request())
    assert again.task_id == form.task_ids[0]
    assert len(ledger(admin, account)) == 1


def test_invalid_form_is_gated_and_sends_nothing(client, admin, account) -> None:
    form = GenerationForm(client)
    form.prompt.value = ""
    assert form.submit.disabled and "prompt: required" in form.reason.value
    form.submit.click()
    assert form.task_ids == [] and client.generations.page(limit=5).data == ()
    assert ledger(admin, account) == []


def test_progress_reaches_the_end_through_dropped_streams(client, admin, sandbox) -> None:
    form = song_form(client)
    admin.put("/_sandbox/faults", json={"drop_stream_after": 2}).raise_for_status()
    try:
        form.submit.click()
        finish(form)
        row = form.progress.rows[form.task_ids[0]]
        # the sandbox really cut each connection after 2 events ...
        with httpx.stream(
            "GET",
            f"{sandbox.base_url}/v1/generations/{row.task_id}/stream",
            headers={"Authorization": f"Bearer {client_key(client)}"},
        ) as r:
            frames = [json.loads(line[5:]) for line in r.iter_lines() if line.startswith("data:")]
        assert [f["kind"] for f in frames][:2] == ["progress", "progress"]
        assert len(frames) <= 3 and frames[-1]["kind"] != "terminal"
    finally:
        admin.delete("/_sandbox/faults")
    # ... and the row still saw every event up to the terminal one
    assert row.state.last_seq > 2
    assert row.state.status == "completed" and row.bar.value == row.bar.max
    assert row.bar.bar_style == "success" and "completed (100%)" in row.status.value
    take = form.takes[row.task_id]
    assert take.loaded.wait(WAIT) and sniff(take.player.value) == "mp3"
    assert (
        take.player.filename
        == take.filename
        == (f"{form.model.value}-take1-bright-synth-pop-{row.task_id.replace('-', '')[:8]}.mp3")
    )


def client_key(client: Client) -> str:
    return client._auth_headers["Authorization"].removeprefix("Bearer ")


def test_many_tasks_in_one_panel(client) -> None:
    panel = ProgressPanel(client)
    handles = [
        client.generations.create(
            operation="generate_music",
            model="v5",
            payload={"prompt": f"loop {i}", "duration_seconds": 5},
        )
        for i in range(3)
    ]
    for h in handles:
        panel.track(h.task_id, label=h.task_id[:8])
    states = panel.wait(WAIT)
    assert len(states) == 3 and all(s.status == "completed" for s in states.values())
    assert all(r.bar.value == 100 for r in panel.rows.values())


def test_failed_task_and_refused_create_are_shown(client, admin, new_account, sandbox) -> None:
    admin.put("/_sandbox/faults", json={"fail_tasks": 1.0}).raise_for_status()
    try:
        form = song_form(client)
        form.submit.click()
        states = form.progress.wait(WAIT)
    finally:
        admin.delete("/_sandbox/faults")
    (state,) = states.values()
    row = form.progress.rows[form.task_ids[0]]
    assert state.status == "failed" and state.error
    assert "failed" in row.status.value and state.error.split(":")[0] in row.status.value
    assert row.bar.bar_style == "danger"
    broke = new_account(balance_tokens=0)
    with Client(broke.api_key, base_url=sandbox.base_url) as poor:
        form = song_form(poor)
        form.submit.click()
        assert form.task_ids == []
        # person words (what to do), the service's error one click away
        assert "balance is too low for this request" in form.status_line.value
        assert (
            "InsufficientFunds" in form.status_line.value and "<details" in form.status_line.value
        )
        assert form.errors and "Top it up" in form.errors[0]
        # refused as it stands: Generate is off until a value changes (a click would fail again)
        assert form.submit.disabled and "refused" in form.reason.value


def test_clone_panel_end_to_end(client, admin, account, voice_mp3) -> None:
    panel = ClonePanel(client)
    panel.load_reference(voice_mp3, filename="me.mp3")
    panel.name.value = "me"
    panel.attestation.value = "I am the speaker and hold all rights to this recording."
    assert panel.submit.disabled and "consent:" in panel.reason.value
    panel.submit.click()
    assert panel.task_id is None and ledger(admin, account) == []
    panel.consent.value = True
    assert not panel.submit.disabled
    panel.submit.click()
    panel.submit.click()
    assert panel.consent_id and panel.consent_id in panel.consent_info.value
    assert "$12.00" in panel.consent_info.value
    panel.progress.wait(WAIT)
    assert panel.vocal_id and panel.vocal_id in panel.result.value, panel.errors
    lines = ledger(admin, account)
    assert [(e["kind"], D(e["amount_usd"])) for e in lines] == [("voice_clone", D("12.00"))]
    panel.song_button.click()  # opens the song form: nothing is bought yet
    song = panel.song_form
    assert song is not None and song.task_ids == [] and len(ledger(admin, account)) == 1
    song.prompt.value = "a song in my own voice"
    song.submit.click()  # the person wrote the prompt, saw the price and pressed Generate
    assert len(song.task_ids) == 1, panel.errors + song.errors
    assert song.request()["payload"]["vocal_id"] == panel.vocal_id
    song.progress.wait(WAIT)
    assert client.generations.get(song.task_ids[0]).status == "completed"
    assert panel.errors == [] and song.errors == []


def test_translation_row_names_the_six_steps(client, admin, account) -> None:
    song = client.generations.create(
        operation="generate_song",
        model="v5",
        payload={"prompt": "ballad", "lyrics": "la la la", "duration_seconds": 5},
    )
    task = client.generations.wait(song.task_id, timeout=WAIT)
    handle = client.song_translations.create(
        song_file_id=task.file_ids[0], target_language="French", song_style="soft pop"
    )
    panel = ProgressPanel(client)
    row = panel.track(handle.task_id, label="translation")
    state = row.wait(WAIT)
    assert state.status == "completed", state
    assert [name for name, _ in state.steps] == list(TRANSLATION_STEPS)
    for i, step in enumerate(TRANSLATION_STEPS, 1):
        assert f"\u2713 {i} {step}" in row.steps.value
    kinds = [e["kind"] for e in ledger(admin, account) if e["task_id"] == handle.task_id]
    assert kinds.count("translation_step") == 6


def test_players_for_a_file_id_and_stems_side_by_side(client) -> None:
    task = client.generations.create(
        operation="generate_song", model="v7", payload={"prompt": "funk", "duration_seconds": 5}
    ).wait(timeout=WAIT)
    view = AudioView(client, task.file_ids[0], label="song")
    assert view.sink.errors == [] and "<audio" in view.player.value
    assert len(view.waveform.value) > 1000 and len(view.spectrogram.value) > 1000
    assert 4.0 < view.duration < 6.5
    sep = client.generations.create(
        operation="separate_stems", model="2stem", payload={"audio": f"file_id:{task.file_ids[0]}"}
    ).wait(timeout=WAIT)
    row = StemsView.from_task(client, sep)
    assert len(row.children) == len(sep.file_ids) >= 1
    assert all("<audio" in c.player.value and c.sink.errors == [] for c in row.columns.values())
    bad = AudioView(client, "no-such-file")
    assert bad.sink.errors and "ResourceNotFound" in bad.sink.errors[0]


def test_cost_panel_matches_the_ledger(client, admin, account) -> None:
    panel = CostPanel(client)
    assert panel.errors == [] and panel.total_usd == 0
    assert "$1,000.00" in panel.balance.value and "no tasks yet" in panel.by_tier_html.value
    for model, license, take in (("v5", 1, 1), ("v7", 5, 1), ("v7", 5, 2)):  # two takes
        client.generations.create(
            operation="generate_song",
            model=model,
            license=license,
            payload={"prompt": "x", "duration_seconds": 5},
            take=take,
        ).wait(timeout=WAIT)
    panel.refresh_button.click()
    assert panel.errors == [] and "up to date" in panel.status_line.value
    billed = sum(D(e["amount_usd"]) for e in ledger(admin, account))
    assert panel.total_usd == billed == D("0.07") + 2 * D("1.67")
    assert "Spent: <b>$3.41</b> on 3 tasks" in panel.total.value
    tiers = dict(zip(panel.by_tier["tier"].astype(str), panel.by_tier["tasks"], strict=True))
    assert tiers == {"royalty_free": 1, "master": 2}
    assert "<td>3.34</td>" in panel.by_operation_html.value  # the two v7 master songs, USD
    assert panel.balance_usd == D(1000) - billed
    assert panel.plot.value[:4] == b"\x89PNG"


def test_listening_panel_on_sandbox_songs_is_blind_and_matched(client, assert_blind) -> None:
    from songlab import audio, listening
    from songlab.widgets import listening_panel

    names = {"v5": "model v5 (sandbox)", "v7": "model v7 (sandbox)"}
    handles = {
        m: client.generations.create(
            operation="generate_song",
            model=m,
            payload={"prompt": "lofi beat", "duration_seconds": 5, "seed": 3},
        )
        for m in names
    }
    clips = {
        names[m]: [client.files.download(h.wait(timeout=WAIT).file_ids[0])]
        for m, h in handles.items()
    }
    session = listening.preference(clips, seed=11, repeats=2)
    panel = listening_panel(session)
    loudness = []
    while panel.trial is not None:
        assert_blind(panel, tuple(names.values()))
        assert all(b.disabled for b in panel.answer_box.children)
        for label in ("A", "B"):
            panel.play(label)
            panel.listened(label)  # the browser's report, once the clip has played through
            samples, rate = audio.decode(bytes(panel.players[label].value))
            loudness.append(audio.integrated_loudness(samples, sr=rate))
        assert_blind(panel, tuple(names.values()))
        panel.answer_box.children[0].click()
    assert max(loudness) - min(loudness) < 0.5
    with pytest.raises(listening.SessionError):
        session.key  # noqa: B018 - sealed until the reveal
    frame = panel.reveal()
    firsts = [session.key[t]["A"] for t in session.key]
    assert sorted(firsts) == sorted(names.values())  # each model first once
    assert set(frame["model"]) == set(names.values())


def test_form_shows_a_reuse_and_new_take_makes_another_named_task(sandbox, admin, account) -> None:
    with Client(account.api_key, base_url=sandbox.base_url, quiet=True) as first:
        form = song_form(first)
        assert "ready" in form.reason.value and form.take_label.value == "take 1"
        form.submit.click()
        finish(form)
    # a kernel restart: a new client and a new form, the same record
    with Client(account.api_key, base_url=sandbox.base_url, quiet=True) as again:
        form2 = song_form(again)
        assert f"would re-attach to task {form.task_ids[0][:8]}" in form2.reason.value
        assert "nothing is billed again" in form2.reason.value and not form2.submit.disabled
        form2.submit.click()
        finish(form2)
        assert form2.task_ids == form.task_ids and len(ledger(admin, account)) == 1
        form2.new_take.click()
        assert form2.take_label.value == "take 2" and "ready" in form2.reason.value
        form2.submit.click()
        finish(form2)
        assert len(form2.task_ids) == 2 and len(ledger(admin, account)) == 2
        labels = [form2.progress.rows[t].state.label for t in form2.task_ids]
        assert re.fullmatch(r"v7 take 1 \u00b7 \d\d:\d\d \u00b7 bright synth pop", labels[0])
        assert re.fullmatch(r"v7 take 2 \u00b7 \d\d:\d\d \u00b7 bright synth pop", labels[1])
        # the re-attached take is named with its own time, as the re-attach line says
        assert labels[0] == form.progress.rows[form.task_ids[0]].state.label
        shown = [form2.progress.rows[t].title.value for t in form2.task_ids]
        assert "take 1" in shown[0] and "take 2" in shown[1]
        assert all("bright synth pop" in t and "white-space:normal" in t for t in shown)  # whole
        # every take keeps its own player and its own download name, the older one included
        takes = [form2.takes[t] for t in form2.task_ids]
        assert all(t.loaded.wait(WAIT) for t in takes)
        assert takes[0].player.value != takes[1].player.value
        assert [t.filename.split("-")[1] for t in takes] == ["take1", "take2"]
        form2.new_take.click()  # takes 1 and 2 are recorded: the next is 3
        assert form2.take_label.value == "take 3"


def test_a_failed_refresh_says_so_and_keeps_the_last_figures(client) -> None:
    panel = CostPanel(client)
    total = panel.total.value
    client.close()  # the next refresh cannot reach the service
    panel.refresh_button.click()
    assert "figures below are from the last refresh" in panel.status_line.value
    assert "<details" in panel.status_line.value and panel.total.value == total
    assert len(panel.errors) == 1
