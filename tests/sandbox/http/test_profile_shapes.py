"""The vendor surface in each profile: spec answers carry exactly the spec's fields, noisy
answers carry unknown fields on every object and event, default answers stay generous."""

from __future__ import annotations

import json
from typing import Any

import pytest

from songlab.sandbox.http.profiles import own_route_paths
from tests._profiles import ProfileSandbox
from tests.sandbox._util import tone

# What the spec shows, written out here (not imported from the sandbox): a leak fails.
TASK = {"task_id", "status", "output"}
OUTPUT = {"text", "metadata_json", "assets"}
ASSET = {"file_id", "blob_hash", "url"}
NOISE = {"x_vendor_rev", "x_unknown_count", "x_unknown_null", "x_unknown_obj"}


def _objects(value: Any) -> list[dict]:
    """Every JSON object in ``value``, nested ones included."""
    if isinstance(value, dict):
        return [value, *(o for v in value.values() for o in _objects(v))]
    if isinstance(value, list):
        return [o for v in value for o in _objects(v)]
    return []


def _noisy_everywhere(value: Any) -> None:
    objs = [o for o in _objects(value) if o.keys() != {"note", "items"}]  # the noise's own
    assert objs
    for o in objs:
        assert NOISE <= set(o), o


def _spec_task(snap: dict) -> None:
    assert set(snap) <= TASK and {"task_id", "status"} <= set(snap), snap
    out = snap.get("output", {})
    assert set(out) <= OUTPUT, out
    for a in out.get("assets", []):
        assert set(a) == ASSET, a


def _sse(c: Any, task_id: str) -> list[tuple[int, str, dict]]:
    out, frame = [], {}
    with c.stream("GET", f"/v1/generations/{task_id}/stream") as r:
        assert r.status_code == 200
        for line in r.iter_lines():
            if not line:
                if frame:
                    out.append((int(frame["id"]), frame["event"], json.loads(frame["data"])))
                frame = {}
                continue
            key, _, value = line.partition(": ")
            frame[key] = value
    return out


def _song_tool(c: Any) -> str:
    tools = c.get("/v1/tools").json()["data"]
    return next(t["id"] for t in tools if (t["operation"], t["model"]) == ("generate_song", "v5"))


@pytest.fixture(scope="module")
def made(profile_sandbox: ProfileSandbox) -> dict[str, Any]:
    """One round of every vendor answer, recorded raw."""
    sb = profile_sandbox
    got: dict[str, Any] = {}
    with sb.http() as c, sb.admin() as admin:
        got["tools"] = c.get("/v1/tools").json()
        up = c.post("/v1/files", files={"file": ("ref.mp3", tone(3.0), "audio/mpeg")})
        assert up.status_code == 201
        got["upload"] = up.json()
        ref = got["upload"]["file_id"]
        r = c.post(
            "/v1/generations",
            json={
                "tool_id": _song_tool(c),
                "payload_json": json.dumps({"prompt": "a shape test", "duration_seconds": 5}),
            },
        )
        assert r.status_code == 201
        got["create"] = r.json()
        task_id = got["create"]["task_id"]
        got["events"] = _sse(c, task_id)
        got["task"] = c.get(f"/v1/generations/{task_id}").json()  # the raw-ASGI hot path
        assert got["task"]["status"] == "completed", got["task"]
        got["listing"] = c.get("/v1/generations", params={"limit": 5}).json()
        file_id = got["task"]["output"]["assets"][0]["file_id"]
        got["link"] = c.get(f"/v1/files/{file_id}/url").json()
        got["download"] = c.get(f"/v1/files/{file_id}/download").json()
        got["balance"] = c.get("/v1/account/balance").json()
        clone = c.post(
            "/v1/voice-clones",
            json={"reference_file_id": ref, "consent": True, "rights_attestation": "mine"},
        )
        assert clone.status_code == 201
        got["clone"] = clone.json()
        other = admin.post("/_sandbox/accounts", json={}).json()
        with sb.http(other["api_key"]) as foreign:
            got["403"] = foreign.get(f"/v1/generations/{task_id}")
        got["404"] = c.get("/v1/generations/no-such-task")
        got["401"] = c.get("/v1/tools", headers={"Authorization": "Bearer sk-wrong"})
        got["400"] = c.post("/v1/generations", json={"tool_id": "nope", "payload_json": "{}"})
        got["422"] = c.get("/v1/generations", params={"limit": 0})
        got["missing"] = c.post("/v5/extend/song", json={"lyrics": "x"})
        got["events_page"] = c.get(f"/v1/generations/{task_id}/events")
        got["events_page_head"] = c.head(f"/v1/generations/{task_id}/events")
        got["events_page_options"] = c.options(f"/v1/generations/{task_id}/events")
        # every route of the sandbox's own, asked with an empty body (the spec profile: 404)
        got["own_routes"] = {path: c.post(path, json={}) for path in own_route_paths()}
        got["openapi"] = c.get("/openapi.json").json()
        assert admin.put("/_sandbox/faults", json={"drop_stream_after": 1}).status_code == 200
        try:
            got["dropped"] = _sse(c, task_id)
        finally:
            admin.delete("/_sandbox/faults")
        got["admin_ledger"] = admin.get("/_sandbox/accounts/acct_demo/ledger").json()
    return got


def test_tasks_and_listings(profile_sandbox: ProfileSandbox, made: dict) -> None:
    task, listing = made["task"], made["listing"]
    if profile_sandbox.profile == "spec":
        _spec_task(task)
        assert set(task["output"]) == {"metadata_json", "assets"}
        assert set(listing) == {"data", "next_cursor"} and listing["data"]
        for item in listing["data"]:
            _spec_task(item)
    elif profile_sandbox.profile == "noisy":
        _noisy_everywhere(task)
        _noisy_everywhere(listing)
        _noisy_everywhere(json.loads(task["output"]["metadata_json"]))  # a tool's result too
        assert {"created_at", "cost_usd", "operation"} <= set(task)  # the default's, kept
    else:
        assert {"created_at", "cost_usd", "operation", "model", "license"} <= set(task)
        assert not NOISE & {k for o in _objects([task, listing]) for k in o}


def test_events(profile_sandbox: ProfileSandbox, made: dict) -> None:
    events, dropped = made["events"], made["dropped"]
    assert events[-1][1] == "terminal" and [s for s, _, _ in events] == sorted(
        {s for s, _, _ in events}
    )
    kinds = {k for _, k, _ in dropped}
    assert "error" in kinds
    if profile_sandbox.profile == "spec":
        for seq, _kind, data in events:
            assert data == {"seq": seq}
        err = next(d for s, k, d in dropped if k == "error")
        assert set(err) == {"seq", "cursor"} and err["cursor"] == dropped[0][0]
    elif profile_sandbox.profile == "noisy":
        for _, _, data in events + dropped:
            _noisy_everywhere(data)
    else:
        assert all({"seq", "kind", "task_id"} <= set(d) for _, _, d in events)
        assert any("progress" in d for _, _, d in events)


def test_tools_creates_files_balance(profile_sandbox: ProfileSandbox, made: dict) -> None:
    if profile_sandbox.profile == "spec":
        assert all(set(t) == {"id", "model", "operation"} for t in made["tools"]["data"])
        assert set(made["tools"]) == {"data"}
        assert set(made["create"]) == {"task_id", "status"}
        assert set(made["clone"]) == {"task_id", "status", "consent_id"}
        assert set(made["upload"]) == {"file_id"}
        assert set(made["link"]) == {"file_id", "url", "mime_type", "expires_at"}
        assert set(made["download"]) <= {"file_id", "url", "mime_type", "expires_at"}
        assert set(made["balance"]) == {
            "total_effective",
            "base_effective",
            "extra_tokens",
            "base_expires_at",
        }
    elif profile_sandbox.profile == "noisy":
        for name in ("tools", "create", "clone", "upload", "link", "download", "balance"):
            _noisy_everywhere(made[name])
        assert "name" in made["tools"]["data"][0] and "sha256" in made["upload"]
    else:
        assert {"id", "model", "operation", "name"} <= set(made["tools"]["data"][0])
        assert {"file_id", "mime_type", "size_bytes", "sha256"} <= set(made["upload"])


@pytest.mark.parametrize(
    "name,status,code",
    [
        ("403", 403, "FORBIDDEN"),
        ("404", 404, "NOT_FOUND"),
        ("401", 401, "INVALID_API_KEY"),
        ("400", 400, "UnknownTool"),
        ("422", 422, "InvalidGenerationInput"),
        ("missing", 400, "MISSING_FIELD"),
    ],
)
def test_errors(
    profile_sandbox: ProfileSandbox, made: dict, name: str, status: int, code: str
) -> None:
    r = made[name]
    assert r.status_code == status and r.json()["error"] == code
    body = r.json()
    if profile_sandbox.profile == "spec":
        pipeline = code in ("UnknownTool", "InvalidGenerationInput")
        assert set(body) == ({"error", "message", "retryable"} if pipeline else {"error"})
    elif profile_sandbox.profile == "noisy":
        _noisy_everywhere(body)


def test_no_sandbox_routes_on_the_vendor_surface_in_spec(
    profile_sandbox: ProfileSandbox, made: dict
) -> None:
    page, doc = made["events_page"], made["openapi"]
    events_path = "/v1/generations/{task_id}/events"
    if profile_sandbox.profile == "spec":
        assert (page.status_code, page.json()) == (404, {"error": "NOT_FOUND"})
        assert made["events_page_head"].status_code == 404
        assert made["events_page_options"].status_code == 404
        assert events_path not in doc["paths"]
        task_schema = doc["components"]["schemas"]["Task"]
        assert set(task_schema["properties"]) == TASK
        assert set(doc["components"]["schemas"]["Event"]["properties"]) == {"seq", "cursor"}
        for path, answer in made["own_routes"].items():
            assert (answer.status_code, answer.json()) == (404, {"error": "NOT_FOUND"}), path
            assert path not in doc["paths"]
    else:
        assert page.status_code == 200 and events_path in doc["paths"]
        for path, answer in made["own_routes"].items():  # served: the empty body is refused
            assert answer.status_code == 422 and path in doc["paths"], (path, answer.text)
    # the admin surface is the same in every profile
    entries = made["admin_ledger"]["entries"]
    assert entries and {"task_id", "amount_usd", "kind"} <= set(entries[0])
    assert not NOISE & set(entries[0])


@pytest.mark.parametrize(
    ("answer", "schema"),
    [
        ("task", "Task"),
        ("listing", "TaskList"),
        ("tools", "ToolList"),
        ("create", "TaskCreated"),
        ("clone", "TaskCreated"),
        ("upload", "StoredFile"),
        ("link", "FileLink"),
        ("download", "FileDownload"),
        ("balance", "Balance"),
    ],
)
def test_the_served_document_describes_the_answers(
    profile_sandbox: ProfileSandbox, made: dict, answer: str, schema: str
) -> None:
    """Each answer validates against its schema in the profile's own /openapi.json."""
    import jsonschema

    doc = made["openapi"]
    root = {"$ref": f"#/components/schemas/{schema}", "components": doc["components"]}
    jsonschema.Draft202012Validator(root).validate(made[answer])
    if profile_sandbox.profile == "spec" and schema in ("Task", "ToolList", "Balance"):
        declared = doc["components"]["schemas"][schema]["properties"]
        shown = made[answer]
        if schema == "ToolList":
            declared, shown = declared["data"]["items"]["properties"], shown["data"][0]
        assert set(shown) <= set(declared)


def test_the_served_document_describes_the_events(made: dict) -> None:
    import jsonschema

    doc = made["openapi"]
    validator = jsonschema.Draft202012Validator(
        {"$ref": "#/components/schemas/Event", "components": doc["components"]}
    )
    for _, _, data in made["events"] + made["dropped"]:
        validator.validate(data)
