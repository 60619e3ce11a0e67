"""No click spends money the person has not seen priced and confirmed: every button of every
panel, against a real sandbox.

Each panel is built on a fresh account and brought into each state a person meets (empty,
filled, after a take, after a clone, the song form the clone opens, a listening session,
...). In every state every button in the panel's widget tree (``ipywidgets.Button``, and the
play button of every clip player) is clicked with ``click()``, which fires even a disabled
button, as a stale browser view could. Around each click the account's tasks (the listing)
and tokens (the balance) are counted: a click that is not a confirmation changes neither.

The only confirmations are the two buttons that name what they buy beside its price:
*Generate* (the form's ``Price: $x`` line) and *Clone voice* (the flat price). For those the
test checks that the price was on screen before the click and that the spend equals it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from decimal import Decimal as D
from typing import Any

import ipywidgets as W
import numpy as np
import pytest

from songlab import listening
from songlab.client import Client
from songlab.widgets import (
    ClonePanel,
    CostPanel,
    ExportBar,
    GenerationForm,
    ProgressPanel,
    StemsView,
    listening_panel,
)
from songlab.widgets._media import ClipPlayer

WAIT = 60


def _tree(root: Any) -> Iterator[Any]:
    stack = [root]
    while stack:
        w = stack.pop()
        yield w
        stack.extend(reversed(getattr(w, "children", ()) or ()))


def _clickables(panel: Any) -> list[tuple[str, Callable[[], None]]]:
    found: list[tuple[str, Callable[[], None]]] = []
    for w in _tree(panel):
        if isinstance(w, W.Button):
            found.append((w.description or w.icon or "button", w.click))
        elif isinstance(w, ClipPlayer):  # its play button: what the kernel hears of a click
            found.append((f"play {w.label or 'clip'}", w.play))
    return found


class Meter:
    """The account's tasks and tokens, read from the service."""

    def __init__(self, client: Client) -> None:
        self.client = client

    def read(self) -> tuple[int, int]:
        tasks = sum(1 for _ in self.client.generations.list())
        return tasks, self.client.account.balance().total_effective


def _walk(panel: Any, meter: Meter, *, confirm: tuple[Any, ...] = ()) -> list[str]:
    """Click every button of ``panel`` but the confirmations; each must buy nothing."""
    clicked = []
    for name, click in _clickables(panel):
        if getattr(click, "__self__", None) in confirm:
            continue
        before = meter.read()
        click()
        _settle(panel)
        after = meter.read()
        assert after == before, (
            f"{type(panel).__name__}: {name!r} changed tasks/tokens {before} -> {after}"
        )
        clicked.append(name)
    return clicked


def _settle(panel: Any) -> None:
    for w in _tree(panel):
        if isinstance(w, ProgressPanel):
            w.wait(WAIT)


def _confirm(panel: Any, meter: Meter) -> None:
    """Press the panel's confirmation: the price was on screen, the spend equals it."""
    price = panel.gate.price
    assert panel.gate.valid and price is not None
    shown = panel.price_label
    assert shown.layout.display != "none" and f"${price:.2f}" in shown.value
    before = meter.read()
    panel.submit.click()
    _settle(panel)
    after = meter.read()
    assert after[0] == before[0] + 1
    assert D(before[1] - after[1]) / 100 == price, (before, after, price)


@pytest.fixture
def client(sandbox: Any, new_account: Any) -> Iterator[Client]:
    account = new_account()
    with Client(account.api_key, base_url=sandbox.base_url, quiet=True) as c:
        yield c


def test_the_generation_form_spends_only_on_generate_with_its_price_shown(client: Client) -> None:
    meter = Meter(client)
    form = GenerationForm(client, model="v5")
    assert _walk(form, meter) == ["Generate", "New take"]  # empty: Generate refuses
    form.prompt.value = "sunny ukulele pop"
    form.duration.value = 5.0
    assert _walk(form, meter, confirm=(form.submit,)) == ["New take"]
    _confirm(form, meter)
    # after a take: its row, its player; a repeat Generate re-attaches, New take re-arms
    clicked = _walk(form, meter)
    assert "Generate" in clicked and "New take" in clicked and "play clip" in clicked
    _confirm(form, meter)  # the next take, priced and pressed
    assert len(form.takes) == 2 and all(t.loaded.wait(WAIT) for t in form.takes.values())
    assert _walk(form, meter).count("play clip") == 2  # both takes play, neither buys


def test_the_clone_panel_and_the_song_form_it_opens(client: Client, voice_mp3: bytes) -> None:
    meter = Meter(client)
    panel = ClonePanel(client)
    assert "Start a song with this voice" in _walk(panel, meter)  # hidden, no voice: nothing
    panel.load_reference(voice_mp3, filename="me.mp3")
    panel.name.value = "Ana"
    panel.attestation.value = "I am the speaker of this recording and hold all rights to it."
    assert "Clone voice" in _walk(panel, meter)  # no consent: refused
    panel.consent.value = True
    _walk(panel, meter, confirm=(panel.submit,))
    _confirm(panel, meter)  # $12.00 shown, $12.00 spent
    assert panel.vocal_id, panel.errors
    # the song button opens the form with the voice, and every button after it buys nothing
    # until the person writes a prompt and presses Generate with its price on screen
    clicked = _walk(panel, meter)  # the song button opens the form ...
    clicked += _walk(panel, meter)  # ... whose buttons the second walk meets
    assert {"Start a song with this voice", "Clone voice", "Generate", "New take"} <= set(clicked)
    form = panel.song_form
    assert form is not None and form.vocal_id.value == panel.vocal_id and form.task_ids == []
    form.prompt.value = "a slow waltz in my voice"
    _walk(panel, meter, confirm=(form.submit,))
    _confirm(form, meter)
    assert form.request()["payload"]["vocal_id"] == panel.vocal_id


def test_the_cost_panel_the_stems_view_and_the_export_bar_buy_nothing(client: Client) -> None:
    meter = Meter(client)
    song = client.generations.create(
        operation="generate_song", model="v5", payload={"prompt": "x", "duration_seconds": 5}
    ).wait()
    for panel in (
        CostPanel(client),
        StemsView(client, {"mix": song.file_ids[0]}),
        ExportBar(),
        ProgressPanel(client),
    ):
        _walk(panel, meter)
    assert _walk(CostPanel(client), meter) == ["Refresh"]


@pytest.mark.parametrize("kind", ["preference", "abx", "mushra"])
def test_listening_panels_buy_nothing(client: Client, kind: str) -> None:
    meter = Meter(client)
    sr = 22050
    t = np.arange(sr) / sr

    def clip(f: float) -> tuple[np.ndarray, int]:
        return (0.1 * np.sin(2 * np.pi * f * t)).astype(np.float32)[None], sr

    clips = {"low": [clip(220)], "high": [clip(330)]}
    session = {
        "preference": lambda: listening.preference(clips, seed=1),
        "abx": lambda: listening.abx(clips, seed=1),
        "mushra": lambda: listening.mushra({**clips, "mid": [clip(275)]}, reference="high", seed=1),
    }[kind]()
    panel = listening_panel(session)
    clicked = _walk(panel, meter)
    assert any(name.startswith("play") for name in clicked)
