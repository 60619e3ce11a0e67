"""Files: storage in the database, ownership, signed URLs and private locators.

A signed URL is ``{base}/_signed/<token>``, where the token is
``<file_id>.<expires>.<hmac>`` (HMAC-SHA256 with a per-database secret, so links
survive a restart of the same database). It needs no auth header, expires
after ``SIGNED_URL_SECONDS`` on the sandbox clock and answers 403 when expired
or tampered. An asset's ``url`` is a private ``/_storage/...`` locator that
always answers 404 with an XML ResourceNotFound body, as the real storage does.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import uuid
from typing import Any
from urllib.parse import urlsplit

from songlab.sandbox.ports import Now
from songlab.sandbox.storage.clock import iso
from songlab.sandbox.storage.db import Store
from songlab.spec import LIMITS

SIGNED_URL_SECONDS = int(LIMITS["signed_url_seconds"])
UPLOAD_MAX_BYTES = int(LIMITS["upload_bytes"])
SIGNED_PREFIX = "/_signed/"
STORAGE_PREFIX = "/_storage/"

NOT_FOUND_XML = (
    '<?xml version="1.0" encoding="utf-8"?>\n'
    "<Error><Code>ResourceNotFound</Code>"
    "<Message>The specified resource does not exist.</Message></Error>"
)
FORBIDDEN_XML = (
    '<?xml version="1.0" encoding="utf-8"?>\n'
    "<Error><Code>AuthenticationFailed</Code>"
    "<Message>Signature invalid or expired.</Message></Error>"
)

_META_COLUMNS = (
    "id, account_id, origin, task_id, name, mime_type, size_bytes, sha256, recipe, "
    "duration_s, created_at"
)


class SignatureError(Exception):
    """A signed token that is malformed, tampered with or expired."""


class Signer:
    def __init__(self, store: Store) -> None:
        secret = store.get_meta("signing_secret")
        if secret is None:
            secret = secrets.token_hex(32)
            store.set_meta("signing_secret", secret)
        self._key = bytes.fromhex(secret)

    def _mac(self, msg: str) -> str:
        digest = hmac.new(self._key, msg.encode(), hashlib.sha256).digest()
        return base64.urlsafe_b64encode(digest[:20]).decode().rstrip("=")

    def sign(self, file_id: str, expires_at: float) -> str:
        msg = f"{file_id}.{int(expires_at)}"
        return f"{msg}.{self._mac(msg)}"

    def verify(self, token: str, now: float) -> str:
        """The file id of a valid token; raises :class:`SignatureError`."""
        parts = token.split(".")
        if len(parts) != 3 or not parts[1].isdigit():
            raise SignatureError("malformed")
        msg = f"{parts[0]}.{parts[1]}"
        if not hmac.compare_digest(self._mac(msg), parts[2]):
            raise SignatureError("tampered")
        if now >= int(parts[1]):
            raise SignatureError("expired")
        return parts[0]


class Links:
    """The sandbox's own address and its signed URLs (:class:`~songlab.sandbox.ports.Links`).

    The address is the configured one until the server knows its bound port
    (:meth:`set_address`); a URL is this sandbox's own when its netloc is one of
    :meth:`netlocs`.
    """

    def __init__(self, signer: Signer, clock: Now, host: str, port: int) -> None:
        self._signer = signer
        self._clock = clock
        self._base_url = f"http://{host}:{port}"
        self._netlocs = {f"{host}:{port}"}

    @property
    def base_url(self) -> str:
        return self._base_url

    def set_address(self, host: str, port: int) -> None:
        self._base_url = f"http://{host}:{port}"
        self._netlocs = {f"{host}:{port}", f"localhost:{port}", f"127.0.0.1:{port}"}

    def netlocs(self) -> set[str]:
        return self._netlocs

    def signed_url(self, file_id: str) -> tuple[str, str]:
        """A fresh signed URL of a file and its expiry (ISO 8601)."""
        expires = int(self._clock.now()) + SIGNED_URL_SECONDS
        token = self._signer.sign(file_id, expires)
        return f"{self._base_url}{SIGNED_PREFIX}{token}", iso(expires)

    def verify(self, token: str) -> str:
        """The file id of a valid token now; raises :class:`SignatureError`."""
        return self._signer.verify(token, self._clock.now())


def token_of_url(url: str, netlocs: set[str]) -> str | None:
    """The token of one of this sandbox's signed URLs, else None."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or parts.netloc not in netlocs:
        return None
    if not parts.path.startswith(SIGNED_PREFIX):
        return None
    return parts.path[len(SIGNED_PREFIX) :] or None


def locator(file_id: str) -> str:
    """The private storage path of a file (prefixed with the base URL when shown)."""
    return f"{STORAGE_PREFIX}songlab-private/{file_id}"


def put(
    store: Store,
    *,
    account_id: str,
    data: bytes,
    mime_type: str,
    origin: str,
    now: float,
    task_id: str | None = None,
    name: str | None = None,
    recipe: dict[str, Any] | None = None,
    duration_s: float | None = None,
    probe: dict[str, Any] | None = None,
    file_id: str | None = None,
) -> dict[str, Any]:
    """Store bytes as a new file of ``account_id``; returns its metadata.

    ``probe`` is the audio probe's verdict when the caller has it (cached with the
    file, see :func:`probe_of`); ``file_id`` a fresh id chosen before the insert.
    """
    fid = file_id or str(uuid.uuid4())
    sha = hashlib.sha256(data).hexdigest()
    store.execute(
        "INSERT INTO files (id, account_id, origin, task_id, name, mime_type, size_bytes, sha256, "
        "data, recipe, duration_s, created_at, probe) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
        (
            fid,
            account_id,
            origin,
            task_id,
            name,
            mime_type,
            len(data),
            sha,
            data,
            None if recipe is None else json.dumps(recipe, default=str),
            duration_s,
            now,
            None if probe is None else json.dumps(probe),
        ),
    )
    return {
        "id": fid,
        "account_id": account_id,
        "origin": origin,
        "task_id": task_id,
        "name": name,
        "mime_type": mime_type,
        "size_bytes": len(data),
        "sha256": sha,
        "duration_s": duration_s,
    }


def meta(store: Store, file_id: str) -> dict[str, Any] | None:
    row = store.one(f"SELECT {_META_COLUMNS} FROM files WHERE id = ?", (file_id,))
    return None if row is None else dict(row)


def owned(store: Store, account_id: str, file_id: object) -> dict[str, Any] | None:
    """The file's metadata when it exists and belongs to ``account_id``, else None."""
    if not isinstance(file_id, str):
        return None
    m = meta(store, file_id)
    return m if m is not None and m["account_id"] == account_id else None


def probe_of(store: Store, file_id: str) -> dict[str, Any] | None:
    """The cached probe verdict of a file (``{"info": {...}}`` or ``{"error": msg}``), or None."""
    row = store.one("SELECT probe FROM files WHERE id = ?", (file_id,))
    return None if row is None or row[0] is None else json.loads(row[0])


def set_probe(store: Store, file_id: str, verdict: dict[str, Any]) -> None:
    store.execute("UPDATE files SET probe = ? WHERE id = ?", (json.dumps(verdict), file_id))


def data(store: Store, file_id: str) -> bytes:
    row = store.one("SELECT data FROM files WHERE id = ?", (file_id,))
    if row is None:
        raise KeyError(file_id)
    return bytes(row[0])


def recipe(store: Store, file_id: str) -> dict[str, Any] | None:
    row = store.one("SELECT recipe FROM files WHERE id = ?", (file_id,))
    return None if row is None or row[0] is None else json.loads(row[0])
