"""The tasks frame from listing page bytes equals the frame from the same tasks as dicts:
same rows, same nulls, same odd-but-valid values, the same errors for bad ones."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pandas as pd
import pytest

from songlab.ledger import _pages, tasks_frame
from songlab.ledger.tasks import tasks_frame_from_pages
from tests.ledger._util import snap


def pages_of(records: list[Any], size: int = 100, **dumps: Any) -> list[bytes]:
    out = []
    for n, start in enumerate(range(0, len(records), size)):
        cursor = str(n + 1) if start + size < len(records) else None
        out.append(
            json.dumps(
                {"data": records[start : start + size], "next_cursor": cursor}, **dumps
            ).encode()
        )
    return out


def test_same_frame_as_the_dict_path(records: list[dict[str, Any]]) -> None:
    expected = tasks_frame(records)
    got = tasks_frame_from_pages(pages_of(records))
    pd.testing.assert_frame_equal(got, expected)
    # the fixture has what the fast path must carry over: traces and failures
    assert got["metadata_json"].notna().sum() > 0 and got["failure_error"].notna().sum() > 0


def test_many_small_batches_and_pretty_printed_pages(
    records: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_pages, "BATCH_BYTES", 50_000)
    expected = tasks_frame(records)
    pages = pages_of(records, size=37, indent=2)
    assert all(b"\n" in p for p in pages)
    pd.testing.assert_frame_equal(tasks_frame_from_pages(pages), expected)
    crlf = [p.replace(b"\n", b"\r\n") for p in pages]
    pd.testing.assert_frame_equal(tasks_frame_from_pages(crlf), expected)


AGENT_META = json.dumps({"steps": [], "usage": {"input_tokens": 1, "output_tokens": 1}})
ODD_BUT_VALID = {
    "license-as-string": {"license": "3"},
    "license-null": {"license": None},
    "license-whole-float": {"license": 3.0},
    "license-missing": {"license": ...},
    "cost-null": {"cost_usd": None},
    "cost-missing": {"cost_usd": ...},
    "naive-timestamp": {"created_at": "2026-11-20T10:00:00", "updated_at": "2026-11-20T10:00:01"},
    "offset-timestamp": {"updated_at": "2026-11-20T12:00:05+02:00"},
    "unknown-keys": {"progress": 0.5, "extra": {"a": [1, 2]}},
    "output-not-an-object": {"output": "x"},
    "output-metadata-object-on-a-song": {"output": {"metadata_json": {"a": 1}}},
    "failure-string-on-completed": {"failure": "boom"},
    "failed-with-error": {
        "status": "failed",
        "cost_usd": None,
        "failure": {"error": "GenerationFailed", "message": "m"},
    },
    "failed-without-failure": {"status": "failed", "cost_usd": None},
    "parent": {"parent_task_id": "run-1"},
    "agent-with-trace": {
        "operation": "agent",
        "model": "flash",
        "cost_usd": None,
        "output": {"metadata_json": AGENT_META},
    },
    "agent-trace-as-object": {
        "operation": "agent",
        "model": "flash",
        "cost_usd": None,
        "output": {"metadata_json": {"steps": []}},
    },
    "agent-without-output": {"operation": "agent", "model": "standard", "output": None},
    "unicode": {"tool_id": 't-é\u2028"quoted"\\n', "model": "v7"},
    "status-queued": {"status": "queued", "cost_usd": None},
}
BAD = {
    "license-9": {"license": 9},
    "license-bool": {"license": True},
    "license-fraction": {"license": 3.5},
    "license-word": {"license": "gold"},
    "float-cost": {"cost_usd": 0.12},
    "nine-decimals": {"cost_usd": "0.123456789"},
    "timestamp": {"created_at": "yesterday"},
    "timestamp-number": {"created_at": 17},
    "status-number": {"status": 2},
    "model-list": {"model": ["v7"]},
    "parent-object": {"parent_task_id": {"id": "x"}},
    "failure-error-number": {"status": "failed", "failure": {"error": 3}},
}


def _record(name: str, fields: dict[str, Any]) -> dict[str, Any]:
    rec = snap(name, **{k: v for k, v in fields.items() if v is not ...})
    for k in [k for k, v in fields.items() if v is ...]:
        del rec[k]
    return rec


@pytest.mark.parametrize("fields", ODD_BUT_VALID.values(), ids=ODD_BUT_VALID.keys())
def test_odd_but_valid_tasks_give_the_same_frame(fields: dict[str, Any]) -> None:
    recs = [snap("plain-1"), _record("odd", fields), snap("plain-2", status="failed")]
    pd.testing.assert_frame_equal(tasks_frame_from_pages(pages_of(recs, size=2)), tasks_frame(recs))


def _error(fn: Any, *args: Any) -> tuple[type, str]:
    with pytest.raises((ValueError, TypeError)) as info:
        fn(*args)
    return type(info.value), str(info.value)


@pytest.mark.parametrize("fields", BAD.values(), ids=BAD.keys())
def test_bad_tasks_get_the_same_error_naming_task_and_field(fields: dict[str, Any]) -> None:
    recs = [snap("ok"), _record("bad-task", fields)]
    expected = _error(tasks_frame, recs)
    assert _error(tasks_frame_from_pages, pages_of(recs)) == expected
    assert f"task bad-task: {list(fields)[-1]}" in expected[1]


def test_a_task_that_is_not_an_object_gets_the_dict_paths_error() -> None:
    page = json.dumps({"data": [snap("a"), "oops"], "next_cursor": None}).encode()
    expected = _error(tasks_frame, [snap("a"), "oops"])
    assert _error(tasks_frame_from_pages, [page]) == expected


@pytest.mark.parametrize(
    ("page", "message"),
    [
        (b"<html>", "listing page 1: not JSON"),
        (b'{"next_cursor": null}', "listing page 1: data"),
        (b'{"data": 5}', "listing page 1: data"),
    ],
    ids=["not-json", "no-data", "data-not-a-list"],
)
def test_unreadable_pages_are_refused_naming_the_page(page: bytes, message: str) -> None:
    good = pages_of([snap("a")])[0]
    with pytest.raises(ValueError, match=message):
        tasks_frame_from_pages([good, page])


def test_pages_must_be_bytes() -> None:
    with pytest.raises(TypeError, match="page: expected the bytes of a listing page, got str"):
        tasks_frame_from_pages(['{"data": []}'])  # type: ignore[list-item]


def test_empty_listing_gives_the_empty_frame() -> None:
    empty = tasks_frame_from_pages([b'{"data": [], "next_cursor": null}'])
    pd.testing.assert_frame_equal(empty, tasks_frame([]))
    pd.testing.assert_frame_equal(tasks_frame_from_pages([]), tasks_frame([]))


class _RawPage:
    def __init__(self, content: bytes) -> None:
        self.content = content


class _Generations:
    """A client-shaped source offering both listings; counts what it serves."""

    def __init__(self, pages: list[bytes]) -> None:
        self._pages = pages
        self.served = 0
        self.limits: list[int] = []

    def raw_pages(self, *, limit: int = 100) -> Iterator[_RawPage]:
        self.limits.append(limit)
        for p in self._pages:
            self.served += 1
            yield _RawPage(p)

    def list(self, *, limit: int = 20) -> Iterator[Any]:
        raise AssertionError("the dict listing must not be used when raw pages are offered")


class _Client:
    def __init__(self, pages: list[bytes]) -> None:
        self.generations = _Generations(pages)


def test_a_client_with_raw_pages_is_read_from_the_bytes(records: list[dict[str, Any]]) -> None:
    client = _Client(pages_of(records))
    pd.testing.assert_frame_equal(tasks_frame(client), tasks_frame(records))
    assert client.generations.limits == [100]


def test_pages_are_read_a_batch_at_a_time(
    records: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_pages, "BATCH_BYTES", 100_000)
    gens = _Generations(pages_of(records, size=50))
    from songlab.ledger.tasks import RAW_TASK

    it = _pages.batches((p.content for p in gens.raw_pages()), RAW_TASK)
    raw, _, _ = next(it)
    first = gens.served
    assert first < len(gens._pages) / 2  # the first batch comes before the listing is read
    assert (
        sum(len(p) for p in gens._pages[: first - 1])
        < 100_000
        <= sum(len(p) for p in gens._pages[:first])
    )
    assert len(raw) == 50 * first


class _AsyncGenerations:
    async def raw_pages(self, *, limit: int = 100) -> Any:  # an async iterator, as AsyncClient's
        yield _RawPage(b'{"data": []}')

    def list(self, *, limit: int = 20) -> Any:
        return self.raw_pages(limit=limit)


def test_an_async_client_gets_the_clear_error_of_the_dict_listing() -> None:
    class _AsyncClient:
        generations = _AsyncGenerations()

    with pytest.raises(TypeError, match="source: expected an iterable of task dicts"):
        tasks_frame(_AsyncClient())
