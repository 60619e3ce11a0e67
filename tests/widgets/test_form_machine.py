"""The generation form as a state machine: random sequences of a person's edits, clicks,
double clicks, service refusals and transient failures, driven through the widgets (on the
scripted client of ``conftest.py``), with the form's promises checked after every step:

- nothing is created that the screen did not show: the create sent is exactly the request
  the form showed, from an enabled *Generate*, with that request's price on screen;
- no enabled button would be refused: an enabled *Generate* sends exactly one create, and
  never for a request the service already refused as it stands or that was already made;
  an enabled *New take* moves to a take not made yet, and a second click does not skip one;
- the status line shows the last action only: after an edit, no older error stays.
"""

from __future__ import annotations

import hypothesis.strategies as st
import pytest
from hypothesis import HealthCheck, settings
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

import songlab.pricing as pricing
from songlab.client import DependencyUnavailable, InvalidGenerationInput
from songlab.widgets import _gate
from songlab.widgets.form import GenerationForm
from tests.widgets.conftest import FakeBackend, FakeClient

ERROR_COLOR = "#b42318"  # the status line's error tone
BAD_VOICE = "voice-bad"  # the scripted service refuses any request naming it (422)


def status_of(panel: object) -> str:
    line = getattr(panel, "status_line", None) or panel.sink.line  # type: ignore[attr-defined]
    return str(line.value)


class FormMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        refusal = InvalidGenerationInput(
            f"payload.vocal_id: no saved voice {BAD_VOICE!r}", status_code=422
        )
        self.fake = FakeClient(FakeBackend(refusals={BAD_VOICE: refusal}))
        self.form = GenerationForm(self.fake)
        self.refused: set[str] = set()  # requests (with their take) the service refused
        self.made: set[str] = set()  # requests (with their take) the service accepted

    # -- what the screen shows -------------------------------------------------------------

    def submission(self) -> str:
        return repr((sorted(self.form.request().items(), key=str), self.form.take_label.value))

    def price_of_request(self) -> str | None:
        f = self.form
        try:
            amount = pricing.price(f.operation.value, f.model.value, f.license.value)
        except pricing.PricingError:
            return None
        return _gate.format_price(amount)

    # -- a person's edits ------------------------------------------------------------------

    def _edit(self, widget: object, value: object) -> None:
        """Set a field as a person types it; an edit that changes nothing is no action."""
        if widget.value == value:  # type: ignore[attr-defined]
            return
        widget.value = value  # type: ignore[attr-defined]
        # the last action is this edit: no older error stays on screen
        assert ERROR_COLOR not in status_of(self.form), status_of(self.form)

    @rule(text=st.sampled_from(["", "  ", "rain on a tin roof", "city pop at dusk"]))
    def type_prompt(self, text: str) -> None:
        self._edit(self.form.prompt, text)

    @rule(text=st.sampled_from(["", "la la la", "one more verse"]))
    def type_lyrics(self, text: str) -> None:
        self._edit(self.form.lyrics, text)

    @rule(data=st.data())
    def choose_operation(self, data: st.DataObject) -> None:
        self._edit(self.form.operation, data.draw(st.sampled_from(self.form.operation.options)))

    @rule(data=st.data())
    def choose_model(self, data: st.DataObject) -> None:
        if self.form.model.options:
            self._edit(self.form.model, data.draw(st.sampled_from(self.form.model.options)))

    @rule(tier=st.integers(1, 5))
    def choose_tier(self, tier: int) -> None:
        self._edit(self.form.license, tier)

    @rule(seconds=st.sampled_from([5.0, 30.0, 2.0, 500.0]))
    def type_duration(self, seconds: float) -> None:
        self._edit(self.form.duration, seconds)

    @rule(voice=st.sampled_from(["", "voice-1", BAD_VOICE]))
    def type_voice(self, voice: str) -> None:
        self._edit(self.form.vocal_id, voice)

    # -- the service -------------------------------------------------------------------------

    @rule()
    def the_next_create_meets_a_busy_service(self) -> None:
        self.fake.backend.fail_creates.append(
            DependencyUnavailable("try later", status_code=503, retryable=True)
        )

    # -- clicks ------------------------------------------------------------------------------

    def _generate_once(self) -> None:
        f, backend = self.form, self.fake.backend
        enabled, shown = not f.submit.disabled, f.price_label.value
        request, submission, price = f.request(), self.submission(), self.price_of_request()
        transient = bool(backend.fail_creates)
        before = len(backend.creates)
        f.submit.click()
        sent = backend.creates[before:]
        if not enabled:
            assert sent == [], "a disabled Generate sent a create"
            return
        # no enabled button would be refused: one create, never a refused or made request
        assert len(sent) == 1, "an enabled Generate sent nothing"
        assert submission not in self.refused, "Generate was enabled for a refused request"
        assert submission not in self.made, "Generate was enabled for a request already made"
        # nothing spends without its price shown for exactly that request
        (create,) = sent
        assert {k: create[k] for k in ("tool_id", "payload", "license")} == request
        assert price is not None and f"Price: {price}" in shown, (price, shown)
        if transient:
            return
        if BAD_VOICE in repr(request):
            self.refused.add(submission)
        else:
            self.made.add(submission)
            assert ERROR_COLOR not in status_of(f)  # a success leaves no older error

    @rule()
    def click_generate(self) -> None:
        self._generate_once()

    @rule()
    def double_click_generate(self) -> None:
        self._generate_once()
        self._generate_once()

    def _take(self) -> int:
        return int(self.form.take_label.value.split()[-1])

    @rule()
    def click_new_take(self) -> None:
        enabled, take = not self.form.new_take.disabled, self._take()
        self.form.new_take.click()
        if enabled:
            assert self._take() > take
            assert self.submission() not in self.made  # a take not made yet
        else:
            assert self._take() == take

    @rule()
    def double_click_new_take(self) -> None:
        take = self._take()
        self.form.new_take.click()
        first = self._take()
        self.form.new_take.click()
        assert self._take() == first, f"a double click moved take {take} to {self._take()}"

    @precondition(lambda self: self.form.task_ids)
    @rule()
    def let_the_takes_finish(self) -> None:
        self.form.progress.wait(10)

    # -- always ------------------------------------------------------------------------------

    @invariant()
    def generate_is_enabled_only_for_a_priced_new_request(self) -> None:
        f = self.form
        if f.submit.disabled:
            return
        price = self.price_of_request()
        assert price is not None and f"Price: {price}" in f.price_label.value
        assert self.submission() not in self.refused | self.made

    @invariant()
    def the_take_shown_is_the_take_sent(self) -> None:
        assert self.form.take_label.value == f"take {self.form.take()}"

    def teardown(self) -> None:
        self.form.progress.wait(10)


FormMachine.TestCase.settings = settings(
    max_examples=25,
    stateful_step_count=18,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


class TestFormMachine(FormMachine.TestCase):
    pytestmark = pytest.mark.slow  # a few seconds of widget sequences
