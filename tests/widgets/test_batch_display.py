"""A batch's progress shown: one widget bar in a notebook, one rewritten stderr line on a
terminal, nothing when not shown (moved here from tests/client/test_batch_state.py with the
code: the client shows nothing, it tells ``on_progress``)."""

from __future__ import annotations

import songlab.widgets.batches as batch_widgets
from songlab.client import BatchProgress
from songlab.widgets.batches import BatchDisplay


def test_progress_is_one_rewritten_line_outside_a_notebook(capsys):
    bar = BatchDisplay(3, show=True)
    bar.update("creating", 1, force=True)
    bar.update("creating", 3, force=True)
    bar.close()
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.count("\r") == 3
    assert "batch: creating 1/3" in err and err.rstrip().endswith("batch: creating 3/3")
    quiet = BatchDisplay(3, show=False)
    quiet.update("creating", 2, force=True)
    quiet.close()
    assert capsys.readouterr().err == "" and quiet.text == "batch: creating 2/3"


def test_progress_is_one_widget_bar_in_a_notebook(monkeypatch, capsys):
    monkeypatch.setattr(batch_widgets, "_in_kernel", lambda: True)
    bar = BatchDisplay(4)
    bar.update("creating", 2)
    bar.update("finishing", 4)
    bar.close()
    assert bar._bar.value == 4 and bar._bar.max == 4 and bar._bar.description == "finishing"
    assert bar._label.value == "4/4" and capsys.readouterr().err == ""


def test_the_display_follows_the_clients_progress_events(monkeypatch):
    monkeypatch.setattr(batch_widgets, "_in_kernel", lambda: True)
    bar = BatchDisplay(5)
    bar(BatchProgress("creating", 2, 5, created=2, reused=0, failed=0, rate_limited=0))
    assert (bar._bar.value, bar._bar.description, bar._label.value) == (2, "creating", "2/5")
    bar(BatchProgress("creating", 5, 5, created=4, reused=1, failed=1, rate_limited=3))
    assert bar._label.value == "5/5 (1 re-attached, 1 not created, 3 rate-limit pauses)"
    bar(BatchProgress("done", 4, 5, created=4, reused=1, failed=1, rate_limited=3))
    assert bar._bar.value == 5 and bar._bar.description == "done"
    assert bar.text.startswith("batch: done 5/5")


LYRICS = [
    {"operation": "write_lyrics", "model": "v5", "payload": {"prompt": f"verse {i}"}}
    for i in range(5)
]


def test_batch_shows_a_line_on_a_terminal_and_returns_the_frame(sandbox, new_account, capsys):
    from decimal import Decimal

    from songlab.client import Client

    acct = new_account()
    with Client(acct.api_key, base_url=sandbox.base_url) as c:
        df = batch_widgets.batch(c, LYRICS, progress=True, poll_interval=0.05)
        again = batch_widgets.batch(c, LYRICS, progress=False, poll_interval=0.05)
    out = capsys.readouterr()
    assert len(df) == 5 and (df["status"] == "completed").all() and df["error"].isna().all()
    assert df["cost_usd"].sum() == Decimal("0.10") and not df["reused"].any()
    assert again["reused"].all() and list(again["task_id"]) == list(df["task_id"])
    assert out.err.count("\n") == 1 and out.err.rstrip().endswith("batch: done 5/5")
    assert "batch: 5 created, 0 re-attached" in out.out  # the client's own summary line
    assert "batch: 0 created, 5 re-attached" in out.out


def test_batch_in_a_notebook_is_one_bar_that_ends_full(sandbox, new_account, monkeypatch):
    from songlab.client import Client

    shown: list[BatchDisplay] = []

    class Seen(BatchDisplay):
        def __init__(self, total, *, show=None):
            super().__init__(total, show=show)
            shown.append(self)

    monkeypatch.setattr(batch_widgets, "_in_kernel", lambda: True)
    monkeypatch.setattr(batch_widgets, "BatchDisplay", Seen)
    acct = new_account()
    with Client(acct.api_key, base_url=sandbox.base_url, quiet=True) as c:
        df = batch_widgets.batch(c, LYRICS[:3], poll_interval=0.05)
    (bar,) = shown
    assert len(df) == 3 and bar._bar is not None
    assert (bar._bar.value, bar._bar.max, bar._bar.description) == (3, 3, "done")


def test_abatch_on_an_async_client(sandbox, new_account):
    import asyncio

    from songlab.client import AsyncClient

    acct = new_account()

    async def run():
        async with AsyncClient(acct.api_key, base_url=sandbox.base_url, quiet=True) as c:
            return await batch_widgets.abatch(c, LYRICS[:3], progress=False, poll_interval=0.05)

    df = asyncio.run(run())
    assert len(df) == 3 and (df["status"] == "completed").all()
