"""The names songlab tries for every fact the spec does not show: one line per fact.

The spec promises a task's ``task_id``, ``status`` and ``output.{text,
metadata_json, assets[].{file_id, blob_hash, url}}``; an event's kind and
sequence cursor; a tool's ``id``, ``model``, ``operation``; a file link's
``file_id``, ``url``, ``mime_type``, ``expires_at``; an upload's ``file_id``; the
balance's four fields. Everything else below is a guess: the names are the
sandbox's (``shared/design.md``), read when present and never required. A
user who learns the real service's name for a fact adds it to that fact's tuple
(the first name present wins) and every reader in songlab follows.

Nothing here may be required by a parser: a fact that is absent is ``None``
("unknown"), and its reader says what it does without (``docs/spec-only.md``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

__all__ = ["FACTS", "first"]

Names = tuple[str, ...]

# -- task snapshot (GET /v1/generations/{id} and the listing's items) ----------------------
TASK_TOOL_ID: Final[Names] = ("tool_id",)
TASK_OPERATION: Final[Names] = ("operation",)
TASK_MODEL: Final[Names] = ("model",)
TASK_LICENSE: Final[Names] = ("license",)
TASK_CREATED_AT: Final[Names] = ("created_at",)
TASK_UPDATED_AT: Final[Names] = ("updated_at",)
TASK_COST_USD: Final[Names] = ("cost_usd",)  # a decimal USD string; never a float, never tokens
TASK_PROGRESS: Final[Names] = ("progress",)  # 0..1
TASK_FAILURE: Final[Names] = ("failure",)  # an object: the two names below
FAILURE_CODE: Final[Names] = ("error",)
FAILURE_MESSAGE: Final[Names] = ("message",)
TASK_PARENT_ID: Final[Names] = ("parent_task_id",)  # the Agent One run / workflow it belongs to

# -- output asset (output.assets[]) ---------------------------------------------------------
ASSET_NAME: Final[Names] = ("name",)  # mix, vocals, drums, ...
ASSET_MIME_TYPE: Final[Names] = ("mime_type",)
ASSET_DURATION_S: Final[Names] = ("duration_s",)

# -- stream event (the SSE frame's data; the spec shows only kind and the seq) -------------
EVENT_SEQ: Final[Names] = ("seq",)  # shown ("sequence cursor"); the frame's id: also carries it
EVENT_KIND: Final[Names] = ("kind",)  # shown as the frame's event: line
EVENT_TASK_ID: Final[Names] = ("task_id",)
EVENT_STATUS: Final[Names] = ("status",)
EVENT_PROGRESS: Final[Names] = ("progress",)  # 0..1
EVENT_STEP: Final[Names] = ("step",)  # song translation: transcribe ... render
EVENT_PHASE: Final[Names] = ("phase",)  # started / finished
EVENT_MESSAGE: Final[Names] = ("message",)
EVENT_CURSOR: Final[Names] = ("cursor",)  # timeout/error "carry a resume cursor": its name

# -- listing envelopes (the spec shows no list shape: "page of tasks", "entries") ---------
LISTING_ITEMS: Final[Names] = ("data",)  # GET /v1/generations: the page's tasks
LISTING_NEXT_CURSOR: Final[Names] = ("next_cursor",)  # and the cursor of the next page
TOOLS_ITEMS: Final[Names] = ("data",)  # GET /v1/tools (a bare JSON array is read too)

# -- tool, upload ---------------------------------------------------------------------------
TOOL_NAME: Final[Names] = ("name",)
UPLOAD_MIME_TYPE: Final[Names] = ("mime_type",)
UPLOAD_SIZE_BYTES: Final[Names] = ("size_bytes",)
UPLOAD_SHA256: Final[Names] = ("sha256",)

# fact -> (where it would be, the names tried, what songlab does without it)
FACTS: Final[dict[str, tuple[str, Names, str]]] = {
    "tool_id": ("task", TASK_TOOL_ID, "the client's record of the create (tool_id column)"),
    "operation": (
        "task",
        TASK_OPERATION,
        "the record, else the tools listing by tool id; else unknown",
    ),
    "model": ("task", TASK_MODEL, "the record, else the tools listing by tool id; else unknown"),
    "license": ("task", TASK_LICENSE, "the record's license; else unknown"),
    "created_at": ("task", TASK_CREATED_AT, "the record's accepted_at; else unknown"),
    "updated_at": ("task", TASK_UPDATED_AT, "unknown"),
    "cost_usd": (
        "task",
        TASK_COST_USD,
        "the record's list-price estimate (cost_source=estimate); else unknown, never 0",
    ),
    "progress": (
        "task, event",
        TASK_PROGRESS + EVENT_PROGRESS,
        "indeterminate progress until the terminal event",
    ),
    "failure": ("task", TASK_FAILURE, "a failed task says 'the task failed' without detail"),
    "failure.error": ("task.failure", FAILURE_CODE, "no error code"),
    "failure.message": ("task.failure", FAILURE_MESSAGE, "no message"),
    "parent_task_id": (
        "task",
        TASK_PARENT_ID,
        "sub-tasks are found through the Agent One trace's task_id values",
    ),
    "asset.name": ("asset", ASSET_NAME, "stems are named by position (stem 1, stem 2, ...)"),
    "asset.mime_type": ("asset", ASSET_MIME_TYPE, "the file link's mime_type (shown)"),
    "asset.duration_s": ("asset", ASSET_DURATION_S, "decode the audio"),
    "event.task_id": ("event", EVENT_TASK_ID, "the task the stream was opened for"),
    "event.status": (
        "event",
        EVENT_STATUS,
        "queued until the first event, processing until terminal, then one GET for the outcome",
    ),
    "event.step": ("event", EVENT_STEP, "no translation steps are shown"),
    "event.phase": ("event", EVENT_PHASE, "a step is taken as started"),
    "event.message": ("event", EVENT_MESSAGE, "none"),
    "event.cursor": ("event", EVENT_CURSOR, "resume after the last seq seen"),
    "listing.items": ("listing", LISTING_ITEMS, "the page is unreadable (MalformedResponse)"),
    "listing.next_cursor": ("listing", LISTING_NEXT_CURSOR, "the page is the last one"),
    "tools.items": ("tool listing", TOOLS_ITEMS, "a bare JSON array of tools is read too"),
    "tool.name": ("tool", TOOL_NAME, "operation and model are shown instead"),
    "upload.mime_type": (
        "upload",
        UPLOAD_MIME_TYPE,
        "the type the client sent (from the file name)",
    ),
    "upload.size_bytes": ("upload", UPLOAD_SIZE_BYTES, "the size the client sent"),
    "upload.sha256": ("upload", UPLOAD_SHA256, "unknown"),
}


def first(d: Mapping[str, Any] | None, names: Names) -> Any:
    """The value of the first of ``names`` present (and not null) in ``d``, else None."""
    if not d:
        return None
    for name in names:
        value = d.get(name)
        if value is not None:
            return value
    return None
