"""What ``Campaign.collect`` reads (pure helpers): rater ids, answer sources, its error.

``sources(source)`` turns a path (a file or a directory of ``*.json``), a list of
paths, documents or bytes, or a server (anything with ``received_files()``) into
``(name, raw)`` pairs. A path is read only if it is a regular file (not a symbolic link,
a directory, a device or a pipe) of at most 1 MB, and at most that much of it is read;
anything else becomes an :class:`~songlab.listening._answers.Unreadable` that says why,
which the parser refuses by name, so one bad entry never stops the others.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import songlab.listening._answers as ans
from songlab.listening._errors import ListeningError

MAX_RATERS = 20_000  # slots of a crowd campaign: a rater's design costs about 2 ms to make


class CollectError(ListeningError):
    """Some answer files were refused; the accepted ones were kept.

    ``refused``: ``[(source, reason), ...]``; ``accepted``: how many files were taken;
    ``unchanged``: how many had been collected before from the same place.
    """

    def __init__(self, refused: list[tuple[str, str]], accepted: int, unchanged: int = 0) -> None:
        self.refused, self.accepted, self.unchanged = refused, accepted, unchanged
        lines = "\n".join(f"  {src}: {why}" for src, why in refused)
        before = f" ({unchanged} collected before)" if unchanged else ""
        ListeningError.__init__(
            self,
            "answers",
            f"{len(refused)} answer file(s) refused, {accepted} accepted and kept{before}:\n"
            f"{lines}",
        )


@dataclass(frozen=True)
class Received:
    """An accepted answer file: where it came from and its document."""

    source: str
    doc: dict[str, Any]


def rater_ids(raters: int | Sequence[str]) -> list[str]:
    if isinstance(raters, int) and not isinstance(raters, bool):
        if not 1 <= raters <= MAX_RATERS:
            raise ListeningError("raters", f"must be 1..{MAX_RATERS:,} raters; got {raters}")
        return [f"r{i + 1:02d}" for i in range(raters)]
    if isinstance(raters, str) or not isinstance(raters, Sequence) or not raters:
        raise ListeningError("raters", "must be a count or a non-empty list of rater ids")
    ids = [str(r) for r in raters]
    bad = [r for r in ids if not ans.RATER_ID.match(r)]
    if bad or len(set(ids)) != len(ids):
        raise ListeningError(
            "raters", f"ids must be distinct, 1-40 of A-Z a-z 0-9 _ . - ; bad: {bad or ids}"
        )
    return ids


def read(path: Path) -> bytes | ans.Unreadable:
    """The bytes of ``path`` if it is a regular file an answer file can be, else why not."""
    try:
        st = os.lstat(path)
    except OSError as exc:
        return ans.Unreadable(f"cannot be read ({exc.strerror or exc})")
    if stat.S_ISLNK(st.st_mode):
        return ans.Unreadable("is a symbolic link; not followed")
    if not stat.S_ISREG(st.st_mode):
        return ans.Unreadable("is not a regular file (a directory, a device or a pipe); not read")
    if st.st_size > ans.MAX_ANSWER_BYTES:
        return ans.Unreadable(
            f"is {st.st_size:,} bytes, larger than an answer file can be "
            f"({ans.MAX_ANSWER_BYTES:,}); not read"
        )
    try:  # no symlink, no blocking on a pipe swapped in since the check
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        return ans.Unreadable(f"cannot be read ({exc.strerror or exc})")
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            return ans.Unreadable("is not a regular file; not read")
        return fh.read(ans.MAX_ANSWER_BYTES + 1)


def shown(name: str) -> str:
    """A file name as text every later step can print, save and encode: a name that is not
    UTF-8 (its bytes kept by the OS as lone surrogates) shows those bytes as ``\\xff``."""
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def sources(source: Any) -> Iterable[tuple[str, Any]]:
    """``(name, raw)`` of each answer file in ``source`` (names always printable text)."""
    for name, raw in _sources(source):
        yield shown(str(name)), raw


def _sources(source: Any) -> Iterable[tuple[str, Any]]:
    if hasattr(source, "received_files"):
        yield from source.received_files()
        return
    if isinstance(source, str | Path):
        path = Path(source)
        if path.is_dir() and not path.is_symlink():
            for entry in sorted(os.scandir(path), key=lambda e: e.name):
                if entry.name.endswith(".json"):
                    yield entry.name, read(Path(entry.path))
            return
        yield (path.name or str(source)), read(path)
        return
    if isinstance(source, dict | bytes):
        yield "answer file", source
        return
    if isinstance(source, Iterable):
        for i, item in enumerate(source):
            if isinstance(item, str | Path):
                yield from _sources(item)
            else:  # named by place and form only: a refusal names the rater, once
                yield f"item {i}" + (" (text)" if isinstance(item, bytes | str) else ""), item
        return
    raise ListeningError(
        "source", "must be a path, a list of paths/documents, or a served campaign's server"
    )
