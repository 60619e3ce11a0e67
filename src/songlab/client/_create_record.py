"""The record's row: :class:`CreateRecord`, its columns, its SQLite values and its Arrow schema.

One record type from request to row: the create path builds it once when the service
accepts a create, the create hook's listeners (:func:`songlab.client.on_create`) get it,
the store (``_record_store``) writes it as :func:`sqlite_values` and reads it back with
:func:`from_sqlite`, and the ledger takes many as Arrow (:func:`arrow_table`,
``songlab.client.RECORD_SCHEMA``).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = [
    "COLUMNS",
    "CreateRecord",
    "arrow_table",
    "from_sqlite",
    "int_or_none",
    "iso",
    "record_schema",
    "sqlite_values",
    "text_or_none",
]

_FIELDS: Final = (
    ("task_id", "string"),
    ("key_id", "string"),
    ("base_url", "string"),
    ("idempotency_key", "string"),
    ("route", "string"),
    ("tool_id", "string"),
    ("operation", "string"),
    ("model", "string"),
    ("license", "int8"),
    ("payload_sha256", "string"),
    ("estimate_usd", "decimal"),
    ("project", "string"),
    ("tags", "string"),
    ("scope", "string"),
    ("take", "int32"),
    ("origin", "string"),
    ("sent_at", "timestamp"),
    ("accepted_at", "timestamp"),
    ("finished_at", "timestamp"),
    ("final_status", "string"),
    ("finished_via", "string"),
)
COLUMNS: Final = tuple(n for n, _ in _FIELDS)
_Q8: Final = Decimal("0.00000001")


@dataclass(frozen=True, slots=True)
class CreateRecord:
    """One create the service accepted, as the client saw it: the row of the record (the
    columns of ``songlab.client.RECORD_SCHEMA``) and what the create hook's listeners get. No secret:
    the key is named by its non-secret ``key_id``."""

    task_id: str
    key_id: str
    base_url: str | None
    idempotency_key: str | None
    route: str  # the path posted to: /v1/generations, /v7/generate/song, /v1/karaoke-tracks ...
    tool_id: str | None  # native creates only
    operation: str | None  # the operation, the route's name or "agent"
    model: str | None
    license: int | None
    payload_sha256: str | None  # SHA-256 of the canonical request
    estimate_usd: Decimal | None  # the list price when it was sent
    project: str | None
    tags: tuple[str, ...]
    scope: str | None  # reuse scope ("account", a notebook or script), None if none
    take: int | None
    origin: str | None  # the notebook or script that asked
    sent_at: datetime | None  # the client's clock when the POST was first sent
    accepted_at: datetime | None  # ... and when the service's answer came
    # the client's clock when it first saw the task end (a terminal event, a poll or a get),
    # the status it ended with, and how it was seen: "stream", "poll" or "get"
    finished_at: datetime | None = None
    final_status: str | None = None
    finished_via: str | None = None


@functools.cache
def record_schema() -> pa.Schema:
    """``songlab.client.RECORD_SCHEMA`` (pyarrow is imported on first use: the client needs it only
    to hand the record to the ledger)."""
    import pyarrow as pa

    types = {
        "string": pa.string(),
        "int8": pa.int8(),
        "int32": pa.int32(),
        "decimal": pa.decimal128(18, 8),
        "timestamp": pa.timestamp("us", tz="UTC"),
    }
    return pa.schema(
        [pa.field(n, types[t], nullable=n not in ("task_id", "key_id")) for n, t in _FIELDS]
    )


def iso(value: datetime | None) -> str | None:
    return None if value is None else value.astimezone(UTC).isoformat(timespec="microseconds")


def sqlite_values(row: CreateRecord) -> tuple[object, ...]:
    """The row's values in :data:`COLUMNS` order, as SQLite keeps them (text, integers)."""
    return (
        row.task_id,
        row.key_id,
        row.base_url,
        row.idempotency_key,
        row.route,
        row.tool_id,
        row.operation,
        row.model,
        row.license,
        row.payload_sha256,
        None if row.estimate_usd is None else str(row.estimate_usd),
        row.project,
        ",".join(sorted(row.tags)) or None,
        row.scope,
        row.take,
        row.origin,
        iso(row.sent_at),
        iso(row.accepted_at),
        iso(row.finished_at),
        row.final_status,
        row.finished_via,
    )


def from_sqlite(r: tuple[object, ...]) -> CreateRecord:
    """A row as SQLite gives it (text, integers, NULL) -> :class:`CreateRecord`."""
    d = dict(zip(COLUMNS, r, strict=True))
    money, tags = text_or_none(d["estimate_usd"]), text_or_none(d["tags"])
    return CreateRecord(
        task_id=str(d["task_id"]),
        key_id=str(d["key_id"]),
        base_url=text_or_none(d["base_url"]),
        idempotency_key=text_or_none(d["idempotency_key"]),
        route=str(d["route"]),
        tool_id=text_or_none(d["tool_id"]),
        operation=text_or_none(d["operation"]),
        model=text_or_none(d["model"]),
        license=int_or_none(d["license"]),
        payload_sha256=text_or_none(d["payload_sha256"]),
        estimate_usd=None if money is None else Decimal(money),
        project=text_or_none(d["project"]),
        tags=tuple(t for t in tags.split(",") if t) if tags else (),
        scope=text_or_none(d["scope"]),
        take=int_or_none(d["take"]),
        origin=text_or_none(d["origin"]),
        sent_at=when_or_none(d["sent_at"]),
        accepted_at=when_or_none(d["accepted_at"]),
        finished_at=when_or_none(d["finished_at"]),
        final_status=text_or_none(d["final_status"]),
        finished_via=text_or_none(d["finished_via"]),
    )


def text_or_none(value: object) -> str | None:
    return None if value is None else str(value)


def int_or_none(value: object) -> int | None:
    return value if isinstance(value, int) else None


def when_or_none(value: object) -> datetime | None:
    return datetime.fromisoformat(value) if isinstance(value, str) else None


def arrow_table(rows: Sequence[CreateRecord]) -> pa.Table:
    """``rows`` as Arrow (``songlab.client.RECORD_SCHEMA``); money to 8 decimals, tags comma-joined."""
    import pyarrow as pa

    schema = record_schema()
    if not rows:
        return schema.empty_table()
    arrays = []
    for f in schema:
        values: list[object] = [getattr(r, f.name) for r in rows]
        if f.name == "estimate_usd":
            values = [
                None if r.estimate_usd is None else r.estimate_usd.quantize(_Q8) for r in rows
            ]
        elif f.name == "tags":
            values = [",".join(r.tags) or None for r in rows]
        arrays.append(pa.array(values, f.type))
    return pa.Table.from_arrays(arrays, schema=schema)
