"""The listening protocols by name: the one list of them, written out here.

Each protocol is a :class:`~songlab.listening.session.ListeningSession` subclass in its own
module of :mod:`songlab.listening.protocols`. Sessions, campaigns, rater pages, the
scripted listener and the notebook panel reach a protocol only through this registry, by
its name. Adding a protocol: its module, and its line in :data:`PROTOCOLS`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import Any

import songlab.listening.protocols.abx as abx
import songlab.listening.protocols.acr as acr
import songlab.listening.protocols.dcr as dcr
import songlab.listening.protocols.mushra as mushra
import songlab.listening.protocols.preference as preference
from songlab.listening._errors import ListeningError
from songlab.listening._store import FORMAT
from songlab.listening.session import ListeningSession

__all__ = ["PROTOCOLS", "load", "protocol"]

PROTOCOLS: Mapping[str, type[ListeningSession]] = MappingProxyType(
    {
        cls.kind: cls
        for cls in (
            preference.PreferenceSession,
            abx.ABXSession,
            mushra.MushraSession,
            acr.ACRSession,
            dcr.DCRSession,
        )
    }
)


def protocol(kind: str, /) -> type[ListeningSession]:
    """The session class of protocol ``kind`` (one of :data:`PROTOCOLS`):
    ``protocol("acr")(clips, prompts=..., seed=...)`` makes a session of it."""
    try:
        return PROTOCOLS[kind]
    except (KeyError, TypeError):
        raise ListeningError(
            "kind", f"must be one of {', '.join(PROTOCOLS)}; got {kind!r}"
        ) from None


def load(
    path: str | Path, clips: Mapping[str, Sequence[Any]], /, *, sr: int | None = None
) -> ListeningSession:
    """Resume a saved session; ``clips`` must be the same clips it was made with."""
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ListeningError("path", f"is not a readable session file ({exc})") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT or doc.get("kind") not in PROTOCOLS:
        raise ListeningError("path", f"is not a {FORMAT} session file")
    return PROTOCOLS[doc["kind"]]._restore(doc, clips, sr)
