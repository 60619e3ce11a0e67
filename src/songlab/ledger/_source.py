"""Where task dicts come from: an iterable of dicts, or anything client-shaped.

The ledger never depends on the client's internals. A *source* is either

- an iterable of task snapshots (dicts in design.md's snapshot shape, or
  objects with a ``.raw`` dict), newest first when it is a listing; or
- a client: anything with ``generations.list()`` yielding such items (and,
  optionally, ``generations.get(task_id)`` to re-fetch one task).

:func:`http_listing` walks ``GET /v1/generations`` over plain httpx, lazily,
for callers that have an HTTP client but no songlab client.
"""

from __future__ import annotations

import enum
import inspect
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, Final, cast

if TYPE_CHECKING:
    import httpx

__all__ = [
    "AUTO",
    "Auto",
    "as_dict",
    "getter",
    "http_listing",
    "iter_tasks",
    "raw_pages",
    "tool_lookup",
]


def as_dict(item: object) -> Mapping[str, object]:
    """A task snapshot as a mapping: the item itself, or its ``.raw`` dict."""
    if isinstance(item, Mapping):
        return item
    raw = getattr(item, "raw", None)
    if isinstance(raw, Mapping):
        return raw
    raise TypeError(
        f"task: expected a dict or an object with a .raw dict, got {type(item).__name__}"
    )


def _listing(source: object) -> Iterable[object] | None:
    gens = getattr(source, "generations", None)
    lister = getattr(gens, "list", None)
    if not callable(lister):
        return None
    listed: Iterable[object]
    try:
        listed = lister(limit=100)  # fewest pages, where the client takes a page size
    except TypeError:
        listed = lister()
    return listed


def raw_pages(source: object) -> Iterable[bytes] | None:
    """The listing's page bytes, 100 tasks a page, if the source is a client that
    offers ``generations.raw_pages()`` (songlab's); else None."""
    gens = getattr(source, "generations", None)
    pager = getattr(gens, "raw_pages", None)
    if not callable(pager):
        return None
    pages = pager(limit=100)
    if not hasattr(pages, "__iter__"):
        return None  # an async client's pages: the dict listing says what to do instead
    return (page.content for page in pages)


def iter_tasks(source: object) -> Iterator[Mapping[str, object]]:
    """Task dicts from a source (see the module docstring), lazily."""
    if isinstance(source, Mapping) or isinstance(source, (str, bytes)):
        raise TypeError("source: expected an iterable of task dicts or a client, not one value")
    listed = _listing(source)
    items = listed if listed is not None else source
    try:
        it = iter(cast(Iterable[object], items))  # checked: iter raises TypeError
    except TypeError:
        raise TypeError(
            "source: expected an iterable of task dicts or an object with "
            f"generations.list(), got {type(source).__name__}"
        ) from None
    for item in it:
        yield as_dict(item)


def getter(source: object) -> Callable[[str], Mapping[str, object]] | None:
    """``task_id -> task dict`` if the source can fetch one task, else None."""
    gens = getattr(source, "generations", None)
    get = getattr(gens, "get", None)
    if gens is not None and callable(get):
        return lambda task_id: as_dict(get(task_id))
    get_task = getattr(source, "get_task", None)
    if callable(get_task):
        return lambda task_id: as_dict(get_task(task_id))
    return None


class http_listing:  # lower case: used like a function, also a source with .get
    """A source over plain httpx: ``GET /v1/generations`` page by page, lazily.

    ``http`` is an ``httpx.Client`` whose base URL and bearer header are set.
    Iterating yields task dicts newest first, fetching the next page only when
    needed; ``get_task(task_id)`` fetches one task.
    """

    def __init__(self, http: httpx.Client, *, page_size: int = 100) -> None:
        if not 1 <= page_size <= 100:
            raise ValueError(f"page_size: must be 1-100, got {page_size}")
        self._http = http
        self._page_size = page_size
        self.pages_fetched = 0

    def __iter__(self) -> Iterator[dict[str, object]]:
        cursor: str | None = None
        while True:
            params: dict[str, str | int] = {"limit": self._page_size}
            if cursor:
                params["cursor"] = cursor
            resp = self._http.get("/v1/generations", params=params)
            resp.raise_for_status()
            self.pages_fetched += 1
            body = resp.json()
            yield from body["data"]
            cursor = body.get("next_cursor")
            if not cursor:
                return

    def list_tools(self) -> list[dict[str, object]]:
        """``GET /v1/tools``: the entries (each with id, model and operation)."""
        resp = self._http.get("/v1/tools")
        resp.raise_for_status()
        body = resp.json()
        data = body.get("data") if isinstance(body, dict) else body
        return data if isinstance(data, list) else []

    def get_task(self, task_id: str) -> dict[str, object]:
        resp = self._http.get(f"/v1/generations/{task_id}")
        resp.raise_for_status()
        task: dict[str, object] = resp.json()
        return task


class Auto(enum.Enum):
    """The type of :data:`AUTO` (one member, so ``x is AUTO`` narrows a parameter)."""

    AUTO = "AUTO"

    def __repr__(self) -> str:
        return "AUTO"


AUTO: Final = Auto.AUTO  # "take it from the source" (a client's record, its tool listing)

TOOLS_TTL_S = 300.0
_TOOLS: weakref.WeakKeyDictionary[Any, tuple[float, dict[str, tuple[str, str]]]] = (
    weakref.WeakKeyDictionary()
)
_TOOLS_LOCK = threading.Lock()


def _tool_entry(item: object) -> tuple[str, str, str] | None:
    d = item if isinstance(item, Mapping) else getattr(item, "raw", None)
    tid, op, model = (
        (d.get("id"), d.get("operation"), d.get("model"))
        if isinstance(d, Mapping)
        else (
            getattr(item, "id", None),
            getattr(item, "operation", None),
            getattr(item, "model", None),
        )
    )
    if (
        isinstance(tid, str)
        and isinstance(op, str)
        and isinstance(model, str)
        and tid
        and op
        and model
    ):
        return tid, op, model
    return None


def tool_lookup(source: object) -> dict[str, tuple[str, str]] | None:
    """``{tool_id: (operation, model)}`` from the source's tool listing (``GET /v1/tools``),
    if the source is a client that has one (``tools.list()``), else None. Cached per
    client for :data:`TOOLS_TTL_S` seconds (tool ids are stable, the spec says)."""
    tools = getattr(source, "tools", None)
    lister = getattr(tools, "list", None)
    if not callable(lister):
        lister = getattr(source, "list_tools", None)  # http_listing
        if not callable(lister):
            return None
    now = time.monotonic()
    with _TOOLS_LOCK:
        try:
            hit = _TOOLS.get(source)
        except TypeError:
            hit = None
        if hit is not None and now - hit[0] < TOOLS_TTL_S:
            return hit[1]
    listed = lister()
    if inspect.isawaitable(listed):  # an async client: the caller gives tools= itself
        close = getattr(listed, "close", None)
        if callable(close):
            close()
        return None
    table = {e[0]: (e[1], e[2]) for e in map(_tool_entry, listed) if e is not None}
    with _TOOLS_LOCK:
        try:
            _TOOLS[source] = (now, table)
        except TypeError:
            pass
    return table
