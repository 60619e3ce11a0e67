"""The served ``/openapi.json`` declares every route: bodies, parameters, security, answers."""

from __future__ import annotations

import httpx
import pytest
from fastapi import FastAPI, Request, Response
from fastapi.routing import APIRoute

from songlab.sandbox.http import bodies
from songlab.sandbox.http.openapi import ADMIN_TAG, complete, install
from songlab.sandbox.http.routes.dedicated import WORKFLOW_MODELS
from songlab.spec import WORKFLOW_ROUTES
from tests.sandbox._util import client

UNDOCUMENTED = {"/_signed/{token}", "/_storage/{path:path}"}  # storage locators, not the API
BODYLESS_POSTS = {"/_sandbox/accounts/{account_id}/keys"}


@pytest.fixture(scope="module")
def doc(sandbox) -> dict:
    r = httpx.get(sandbox.base_url + "/openapi.json")
    assert r.status_code == 200
    return r.json()


def _api_routes(routes) -> list[APIRoute]:
    """The app's routes, flattened (FastAPI >= 0.16x keeps included routers as branches)."""
    out: list[APIRoute] = []
    for r in routes:
        if isinstance(r, APIRoute):
            out.append(r)
        elif (sub := getattr(r, "original_router", None)) is not None:
            out += _api_routes(sub.routes)
    return out


def _routes(sandbox) -> set[tuple[str, str]]:
    app = sandbox.app.app  # the FastAPI app behind the hot path
    return {(m.lower(), r.path) for r in _api_routes(app.routes) for m in r.methods if m != "HEAD"}


def _ops(doc: dict):
    for path, ops in doc["paths"].items():
        for method, op in ops.items():
            yield method, path, op


def test_every_route_of_the_app_is_in_the_document(sandbox, doc):
    documented = {(m, p) for m, p, _ in _ops(doc)}
    routes = _routes(sandbox)
    assert documented == {(m, p) for m, p in routes if p not in UNDOCUMENTED}
    assert {p for _, p in routes} - {p for _, p in documented} == UNDOCUMENTED
    assert len(documented) >= 47


def test_every_body_taking_route_declares_its_body(doc):
    for method, path, op in _ops(doc):
        if method in ("post", "put") and path not in BODYLESS_POSTS:
            content = op.get("requestBody", {}).get("content", {})
            assert content, (method, path)
            for media in content.values():
                schema = media["schema"]
                assert schema.get("properties") or "$ref" in schema, (method, path)
        elif method in ("get", "delete"):
            assert "requestBody" not in op, (method, path)


def test_native_create_body_parameters_and_answers(doc):
    op = doc["paths"]["/v1/generations"]["post"]
    body = op["requestBody"]["content"]["application/json"]["schema"]
    assert set(body["required"]) == {"tool_id", "payload_json"}
    assert body["properties"]["payload_json"]["type"] == "string"
    assert body["properties"]["license"]["anyOf"][0]["maximum"] == 5
    assert body == bodies.schema_of(bodies.NativeCreate)[0]  # the validating model itself
    assert {p["name"] for p in op["parameters"]} == {"Idempotency-Key"}
    assert {"201", "400", "401", "402", "422", "429", "500", "503"} == set(op["responses"])
    # the documented raw-object 500, answered as JSON
    assert op["responses"]["500"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/InternalError"
    }
    assert "InsufficientFunds" in op["responses"]["402"]["description"]


def test_query_path_and_upload_parameters(doc):
    listing = {p["name"]: p for p in doc["paths"]["/v1/generations"]["get"]["parameters"]}
    assert listing["limit"]["schema"] | {} == {
        "type": "integer",
        "minimum": 1,
        "maximum": 100,
        "default": 20,
    }
    assert listing["cursor"]["in"] == "query"
    stream = {
        p["name"]: p for p in doc["paths"]["/v1/generations/{task_id}/stream"]["get"]["parameters"]
    }
    assert stream["task_id"]["in"] == "path" and stream["after"]["in"] == "query"
    upload = doc["paths"]["/v1/files"]["post"]["requestBody"]["content"]
    assert upload["multipart/form-data"]["schema"]["properties"]["file"]["format"] == "binary"
    assert list(upload) == ["multipart/form-data"]  # one body: generators handle it
    assert "source_url" in doc["paths"]["/v1/files"]["post"]["description"]
    assert stream["after"]["schema"]["maximum"] == 2**63 - 1
    assert listing["cursor"]["schema"]["pattern"] == "^[0-9]{1,18}$"
    link = doc["paths"]["/v1/files/{file_id}/url"]["get"]
    assert link["parameters"][0]["in"] == "path" and "404" in link["responses"]


@pytest.mark.parametrize("route", WORKFLOW_ROUTES)
def test_workflow_body_follows_the_route_table(doc, route):
    schema = doc["paths"][f"/v1/{route}"]["post"]["requestBody"]["content"]["application/json"][
        "schema"
    ]
    assert schema["properties"]["license"]["anyOf"][0]["enum"][0] == "royalty_free"
    assert schema == bodies.schema_of(WORKFLOW_MODELS[route])[0]
    for field in schema["required"]:
        if field.endswith("_file_id"):
            assert schema["properties"][field]["format"] == "uuid"
    assert any(f.endswith("_file_id") for f in schema["required"]) or route == "trending-songs"


def test_security_schemes_and_admin_tag(doc):
    schemes = doc["components"]["securitySchemes"]
    assert schemes["ApiKey"] == {**schemes["ApiKey"], "type": "http", "scheme": "bearer"}
    assert schemes["SandboxAdmin"]["in"] == "header"
    for method, path, op in _ops(doc):
        if path == "/health":
            assert op["security"] == []
        elif path.startswith("/_sandbox"):
            assert op["security"] == [{"SandboxAdmin": []}] and op["tags"] == [ADMIN_TAG]
            assert "401" in op["responses"]
        else:
            assert op["security"] == [{"ApiKey": []}] and ADMIN_TAG not in op["tags"]
            assert "401" in op["responses"], (method, path)


def test_admin_routes_stay_out_of_the_tool_listing(sandbox, doc):
    with client(sandbox, "sk-sandbox-demo") as c:
        tools = c.get("/v1/tools").json()["data"]
    assert not [t for t in tools if "sandbox" in t["id"] or "_sandbox" in t["name"]]
    assert any(p.startswith("/_sandbox") for p in doc["paths"])


def test_declared_required_fields_are_refused_when_missing(sandbox, doc, new_account):
    """The document is honest: an empty body on a create is refused with a declared answer."""
    acct = new_account()
    with client(sandbox, acct.api_key) as c:
        for method, path, op in _ops(doc):
            if method != "post" or "Idempotency-Key" not in {p["name"] for p in op["parameters"]}:
                continue
            r = c.post(path, json={})
            assert str(r.status_code) in op["responses"], (path, r.status_code)
            assert r.status_code in (400, 422), (path, r.text)
            required = op["requestBody"]["content"]["application/json"]["schema"].get(
                "required", []
            )
            if r.status_code == 422:
                assert r.json()["message"].split(":")[0] in required, (path, r.text)


def test_an_undeclared_route_fails_the_document():
    app = FastAPI()

    @app.get("/v1/new-thing")
    async def new_thing(request: Request) -> Response:
        return Response()

    install(app)
    with pytest.raises(KeyError, match="new-thing"):
        app.openapi()
    with pytest.raises(KeyError):
        complete({"paths": {"/x": {"get": {}}}})


def test_answers_are_typed(doc):
    schemas = doc["components"]["schemas"]
    assets = schemas["Task"]["properties"]["output"]["properties"]["assets"]
    assert assets["items"] == {"$ref": "#/components/schemas/Asset"}
    assert {"file_id", "blob_hash", "url"} <= set(schemas["Asset"]["required"])
    assert "0.00000000" in schemas["Task"]["properties"]["cost_usd"]["description"]
    sse = doc["paths"]["/v1/generations/{task_id}/stream"]["get"]["responses"]["200"]
    data = sse["content"]["text/event-stream"]["schema"]["properties"]["data"]
    assert data["contentSchema"] == {"$ref": "#/components/schemas/Event"}
    page = doc["paths"]["/v1/generations/{task_id}/events"]["get"]["responses"]["200"]
    assert page["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/EventPage"
    }
    assert "METHOD_NOT_ALLOWED" in schemas["Error"]["properties"]["error"]["enum"]
    answers = doc["components"]["responses"]
    assert "Allow" in answers["MethodNotAllowed"]["headers"]
    assert answers["UnknownRoute"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/Error"
    }


def test_event_page_answers_at_once(acct):
    from tests.sandbox._util import run

    snap = run(acct, "write_lyrics", "v5", {"prompt": "rain"})
    page = acct.get(f"/v1/generations/{snap['task_id']}/events").json()
    assert page["done"] is True and page["data"][-1]["kind"] == "terminal"
    assert [e["seq"] for e in page["data"]] == sorted(e["seq"] for e in page["data"])
    again = acct.get(
        f"/v1/generations/{snap['task_id']}/events", params={"after": page["next_after"]}
    ).json()
    assert again == {"data": [], "next_after": page["next_after"], "done": True}
