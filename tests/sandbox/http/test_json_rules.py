"""JSON depth and number rules are the sandbox's own: the same answer on every Python.

The depth is measured before the parser runs and without recursion, so these
tests never touch the interpreter's recursion limit: 3.11 and 3.12 would raise
RecursionError near depth 1000 and 3.13 would parse 5,000 levels, but the sandbox
answers 422 naming the field on all of them (make test runs this module on each).
"""

from __future__ import annotations

import json
import threading

import pytest

from songlab.sandbox.errors import ApiError
from songlab.sandbox.http import jsonrules
from tests.sandbox._util import assert_invalid, tid

DEPTH = jsonrules.MAX_DEPTH


def nested(depth: int, *, kind: str = "array") -> str:
    if kind == "array":
        return "[" * depth + "]" * depth
    return '{"a":' * depth + "1" + "}" * depth


@pytest.mark.parametrize("kind", ["array", "object"])
def test_depth_at_the_limit_parses_and_one_more_is_refused(kind):
    assert jsonrules.loads(nested(DEPTH, kind=kind), "f") is not None
    with pytest.raises(ApiError) as info:
        jsonrules.loads(nested(DEPTH + 1, kind=kind), "f")
    assert info.value.status == 422
    assert (
        info.value.body["message"] == f"f: nests deeper than {DEPTH} levels of objects and arrays"
    )


@pytest.mark.parametrize(
    "text",
    [
        '["[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["]',  # brackets inside a string
        '{"a": "\\"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["}',  # after an escaped quote
        "[" + ",".join(["[[1]]"] * 5000) + "]",  # wide, not deep
    ],
    ids=["in-string", "escaped-quote", "wide"],
)
def test_what_only_looks_deep_is_not(text):
    assert not jsonrules.depth_exceeds(text)
    assert jsonrules.loads(text, "f") == json.loads(text)


def test_numbers_the_sandbox_refuses_or_reads_as_floats():
    for text, rule in [
        ('{"x": NaN}', "holds NaN"),
        ("[-Infinity]", "holds -Infinity"),
        ("[1e999]", "too large for a float"),
    ]:
        with pytest.raises(ApiError, match=rule):
            jsonrules.loads(text, "f")
    assert jsonrules.loads("[" + "9" * 20 + "]", "f") == [int("9" * 20)]
    assert isinstance(jsonrules.loads("[" + "9" * 21 + "]", "f")[0], float)
    assert jsonrules.loads("[" + "9" * 5000 + "]", "f") == [float("inf")]  # past int_max_str_digits


@pytest.mark.parametrize("depth", [DEPTH + 1, 5_000])
def test_a_deep_payload_is_refused_with_422_and_nothing_billed(acct, depth):
    """The 5,000-deep payload of the issue: refused on every Python, by the sandbox's rule."""
    before = acct.get("/v1/account/balance").json()
    for kind in ("array", "object"):
        r = acct.post(
            "/v1/generations",
            json={"tool_id": tid("write_lyrics", "v5"), "payload_json": nested(depth, kind=kind)},
        )
        assert_invalid(r, "payload_json")
        assert f"nests deeper than {DEPTH} levels" in r.json()["message"]
        r = acct.post(
            "/v1/trending-songs",
            content=nested(depth, kind=kind),
            headers={"content-type": "application/json"},
        )
        assert_invalid(r, "body")
    assert acct.get("/v1/account/balance").json() == before
    assert acct.get("/v1/generations").json()["data"] == []


def test_a_payload_at_the_limit_reaches_the_payload_rules(acct):
    """Depth itself is no error: a deep but well-formed payload meets the tool's own rules."""
    payload = {"prompt": "rain", "extra": json.loads(nested(DEPTH - 1))}
    r = acct.post(
        "/v1/generations",
        json={"tool_id": tid("write_lyrics", "v5"), "payload_json": json.dumps(payload)},
    )
    assert r.status_code == 201, r.text


def test_the_parser_never_sees_a_document_past_the_limit(monkeypatch):
    """The refusal comes before json.loads, so no interpreter's parser decides it."""
    seen: list[str] = []
    here = threading.get_ident()
    real = jsonrules.json.loads

    def spy(text, **kw):
        # Sandboxes of earlier tests may still be parsing on their own threads:
        # only this thread's calls are the ones under test.
        if threading.get_ident() == here:
            seen.append(text)
        return real(text, **kw)

    monkeypatch.setattr(jsonrules.json, "loads", spy)
    with pytest.raises(ApiError) as info:
        jsonrules.loads(nested(5_000, kind="object"), "payload_json")
    assert seen == [] and info.value.status == 422
    jsonrules.loads(nested(DEPTH), "payload_json")
    assert seen == [nested(DEPTH)]
