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

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

__all__ = ["as_dict", "getter", "http_listing", "iter_tasks", "raw_pages"]


def as_dict(item: Any) -> Mapping[str, Any]:
    """A task snapshot as a mapping: the item itself, or its ``.raw`` dict."""
    if isinstance(item, Mapping):
        return item
    raw = getattr(item, "raw", None)
    if isinstance(raw, Mapping):
        return raw
    raise TypeError(
        f"task: expected a dict or an object with a .raw dict, got {type(item).__name__}"
    )


def _listing(source: Any) -> Iterable[Any] | None:
    gens = getattr(source, "generations", None)
    lister = getattr(gens, "list", None)
    if not callable(lister):
        return None
    try:
        return lister(limit=100)  # fewest pages, where the client takes a page size
    except TypeError:
        return lister()


def raw_pages(source: Any) -> Iterable[bytes] | None:
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


def iter_tasks(source: Any) -> Iterator[Mapping[str, Any]]:
    """Task dicts from a source (see the module docstring), lazily."""
    if isinstance(source, Mapping) or isinstance(source, (str, bytes)):
        raise TypeError("source: expected an iterable of task dicts or a client, not one value")
    listed = _listing(source)
    items = listed if listed is not None else source
    try:
        it = iter(items)
    except TypeError:
        raise TypeError(
            "source: expected an iterable of task dicts or an object with "
            f"generations.list(), got {type(source).__name__}"
        ) from None
    for item in it:
        yield as_dict(item)


def getter(source: Any) -> Callable[[str], Mapping[str, Any]] | None:
    """``task_id -> task dict`` if the source can fetch one task, else None."""
    gens = getattr(source, "generations", None)
    get = getattr(gens, "get", None)
    if gens is not None and callable(get):
        return lambda task_id: as_dict(get(task_id))
    get = getattr(source, "get_task", None)
    if callable(get):
        return lambda task_id: as_dict(get(task_id))
    return None


class http_listing:  # noqa: N801 - used like a function, also a source with .get
    """A source over plain httpx: ``GET /v1/generations`` page by page, lazily.

    ``http`` is an ``httpx.Client`` whose base URL and bearer header are set.
    Iterating yields task dicts newest first, fetching the next page only when
    needed; ``get_task(task_id)`` fetches one task.
    """

    def __init__(self, http: Any, *, page_size: int = 100) -> None:
        if not 1 <= page_size <= 100:
            raise ValueError(f"page_size: must be 1-100, got {page_size}")
        self._http = http
        self._page_size = page_size
        self.pages_fetched = 0

    def __iter__(self) -> Iterator[dict[str, Any]]:
        cursor: str | None = None
        while True:
            params: dict[str, Any] = {"limit": self._page_size}
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

    def get_task(self, task_id: str) -> dict[str, Any]:
        resp = self._http.get(f"/v1/generations/{task_id}")
        resp.raise_for_status()
        return resp.json()
