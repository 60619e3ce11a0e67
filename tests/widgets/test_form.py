"""The generation form headless, on a scripted client: gate, price, idempotent submit."""

from __future__ import annotations

from decimal import Decimal as D

from songlab.widgets.form import GenerationForm


def make(fake, **kw) -> GenerationForm:
    return GenerationForm(fake, **kw)


def test_tools_fill_operations_and_models(fake) -> None:
    form = make(fake)
    assert list(form.operation.options) == [
        "generate_song",
        "generate_music",
        "generate_singing",
        "write_lyrics",
        "sfx_gen",
    ]
    assert list(form.model.options) == ["v5", "v6", "v7"]
    form.duration.value = 100.0
    form.operation.value = "sfx_gen"
    assert list(form.model.options) == ["v5"]
    assert form.duration.value == 5.0  # sfx default: 100 s is out of its range
    assert form.lyrics.disabled and form.vocal_id.disabled


def test_invalid_form_disables_submit_and_shows_the_reason(fake) -> None:
    form = make(fake)
    assert form.submit.disabled
    assert "prompt: required for generate_song" in form.reason.value
    form.submit.click()  # click() bypasses `disabled`; the form must refuse itself
    assert fake.backend.creates == []
    assert "Not sent: prompt: required" in form.status_line.value
    form.prompt.value = "city pop at dusk"
    assert not form.submit.disabled and "ready" in form.reason.value
    assert form.status_line.value == ""  # the edit took the last action's message with it
    form.duration.value = 500.0
    assert form.submit.disabled and "duration: must be 5-240 s" in form.reason.value


def test_price_follows_every_change(fake) -> None:
    form = make(fake, model="v5")
    form.prompt.value = "x"
    seen = []
    for model, tier in (("v5", 1), ("v6", 3), ("v7", 2), ("v7", 5)):
        form.model.value, form.license.value = model, tier
        seen.append(form.price)
        assert f"Price: ${form.price}" in form.price_label.value
    assert seen == [D("0.07"), D("0.20"), D("0.25"), D("1.67")]
    form.operation.value = "generate_singing"
    form.lyrics.value = "la"
    assert form.price == D("0.90") and "generate_singing v7, master" in form.price_label.value


def test_double_click_sends_one_key_and_creates_one_task(fake) -> None:
    form = make(fake)
    form.prompt.value = "a song"
    form.submit.click()
    form.submit.click()
    assert len(fake.backend.creates) == 1
    assert form.task_ids == ["task-1"]
    assert form.submit.disabled and "take 1 was made: task task-1" in form.reason.value
    assert "Already made: take 1 is task task-1" in form.status_line.value
    form.progress.wait(5)
    # a new value is a new submission with a new key
    form.prompt.value = "another song"
    form.submit.click()
    assert [c["key"] for c in fake.backend.creates][0] != fake.backend.creates[1]["key"]
    assert form.task_ids == ["task-1", "task-2"]
    # New take re-arms the same values with a fresh key
    form.new_take.click()
    assert not form.submit.disabled
    form.submit.click()
    assert form.task_ids == ["task-1", "task-2", "task-3"]
    form.progress.wait(5)


def test_a_failed_create_keeps_the_key_for_the_retry_and_shows_the_error(fake) -> None:
    fake.backend.fail_creates.append(RuntimeError("RateLimited [429]: slow down"))
    form = make(fake)
    form.prompt.value = "a song"
    form.submit.click()
    assert form.task_ids == []
    # an error the form cannot tell apart: person words, the detail one click away
    assert "Something went wrong (RuntimeError)" in form.status_line.value
    assert "RateLimited [429]: slow down" in form.status_line.value  # inside <details>
    assert "<details" in form.status_line.value
    assert len(form.errors) == 1
    assert not form.submit.disabled  # the user may retry
    form.submit.click()
    first, retry = fake.backend.creates
    assert first["key"] == retry["key"]
    assert form.task_ids == ["task-1"]
    form.progress.wait(5)


def test_payload_and_license_sent(fake) -> None:
    form = make(fake)
    form.prompt.value = "p"
    form.lyrics.value = "l"
    form.vocal_id.value = "voice-1"
    form.duration.value = 12.0
    form.license.value = 4
    form.submit.click()
    sent = fake.backend.creates[0]
    assert sent["tool_id"] == "tool-generate_song-v7" and sent["license"] == 4
    assert sent["payload"] == {
        "prompt": "p",
        "lyrics": "l",
        "duration_seconds": 12.0,
        "vocal_id": "voice-1",
    }
    form.progress.wait(5)


def test_a_form_without_usable_tools_says_so(fake) -> None:
    form = GenerationForm(fake, tools=())
    assert form.submit.disabled and "operation: choose one" in form.reason.value


def test_use_take_names_the_take_a_script_submits(fake) -> None:
    import pytest

    form = make(fake)
    form.prompt.value = "a song"
    form.submit.click()
    form.use_take(2)
    assert form.take_label.value == "take 2" and not form.submit.disabled
    form.submit.click()
    assert form.task_ids == ["task-1", "task-2"]
    for bad in (0, -1, 1.5, True, "2"):
        with pytest.raises(ValueError, match="take: a whole number >= 1"):
            form.use_take(bad)
    form.progress.wait(5)


def test_a_recorded_take_the_service_no_longer_has_is_made_again_and_said_so(fake) -> None:
    """The client's record holds take 1 of these values, but the service was reset (a fresh
    sandbox): Generate says it would re-attach, the create makes a new task, and the status
    says the service no longer had the recorded one."""
    from datetime import UTC, datetime
    from types import SimpleNamespace

    recorded = SimpleNamespace(task_id="gone-task-1", accepted_at=datetime(2026, 11, 1, tzinfo=UTC))
    fake.previous_create = lambda route, body, take=1: recorded if take == 1 else None
    form = make(fake)
    form.prompt.value = "a song made before the reset"
    assert "would re-attach to task gone-tas" in form.reason.value and not form.submit.disabled
    form.submit.click()  # the scripted service answers a new task (no "reused")
    assert form.task_ids == ["task-1"]
    status = form.status_line.value
    assert "no longer had the recorded task (it was reset)" in status and "task-1" in status
    form.progress.wait(5)
