"""Client-side attribution: who asked for each create, told to listeners, never sent.

The API has no label field, so labels (a project and free tags) live on the
caller's side: a context variable holds the labels active in the current
context (``songlab.ledger.attribution`` sets it), a client may carry default
labels, and every create the service accepted is handed, as the record's
:class:`~songlab.client._create_record.CreateRecord` (built once by the create path), to
the listeners registered here. Nothing in this module touches a request: labels
never reach the service.

``key_id`` is a short, non-secret identifier of the API key (a truncated
SHA-256), so spend can be broken down by key without the key itself ever being
stored or shown.
"""

from __future__ import annotations

import hashlib
import logging
import re
import threading
import weakref
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from songlab.client._create_record import CreateRecord

__all__ = [
    "Labels",
    "active_labels",
    "add_listener",
    "client_defaults",
    "key_id",
    "make_labels",
    "notify",
    "scoped_labels",
    "set_client_defaults",
]

log = logging.getLogger("songlab.client")


@dataclass(frozen=True, slots=True)
class Labels:
    project: str | None = None
    tags: tuple[str, ...] = ()

    def merged(self, inner: Labels) -> Labels:
        """``inner`` inside ``self``: its project wins, tags add up (in order, no repeats)."""
        tags = self.tags + tuple(t for t in inner.tags if t not in self.tags)
        return Labels(inner.project if inner.project is not None else self.project, tags)


_PROJECT = re.compile(r"[A-Za-z0-9_.:\- ]{1,64}")
_TAG = re.compile(r"[A-Za-z0-9_.:\-]{1,64}")


def make_labels(project: str | None = None, tags: Iterable[str] | str = ()) -> Labels:
    """Checked labels; a :class:`ValidationError` (a ValueError) names the field and the rule."""
    from songlab.client._exceptions import ValidationError

    if project is not None and (
        not isinstance(project, str)
        or not _PROJECT.fullmatch(project)
        or project != project.strip()
    ):
        raise ValidationError(
            "project", f"1-64 characters of A-Z a-z 0-9 _ . : - and inner spaces, got {project!r}"
        )
    tag_list = [tags] if isinstance(tags, str) else list(tags)
    for t in tag_list:
        if not isinstance(t, str) or not _TAG.fullmatch(t):
            raise ValidationError("tags", f"each 1-64 characters of A-Z a-z 0-9 _ . : -, got {t!r}")
    return Labels(project, tuple(dict.fromkeys(tag_list)))


_NONE: Final = Labels()  # frozen, so a safe shared default
_SCOPE: ContextVar[Labels] = ContextVar("songlab_labels", default=_NONE)
_DEFAULTS: weakref.WeakKeyDictionary[object, Labels] = weakref.WeakKeyDictionary()
Listener = Callable[["CreateRecord"], object]
_LISTENERS: list[tuple[Listener, weakref.ReferenceType[object] | None]] = []
_LOCK = threading.Lock()


def key_id(api_key: str) -> str:
    """``key_`` + the first 12 hex digits of the key's SHA-256: names a key, reveals nothing."""
    return "key_" + hashlib.sha256(api_key.encode()).hexdigest()[:12]


@contextmanager
def scoped_labels(labels: Labels) -> Iterator[Labels]:
    """Labels for the creates made in this context (nested scopes merge)."""
    merged = _SCOPE.get().merged(labels)
    token = _SCOPE.set(merged)
    try:
        yield merged
    finally:
        _SCOPE.reset(token)


def set_client_defaults(client: object, labels: Labels | None) -> None:
    """Default labels of ``client`` (None removes them); a scope's labels add to them."""
    with _LOCK:
        if labels is None:
            _DEFAULTS.pop(client, None)
        else:
            _DEFAULTS[client] = labels


def client_defaults(client: object) -> Labels:
    try:
        return _DEFAULTS.get(client, _NONE)
    except TypeError:  # not weak-referenceable (None): no defaults
        return _NONE


def active_labels(client: object) -> Labels:
    """The labels a create on ``client`` would carry now."""
    return client_defaults(client).merged(_SCOPE.get())


def add_listener(listener: Listener, *, client: object = None) -> Callable[[], None]:
    """Call ``listener(record)`` after every accepted create (of ``client`` only, if given).

    Returns a function that removes it. A listener that raises is logged and
    never fails the create (the task exists and is being billed).
    """
    ref = weakref.ref(client) if client is not None else None
    entry = (listener, ref)
    with _LOCK:
        _LISTENERS.append(entry)

    def remove() -> None:
        with _LOCK:
            if entry in _LISTENERS:
                _LISTENERS.remove(entry)

    return remove


def notify(client: object, record: CreateRecord) -> None:
    """Tell the listeners about one accepted create (called by the create path)."""
    with _LOCK:
        targets = [fn for fn, ref in _LISTENERS if ref is None or ref() is client]
    for fn in targets:
        try:
            fn(record)
        except Exception:  # a listener never fails a create that succeeded (logged)
            log.exception("attribution listener failed for task %s", record.task_id)
