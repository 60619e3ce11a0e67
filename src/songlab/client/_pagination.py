"""Cursor pages you iterate: each page is fetched only when the previous one is used up."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

from songlab.client._models import Page, Task

__all__ = ["AsyncCursorIterator", "CursorIterator"]


class CursorIterator:
    """``for task in client.generations.list(): ...`` follows ``next_cursor`` lazily."""

    def __init__(self, drive: Callable[[Any], Page], page_op: Callable[[str | None], Any]):
        self._drive = drive
        self._page_op = page_op

    def pages(self) -> Iterator[Page]:
        cursor: str | None = None
        while True:
            page = self._drive(self._page_op(cursor))
            yield page
            if not page.next_cursor:
                return
            cursor = page.next_cursor

    def __iter__(self) -> Iterator[Task]:
        for page in self.pages():
            yield from page.data


class AsyncCursorIterator:
    """``async for task in client.generations.list(): ...``."""

    def __init__(self, drive: Callable[[Any], Any], page_op: Callable[[str | None], Any]):
        self._drive = drive
        self._page_op = page_op

    async def pages(self) -> AsyncIterator[Page]:
        cursor: str | None = None
        while True:
            page = await self._drive(self._page_op(cursor))
            yield page
            if not page.next_cursor:
                return
            cursor = page.next_cursor

    async def __aiter__(self) -> AsyncIterator[Task]:
        async for page in self.pages():
            for task in page.data:
                yield task
