"""Payload rules: scalar field checks, file inputs and saved voices.

Every failure is 422 InvalidGenerationInput whose message names the field and
the rule. File inputs are resolved here, at create: ``{"url": ...}``, a bare
URL string, ``{"base64": ..., "filename"?: ...}`` or ``file_id:<id>``; a URL
resolves only if it is one of this sandbox's signed URLs (never fetched), a
``file_id:`` only if the caller owns the file. Inline base64 becomes a new file
of the caller. The result maps field names to file ids for the worker.
"""

from __future__ import annotations

import base64
import binascii
import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import songlab.sandbox.errors as errors
from songlab.sandbox.ports import Links
from songlab.sandbox.storage import file_store as storage
from songlab.sandbox.storage.db import Store
from songlab.sandbox.storage.file_store import SignatureError

if TYPE_CHECKING:
    import songlab.sandbox.engine as engine

UUID_RE = re.compile(
    r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"
)

_MISSING = object()


@dataclass(slots=True)
class Resolved:
    """A validated payload: what the worker needs besides the stored request."""

    inputs: dict[str, str] = field(default_factory=dict)  # field -> file id
    durations: dict[str, float] = field(default_factory=dict)  # field -> seconds
    vocal_id: str | None = None
    new_files: list[InlineFile] = field(default_factory=list)  # inline inputs: stored at insert


@dataclass(frozen=True, slots=True)
class InlineFile:
    """A payload's inline (base64) input, checked: stored when its task is inserted."""

    file_id: str
    account_id: str
    data: bytes
    mime_type: str
    duration_s: float
    name: str | None
    probe: dict[str, Any]

    def store(self, store: Store, now: float) -> None:
        storage.put(
            store,
            account_id=self.account_id,
            data=self.data,
            mime_type=self.mime_type,
            origin="inline",
            now=now,
            name=self.name,
            duration_s=self.duration_s,
            probe=self.probe,
            file_id=self.file_id,
        )


# --- the audio probe, cached with the file -----------------------------------------


def probe_verdict(data: bytes) -> dict[str, Any]:
    """Decode-check bytes once: ``{"info": {format, mime_type, ...}}`` or ``{"error": rule}``.

    CPU-bound (a whole decode): call it from a worker thread, never while holding the
    store's lock.
    """
    import songlab.sandbox.engine as engine  # lazy: the engine loads after the server answers

    try:
        info = engine.check_audio(data, field="file")
    except engine.EngineInputError as exc:
        return {"error": exc.message}
    return {
        "info": {
            "format": info.format,
            "mime_type": info.mime_type,
            "duration_s": info.duration_s,
            "sample_rate": info.sample_rate,
            "channels": info.channels,
        }
    }


def cached_verdict(store: Store, file_id: str) -> dict[str, Any]:
    """The file's probe verdict: cached with the file, else probed now (once) and cached."""
    verdict = storage.probe_of(store, file_id)
    if verdict is None:
        verdict = probe_verdict(storage.data(store, file_id))  # the decode holds no lock
        storage.set_probe(store, file_id, verdict)
    return verdict


def audio_info(name: str, verdict: dict[str, Any], formats: tuple[str, ...]) -> engine.AudioInfo:
    """The verdict as AudioInfo, or 422 naming the field (unreadable, or not in ``formats``)."""
    if "error" in verdict:
        raise errors.invalid(name, verdict["error"])
    from songlab.sandbox.engine import AudioInfo

    info = AudioInfo(**verdict["info"])
    if formats and info.format not in formats:
        raise errors.invalid(name, f"must be {' or '.join(formats)}, got {info.format}")
    return info


# --- scalar fields ---------------------------------------------------------------


def string(
    p: Mapping[str, object],
    name: str,
    *,
    required: bool = False,
    max_len: int | None = None,
    default: str | None = None,
) -> str | None:
    v = p.get(name, _MISSING)
    if v is _MISSING or v is None:
        if required:
            raise errors.invalid(name, "is required (a string)")
        return default
    if not isinstance(v, str):
        raise errors.invalid(name, f"must be a string, got {type(v).__name__}")
    if required and not v.strip():
        raise errors.invalid(name, "must not be empty")
    if max_len is not None and len(v) > max_len:
        raise errors.invalid(name, f"must be at most {max_len} characters, got {len(v)}")
    return v


def integer(
    p: Mapping[str, object],
    name: str,
    *,
    lo: int | None = None,
    hi: int | None = None,
    required: bool = False,
    default: int | None = None,
) -> int | None:
    v = p.get(name, _MISSING)
    if v is _MISSING or v is None:
        if required:
            raise errors.invalid(name, "is required (an integer)")
        return default
    if isinstance(v, float) and v.is_integer() and abs(v) < 2**63:
        v = int(v)  # JSON has one number type: 245.0 is the integer 245
    if isinstance(v, bool) or not isinstance(v, int):
        raise errors.invalid(name, f"must be an integer, got {type(v).__name__}")
    if (lo is not None and v < lo) or (hi is not None and v > hi):
        raise errors.invalid(name, f"must be in {lo}-{hi}, got {v}")
    return v


def number(
    p: Mapping[str, object], name: str, *, lo: float, hi: float, default: float | None = None
) -> float | None:
    v = p.get(name, _MISSING)
    if v is _MISSING or v is None:
        return default
    if isinstance(v, bool) or not isinstance(v, int | float):
        raise errors.invalid(name, f"must be a number, got {type(v).__name__}")
    if not lo <= v <= hi:
        raise errors.invalid(name, f"must be in {lo}-{hi}, got {v}")
    return float(v)


def boolean(
    p: Mapping[str, object], name: str, *, default: bool | None = None, required: bool = False
) -> bool | None:
    v = p.get(name, _MISSING)
    if v is _MISSING or v is None:
        if required:
            raise errors.invalid(name, "is required (a boolean)")
        return default
    if not isinstance(v, bool):
        raise errors.invalid(name, f"must be a boolean, got {type(v).__name__}")
    return v


def choice(
    p: Mapping[str, object],
    name: str,
    options: tuple[str, ...],
    *,
    default: str | None = None,
    required: bool = False,
) -> object:
    v = p.get(name, _MISSING)
    if v is _MISSING or v is None:
        if required:
            raise errors.invalid(name, f"is required (one of {', '.join(options)})")
        return default
    if v not in options:
        raise errors.invalid(name, f"must be one of {', '.join(options)}, got {v!r}")
    return v


# --- files and voices --------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class InputSource:
    """Where file inputs resolve: the store, and this sandbox's own signed URLs."""

    store: Store
    links: Links


class Resolver:
    """Resolves file inputs, owned file ids and saved voices for one account."""

    def __init__(self, source: InputSource, account_id: str) -> None:
        self._source = source
        self.account_id = account_id
        self.new_files: list[InlineFile] = []  # inline inputs, stored with the task

    @property
    def store(self) -> Store:
        return self._source.store

    @property
    def links(self) -> Links:
        return self._source.links

    def file_input(
        self,
        name: str,
        value: object,
        *,
        max_bytes: int,
        formats: tuple[str, ...],
        limit_label: str | None = None,
    ) -> tuple[str, engine.AudioInfo]:
        """A payload file input (url / bare URL / base64 / file_id:) -> (file id, info)."""
        if isinstance(value, dict) and "url" in value:
            value = value["url"]
        if isinstance(value, dict) and "base64" in value:
            return self._inline(name, value, max_bytes, formats, limit_label)
        if not isinstance(value, str) or not value:
            raise errors.invalid(
                name,
                'must be a file input: {"url": ...}, a URL string, '
                '{"base64": ...} or "file_id:<id>"',
            )
        if value.startswith("file_id:"):
            meta = storage.owned(self.store, self.account_id, value[len("file_id:") :])
            if meta is None:
                raise errors.invalid(name, "file_id is not a file of this account")
        else:
            token = storage.token_of_url(value, self.links.netlocs())
            if token is None:
                raise errors.invalid(
                    name,
                    "URL is not resolvable: only this sandbox's signed file URLs "
                    "(GET /v1/files/{id}/url) are accepted",
                )
            try:
                fid = self.links.verify(token)
            except SignatureError as exc:
                raise errors.invalid(name, f"signed URL is {exc}") from None
            meta = storage.meta(self.store, fid)
            if meta is None:
                raise errors.invalid(name, "signed URL names no file")
        return meta["id"], self._check(name, meta, max_bytes, formats, limit_label)

    def owned_file(
        self,
        name: str,
        file_id: object,
        *,
        max_bytes: int,
        formats: tuple[str, ...],
        limit_label: str | None = None,
    ) -> tuple[str, engine.AudioInfo]:
        """A ``*_file_id`` field of a dedicated route: an uploaded file of the caller."""
        if file_id is None:
            raise errors.invalid(name, "is required (a file id from POST /v1/files)")
        if not isinstance(file_id, str) or not UUID_RE.match(file_id):
            raise errors.invalid(name, "must be a file id (uuid) from POST /v1/files")
        meta = storage.owned(self.store, self.account_id, file_id)
        if meta is None:
            raise errors.invalid(name, "is not an active file of this account")
        return file_id, self._check(name, meta, max_bytes, formats, limit_label)

    def _inline(
        self,
        name: str,
        value: Mapping[str, object],
        max_bytes: int,
        formats: tuple[str, ...],
        limit_label: str | None,
    ) -> tuple[str, engine.AudioInfo]:
        raw = value["base64"]
        if not isinstance(raw, str):
            raise errors.invalid(name, "base64 must be a string")
        if len(raw) * 3 // 4 > max_bytes + 3:
            raise errors.invalid(name, f"must be at most {limit_label or max_bytes} bytes")
        try:
            data = base64.b64decode(raw, validate=True)
        except (binascii.Error, ValueError):
            raise errors.invalid(name, "base64 is not valid base64") from None
        if len(data) > max_bytes:
            raise errors.invalid(
                name, f"file is {len(data)} bytes, the limit is {limit_label or max_bytes}"
            )
        verdict = probe_verdict(data)
        info = audio_info(name, verdict, formats)
        fid = str(uuid.uuid4())
        name_of = value.get("filename")
        self.new_files.append(
            InlineFile(
                file_id=fid,
                account_id=self.account_id,
                data=data,
                mime_type=info.mime_type,
                duration_s=info.duration_s,
                name=name_of if isinstance(name_of, str) else None,
                probe=verdict,
            )
        )
        return fid, info

    def _check(
        self,
        name: str,
        meta: dict[str, Any],
        max_bytes: int,
        formats: tuple[str, ...],
        limit_label: str | None,
    ) -> engine.AudioInfo:
        if meta["size_bytes"] > max_bytes:
            raise errors.invalid(
                name, f"file is {meta['size_bytes']} bytes, the limit is {limit_label or max_bytes}"
            )
        return audio_info(name, cached_verdict(self.store, meta["id"]), formats)

    def voice(self, name: str, vocal_id: object) -> str | None:
        """A saved voice of this account with active consent, or 422 naming the field."""
        if vocal_id is None:
            return None
        if not isinstance(vocal_id, str):
            raise errors.invalid(name, "must be a string (a vocal_id from a voice clone)")
        row = self.store.one(
            "SELECT v.account_id, c.active FROM voices v JOIN consents c ON c.id = v.consent_id "
            "WHERE v.id = ?",
            (vocal_id,),
        )
        if row is None or row[0] != self.account_id:
            raise errors.invalid(name, "is not a saved voice of this account")
        if not row[1]:
            raise errors.invalid(name, "the saved voice has no active consent")
        return vocal_id
