"""What ``Campaign.collect`` reads (pure helpers): rater ids, answer sources, its error.

``sources(source)`` turns a path (a file or a directory of ``*.json``), a list of
paths, documents or bytes, or a server (anything with ``received_files()``) into
``(name, raw)`` pairs; an unreadable path becomes a document the parser refuses,
so one bad file never stops the others.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import songlab.listening._answers as ans
from songlab.listening._errors import ListeningError


class CollectError(ListeningError):
    """Some answer files were refused; the accepted ones were kept.

    ``refused``: ``[(source, reason), ...]``; ``accepted``: how many files were taken.
    """

    def __init__(self, refused: list[tuple[str, str]], accepted: int) -> None:
        self.refused, self.accepted = refused, accepted
        lines = "\n".join(f"  {src}: {why}" for src, why in refused)
        ListeningError.__init__(
            self,
            "answers",
            f"{len(refused)} answer file(s) refused, {accepted} accepted and kept:\n{lines}",
        )


@dataclass(frozen=True)
class Received:
    """An accepted answer file: where it came from and its document."""

    source: str
    doc: dict[str, Any]


def rater_ids(raters: int | Sequence[str]) -> list[str]:
    if isinstance(raters, int) and not isinstance(raters, bool):
        if not 1 <= raters <= 1000:
            raise ListeningError("raters", f"must be 1..1000 raters; got {raters}")
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


def sources(source: Any) -> Iterable[tuple[str, Any]]:
    if hasattr(source, "received_files"):
        yield from source.received_files()
        return
    if isinstance(source, str | Path):
        path = Path(source)
        if path.is_dir():
            for p in sorted(path.glob("*.json")):
                yield p.name, p.read_bytes()
            return
        try:
            yield path.name, path.read_bytes()
        except OSError as exc:
            yield str(source), exc
        return
    if isinstance(source, dict | bytes):
        yield "answer file", source
        return
    if isinstance(source, Iterable):
        for i, item in enumerate(source):
            if isinstance(item, str | Path):
                yield from sources(item)
            else:
                rater = item.get("rater") if isinstance(item, dict) else None
                yield f"item {i}" + (f" (rater {rater!r})" if isinstance(rater, str) else ""), item
        return
    raise ListeningError("source", "must be a path, a list of paths/documents, or a CampaignServer")
