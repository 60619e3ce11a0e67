"""Private files of a campaign on the organiser's machine: created 0600, folders 0700.

The campaign file holds the secret that signs raters' tokens, and an inbox holds the
raters' answers: neither is anyone else's to read. (The one place listening creates
them; a shared helper of songlab may take its place.)
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["create_exclusive", "private_dir", "write_private"]


def private_dir(path: Path) -> Path:
    """``path`` as a folder only its owner can enter (made 0700 if it is new)."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    return path


def create_exclusive(path: Path, data: bytes) -> None:
    """Write ``data`` to a new file ``path`` (0600): FileExistsError if it exists, never
    an overwrite; the bytes are on disk when it returns."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
    except BaseException:
        path.unlink(missing_ok=True)
        raise


def write_private(path: Path, data: bytes) -> Path:
    """Replace ``path`` with ``data`` atomically, the file 0600 (a temporary name, then a
    rename: a crash leaves the old file or the new one, never half of one)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.part")
    tmp.unlink(missing_ok=True)
    create_exclusive(tmp, data)
    os.replace(tmp, path)
    return path
