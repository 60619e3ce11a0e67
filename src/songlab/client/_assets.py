"""The local cache of downloaded assets: content-addressed, size-capped, least recently used.

An output file is named by its ``file_id`` and its ``blob_hash`` (the service's content
hash), so the bytes of one (file id, blob hash) never change: a cached asset is served
without a request. Files are the account's own (the service answers 404 to anyone
else), so entries are kept per owner (the non-secret key id and the base url): a
client never reads from the cache what the service would refuse it. Entries are files under
``$SONGLAB_CACHE_DIR`` if set, else ``platformdirs.user_cache_dir("songlab")/assets``.

**Checked on every read.** An entry's name ends with the SHA-256 of the bytes it was
written with, and every read hashes the bytes again: an entry that was cut off, emptied or
changed on disk (or that does not match a SHA-256 ``blob_hash`` asked for) is dropped,
a warning line names it, and the caller fetches the file again. This holds for an entry
looked up by its bare file id too. Entries of older songlab versions (no hash in their
name) cannot be checked: they are dropped as misses.

**Private.** Entries are written through :mod:`songlab.localfiles`: a ``0600`` temporary
file renamed into place (several processes share the directory safely), folders made
``0700``; a cache folder open to other users is warned about once. A hit touches the
entry, and when the directory grows past ``max_bytes`` the least recently used entries
go. Only bytes are kept: signed URLs are never cached (they are minted fresh).
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import threading
from pathlib import Path
from typing import Final

import songlab.localfiles as localfiles

__all__ = ["AssetCache", "CACHE_ENV", "DEFAULT_MAX_BYTES", "resolve_cache"]

CACHE_ENV: Final = "SONGLAB_CACHE_DIR"
DEFAULT_MAX_BYTES: Final = 2 * 1024**3  # 2 GiB: a few hundred songs
_HEX64: Final = re.compile(r"(?:sha256:)?([0-9a-f]{64})")
_CHECKED_NAME: Final = re.compile(r"[0-9a-f]{40}_[0-9a-z]+_([0-9a-f]{64})")
log = logging.getLogger("songlab.client")


def _default_dir() -> Path:
    env = os.environ.get(CACHE_ENV)
    if env:
        return Path(env)
    import platformdirs

    return Path(platformdirs.user_cache_dir("songlab")) / "assets"


class AssetCache:
    """Downloaded bytes by (file id, blob hash). ``path=None``: the default directory."""

    def __init__(
        self, path: str | os.PathLike[str] | None = None, *, max_bytes: int = DEFAULT_MAX_BYTES
    ) -> None:
        if not (isinstance(max_bytes, int) and max_bytes >= 0):
            from songlab.client._exceptions import ValidationError

            raise ValidationError("max_bytes", f"a whole number of bytes >= 0, got {max_bytes!r}")
        self.path = Path(path) if path is not None else _default_dir()
        self.max_bytes = max_bytes
        self._lock = threading.Lock()
        self._mode_checked = False

    def __repr__(self) -> str:
        return f"AssetCache({str(self.path)!r}, max_bytes={self.max_bytes})"

    @staticmethod
    def _stem(owner: str, file_id: str) -> str:
        return hashlib.sha256(f"{owner}\n{file_id}".encode()).hexdigest()[:40]

    def _prefix(self, file_id: str, blob_hash: str | None, owner: str = "") -> str:
        tag = hashlib.sha256(blob_hash.encode()).hexdigest()[:16] if blob_hash else "nohash"
        return f"{self._stem(owner, file_id)}_{tag}"

    def _entry(
        self, file_id: str, blob_hash: str | None, owner: str = "", content: bytes | None = None
    ) -> Path:
        """The entry of (owner, file id, blob hash); with ``content``, the exact file that
        holds those bytes (its name ends with their SHA-256), else the one found on disk
        (or where it would go)."""
        prefix = self._prefix(file_id, blob_hash, owner)
        folder = self.path / prefix[:2]
        if content is not None:
            return folder / f"{prefix}_{hashlib.sha256(content).hexdigest()}"
        found = sorted(folder.glob(f"{prefix}*"))
        return found[0] if found else folder / prefix

    def _checked(self) -> None:
        if not self._mode_checked:
            self._mode_checked = True
            localfiles.check_private(self.path, what="the asset cache folder")

    def _drop(self, entry: Path, file_id: str, why: str) -> None:
        entry.unlink(missing_ok=True)
        log.warning(
            "songlab: the cached copy of file %s (%s) %s: dropped, fetching it again",
            file_id,
            entry,
            why,
        )

    def get(self, file_id: str, blob_hash: str | None = None, owner: str = "") -> bytes | None:
        """The cached bytes, or None. Without a blob hash, any entry of the file id (a file
        id names one output for good). Every entry read is hashed again and compared with
        the SHA-256 it was written with (and with a SHA-256 ``blob_hash``): a damaged entry
        is dropped with a warning and is a miss, never wrong audio."""
        self._checked()
        if blob_hash:
            prefixes = [self._prefix(file_id, blob_hash, owner)]
        else:
            prefixes = [f"{self._stem(owner, file_id)}_"]
        want = _HEX64.fullmatch(blob_hash or "")
        candidates = [p for pre in prefixes for p in sorted((self.path / pre[:2]).glob(f"{pre}*"))]
        for entry in candidates:
            written = _CHECKED_NAME.fullmatch(entry.name)
            if written is None:  # an entry of an older songlab: nothing to check it with
                entry.unlink(missing_ok=True)
                continue
            try:
                content = entry.read_bytes()
            except OSError:
                continue
            digest = hashlib.sha256(content).hexdigest()
            if digest != written.group(1):
                self._drop(entry, file_id, f"is damaged ({len(content):,} bytes, not as written)")
                continue
            if want and digest != want.group(1):
                self._drop(entry, file_id, "does not match the service's blob hash")
                continue
            try:
                os.utime(entry)  # most recently used
            except OSError:
                pass
            return content
        return None

    def put(self, file_id: str, blob_hash: str | None, content: bytes, owner: str = "") -> None:
        """Keep ``content`` (atomically, 0600), then trim the cache to ``max_bytes``."""
        if len(content) > self.max_bytes:
            return
        self._checked()
        entry = self._entry(file_id, blob_hash, owner, content)
        localfiles.write_atomic(entry, content)
        prefix = self._prefix(file_id, blob_hash, owner)
        for other in entry.parent.glob(f"{prefix}*"):  # other bytes under the same key
            if other != entry:
                other.unlink(missing_ok=True)
        self._trim()

    def _trim(self) -> None:
        with self._lock:
            entries = []
            total = 0
            for p in self.path.glob("*/*"):
                if p.name.startswith("."):  # a file being written
                    continue
                try:
                    st = p.stat()
                except OSError:
                    continue
                entries.append((st.st_mtime, p, st.st_size))
                total += st.st_size
            for _, p, size in sorted(entries):
                if total <= self.max_bytes:
                    break
                p.unlink(missing_ok=True)
                total -= size

    def size(self) -> int:
        """Bytes held now."""
        return sum(
            p.stat().st_size
            for p in self.path.glob("*/*")
            if p.is_file() and not p.name.startswith(".")
        )


_SHARED: dict[str, AssetCache] = {}
_SHARED_LOCK = threading.Lock()


def resolve_cache(cache: object) -> AssetCache | None:
    """``cache=`` of a client: None/True -> the default cache, False -> none, a directory or
    an :class:`AssetCache`."""
    if cache is False:
        return None
    if isinstance(cache, AssetCache):
        return cache
    if cache is None or cache is True or isinstance(cache, str | os.PathLike):
        key = str(_default_dir() if cache is None or cache is True else Path(cache))
        with _SHARED_LOCK:
            found = _SHARED.get(key)
            if found is None:
                found = _SHARED[key] = AssetCache(key)
            return found
    from songlab.client._exceptions import ValidationError

    raise ValidationError("cache", f"a directory, an AssetCache, None or False, got {cache!r}")
