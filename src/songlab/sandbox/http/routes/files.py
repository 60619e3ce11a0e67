"""Files: upload (multipart or source_url), link and download routes, signed URLs, locators."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request, Response
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import UploadFile
from starlette.exceptions import HTTPException
from starlette.types import Message

import songlab.sandbox.errors as errors
from songlab.sandbox.http import bodies, jsonrules
from songlab.sandbox.http.routes._request_io import account, json_response
from songlab.sandbox.ports import Authenticator, Links, Now
from songlab.sandbox.storage import file_store as storage
from songlab.sandbox.storage.db import Store
from songlab.sandbox.storage.file_store import UPLOAD_MAX_BYTES, SignatureError
from songlab.sandbox.tasks import validation
from songlab.sandbox.tasks.creates import valid_key
from songlab.spec import LIMITS

MULTIPART_SLACK = 64 * 1024  # room for multipart headers and boundaries
FILENAME_MAX = int(LIMITS["upload_filename_chars"])
TOO_LARGE = f"must be at most {UPLOAD_MAX_BYTES} bytes (64 MiB)"


class _TooLarge(Exception):
    pass


async def _probe(data: bytes, declared: str | None) -> tuple[str, dict[str, Any]]:
    """The upload's probe verdict (decoded once, in a worker thread) and its media type."""
    verdict = await run_in_threadpool(validation.probe_verdict, data)
    if "info" in verdict:
        return verdict["info"]["mime_type"], verdict
    return declared or "application/octet-stream", verdict


def router(accounts: Authenticator, store: Store, clock: Now, links: Links) -> APIRouter:
    r = APIRouter()

    def _owned_or_404(account_id: str, file_id: str) -> dict[str, Any]:
        meta = storage.owned(store, account_id, file_id)
        if meta is None:
            raise errors.RESOURCE_NOT_FOUND
        return meta

    def _stored(
        account_id: str,
        data: bytes,
        mime: str,
        name: str | None,
        verdict: dict[str, Any] | None,
        key: str | None,
    ) -> Response:
        """Store an upload; with a valid Idempotency-Key, a repeat answers the original
        (the same status and body, nothing stored again), as a create's repeat does."""
        with store.tx():
            if key is not None and (hit := storage.upload_answer(store, account_id, key)):
                return json_response(hit[1], hit[0])
            meta = storage.put(
                store,
                account_id=account_id,
                data=data,
                mime_type=mime,
                origin="upload",
                now=clock.now(),
                name=name,
                probe=verdict,
            )
            body = {
                "file_id": meta["id"],
                "mime_type": mime,
                "size_bytes": meta["size_bytes"],
                "sha256": meta["sha256"],
            }
            if key is not None:
                storage.keep_upload_answer(store, account_id, key, 201, body, clock.now())
        return json_response(body, 201)

    @r.post("/v1/files", status_code=201)
    async def upload(request: Request) -> Response:
        account_id = account(accounts, request)
        key = valid_key(request.headers.get("idempotency-key"))
        if key is not None and (hit := storage.upload_answer(store, account_id, key)):
            return json_response(hit[1], hit[0])  # a repeat: its body is not read again
        ctype = request.headers.get("content-type", "")
        length = request.headers.get("content-length")
        if ctype.startswith("multipart/form-data"):
            if length and length.isdigit() and int(length) > UPLOAD_MAX_BYTES + MULTIPART_SLACK:
                raise errors.invalid("file", TOO_LARGE)
            return await _multipart(request, account_id, key)
        raw = await request.body()
        if not raw:
            raise errors.invalid(
                "source_url", "is required (or send multipart/form-data with a file part)"
            )
        body = jsonrules.loads(raw, "body")
        if not isinstance(body, dict) or "source_url" not in body:
            raise errors.invalid(
                "source_url", "is required (or send multipart/form-data with a file part)"
            )
        url = bodies.check(bodies.SourceUrl, body)["source_url"]
        token = storage.token_of_url(url, links.netlocs()) if isinstance(url, str) else None
        if token is None:
            raise errors.invalid(
                "source_url",
                "must be one of this sandbox's signed file URLs; other URLs are never fetched",
            )
        try:
            file_id = links.verify(token)
        except SignatureError as exc:
            raise errors.invalid("source_url", f"signed URL is {exc}") from None
        meta = storage.meta(store, file_id)
        if meta is None:
            raise errors.invalid("source_url", "signed URL names no file")
        return await run_in_threadpool(
            _stored,
            account_id,
            storage.data(store, file_id),
            meta["mime_type"],
            meta["name"],
            storage.probe_of(store, file_id),
            key,
        )

    async def _multipart(request: Request, account_id: str, key: str | None) -> Response:
        seen = 0
        receive = request.receive

        async def counting() -> Message:
            nonlocal seen
            msg = await receive()
            seen += len(msg.get("body", b""))
            if seen > UPLOAD_MAX_BYTES + MULTIPART_SLACK:
                raise _TooLarge
            return msg

        limited = Request(request.scope, counting)
        try:
            form = await limited.form(max_part_size=1024 * 1024)
        except _TooLarge:
            raise errors.invalid("file", TOO_LARGE) from None
        except HTTPException as exc:  # malformed multipart
            raise errors.invalid(
                "file", f"the multipart body is malformed ({exc.detail})"
            ) from None
        try:
            parts = [v for v in form.values() if isinstance(v, UploadFile)]
            if not parts:
                raise errors.invalid("file", "is required: a multipart file part")
            named = form.get("file")
            part = named if isinstance(named, UploadFile) else parts[0]
            if part.filename is not None and len(part.filename) > FILENAME_MAX:
                raise errors.invalid(
                    "filename",
                    f"must be at most {FILENAME_MAX} characters, got {len(part.filename)}",
                )
            data = await part.read(UPLOAD_MAX_BYTES + 1)
            if len(data) > UPLOAD_MAX_BYTES:
                raise errors.invalid("file", TOO_LARGE)
            mime, verdict = await _probe(data, part.content_type)
            # hashing and writing tens of MiB: a worker thread, not the event loop
            return await run_in_threadpool(
                _stored, account_id, data, mime, part.filename, verdict, key
            )
        finally:
            await form.close()

    @r.get("/v1/files/{file_id}/url")
    async def file_link(file_id: str, request: Request) -> Response:
        meta = _owned_or_404(account(accounts, request), file_id)
        url, expires = links.signed_url(file_id)
        return json_response(
            {"file_id": file_id, "url": url, "mime_type": meta["mime_type"], "expires_at": expires}
        )

    @r.get("/v1/files/{file_id}/download")
    async def file_download(file_id: str, request: Request) -> Response:
        _owned_or_404(account(accounts, request), file_id)
        url, expires = links.signed_url(file_id)
        return json_response({"file_id": file_id, "url": url, "expires_at": expires})

    @r.get("/_signed/{token}", include_in_schema=False)
    async def signed(token: str) -> Response:
        try:
            file_id = links.verify(token)
        except SignatureError:
            return Response(storage.FORBIDDEN_XML, 403, media_type="application/xml")
        meta = storage.meta(store, file_id)
        if meta is None:
            return Response(storage.NOT_FOUND_XML, 404, media_type="application/xml")
        return Response(
            storage.data(store, file_id),
            media_type=meta["mime_type"],
            headers=storage.download_headers(meta["mime_type"], meta["name"], file_id),
        )

    @r.api_route("/_storage/{path:path}", methods=["GET", "HEAD"], include_in_schema=False)
    async def private_storage(path: str) -> Response:
        return Response(storage.NOT_FOUND_XML, 404, media_type="application/xml")

    return r
