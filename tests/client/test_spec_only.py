"""The client on what the spec shows: spec-only answers parse, unknown fields are ignored,
guessed fields are read through ``field_names`` (one line per fact) and never required."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest

import songlab.client.field_names as field_names
from songlab.client._models import (
    parse_event,
    parse_task,
    parse_tools,
    parse_upload,
)

SPEC_TASK = {
    "task_id": "t1",
    "status": "completed",
    "output": {
        "metadata_json": json.dumps({"vocal_id": "voice-1"}),
        "assets": [{"file_id": "f1", "blob_hash": "ab", "url": "http://x/_storage/f1"}],
    },
}


def test_a_spec_only_snapshot_parses_and_every_guess_is_unknown() -> None:
    t = parse_task(SPEC_TASK)
    assert (t.task_id, t.status, t.done, t.vocal_id, t.file_ids) == (
        "t1",
        "completed",
        True,
        "voice-1",
        ("f1",),
    )
    assert (
        t.tool_id,
        t.operation,
        t.model,
        t.license,
        t.created_at,
        t.updated_at,
        t.cost_usd,
        t.progress,
        t.failure,
    ) == (None,) * 9
    assert t.output.assets[0].name is None and t.output.assets[0].mime_type is None


def test_unknown_fields_are_ignored_everywhere() -> None:
    noisy = {**SPEC_TASK, "x_new": {"a": [1]}, "output": {**SPEC_TASK["output"], "x": 1}}
    assert parse_task(noisy) == parse_task(SPEC_TASK)
    tools = parse_tools(
        {
            "data": [{"id": "a1", "model": "flash", "operation": "agent", "x_tier_rank": 3}],
            "x_page": None,
        }
    )
    assert tools[0].is_agent and tools[0].name is None


def test_unreadable_guessed_fields_are_unknown_not_a_refused_task() -> None:
    t = parse_task(
        {
            **SPEC_TASK,
            "created_at": "yesterday",
            "cost_usd": "n/a",
            "license": 3.5,
            "progress": "half",
            "failure": "boom",
        }
    )
    assert (t.created_at, t.cost_usd, t.license, t.progress, t.failure) == (None,) * 5


def test_the_names_tried_are_one_line_per_fact(monkeypatch: pytest.MonkeyPatch) -> None:
    """A user who learns the real name changes one tuple; every reader follows."""
    monkeypatch.setattr(field_names, "TASK_CREATED_AT", ("createdAt", "created_at"))
    monkeypatch.setattr(field_names, "TASK_COST_USD", ("billed_usd", "cost_usd"))
    monkeypatch.setattr(field_names, "EVENT_PROGRESS", ("pct_done",))
    t = parse_task({**SPEC_TASK, "createdAt": "2026-11-25T08:00:00Z", "billed_usd": "0.07"})
    assert t.created_at is not None and t.created_at.hour == 8
    assert t.cost_usd == Decimal("0.07")
    e = parse_event(json.dumps({"seq": 2, "pct_done": 0.5}), sse_id="2", sse_event="progress")
    assert e.progress == 0.5


def test_a_kind_and_seq_event_parses() -> None:
    e = parse_event('{"seq": 3}', sse_id="3", sse_event="terminal")
    assert (e.seq, e.kind, e.is_terminal, e.status, e.progress, e.step) == (
        3,
        "terminal",
        True,
        None,
        None,
        None,
    )
    signal = parse_event('{"seq": 9, "cursor": 7}', sse_id="9", sse_event="timeout")
    assert signal.is_resume_signal and signal.cursor == 7


def test_an_upload_answer_of_file_id_only_keeps_what_the_client_sent() -> None:
    up = parse_upload({"file_id": "f1"}, mime_type="audio/mpeg", size_bytes=1234)
    assert (up.file_id, up.mime_type, up.size_bytes, up.sha256) == ("f1", "audio/mpeg", 1234, None)
    told = parse_upload(
        {"file_id": "f1", "mime_type": "audio/mp4", "size_bytes": 99},
        mime_type="audio/mpeg",
        size_bytes=1234,
    )
    assert (told.mime_type, told.size_bytes) == ("audio/mp4", 99)  # the service's word wins


def test_every_fact_names_where_it_is_read_and_what_songlab_does_without() -> None:
    for fact, (where, names, without) in field_names.FACTS.items():
        assert where and names and all(isinstance(n, str) and n for n in names), fact
        assert without, fact


def test_the_mapping_doc_lists_every_fact_and_its_names() -> None:
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[2] / "docs" / "spec-only.md").read_text()
    rows = {
        line.split("|")[1].strip(): line
        for line in doc.splitlines()
        if line.startswith("| ") and line.count("|") == 5
    }
    for fact, (_, names, _) in field_names.FACTS.items():
        assert fact in rows, f"docs/spec-only.md has no row for {fact}"
        assert all(f"`{n}`" in rows[fact] for n in names), fact


def test_the_listing_envelopes_names_are_one_line_too(monkeypatch: pytest.MonkeyPatch) -> None:
    from songlab.client._models import parse_page, parse_raw_page

    monkeypatch.setattr(field_names, "LISTING_ITEMS", ("items",))
    monkeypatch.setattr(field_names, "LISTING_NEXT_CURSOR", ("next",))
    monkeypatch.setattr(field_names, "TOOLS_ITEMS", ("tools",))
    body = {"items": [SPEC_TASK], "next": "c2"}
    page = parse_page(body)
    assert [t.task_id for t in page.data] == ["t1"] and page.next_cursor == "c2"
    assert parse_raw_page(json.dumps(body).encode()).next_cursor == "c2"
    assert parse_tools({"tools": [{"id": "a", "model": "v5", "operation": "sfx_gen"}]})[0].id == "a"
