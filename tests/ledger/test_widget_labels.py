"""Widget panels label their creates with a default project (kept locally, never sent)."""

from __future__ import annotations

from typing import Any

import pytest

from songlab.client import _attribution as client_attr
from songlab.ledger import set_default_attribution
from songlab.widgets import GenerationForm
from tests.widgets.conftest import FakeBackend, FakeClient


@pytest.fixture
def seen() -> list[Any]:
    return []


@pytest.fixture
def fake(seen: list[Any], monkeypatch: pytest.MonkeyPatch) -> FakeClient:
    client = FakeClient(FakeBackend())
    create = client.backend.create

    def spy(*args: Any, **kwargs: Any) -> Any:
        seen.append(client_attr.active_labels(client))  # the labels a listener would record
        return create(*args, **kwargs)

    monkeypatch.setattr(client.backend, "create", spy)
    return client


def _send(form: GenerationForm, prompt: str) -> None:
    form.prompt.value = prompt
    form.submit.click()


def test_a_panel_labels_its_creates(fake: FakeClient, seen: list[Any]) -> None:
    form = GenerationForm(fake)
    _send(form, "one")
    assert (seen[0].project, seen[0].tags) == ("widgets", ("widget:GenerationForm",))
    form.project = "jingles"
    _send(form, "two")
    assert seen[1].project == "jingles"
    assert client_attr.active_labels(fake).project is None  # the scope ended with the create


def test_a_notebook_default_wins_over_the_panel_default(fake: FakeClient, seen: list[Any]) -> None:
    set_default_attribution(fake, project="03_cost_report", tags=["nb"])
    try:
        _send(GenerationForm(fake), "one")
    finally:
        set_default_attribution(fake)
    assert (seen[0].project, seen[0].tags) == ("03_cost_report", ("nb", "widget:GenerationForm"))
