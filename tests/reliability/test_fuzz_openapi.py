"""Fuzzing: schemathesis over every operation of the sandbox's ``/openapi.json``, as served.

The sandbox declares its own request bodies, query and header parameters,
security and answers (``songlab.sandbox.http.openapi``); the document is fuzzed as
it is, with no overlay. schemathesis generates positive and negative requests
for every operation, derandomized and bounded, against a sandbox of this
module's own (the admin routes change faults, the clock and tool switches, so
they do not run on the shared session sandbox, and they run last). Vendor
routes get the bearer key of an account with a zero balance, so requests that
pass validation stop at 402 and no work is started; ``/_sandbox`` routes get
the admin header. Nothing may answer 5xx except the documented case: a
``payload_json`` sent as a raw JSON object to ``POST /v1/generations`` (500).
Every refusal must be a JSON error body, and every answer's status must be one
the document declares for its operation.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.errors import Unsatisfiable

# per operation and mode: 8 requests per operation. This in-process run checks what
# schemathesis's CLI (tests/external, with its coverage phase's boundary cases) does not: every
# refusal is a JSON error body. Side by side (load 1.9-2.1): 8 per mode, 753 requests in 32 s;
# 4 per mode, 377 requests in 17 s, every operation still fuzzed both ways. Given up: half the
# random draws per operation (SONGLAB_FUZZ_EXAMPLES=8 runs the deeper search).
MAX_EXAMPLES = int(os.environ.get("SONGLAB_FUZZ_EXAMPLES", "4"))
MODES = (schemathesis.GenerationMode.POSITIVE, schemathesis.GenerationMode.NEGATIVE)
ADMIN_TOKEN = "fuzz-admin-token"


def _documented_500(case: Any) -> bool:
    body = case.body if isinstance(case.body, dict) else None
    return (
        case.method.upper() == "POST"
        and case.path == "/v1/generations"
        and body is not None
        and isinstance(body.get("payload_json"), dict | list)
    )


@pytest.fixture(scope="module")
def fuzz_target() -> Iterator[dict[str, Any]]:
    from songlab.sandbox.http.server import serve_in_thread

    with serve_in_thread(db=":memory:", speed=500.0, admin_token=ADMIN_TOKEN) as srv:
        with httpx.Client(
            base_url=srv.base_url, timeout=30, headers={"X-Sandbox-Admin-Token": ADMIN_TOKEN}
        ) as admin:
            key = admin.post("/_sandbox/accounts", json={"balance_tokens": 0}).json()["api_key"]
            doc = admin.get("/openapi.json").json()
        yield {
            "schema": schemathesis.openapi.from_dict(doc),
            "key": key,
            "doc": doc,
            "base_url": srv.base_url,
        }


def _check(
    label: str, mode: str, case: Any, response: Any, declared: set[str], out: dict[str, Any]
) -> None:
    """Record one answer; a 5xx (but the documented one), an undeclared status or a
    non-JSON refusal is a failure."""
    status = response.status_code
    out["counts"][label][status] = out["counts"][label].get(status, 0) + 1
    if str(status) not in declared:
        out["undeclared"].append(f"{label} [{mode}] -> {status} (declared {sorted(declared)})")
    if status >= 500:
        if status == 500 and _documented_500(case):
            out["documented_500s"] += 1
        else:
            out["failures"].append(f"{label} [{mode}] -> {status}: {case.as_curl_command()[:400]}")
        return
    if status >= 400:
        ctype = response.headers.get("content-type", "")
        ctype = ctype[0] if isinstance(ctype, list) else ctype
        if "json" not in ctype:
            out["failures"].append(f"{label} -> {status} {ctype}: {response.content[:100]!r}")
            return
        body = json.loads(response.content)
        if not (isinstance(body, dict) and isinstance(body.get("error"), str)):
            out["failures"].append(f"{label} -> {status} without an error body")


def _fuzz(
    op: Any, mode: Any, target: dict[str, Any], session: requests.Session, out: dict[str, Any]
) -> None:
    label = f"{op.method.upper()} {op.path}"
    out["counts"].setdefault(label, {})
    declared = set(op.definition.raw["responses"])
    auth = (
        {"X-Sandbox-Admin-Token": ADMIN_TOKEN}
        if op.path.startswith("/_sandbox")
        else {"Authorization": f"Bearer {target['key']}"}
    )

    @settings(
        max_examples=MAX_EXAMPLES,
        derandomize=True,
        database=None,
        deadline=None,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(case=op.as_strategy(generation_mode=mode))
    def run(case: Any) -> None:
        response = case.call(base_url=target["base_url"], session=session, headers=auth, timeout=30)
        _check(label, mode.value, case, response, declared, out)

    try:
        run()
    except Unsatisfiable:
        # nothing to break: an operation without parameters or body (GET /health)
        assert mode is schemathesis.GenerationMode.NEGATIVE, label


def test_every_operation_of_the_document_is_fuzzed(fuzz_target, capsys):
    schema = fuzz_target["schema"]
    out: dict[str, Any] = {"counts": {}, "failures": [], "undeclared": [], "documented_500s": 0}
    operations = [r.ok() for r in schema.get_all_operations()]
    expected = {(m.upper(), p) for p, ops in fuzz_target["doc"]["paths"].items() for m in ops}
    assert {(op.method.upper(), op.path) for op in operations} == expected  # every route
    # vendor routes first: the admin routes may switch faults, tools and the clock
    operations.sort(key=lambda op: op.path.startswith("/_sandbox"))
    start = time.perf_counter()
    with requests.Session() as session:  # one connection pool for the whole run
        for op in operations:
            for mode in MODES:
                _fuzz(op, mode, fuzz_target, session, out)
    seconds = time.perf_counter() - start
    total = sum(sum(c.values()) for c in out["counts"].values())
    statuses: dict[int, int] = {}
    for c in out["counts"].values():
        for status, n in c.items():
            statuses[status] = statuses.get(status, 0) + n
    with capsys.disabled():
        print(
            f"\nfuzz: {len(operations)} operations, {total} requests in {seconds:.1f} s, "
            f"documented 500s {out['documented_500s']}, failures {len(out['failures'])}, "
            f"undeclared statuses {len(out['undeclared'])}, "
            f"statuses {dict(sorted(statuses.items()))}"
        )
    assert out["failures"] == [], out["failures"][:10]
    assert out["undeclared"] == [], out["undeclared"][:10]
    assert all(out["counts"].values())  # every operation got requests


def test_documented_raw_object_payload_json_is_the_only_500(fuzz_target):
    """The one known 500, reproduced on purpose (and nothing billed)."""
    from songlab.sandbox.catalog import tool_id

    r = httpx.post(
        fuzz_target["base_url"] + "/v1/generations",
        headers={"Authorization": f"Bearer {fuzz_target['key']}"},
        json={"tool_id": tool_id("write_lyrics", "v5"), "payload_json": {"prompt": "x"}},
    )
    assert r.status_code == 500
    assert "500" in fuzz_target["doc"]["paths"]["/v1/generations"]["post"]["responses"]
