"""Files: storage in the database, ownership, signed URLs and private locators.

A signed URL is ``{base}/_signed/<token>``, where the token is
``<file_id>.<expires>.<hmac>`` (HMAC-SHA256 with a secret kept in a 0600 key file
beside the database, never in it: see :class:`Signer`; links survive a restart of
the same database). It needs no auth header, expires after ``SIGNED_URL_SECONDS`` on
the sandbox clock and answers 403 when expired or tampered. It is served as a careful
file service does (:func:`download_headers`): ``nosniff`` always, and a download for
any type a browser could run. An asset's ``url`` is a private ``/_storage/...`` locator that
always answers 404 with an XML ResourceNotFound body, as the real storage does.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import logging
import re
import secrets
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final
from urllib.parse import quote, urlsplit

import songlab.localfiles as localfiles
from songlab.sandbox.ports import Now
from songlab.sandbox.storage.clock import iso
from songlab.sandbox.storage.db import Store
from songlab.spec import LIMITS

log = logging.getLogger("songlab.sandbox.storage")

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
    """HMAC-SHA256 signatures of file tokens, with a secret that is never in the database.

    With a database file, the secret is in a key file beside it (:func:`key_path`:
    ``<db>.signing-key``, mode 0600): links survive a restart of the same database, and a
    copy of the database alone (a backup, a bug report) cannot forge one. A secret that an
    older sandbox kept in the database's ``meta`` table is moved to the key file and erased
    from the database (``secure_delete``, so its bytes do not stay in a free page). With
    ``:memory:``, or ``key=`` given, the secret lives only in this process. A lost key file
    costs only the signed URLs issued before (they last 10 minutes): a new key is made and
    they answer 403, as expired ones do; nothing else depends on it.
    """

    def __init__(self, store: Store, *, key: bytes | None = None) -> None:
        if key is None:
            key = _load_key(store)
        self._key = key

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


def key_path(db: str) -> Path | None:
    """The signing key file of a database file (``<db>.signing-key``); None for ``:memory:``."""
    if db == ":memory:":
        return None
    p = Path(db).expanduser()
    return p.with_name(p.name + ".signing-key")


_LEGACY_META: Final = "signing_secret"
_KEY_BYTES: Final = 32


def _read_key(path: Path) -> bytes | None:
    """The key in ``path``; None if there is none or it is damaged (said in the log)."""
    try:
        text = path.read_text(encoding="ascii").strip()
        key = bytes.fromhex(text)
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        log.warning(
            "the sandbox's signing key %s cannot be read (%s): a new one is made", path, exc
        )
        return None
    if len(key) != _KEY_BYTES:
        log.warning(
            "the sandbox's signing key %s is damaged (%d bytes, not %d): a new one is made; "
            "signed URLs issued before answer 403",
            path,
            len(key),
            _KEY_BYTES,
        )
        return None
    localfiles.check_private(path, what="the sandbox's signing key")
    return key


def _load_key(store: Store) -> bytes:
    path = key_path(store.path)
    legacy = store.get_meta(_LEGACY_META)
    if path is None:  # in memory: nothing to keep
        return secrets.token_bytes(_KEY_BYTES)
    key = _read_key(path)
    if key is None:
        key = bytes.fromhex(legacy) if legacy else secrets.token_bytes(_KEY_BYTES)
        if path.exists():  # damaged: replaced whole
            localfiles.write_atomic(path, key.hex() + "\n")
        else:
            try:
                localfiles.create_exclusive(path, key.hex() + "\n")
            except FileExistsError:  # another process made it first: use theirs
                key = _read_key(path) or key
    if legacy is not None:
        store.erase_meta(_LEGACY_META)
    return key


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


# Types a browser shows (plays, draws, prints) without running anything: served inline.
# Everything else - HTML, SVG, XML, JavaScript, PDF, and any type not named here - is served
# as a download, so an upload that declared ``text/html`` never runs in the sandbox's origin.
_INLINE_TYPES: Final = frozenset(
    {
        "application/json",
        "application/octet-stream",
        "image/avif",
        "image/bmp",
        "image/gif",
        "image/jpeg",
        "image/png",
        "image/webp",
        "text/csv",
        "text/plain",
    }
)
_INLINE_PREFIXES: Final = ("audio/", "video/")
# RFC 6266 ``filename=`` fallback: printable ASCII without quotes, backslashes or separators
_UNSAFE_NAME: Final = re.compile(r'[^\x20-\x7e]|["\\/;%]')


def media_essence(mime_type: str) -> str:
    """``Text/HTML; charset=utf-8`` -> ``text/html``."""
    return mime_type.split(";", 1)[0].strip().lower()


def served_inline(mime_type: str) -> bool:
    """Whether a browser may show a file of this type in place (audio, video, raster images,
    plain text, JSON); everything else is sent as a download."""
    essence = media_essence(mime_type)
    return essence in _INLINE_TYPES or essence.startswith(_INLINE_PREFIXES)


def download_headers(mime_type: str, name: str | None, file_id: str) -> dict[str, str]:
    """The headers of a signed file's answer, as a careful file service sends them.

    Always ``X-Content-Type-Options: nosniff`` (the browser keeps the declared type, never
    guesses a runnable one) and private caching. A type a browser could run (HTML, SVG,
    XML, JavaScript and anything not known to be inert) also gets
    ``Content-Disposition: attachment`` with the uploaded name (RFC 6266: an ASCII
    ``filename`` and the exact UTF-8 ``filename*``) and ``Content-Security-Policy: sandbox``,
    so even a forced inline view runs no script in the sandbox's origin.
    """
    headers = {"X-Content-Type-Options": "nosniff", "Cache-Control": "private, max-age=60"}
    if served_inline(mime_type):
        return headers
    base = (name or "").replace("\\", "/").rsplit("/", 1)[-1] or file_id
    fallback = _UNSAFE_NAME.sub("_", base)[:200] or "download"
    exact = quote(base, safe="")
    disposition = f'attachment; filename="{fallback}"'
    if exact != fallback:
        disposition += f"; filename*=UTF-8''{exact}"
    headers["Content-Disposition"] = disposition
    headers["Content-Security-Policy"] = "default-src 'none'; sandbox"
    return headers


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
    recipe: Mapping[str, object] | None = None,
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


def upload_answer(store: Store, account_id: str, key: str) -> tuple[int, dict[str, Any]] | None:
    """The (status, body) an upload under this Idempotency-Key was answered with, or None.

    Uploads share the idempotency table of creates (per account): the spec says a repeat
    with the same key returns the original; songlab's sandbox honours it for uploads too
    (the spec is silent on POST /v1/files), so the same bytes sent again under their key
    keep their file id."""
    row = store.one(
        "SELECT status_code, body FROM idempotency WHERE account_id = ? AND key = ?",
        (account_id, key),
    )
    return None if row is None else (int(row[0]), json.loads(row[1]))


def keep_upload_answer(
    store: Store, account_id: str, key: str, status: int, body: dict[str, Any], now: float
) -> None:
    store.execute(
        "INSERT INTO idempotency (account_id, key, status_code, body, created_at) "
        "VALUES (?,?,?,?,?)",
        (account_id, key, status, json.dumps(body), now),
    )


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
