"""Files: upload (path, bytes or URL), signed links, download to bytes or a path,
and reading as a numpy array.

Links are minted fresh on every call (``/v1/files/{id}/url`` or ``/download``)
and never cached; an asset's storage ``url`` is never used. Downloaded bytes are
kept in the client's :class:`~songlab.client._assets.AssetCache` (by file id and
blob hash): a cached asset is read without a request. Signed URLs are
fetched without the Authorization header (they are bearers of their own and
may point at another host).
"""

from __future__ import annotations

import hashlib
import mimetypes
import os
from dataclasses import replace
from pathlib import Path
from typing import Final, TypeAlias

import songlab.localfiles as localfiles
from songlab.client._call import Call, Op, Work, path_id
from songlab.client._exceptions import ResourceNotFound
from songlab.client._models import (
    Asset,
    AudioArray,
    FileLink,
    UploadedFile,
    parse_link,
    parse_upload,
)
from songlab.client._typing import C, Resource, operation
from songlab.client._validate import (
    AUDIO_MIME,
    SURROGATE,
    ValidationError,
    check_file,
    require,
)
from songlab.codec import CodecError, cut_off, sniff
from songlab.spec import LIMITS

__all__ = ["FileRef", "Files", "file_id_of", "upload_key"]

_UPLOAD_MAX = int(LIMITS["upload_bytes"])
_NAME_MAX: Final = int(LIMITS["upload_filename_chars"])

FileRef: TypeAlias = str | UploadedFile | Asset  # a file id, or what names one


def file_id_of(value: object, field: str) -> str:
    """A file id from a string, an :class:`UploadedFile` or an output :class:`Asset`."""
    if isinstance(value, UploadedFile | Asset):
        return value.file_id
    if not isinstance(value, str) or not value:
        raise ValidationError(field, "a file id (string), an UploadedFile or an Asset")
    return value


def _ext_for(mime: str | None, content: bytes) -> str:
    """The extension of a downloaded file: its media type's, else what the bytes' own
    signature names (the download route carries no media type)."""
    fmt = AUDIO_MIME.get(mime or "") or sniff(content)
    return f".{fmt}" if fmt else ""


def _read_upload(path: Path) -> bytes:
    """The bytes of a file to upload, refused over 64 MiB before it is read."""
    if not path.is_file():
        raise ValidationError("source", f"no file at {str(path)!r}")
    check_file(
        "source",
        size=path.stat().st_size,
        mime_type=None,
        filename=None,
        max_bytes=_UPLOAD_MAX,
        limit_text="64 MiB",
    )
    return path.read_bytes()


def _write_download(to: Path, name: str, content: bytes) -> Path:
    """Write ``content`` to ``to`` (a file), or to ``to/name`` when ``to`` is a directory:
    whole or not at all, private (0600: songlab.localfiles)."""
    path = to / name if to.is_dir() else to
    return localfiles.write_atomic(path, content)


def _check_filename(name: str) -> None:
    """An upload's file name: Unicode text of at most ``upload_filename_chars`` characters
    (the sandbox refuses a longer one too)."""
    require(
        len(name) <= _NAME_MAX,
        "filename",
        f"at most {_NAME_MAX} characters, got {len(name)} ({name[:40]!r}...)",
    )
    bad = SURROGATE.search(name)
    require(
        bad is None,
        "filename",
        "must be valid Unicode text: it holds a lone surrogate "
        f"U+{ord(bad.group()) if bad else 0:04X} (half of a character)",
    )
    require("\x00" not in name, "filename", "must not hold a NUL character")


def upload_key(key_id: str, base_url: str | None, content_sha256: str, mime: str) -> str:
    """The Idempotency-Key of an upload: its account, its bytes and their type. Sent with
    the upload so a service that deduplicates uploads returns the first file for the same
    bytes even when the record that remembered it is lost (the sandbox does)."""
    text = "\n".join((key_id, base_url or "", content_sha256, mime))
    return "songlab:u:" + hashlib.sha256(text.encode()).hexdigest()


def _decode_whole(file_id: str, content: bytes) -> AudioArray:
    """Decode audio that is whole: a file cut off short of the length its header announces
    is refused (the service refuses it as an input too), naming the file."""
    from songlab.client._audio import decode_audio

    problem = cut_off(content)
    if problem is not None:
        raise CodecError(f"file {file_id} {problem}; the service refuses it as an input too")
    return decode_audio(content)


class Files(Resource[C]):
    def _upload_op(
        self, source: str | os.PathLike[str] | bytes, filename: str | None, mime_type: str | None
    ) -> Op[UploadedFile]:
        if isinstance(source, str) and source.startswith(("http://", "https://")):
            data = yield Call("POST", "/v1/files", json={"source_url": source})
            up = parse_upload(data)
        else:
            if isinstance(source, bytes | bytearray | memoryview):
                content = bytes(source)
                name = filename or "upload.bin"
            elif isinstance(source, str | os.PathLike):
                path = Path(source)
                content = yield Work(_read_upload, (path,))
                name = filename or path.name
            else:
                raise ValidationError("source", "a path, bytes, or an http(s) URL")
            check_file(
                "source",
                size=len(content),
                mime_type=None,
                filename=None,
                max_bytes=_UPLOAD_MAX,
                limit_text="64 MiB",
            )
            _check_filename(name)
            mime = mime_type or mimetypes.guess_type(name)[0] or "application/octet-stream"
            digest = hashlib.sha256(content).hexdigest()
            known = yield from self._uploaded_before_op(digest, mime)
            if known is not None:
                return known
            key = (
                None
                if self._c.reuse is False
                else upload_key(self._c.key_id, self._c.base_url, digest, mime)
            )
            data = yield Call(
                "POST", "/v1/files", files={"file": (name, content, mime)}, idempotency_key=key
            )
            # the answer may show only file_id: what was sent fills the rest; the bytes'
            # SHA-256 is the client's own (creates that name the file are keyed by it)
            up = replace(parse_upload(data, mime_type=mime, size_bytes=len(content)), sha256=digest)
            record = self._c.record
            if record is not None and self._c.reuse is not False:
                try:
                    yield Work(
                        record.write_upload,
                        (
                            self._c.key_id,
                            self._c.base_url,
                            digest,
                            mime,
                            up.file_id,
                            up.size_bytes or len(content),
                        ),
                    )
                except Exception:  # noqa: BLE001 - the file is stored: never fail the upload
                    pass
        self._c._uploads[up.file_id] = up
        return up

    def _uploaded_before_op(self, digest: str, mime: str) -> Op[UploadedFile | None]:
        """The file the same bytes (and type) became on this account before (from the
        record, checked with one link request), or None. Uploads cost nothing, but a new
        file id would make a re-run's creates differ from the first run's and buy again."""
        record = self._c.record
        if record is None or self._c.reuse is False:
            return None
        found = yield Work(record.upload_of, (self._c.key_id, self._c.base_url, digest, mime))
        if found is None:
            return None
        file_id, size = found
        try:
            yield Call("GET", f"/v1/files/{path_id(file_id, 'file_id')}/url")
        except ResourceNotFound:
            yield Work(record.forget_upload, (self._c.key_id, self._c.base_url, file_id))
            return None
        up = UploadedFile(file_id, mime, size, digest, {"file_id": file_id, "reused": True})
        self._c._uploads[file_id] = up
        return up

    @operation
    def upload(
        self,
        source: str | os.PathLike[str] | bytes,
        *,
        filename: str | None = None,
        mime_type: str | None = None,
    ) -> Op[UploadedFile]:
        """``POST /v1/files`` from a path, bytes, or an http(s) URL -> :class:`UploadedFile`.

        Files over 64 MiB are refused before they are read or sent.
        """
        return self._upload_op(source, filename, mime_type)

    @operation
    def link(self, file_id: FileRef) -> Op[FileLink]:
        """A fresh signed :class:`FileLink` (about 10 minutes). Mint again rather than cache."""
        fid = path_id(file_id_of(file_id, "file_id"), "file_id")
        return parse_link((yield Call("GET", f"/v1/files/{fid}/url")))

    def _download_op(self, file_id: FileRef) -> Op[tuple[str, str | None, bytes]]:
        """(file id, mime type or None, bytes): from the asset cache, else downloaded (a
        fresh signed link, then its bytes) and kept."""
        raw_id = file_id_of(file_id, "file_id")
        fid = path_id(raw_id, "file_id")
        blob = file_id.blob_hash if isinstance(file_id, Asset) else None
        cache = self._c.cache
        owner = f"{self._c.key_id}@{self._c.base_url}"  # files are the account's own
        if cache is not None:
            cached = yield Work(cache.get, (raw_id, blob, owner))
            if cached is not None:
                return raw_id, None, cached
        link = parse_link((yield Call("GET", f"/v1/files/{fid}/download")))
        content = yield Call("GET", link.url, auth=False, expect="bytes")
        if cache is not None:
            yield Work(cache.put, (raw_id, blob, content, owner))
        return link.file_id, link.mime_type, content

    @operation
    def download(
        self, file_id: FileRef, *, to: str | os.PathLike[str] | None = None
    ) -> Op[bytes | Path]:
        """The file's bytes; with ``to=`` (a file or a directory) writes them and returns the path.
        Served from the asset cache when it holds them (no request)."""
        fid, mime, content = yield from self._download_op(file_id)
        if to is None:
            return content
        known = self._c._uploads.get(fid)
        name = f"{fid}{_ext_for(mime or (known.mime_type if known else None), content)}"
        written: Path = yield Work(_write_download, (Path(to), name, content))
        return written

    @operation
    def read(self, file_id: FileRef) -> Op[AudioArray]:
        """Download and decode audio -> :class:`AudioArray` (samples (channels, frames), rate)."""
        fid, _, content = yield from self._download_op(file_id)
        audio: AudioArray = yield Work(_decode_whole, (fid, content))
        return audio
