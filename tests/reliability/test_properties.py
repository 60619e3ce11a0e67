"""Property tests (hypothesis) of the client's validators and payload encoding.

Besides each rule on its own, the client is checked against the sandbox's own
validators on the same input: the client must never refuse what the service
accepts, and for the fields it checks it must agree with the service.
Derandomized, so a run is repeatable.
"""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from songlab.client import ValidationError
from songlab.client._call import new_idempotency_key, path_id
from songlab.client._validate import idempotency_key, license_number, payload_for, payload_json
from songlab.sandbox import errors as sandbox_errors
from songlab.sandbox.http.routes.native import native_license
from songlab.sandbox.tasks import payloads as sandbox_payloads
from songlab.sandbox.tasks.creates import valid_key
from songlab.sandbox.tasks.validation import Resolver

PROPS = settings(max_examples=150, derandomize=True, database=None, deadline=None)
KEY_ALPHABET = "ABCXYZabcxyz0189_.:-"

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.text()
    | st.floats(allow_nan=False, allow_infinity=False)
)
json_values = st.recursive(
    json_scalars,
    lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(), c, max_size=4),
    max_leaves=12,
)
json_objects = st.dictionaries(st.text(), json_values, max_size=6)
anything = json_values | st.floats() | st.binary(max_size=8) | st.tuples(st.integers())


def _strict_loads(text: str) -> Any:
    def refuse(name: str) -> None:
        raise ValueError(f"non-standard JSON constant {name}")

    return json.loads(text, parse_constant=refuse)


def _server_accepts(operation: str, payload: Any) -> bool:
    """The sandbox's own validation of a payload without file inputs (no store needed)."""
    try:
        sandbox_payloads.validate(operation, payload, Resolver(None, "acct"))  # type: ignore[arg-type]
    except sandbox_errors.ApiError as exc:
        assert exc.status == 422 and exc.body["error"] == "InvalidGenerationInput"
        return False
    return True


def _client_accepts(operation: str, payload: Any) -> bool:
    try:
        payload_for(operation, payload)
    except ValidationError as exc:
        assert str(exc).startswith(("payload.", "tool_id")), str(exc)
        return False
    return True


# --- Idempotency-Key -------------------------------------------------------------------


@PROPS
@given(st.text(max_size=260) | st.text(alphabet=KEY_ALPHABET, max_size=260))
@example("key\n")  # "$" alone would let a trailing newline through
@example("x" * 200)
@example("x" * 201)
def test_idempotency_key_rule_matches_the_spec_and_the_service(key):
    spec_ok = 1 <= len(key) <= 200 and all(
        ch in KEY_ALPHABET or ch.isascii() and ch.isalnum() for ch in key
    )
    try:
        assert idempotency_key(key) == key
        client_ok = True
    except ValidationError as exc:
        assert str(exc).startswith("idempotency_key")
        client_ok = False
    assert client_ok == spec_ok
    assert (valid_key(key) is not None) == spec_ok  # the sandbox dedups exactly those


@PROPS
@given(st.integers(min_value=0, max_value=10))
def test_generated_idempotency_keys_are_always_valid(_):
    key = new_idempotency_key()
    assert idempotency_key(key) == key and valid_key(key) == key


# --- license -------------------------------------------------------------------------------


@PROPS
@given(st.integers() | st.booleans() | st.text(max_size=20) | st.none() | st.floats())
def test_native_license_agrees_with_the_service(value):
    try:
        sent = license_number(value)
    except ValidationError as exc:
        assert str(exc).startswith("license")
        sent = None
    if isinstance(value, int) and not isinstance(value, bool):
        try:
            native_license(value)
            server_ok = True
        except sandbox_errors.ApiError:
            server_ok = False
        assert (sent is not None) == server_ok
    if sent is not None:
        assert 0 <= sent <= 5 and native_license(sent) in range(1, 6)


# --- payload_json ------------------------------------------------------------------------


@PROPS
@given(json_objects)
def test_payload_json_round_trips_every_json_object(obj):
    text = payload_json(obj)
    assert isinstance(text, str)
    assert _strict_loads(text) == obj
    assert payload_json(text) == text  # JSON text of an object is sent as it is


@PROPS
@given(json_values.filter(lambda v: not isinstance(v, dict)))
def test_payload_json_refuses_what_is_not_an_object(value):
    with pytest.raises(ValidationError, match="^payload"):
        payload_json(json.dumps(value))
    with pytest.raises(ValidationError, match="^payload"):
        payload_json(value)


@PROPS
@given(
    st.dictionaries(
        st.text(max_size=5),
        st.sampled_from([math.nan, math.inf, -math.inf]),
        min_size=1,
        max_size=3,
    )
)
def test_payload_json_never_sends_non_standard_json(obj):
    """NaN and Infinity are not JSON: refused before sending, naming the payload."""
    with pytest.raises(ValidationError, match="^payload"):
        payload_json(obj)
    with pytest.raises(ValidationError, match="^payload"):
        payload_json(json.dumps(obj))  # the same as text: refused too


@PROPS
@given(
    st.dictionaries(
        st.text(max_size=5), st.binary(max_size=4) | st.sets(st.integers()), min_size=1, max_size=3
    )
)
def test_payload_json_refuses_unserialisable_values(obj):
    with pytest.raises(ValidationError, match="^payload"):
        payload_json(obj)


@PROPS
@given(st.text())
def test_path_ids_are_always_one_quoted_segment(value):
    if not value:
        with pytest.raises(ValidationError):
            path_id(value, "task_id")
        return
    quoted = path_id(value, "task_id")
    assert "/" not in quoted and "?" not in quoted and "#" not in quoted and ".." != quoted
    assert all(32 < ord(ch) < 127 for ch in quoted)


# --- client validation against the service's ---------------------------------------------

FIELD_VALUES = (
    st.none()
    | st.booleans()
    | st.integers(-10, 300)
    | st.floats()
    | st.text(max_size=6)
    | st.just("   ")
    | st.lists(st.integers(), max_size=2)
)
OPERATIONS = {
    "generate_music": ("prompt", "duration_seconds", "seed", "lyrics"),
    "generate_song": ("prompt", "duration_seconds", "lyrics", "seed"),
    "write_lyrics": ("prompt",),
    "sfx_gen": ("prompt", "duration_seconds"),
    "agent": ("prompt", "system_prompt", "max_steps", "max_budget", "workflow_build_only"),
}


@pytest.mark.parametrize("operation", sorted(OPERATIONS))
def test_client_never_refuses_what_the_service_accepts(operation):
    fields = OPERATIONS[operation]

    @PROPS
    @given(st.fixed_dictionaries({}, optional={f: FIELD_VALUES for f in fields}))
    def check(payload: dict[str, Any]) -> None:
        if _server_accepts(operation, payload):
            assert _client_accepts(operation, payload), payload

    check()


CHECKED = {  # operation -> fields the client validates like the service
    "generate_music": ("prompt", "duration_seconds", "lyrics"),
    "sfx_gen": ("prompt", "duration_seconds"),
    "agent": ("prompt", "system_prompt", "max_steps", "max_budget", "workflow_build_only"),
}
VALID_BASE = {
    "generate_music": {"prompt": "p"},
    "sfx_gen": {"prompt": "p"},
    "agent": {"prompt": "p"},
}


@pytest.mark.parametrize("operation", sorted(CHECKED))
def test_client_agrees_with_the_service_on_the_fields_it_checks(operation):
    @PROPS
    @given(st.sampled_from(CHECKED[operation]), FIELD_VALUES)
    def check(field: str, value: Any) -> None:
        payload = {**VALID_BASE[operation], field: value}
        assert _client_accepts(operation, payload) == _server_accepts(operation, payload), payload

    check()
