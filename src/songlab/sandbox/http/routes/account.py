"""Account-level routes: balance, tool listing, and the unauthenticated health check."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response

from songlab.sandbox.catalog import Catalog
from songlab.sandbox.http.routes._request_io import account, json_response
from songlab.sandbox.ports import Authenticator, Now
from songlab.sandbox.storage import billing
from songlab.sandbox.storage.db import Store


def router(accounts: Authenticator, store: Store, clock: Now, catalog: Catalog) -> APIRouter:
    r = APIRouter()

    @r.get("/health")
    async def health() -> Response:
        return json_response({"status": "ok"})

    @r.get("/v1/account/balance")
    async def balance(request: Request) -> Response:
        account_id = account(accounts, request)
        return json_response(billing.balance(store, account_id, clock.now()))

    @r.get("/v1/tools")
    async def tools(request: Request) -> Response:
        account(accounts, request)
        return json_response({"data": catalog.listing()})

    return r
