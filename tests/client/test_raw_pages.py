"""generations.raw_pages(): the listing's page bytes, undecoded, with the shared retries."""

from __future__ import annotations

import asyncio
import json

import pytest

from songlab.client import MalformedResponse, RawPage, ValidationError
from tests.client.fakes import task_body


def _pages(fake):
    fake.pages = [
        {"data": [task_body("a"), task_body("b")], "next_cursor": "1"},
        {"data": [task_body("c")], "next_cursor": "2"},
        {"data": [], "next_cursor": None},
    ]


def test_raw_pages_are_the_bodies_as_sent_and_follow_cursors_lazily(client, fake):
    _pages(fake)
    it = client.generations.raw_pages(limit=2)
    assert fake.paths() == []
    first = next(it)
    assert isinstance(first, RawPage) and first.next_cursor == "1"
    assert json.loads(first.content) == fake.pages[0]
    assert fake.paths().count("/v1/generations") == 1
    rest = list(it)
    assert [p.next_cursor for p in rest] == ["2", None]
    assert [json.loads(p.content) for p in rest] == fake.pages[1:]
    assert [r.url.params.get("cursor") for r in fake.requests] == [None, "1", "2"]
    assert all(r.url.params["limit"] == "2" for r in fake.requests)


def test_raw_pages_default_to_the_largest_page(client, fake):
    _pages(fake)
    list(client.generations.raw_pages())
    assert {r.url.params["limit"] for r in fake.requests} == {"100"}


def test_raw_pages_retry_like_every_read(client, fake):
    _pages(fake)
    fake.fail_next(
        "/v1/generations",
        503,
        {"error": "ServiceUnavailable", "message": "busy", "retryable": True},
    )
    fake.fail_next("/v1/generations", None)  # then a connection reset
    pages = list(client.generations.raw_pages(limit=2))
    assert len(pages) == 3
    assert fake.paths().count("/v1/generations") == 5


@pytest.mark.parametrize(
    "body",
    [
        b"<html>busy</html>",
        b'{"next_cursor": null}',
        b'{"data": [], "next_cursor": 7}',
        b"[1, 2]",
        b'{"data": [1, 2',
    ],
    ids=["not-json", "no-data", "cursor-not-string", "not-an-object", "truncated"],
)
def test_an_unreadable_page_is_a_malformed_response(client, fake, body):
    fake.faults["/v1/generations"].append((200, body))
    with pytest.raises(MalformedResponse, match="unreadable task page"):
        next(client.generations.raw_pages())


def test_limit_is_checked_before_any_request(client, fake):
    with pytest.raises(ValidationError, match="limit"):
        client.generations.raw_pages(limit=101)
    assert fake.requests == []


def test_raw_page_repr_shows_no_body(client, fake):
    _pages(fake)
    page = next(client.generations.raw_pages())
    assert repr(page) == f"RawPage(<{len(page.content)} bytes>, next_cursor='1')"


def test_async_raw_pages(aclient, fake):
    _pages(fake)

    async def collect():
        async with aclient:
            return [p async for p in aclient.generations.raw_pages(limit=2)]

    pages = asyncio.run(collect())
    assert [json.loads(p.content) for p in pages] == fake.pages
    assert [r.url.params.get("cursor") for r in fake.requests] == [None, "1", "2"]
