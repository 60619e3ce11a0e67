"""The local cache of downloaded assets: content-addressed, size-capped, least recently used.

An output file is named by its ``file_id`` and its ``blob_hash`` (the service's content
hash), so the bytes of one (file id, blob hash) never change: a cached asset is served
without a request. Files are the account's own (the service answers 404 to anyone
else), so entries are kept per owner (the non-secret key id and the base url): a
client never reads from the cache what the service would refuse it. Entries are files under ``$SONGLAB_CACHE_DIR`` if set, else
``platformdirs.user_cache_dir("songlab")/assets``; each is written to a temporary file
and renamed into place (several processes share the directory safely); a hit touches
the entry, and when the directory grows past ``max_bytes`` the least recently used
entries go. Only bytes are kept: signed URLs are never cached (they are minted fresh).
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
import threading
from pathlib import Path
from typing import Final

__all__ = ["AssetCache", "CACHE_ENV", "DEFAULT_MAX_BYTES", "resolve_cache"]

CACHE_ENV: Final = "SONGLAB_CACHE_DIR"
DEFAULT_MAX_BYTES: Final = 2 * 1024**3  # 2 GiB: a few hundred songs
_HEX64: Final = re.compile(r"(?:sha256:)?([0-9a-f]{64})")


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
            from songlab.client._errors import ValidationError

            raise ValidationError("max_bytes", f"a whole number of bytes >= 0, got {max_bytes!r}")
        self.path = Path(path) if path is not None else _default_dir()
        self.max_bytes = max_bytes
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"AssetCache({str(self.path)!r}, max_bytes={self.max_bytes})"

    @staticmethod
    def _stem(owner: str, file_id: str) -> str:
        return hashlib.sha256(f"{owner}\n{file_id}".encode()).hexdigest()[:40]

    def _entry(self, file_id: str, blob_hash: str | None, owner: str = "") -> Path:
        tag = hashlib.sha256(blob_hash.encode()).hexdigest()[:16] if blob_hash else "nohash"
        stem = self._stem(owner, file_id)
        return self.path / stem[:2] / f"{stem}_{tag}"

    def get(self, file_id: str, blob_hash: str | None = None, owner: str = "") -> bytes | None:
        """The cached bytes, or None. Without a blob hash, any entry of the file id (a file
        id names one output for good). Bytes that do not match a SHA-256 blob hash are
        dropped (a damaged entry is a miss, never wrong audio)."""
        if blob_hash:
            candidates = [self._entry(file_id, blob_hash, owner)]
        else:
            stem = self._stem(owner, file_id)
            candidates = sorted((self.path / stem[:2]).glob(f"{stem}_*"))
        for entry in candidates:
            try:
                content = entry.read_bytes()
            except OSError:
                continue
            m = _HEX64.fullmatch(blob_hash or "")
            if m and hashlib.sha256(content).hexdigest() != m.group(1):
                entry.unlink(missing_ok=True)
                continue
            try:
                os.utime(entry)  # most recently used
            except OSError:
                pass
            return content
        return None

    def put(self, file_id: str, blob_hash: str | None, content: bytes, owner: str = "") -> None:
        """Keep ``content`` (atomically), then trim the cache to ``max_bytes``."""
        if len(content) > self.max_bytes:
            return
        entry = self._entry(file_id, blob_hash, owner)
        entry.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=entry.parent, prefix=".tmp-")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(content)
            os.replace(tmp, entry)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        self._trim()

    def _trim(self) -> None:
        with self._lock:
            entries = []
            total = 0
            for p in self.path.glob("*/*"):
                if p.name.startswith(".tmp-"):
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
        return sum(p.stat().st_size for p in self.path.glob("*/*") if p.is_file())


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
    from songlab.client._errors import ValidationError

    raise ValidationError("cache", f"a directory, an AssetCache, None or False, got {cache!r}")
