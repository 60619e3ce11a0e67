"""Refuse, never replace: every name of the registry, mistyped, is refused by the client
before anything is priced or sent, naming the field, the allowed values and the nearest.

The cases are derived from the registry (``songlab.spec``): every operation, every model of
each, every payload field of each operation, every choice field's values, every license
tier, every Agent One tier, every workflow route's body fields. A mistyped name is each
name with one character dropped, doubled or changed (the typos a person makes); the
refusal must name it, list what is allowed and offer the name it came from. The service
behind the client is a transport that lists a tool per (operation, model) of the registry
and fails the test on any request but the listing.
"""

from __future__ import annotations

import json

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from songlab.client import Client, ValidationError
from songlab.client.choices import nearest
from songlab.spec import (
    AGENT_TIERS,
    LICENSE_BY_NAME,
    OPERATIONS,
    REGISTRY,
    WORKFLOWS,
)

LISTED = [
    {"id": f"t-{op}-{model}", "model": model, "operation": op, "name": op}
    for op in OPERATIONS
    for model in REGISTRY[op].models
]
# the operations a native create takes (voice clones go through /v1/voice-clones)
NATIVE = [op for op in OPERATIONS if op != "vocal_clone"]


class NothingSent(AssertionError):
    pass


def _service(request: httpx.Request) -> httpx.Response:
    if request.method == "GET" and request.url.path == "/v1/tools":
        return httpx.Response(200, json={"data": LISTED})
    raise NothingSent(f"{request.method} {request.url.path} was sent")


@pytest.fixture(scope="module")
def client() -> Client:
    c = Client(
        "sk-test-refusals", base_url="http://svc.test", transport=httpx.MockTransport(_service)
    )
    yield c
    c.close()


def typos(name: str) -> list[str]:
    """``name`` with one character dropped, doubled or replaced by a neighbour on the keyboard
    row (the usual slips), never another real name."""
    out = []
    for i in range(len(name)):
        out.append(name[:i] + name[i + 1 :])  # dropped
        out.append(name[:i] + name[i] + name[i:])  # doubled
        if name[i].isalpha():
            swapped = "q" if name[i] != "q" else "w"
            out.append(name[:i] + swapped + name[i + 1 :])
    return [t for t in dict.fromkeys(out) if t and t != name]


def _refused(call, field: str, allowed: list[str], typed: str) -> ValidationError:
    with pytest.raises(ValidationError) as caught:
        call()
    exc = caught.value
    assert exc.field == field, str(exc)
    for name in allowed:
        assert name in exc.rule, f"{name!r} not listed in: {exc}"
    assert repr(typed) in exc.rule or typed in exc.field, str(exc)
    near = nearest(typed, allowed)
    if near is not None:
        assert f"did you mean {near!r}?" in exc.rule
    return exc


def _required(op: str) -> dict[str, object]:
    """A payload of ``op`` with every required field filled with a valid value."""
    out: dict[str, object] = {}
    for f in REGISTRY[op].fields:
        if not f.required:
            continue
        if f.type == "file":
            out[f.name] = {"url": "file_id:abc"}
        elif f.type == "choice":
            out[f.name] = f.choices[0]
        elif f.type == "integer":
            out[f.name] = int(f.min or 0) + 1
        else:
            out[f.name] = "x"
    if op == "inpaint":
        out.update(start_ms=0, end_ms=1000)
    return out


@pytest.mark.parametrize(
    ("op", "field"),
    [(op, f.name) for op in NATIVE for f in REGISTRY[op].fields],
    ids=lambda v: str(v),
)
def test_a_mistyped_payload_key_is_refused_naming_the_fields_and_the_nearest(
    client: Client, op: str, field: str
) -> None:
    fields = [f.name for f in REGISTRY[op].fields] + [n for n, _ in REGISTRY[op].forbidden]
    model = REGISTRY[op].models[0]
    tried = [t for t in typos(field) if t not in fields]
    assert tried
    offered = 0
    for typed in tried:
        payload = {**_required(op), typed: "x"}
        exc = _refused(
            lambda p=payload: client.generations.create(tool_id=f"t-{op}-{model}", payload=p),
            f"payload.{typed}",
            fields,
            typed,
        )
        assert f"not a field of {op}" in exc.rule
        offered += f"did you mean {field!r}?" in exc.rule
    # most slips of a name offer that very name back (a slip of a two-letter name may be
    # nearer another field, or nothing)
    assert offered >= len(tried) // 2, (op, field, offered, len(tried))


def test_the_issues_example_names_the_unknown_key_not_a_missing_one(client: Client) -> None:
    with pytest.raises(ValidationError) as caught:
        client.generations.create(tool_id="t-generate_song-v5", payload={"promt": "rain"})
    assert caught.value.field == "payload.promt"
    assert "did you mean 'prompt'?" in str(caught.value)


@pytest.mark.parametrize("op", NATIVE)
def test_a_mistyped_operation_is_refused_by_estimate_and_by_create(client: Client, op: str) -> None:
    model = REGISTRY[op].models[0]
    for typed in typos(op)[:6]:
        if typed in OPERATIONS:
            continue
        exc = _refused(
            lambda t=typed: client.estimate(operation=t, model=model),
            "operation",
            list(OPERATIONS),
            typed,
        )
        assert f"did you mean {op!r}?" in exc.rule
        exc = _refused(
            lambda t=typed: client.generations.create(operation=t, model=model, payload={}),
            "operation",
            NATIVE,
            typed,
        )
        assert f"did you mean {op!r}?" in exc.rule


@pytest.mark.parametrize("op", NATIVE)
@pytest.mark.parametrize("typed", ["v8", "V9", "pro-max", ""])
def test_a_model_the_operation_has_not_is_refused_never_priced_as_another(
    client: Client, op: str, typed: str
) -> None:
    models = list(REGISTRY[op].models)
    _refused(lambda: client.estimate(operation=op, model=typed), "model", models, typed)
    _refused(
        lambda: client.generations.create(operation=op, model=typed, payload=_required(op)),
        "model",
        models,
        typed,
    )


def test_the_issues_model_example(client: Client) -> None:
    with pytest.raises(ValidationError) as caught:
        client.estimate(operation="generate_song", model="v8")
    assert caught.value.field == "model"  # not "operation"
    assert "one of v5, v6, v7" in caught.value.rule and "got 'v8'" in caught.value.rule


@pytest.mark.parametrize("tier", list(LICENSE_BY_NAME))
def test_a_mistyped_license_tier_is_refused_with_the_nearest(client: Client, tier: str) -> None:
    for typed in typos(tier)[:8]:
        exc = _refused(
            lambda t=typed: client.estimate(operation="generate_song", model="v5", license=t),
            "license",
            list(LICENSE_BY_NAME),
            typed,
        )
        assert f"did you mean {tier!r}?" in exc.rule
        _refused(
            lambda t=typed: client.generations.create(
                tool_id="t-generate_song-v5", payload={"prompt": "p"}, license=t
            ),
            "license",
            list(LICENSE_BY_NAME),
            typed,
        )


@pytest.mark.parametrize("tier", AGENT_TIERS)
def test_a_mistyped_agent_tier_is_refused(client: Client, tier: str) -> None:
    for typed in typos(tier)[:4]:
        _refused(lambda t=typed: client.estimate(tier=t), "tier", list(AGENT_TIERS), typed)


CHOICE_FIELDS = [
    (op, f.name, value)
    for op in NATIVE
    for f in REGISTRY[op].fields
    if f.type == "choice" and not f.late
    for value in f.choices
]


@pytest.mark.parametrize(("op", "field", "value"), CHOICE_FIELDS, ids=str)
def test_a_mistyped_choice_is_refused_with_its_choices(
    client: Client, op: str, field: str, value: str
) -> None:
    choices = [str(c) for c in REGISTRY[op].field(field).choices]
    model = REGISTRY[op].models[0]
    for typed in [t for t in typos(value) if t not in choices][:5]:
        _refused(
            lambda t=typed: client.generations.create(
                tool_id=f"t-{op}-{model}", payload={**_required(op), field: t}
            ),
            f"payload.{field}",
            choices,
            typed,
        )


@pytest.mark.parametrize(
    ("route", "field"),
    [(route, f.name) for route, r in WORKFLOWS.items() for f in r.fields if f.name != "license"],
    ids=str,
)
def test_a_mistyped_workflow_field_is_refused(client: Client, route: str, field: str) -> None:
    r = WORKFLOWS[route]
    fields = [f.name for f in r.fields if f.name != "license"]
    for typed in [t for t in typos(field) if t not in fields][:4]:
        _refused(
            lambda t=typed: client.workflows.create(route, **{t: "x"}),
            typed,
            fields,
            typed,
        )


@settings(max_examples=60, deadline=None)
@given(
    op=st.sampled_from(NATIVE),
    key=st.text(alphabet="abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=14),
)
def test_no_unknown_key_is_ever_sent(client: Client, op: str, key: str) -> None:
    fields = {f.name for f in REGISTRY[op].fields} | {n for n, _ in REGISTRY[op].forbidden}
    if key in fields or key == "seed" or key.startswith(("studio", "visualizer_")):
        return
    model = REGISTRY[op].models[0]
    with pytest.raises(ValidationError) as caught:
        client.generations.create(tool_id=f"t-{op}-{model}", payload={**_required(op), key: 1})
    assert caught.value.field == f"payload.{key}"
    json.dumps(str(caught.value))  # plain text


@pytest.mark.parametrize("op", [op for op in NATIVE if op != "agent"])
def test_a_seed_is_taken_by_every_operation_and_checked(client: Client, op: str) -> None:
    """The sandbox renders every task from its payload's seed (07 seeds its extensions):
    a seed is no unknown key, and it is checked as the song operations' seed is."""
    model = REGISTRY[op].models[0]
    with pytest.raises(NothingSent):  # checked, accepted, sent
        client.generations.create(tool_id=f"t-{op}-{model}", payload={**_required(op), "seed": 9})
    with pytest.raises(ValidationError) as caught:
        client.generations.create(tool_id=f"t-{op}-{model}", payload={**_required(op), "seed": -1})
    assert caught.value.field == "payload.seed"
