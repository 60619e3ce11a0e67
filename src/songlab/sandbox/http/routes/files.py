"""Files: upload (multipart or source_url), link and download routes, signed URLs, locators."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request, Response
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData, UploadFile
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


def _json_upload_url(raw: bytes) -> object:
    """The ``source_url`` of a JSON upload body, as its schema checks it (422 naming it)."""
    if not raw:
        raise errors.invalid(
            "source_url", "is required (or send multipart/form-data with a file part)"
        )
    body = jsonrules.loads(raw, "body")
    if not isinstance(body, dict) or "source_url" not in body:
        raise errors.invalid(
            "source_url", "is required (or send multipart/form-data with a file part)"
        )
    url: object = bodies.check(bodies.SourceUrl, body)["source_url"]
    return url


async def _read_form(request: Request) -> FormData:
    """The multipart form, its body counted as it arrives: past the limit it stops at once."""
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
        return await limited.form(max_part_size=1024 * 1024)
    except _TooLarge:
        raise errors.invalid("file", TOO_LARGE) from None
    except HTTPException as exc:  # malformed multipart
        raise errors.invalid("file", f"the multipart body is malformed ({exc.detail})") from None


def _file_part(form: FormData) -> UploadFile:
    """The form's file part (the one named ``file``, else the first), its name checked."""
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
    return part


class _FileRoutes:
    """Uploads, file links and downloads, signed URLs and the private storage locators."""

    def __init__(self, accounts: Authenticator, store: Store, clock: Now, links: Links) -> None:
        self._accounts = accounts
        self._store = store
        self._clock = clock
        self._links = links

    def _owned_or_404(self, account_id: str, file_id: str) -> dict[str, Any]:
        meta = storage.owned(self._store, account_id, file_id)
        if meta is None:
            raise errors.RESOURCE_NOT_FOUND
        return meta

    def _stored(
        self,
        account_id: str,
        data: bytes,
        mime: str,
        name: str | None,
        verdict: dict[str, Any] | None,
        key: str | None,
    ) -> Response:
        """Store an upload; with a valid Idempotency-Key, a repeat answers the original
        (the same status and body, nothing stored again), as a create's repeat does."""
        store = self._store
        with store.tx():
            if key is not None and (hit := storage.upload_answer(store, account_id, key)):
                return json_response(hit[1], hit[0])
            meta = storage.put(
                store,
                account_id=account_id,
                data=data,
                mime_type=mime,
                origin="upload",
                now=self._clock.now(),
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
                storage.keep_upload_answer(store, account_id, key, 201, body, self._clock.now())
        return json_response(body, 201)

    async def upload(self, request: Request) -> Response:
        account_id = account(self._accounts, request)
        key = valid_key(request.headers.get("idempotency-key"))
        if key is not None and (hit := storage.upload_answer(self._store, account_id, key)):
            return json_response(hit[1], hit[0])  # a repeat: its body is not read again
        ctype = request.headers.get("content-type", "")
        length = request.headers.get("content-length")
        if ctype.startswith("multipart/form-data"):
            if length and length.isdigit() and int(length) > UPLOAD_MAX_BYTES + MULTIPART_SLACK:
                raise errors.invalid("file", TOO_LARGE)
            return await self._multipart(request, account_id, key)
        return await self._copy_of_signed_url(
            _json_upload_url(await request.body()), account_id, key
        )

    async def _copy_of_signed_url(self, url: object, account_id: str, key: str | None) -> Response:
        """An upload by ``source_url``: only this sandbox's own signed URLs, never fetched."""
        netlocs = self._links.netlocs()
        token = storage.token_of_url(url, netlocs) if isinstance(url, str) else None
        if token is None:
            raise errors.invalid(
                "source_url",
                "must be one of this sandbox's signed file URLs; other URLs are never fetched",
            )
        try:
            file_id = self._links.verify(token)
        except SignatureError as exc:
            raise errors.invalid("source_url", f"signed URL is {exc}") from None
        meta = storage.meta(self._store, file_id)
        if meta is None:
            raise errors.invalid("source_url", "signed URL names no file")
        return await run_in_threadpool(
            self._stored,
            account_id,
            storage.data(self._store, file_id),
            meta["mime_type"],
            meta["name"],
            storage.probe_of(self._store, file_id),
            key,
        )

    async def _multipart(self, request: Request, account_id: str, key: str | None) -> Response:
        form = await _read_form(request)
        try:
            part = _file_part(form)
            data = await part.read(UPLOAD_MAX_BYTES + 1)
            if len(data) > UPLOAD_MAX_BYTES:
                raise errors.invalid("file", TOO_LARGE)
            mime, verdict = await _probe(data, part.content_type)
            # hashing and writing tens of MiB: a worker thread, not the event loop
            return await run_in_threadpool(
                self._stored, account_id, data, mime, part.filename, verdict, key
            )
        finally:
            await form.close()

    async def file_link(self, file_id: str, request: Request) -> Response:
        meta = self._owned_or_404(account(self._accounts, request), file_id)
        url, expires = self._links.signed_url(file_id)
        return json_response(
            {"file_id": file_id, "url": url, "mime_type": meta["mime_type"], "expires_at": expires}
        )

    async def file_download(self, file_id: str, request: Request) -> Response:
        self._owned_or_404(account(self._accounts, request), file_id)
        url, expires = self._links.signed_url(file_id)
        return json_response({"file_id": file_id, "url": url, "expires_at": expires})

    async def signed(self, token: str) -> Response:
        try:
            file_id = self._links.verify(token)
        except SignatureError:
            return Response(storage.FORBIDDEN_XML, 403, media_type="application/xml")
        meta = storage.meta(self._store, file_id)
        if meta is None:
            return Response(storage.NOT_FOUND_XML, 404, media_type="application/xml")
        return Response(
            storage.data(self._store, file_id),
            media_type=meta["mime_type"],
            headers=storage.download_headers(meta["mime_type"], meta["name"], file_id),
        )


async def private_storage(path: str) -> Response:
    """A raw storage locator opened directly: the XML ResourceNotFound the real storage gives."""
    return Response(storage.NOT_FOUND_XML, 404, media_type="application/xml")


def router(accounts: Authenticator, store: Store, clock: Now, links: Links) -> APIRouter:
    routes = _FileRoutes(accounts, store, clock, links)
    r = APIRouter()
    r.add_api_route("/v1/files", routes.upload, methods=["POST"], status_code=201)
    r.add_api_route("/v1/files/{file_id}/url", routes.file_link, methods=["GET"])
    r.add_api_route("/v1/files/{file_id}/download", routes.file_download, methods=["GET"])
    r.add_api_route("/_signed/{token}", routes.signed, methods=["GET"], include_in_schema=False)
    r.add_api_route(
        "/_storage/{path:path}",
        private_storage,
        methods=["GET", "HEAD"],
        include_in_schema=False,
    )
    return r
