"""Cursor pages you iterate: each page is fetched only when the previous one is used up.

``pages``/``apages`` follow ``next_cursor`` with a client's driver (the page operation of
each cursor driven blocking or awaited); ``items``/``aitems`` flatten the pages' tasks.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Protocol, TypeVar

from songlab.client._call import Op
from songlab.client._models import Page, Task

__all__ = ["PageOp", "PageT", "aitems", "apages", "items", "pages"]


class _Paged(Protocol):
    @property
    def next_cursor(self) -> str | None: ...


PageT = TypeVar("PageT", bound=_Paged)
PageOp = Callable[[str | None], Op[PageT]]


def pages(drive: Callable[[Op[PageT]], PageT], page_op: PageOp[PageT]) -> Iterator[PageT]:
    """``for page in ...``: the first page, then each ``next_cursor``'s, as you iterate."""
    cursor: str | None = None
    while True:
        page = drive(page_op(cursor))
        yield page
        if not page.next_cursor:
            return
        cursor = page.next_cursor


async def apages(
    drive: Callable[[Op[PageT]], Awaitable[PageT]], page_op: PageOp[PageT]
) -> AsyncIterator[PageT]:
    """``async for page in ...``."""
    cursor: str | None = None
    while True:
        page = await drive(page_op(cursor))
        yield page
        if not page.next_cursor:
            return
        cursor = page.next_cursor


def items(drive: Callable[[Op[Page]], Page], page_op: PageOp[Page]) -> Iterator[Task]:
    """``for task in client.generations.list(): ...`` follows ``next_cursor`` lazily."""
    for page in pages(drive, page_op):
        yield from page.data


async def aitems(
    drive: Callable[[Op[Page]], Awaitable[Page]], page_op: PageOp[Page]
) -> AsyncIterator[Task]:
    """``async for task in client.generations.list(): ...``."""
    async for page in apages(drive, page_op):
        for task in page.data:
            yield task
