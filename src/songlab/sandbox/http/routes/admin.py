"""Admin surface under ``/_sandbox`` (header ``X-Sandbox-Admin-Token``; 401 without it).

Accounts and keys, top-ups, the billing ledger, faults, the sandbox clock and
tool switches. Not part of the vendor API: never in /v1/tools; in the OpenAPI
document under the ``sandbox-admin`` tag (declared in ``sandbox/http/openapi.py``).
"""

from __future__ import annotations

import hmac
from typing import Any

from fastapi import APIRouter, Request, Response

from songlab.sandbox.catalog import TOOLS, Catalog
from songlab.sandbox.errors import ApiError
from songlab.sandbox.http import bodies, jsonrules
from songlab.sandbox.http.routes._request_io import json_response
from songlab.sandbox.storage import billing
from songlab.sandbox.storage.accounts import Accounts
from songlab.sandbox.storage.clock import MAX_ADVANCE_SECONDS, Clock, iso
from songlab.sandbox.storage.db import Store
from songlab.sandbox.tasks import faults
from songlab.sandbox.tasks.faults import Faults

ADMIN_HEADER = "x-sandbox-admin-token"
# Token amounts of one admin call ($10 million): balances stay far inside SQLite's integers.
MAX_TOKENS = bodies.MAX_TOKENS


def _bad(field: str, rule: str) -> ApiError:
    return ApiError(422, {"error": "InvalidRequest", "message": f"{field}: {rule}"})


def _not_found(what: str) -> ApiError:
    return ApiError(404, {"error": "NOT_FOUND", "message": f"{what} not found"})


async def _body(request: Request) -> dict[str, Any]:
    raw = await request.body()
    if not raw:
        return {}
    try:
        body = jsonrules.loads(raw, "body")
    except ApiError as exc:  # the sandbox's JSON rules, in the admin error shape
        raise _bad("body", str(exc.body["message"]).split(": ", 1)[1]) from None
    if not isinstance(body, dict):
        raise _bad("body", "must be a JSON object")
    # JSON has one number type: 100.0 is the integer 100 (as the document's schemas say)
    return {
        k: int(v) if isinstance(v, float) and v.is_integer() and abs(v) < 2**63 else v
        for k, v in body.items()
    }


def _int(
    body: dict[str, Any], name: str, default: int | None = None, lo: int = 0, hi: int = MAX_TOKENS
) -> int:
    v = body.get(name)
    v = default if v is None else v  # null is absent, as for the other optional fields
    if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
        raise _bad(name, f"must be an integer {lo}-{hi}")
    return v


class _AdminRoutes:
    """The admin endpoints over the parts they move; each checks the admin token first."""

    def __init__(
        self,
        admin_token: str,
        accounts: Accounts,
        store: Store,
        sandbox_clock: Clock,
        injected: Faults,
        catalog: Catalog,
    ) -> None:
        self._token = admin_token.encode()
        self._accounts = accounts
        self._store = store
        self._clock = sandbox_clock
        self._faults = injected
        self._catalog = catalog

    def _admin(self, request: Request) -> None:
        given = request.headers.get(ADMIN_HEADER, "").encode()
        if not given or not hmac.compare_digest(given, self._token):
            raise ApiError(
                401,
                {
                    "error": "UNAUTHENTICATED",
                    "message": "X-Sandbox-Admin-Token is missing or wrong",
                },
            )

    def _known(self, account_id: str) -> None:
        if not self._accounts.account_exists(account_id):
            raise _not_found("account")

    async def create_account(self, request: Request) -> Response:
        self._admin(request)
        body = bodies.check(bodies.AdminAccount, await _body(request), _bad)
        name = body.get("name")
        account_id, key = self._accounts.create_account(
            name, _int(body, "balance_tokens", 100_000), _int(body, "extra_tokens", 0)
        )
        return json_response({"account_id": account_id, "api_key": key}, 201)

    async def add_key(self, account_id: str, request: Request) -> Response:
        self._admin(request)
        self._known(account_id)
        return json_response({"api_key": self._accounts.add_key(account_id)}, 201)

    async def revoke(self, api_key: str, request: Request) -> Response:
        self._admin(request)
        if not self._accounts.revoke_key(api_key):
            raise _not_found("active key")
        return Response(status_code=204)

    async def topup(self, account_id: str, request: Request) -> Response:
        self._admin(request)
        self._known(account_id)
        tokens = _int(
            bodies.check(bodies.AdminTopup, await _body(request), _bad), "tokens", None, lo=1
        )
        with self._store.tx():
            billing.top_up(self._store, account_id, tokens)
        return json_response(billing.balance(self._store, account_id, self._clock.now()))

    async def balance(self, account_id: str, request: Request) -> Response:
        self._admin(request)
        self._known(account_id)
        return json_response(billing.balance(self._store, account_id, self._clock.now()))

    async def ledger(self, account_id: str, request: Request) -> Response:
        self._admin(request)
        self._known(account_id)
        return json_response({"entries": billing.ledger(self._store, account_id)})

    async def put_faults(self, request: Request) -> Response:
        self._admin(request)
        try:
            settings = faults.parse(bodies.check(bodies.AdminFaults, await _body(request), _bad))
        except ValueError as exc:
            field, _, rule = str(exc).partition(": ")
            raise _bad(field, rule) from None
        self._faults.set(settings)
        return json_response(settings.as_dict())

    async def get_faults(self, request: Request) -> Response:
        self._admin(request)
        return json_response(self._faults.settings.as_dict())

    async def clear_faults(self, request: Request) -> Response:
        self._admin(request)
        self._faults.clear()
        return Response(status_code=204)

    async def clock(self, request: Request) -> Response:
        self._admin(request)
        body = bodies.check(bodies.AdminClock, await _body(request), _bad)
        v = body.get("advance_seconds")
        if (
            isinstance(v, bool)
            or not isinstance(v, int | float)
            or not 0 <= v <= MAX_ADVANCE_SECONDS
        ):
            raise _bad("advance_seconds", f"must be a number 0-{MAX_ADVANCE_SECONDS}")
        try:
            return json_response({"now": iso(self._clock.advance(float(v)))})
        except ValueError as exc:  # past the latest date the clock can show
            raise _bad("advance_seconds", str(exc).split(": ", 1)[-1]) from None

    async def get_clock(self, request: Request) -> Response:
        self._admin(request)
        return json_response({"now": iso(self._clock.now())})

    async def tool_switch(self, tool_id: str, request: Request) -> Response:
        self._admin(request)
        if tool_id not in TOOLS:
            raise _not_found("tool")
        body = bodies.check(bodies.AdminToolSwitch, await _body(request), _bad)
        active = body.get("active")
        if active is not None and not isinstance(active, bool):
            raise _bad("active", "must be a boolean")
        priced = body.get("priced_licenses")
        if priced is not None and (
            not isinstance(priced, list)
            or any(isinstance(x, bool) or not isinstance(x, int) or not 1 <= x <= 5 for x in priced)
        ):
            raise _bad("priced_licenses", "must be a list of license tiers 1-5")
        return json_response(self._catalog.set_state(tool_id, active, priced))


def router(
    admin_token: str,
    accounts: Accounts,
    store: Store,
    sandbox_clock: Clock,
    injected: Faults,
    catalog: Catalog,
) -> APIRouter:
    """The admin routes; they alone move the clock, the faults, balances and tool switches."""
    routes = _AdminRoutes(admin_token, accounts, store, sandbox_clock, injected, catalog)
    r = APIRouter(prefix="/_sandbox", tags=["sandbox-admin"])
    r.add_api_route("/accounts", routes.create_account, methods=["POST"], status_code=201)
    r.add_api_route(
        "/accounts/{account_id}/keys", routes.add_key, methods=["POST"], status_code=201
    )
    r.add_api_route("/keys/{api_key}", routes.revoke, methods=["DELETE"], status_code=204)
    r.add_api_route("/accounts/{account_id}/topup", routes.topup, methods=["POST"])
    r.add_api_route("/accounts/{account_id}/balance", routes.balance, methods=["GET"])
    r.add_api_route("/accounts/{account_id}/ledger", routes.ledger, methods=["GET"])
    r.add_api_route("/faults", routes.put_faults, methods=["PUT"])
    r.add_api_route("/faults", routes.get_faults, methods=["GET"])
    r.add_api_route("/faults", routes.clear_faults, methods=["DELETE"], status_code=204)
    r.add_api_route("/clock", routes.clock, methods=["POST"])
    r.add_api_route("/clock", routes.get_clock, methods=["GET"])
    r.add_api_route("/tools/{tool_id}", routes.tool_switch, methods=["PUT"])
    return r


__all__ = ["router"]
