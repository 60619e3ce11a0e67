"""Private files on the user's machine: created 0600 in folders made 0700, written whole or not at all.

Every file songlab writes that holds a secret or someone's data (the client's record, the
asset cache, the ledger store, reports and exports, campaign files and answer inboxes, the
sandbox's database) goes through this module, so one set of rules holds everywhere:

- :func:`private_dir` makes a folder and its missing parents ``0700`` (folders that already
  exist are left as they are: they may be the user's own, such as ``~/.cache``);
- :func:`write_atomic` writes bytes or text to a temporary file (``0600``) beside the target,
  fsyncs it, renames it over the target and fsyncs the folder: a reader sees the old file
  or the new one, never half of one, and a crash leaves no half-written file behind;
- :func:`replace_atomically` does the same for a writer that wants a path (pyarrow,
  openpyxl): ``write(tmp)`` fills the temporary file;
- :func:`create_exclusive` writes a new file whole (``0600``) and refuses to replace one
  that exists (``FileExistsError``): for files that must never be overwritten;
- :func:`ensure_private_file` creates an empty ``0600`` file if there is none (SQLite then
  gives its journal and WAL files the same mode), else checks the existing one;
- :func:`check_private` warns (:class:`WideModeWarning`, naming the path, its mode and the
  ``chmod`` that fixes it) when an existing file can be read or written by other users.
  Songlab does not change the mode of a file it did not create: the user may have widened
  it on purpose. A file songlab rewrites atomically comes back ``0600``.

Modes are POSIX: elsewhere (Windows) the files are written the same way and no mode is
checked. This module imports nothing of songlab, so every layer (the sandbox included)
may use it.
"""

from __future__ import annotations

import contextlib
import os
import stat
import uuid
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Final

__all__ = [
    "PRIVATE_DIR_MODE",
    "PRIVATE_FILE_MODE",
    "WideModeWarning",
    "check_private",
    "create_exclusive",
    "ensure_private_file",
    "private_dir",
    "replace_atomically",
    "write_atomic",
]

PRIVATE_FILE_MODE: Final = 0o600
PRIVATE_DIR_MODE: Final = 0o700
_POSIX: Final = os.name == "posix"
_TMP_PREFIX: Final = "."
_TMP_SUFFIX: Final = ".tmp"


class WideModeWarning(UserWarning):
    """A private file songlab reads or writes can be read or written by other users."""


def _tmp_name(target: Path) -> Path:
    return target.with_name(f"{_TMP_PREFIX}{target.name}.{uuid.uuid4().hex}{_TMP_SUFFIX}")


def private_dir(path: str | os.PathLike[str]) -> Path:
    """Make ``path`` and its missing parents as ``0700`` folders; return it as a Path.

    Folders that exist already keep their mode."""
    folder = Path(path).expanduser()
    missing: list[Path] = []
    probe = folder
    while not probe.exists():
        missing.append(probe)
        if probe.parent == probe:
            break
        probe = probe.parent
    for p in reversed(missing):
        try:
            p.mkdir(mode=PRIVATE_DIR_MODE)
        except FileExistsError:  # made by another process meanwhile
            continue
        if _POSIX:
            os.chmod(p, PRIVATE_DIR_MODE)  # whatever the umask left
    if not folder.is_dir():
        raise NotADirectoryError(f"{folder}: not a folder")
    return folder


def check_private(path: str | os.PathLike[str], *, what: str = "file") -> bool:
    """True if ``path`` is absent or private; otherwise warn (:class:`WideModeWarning`) and
    return False. ``what`` names the file in the warning ("the client's record")."""
    if not _POSIX:
        return True
    p = Path(path)
    try:
        st = p.stat()
    except OSError:
        return True
    mode = stat.S_IMODE(st.st_mode)
    if not mode & 0o077:
        return True
    want = PRIVATE_DIR_MODE if stat.S_ISDIR(st.st_mode) else PRIVATE_FILE_MODE
    warnings.warn(
        f"{what} {p} is readable or writable by other users (mode {mode:04o}); "
        f"songlab keeps such files private: chmod {want:o} {p}",
        WideModeWarning,
        stacklevel=2,
    )
    return False


def _fsync_dir(folder: Path) -> None:
    if not _POSIX:
        return
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:  # some filesystems refuse to fsync a folder
        pass
    finally:
        os.close(fd)


def _new_private(path: Path) -> int:
    """A new file opened for writing, 0600 whatever the umask; FileExistsError if present."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    fd = os.open(path, flags, PRIVATE_FILE_MODE)
    if _POSIX:
        os.fchmod(fd, PRIVATE_FILE_MODE)
    return fd


def _write_fd(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]
    os.fsync(fd)


def _as_bytes(data: bytes | str) -> bytes:
    return data.encode("utf-8") if isinstance(data, str) else bytes(data)


def write_atomic(path: str | os.PathLike[str], data: bytes | str) -> Path:
    """Write ``data`` (text as UTF-8) over ``path`` atomically, ``0600``, its folder made
    ``0700`` if missing. Returns the path."""
    target = Path(path)
    payload = _as_bytes(data)
    return replace_atomically(target, lambda tmp: _fill(tmp, payload))


def _fill(tmp: Path, payload: bytes) -> None:
    with open(tmp, "wb") as fh:
        fh.write(payload)


@contextlib.contextmanager
def _temporary(target: Path) -> Iterator[Path]:
    private_dir(target.parent)
    tmp = _tmp_name(target)
    os.close(_new_private(tmp))
    try:
        yield tmp
    finally:
        tmp.unlink(missing_ok=True)


def replace_atomically(path: str | os.PathLike[str], write: Callable[[Path], Any]) -> Path:
    """``write(tmp)`` fills a temporary ``0600`` file beside ``path`` (it exists, empty, when
    ``write`` is called); it is then fsynced and renamed over ``path``, and the folder
    fsynced. On any error the temporary file is removed and ``path`` is untouched."""
    target = Path(path)
    with _temporary(target) as tmp:
        write(tmp)
        if _POSIX:
            os.chmod(tmp, PRIVATE_FILE_MODE)  # a writer that recreated the file
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    _fsync_dir(target.parent)
    return target


def create_exclusive(path: str | os.PathLike[str], data: bytes | str) -> Path:
    """Write a new file ``path`` whole (``0600``, fsynced); ``FileExistsError`` if it exists.

    The bytes go to a temporary file first, which is then hard-linked to ``path`` (the link
    fails if ``path`` exists), so no reader ever sees half the file. Where the filesystem
    has no hard links the file is created with ``O_EXCL`` and written in place."""
    target = Path(path)
    payload = _as_bytes(data)
    with _temporary(target) as tmp:
        fd = os.open(tmp, os.O_WRONLY | getattr(os, "O_BINARY", 0))
        try:
            _write_fd(fd, payload)
        finally:
            os.close(fd)
        try:
            os.link(tmp, target)
        except FileExistsError:
            raise
        except OSError:  # no hard links here (some network and FUSE filesystems)
            fd = _new_private(target)
            try:
                _write_fd(fd, payload)
            except BaseException:
                os.close(fd)
                target.unlink(missing_ok=True)
                raise
            os.close(fd)
    _fsync_dir(target.parent)
    return target


def ensure_private_file(path: str | os.PathLike[str], *, what: str = "file") -> Path:
    """Create ``path`` empty and ``0600`` (its folder ``0700``) if it does not exist; if it
    does, :func:`check_private` it. For files another library opens (SQLite)."""
    target = Path(path)
    private_dir(target.parent)
    try:
        os.close(_new_private(target))
    except FileExistsError:
        check_private(target, what=what)
    return target
