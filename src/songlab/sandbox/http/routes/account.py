"""Account-level routes: balance, tool listing, and the unauthenticated health check."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response

from songlab.sandbox.http.routes._common import account, json_response
from songlab.sandbox.service import Sandbox
from songlab.sandbox.storage import billing


def router(svc: Sandbox) -> APIRouter:
    r = APIRouter()

    @r.get("/health")
    async def health() -> Response:
        return json_response({"status": "ok"})

    @r.get("/v1/account/balance")
    async def balance(request: Request) -> Response:
        account_id = account(svc, request)
        return json_response(billing.balance(svc.store, account_id, svc.clock.now()))

    @r.get("/v1/tools")
    async def tools(request: Request) -> Response:
        account(svc, request)
        return json_response({"data": svc.catalog.listing()})

    return r
