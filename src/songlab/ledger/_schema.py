"""The columns and dtypes of every ledger frame, in one place.

Every frame songlab.ledger returns is pyarrow-backed (``pd.ArrowDtype``) with
the columns below, in this order. Money is ``decimal128(18, 8)``: exact to the
8 decimals the price list uses, summed by Arrow in decimal (never a float).
Timestamps are UTC microseconds. ``docs/ledger/using.md`` documents each column; the
descriptions here are also stored as Arrow field metadata in the Parquet files.
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal
from typing import Final

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

import songlab.ledger._arrow as _arrow
from songlab.ledger._arrow import Chunked, Column, Field

MONEY: Final[pa.DataType] = pa.decimal128(18, 8)
# Sums of many amounts: Arrow widens decimal sums to precision 38.
MONEY_SUM: Final[pa.DataType] = pa.decimal128(38, 8)
TIMESTAMP: Final[pa.DataType] = pa.timestamp("us", tz="UTC")
# Source columns are dictionary-encoded: one byte a row plus a 3- or 4-word dictionary, so
# seven of them cost 7 bytes a row (70 MB at 10M rows) where plain strings would cost ~80
# bytes a row; they stay plain strings to every reader (pandas, DuckDB, Parquet, CSV).
SOURCE: Final[pa.DataType] = pa.dictionary(pa.int8(), pa.string())
DURATION: Final[pa.DataType] = pa.duration("us")
ZERO: Final[Decimal] = Decimal("0")

# cost_source values: where a row's cost_usd comes from.
# The one rule of what counts (``tasks._cost``): a billed cost counts; a completed task the
# service shows no cost for counts at its list-price estimate, labelled so; a task still
# queued or processing has spent nothing yet (pending: its estimate kept apart); unknown
# stays unknown (null), never 0.
BILLED: Final[str] = "billed"  # the service reported cost_usd
ESTIMATE: Final[str] = "estimate"  # completed, no cost shown: the price-list estimate
UNBILLED: Final[str] = "unbilled"  # failed and not reported: released, costs 0
UNKNOWN: Final[str] = "unknown"  # neither reported nor priceable: cost is null
PENDING: Final[str] = "pending"  # queued or processing, no cost shown: nothing spent yet
COST_SOURCES: Final[tuple[str, ...]] = (BILLED, ESTIMATE, UNBILLED, PENDING, UNKNOWN)

# <fact>_source values: where a fact column's value comes from.
SERVICE: Final[str] = "service"  # the service showed it (task snapshot, or its tool listing)
RECORD: Final[str] = "record"  # the client's record of the create (songlab made the task)
FACT_SOURCES: Final[tuple[str, ...]] = (SERVICE, RECORD, UNKNOWN)
# The facts that carry a source column (tier shares license's; labels: project, tags, key_id).
FACTS: Final[tuple[str, ...]] = ("created_at", "tool_id", "operation", "model", "license")
SOURCE_COLUMNS: Final[tuple[str, ...]] = (*(f"{f}_source" for f in FACTS), "labels_source")
# The fixed dictionaries (every chunk shares them, so concatenation is free).
FACT_DICT: Final[Column] = pa.array(FACT_SOURCES, pa.string())
COST_DICT: Final[Column] = pa.array(COST_SOURCES, pa.string())


def _f(name: str, type_: pa.DataType, doc: str) -> Field:
    return pa.field(name, type_, nullable=True, metadata={"doc": doc})


TASKS: Final[pa.Schema] = pa.schema(
    [
        _f("task_id", pa.string(), "task id"),
        _f("tool_id", pa.string(), "tool id of the task"),
        _f("operation", pa.string(), "operation (generate_song, agent, ...)"),
        _f("model", pa.string(), "model (v5, v6, v7, flash, 2stem, ...)"),
        _f("license", pa.int8(), "license tier number 1-5 (0 or missing counted as 1)"),
        _f("tier", pa.string(), "license tier name (royalty_free ... master)"),
        _f("status", pa.string(), "queued, processing, completed or failed"),
        _f("created_at", TIMESTAMP, "creation time, UTC"),
        _f("updated_at", TIMESTAMP, "last status change, UTC"),
        _f("duration", DURATION, "updated_at - created_at once terminal, else null"),
        _f("billed_usd", MONEY, "cost_usd as the service reports it (null if not)"),
        _f("estimate_usd", MONEY, "the price-list estimate (null if not priceable)"),
        _f(
            "cost_usd",
            MONEY,
            "what the task cost: billed, else 0 if failed, else a completed task's estimate; "
            "null if unknown or still pending",
        ),
        _f("cost_source", SOURCE, "billed, estimate, unbilled, pending or unknown"),
        _f("failure_error", pa.string(), "failure.error of a failed task"),
        _f("parent_task_id", pa.string(), "run or workflow this task belongs to, if reported"),
        _f("metadata_json", pa.string(), "output.metadata_json (Agent One trace, ...)"),
        _f("project", pa.string(), "project label recorded on the client side (never sent)"),
        _f("tags", pa.string(), "tags recorded on the client side, sorted, comma-separated"),
        _f("key_id", pa.string(), "non-secret id of the API key that made the task, if recorded"),
        _f("created_at_source", SOURCE, "where created_at comes from: service, record or unknown"),
        _f("tool_id_source", SOURCE, "where tool_id comes from: service, record or unknown"),
        _f("operation_source", SOURCE, "where operation comes from: service, record or unknown"),
        _f("model_source", SOURCE, "where model comes from: service, record or unknown"),
        _f(
            "license_source", SOURCE, "where license and tier come from: service, record or unknown"
        ),
        _f("labels_source", SOURCE, "project, tags, key_id: record (songlab made it) or unknown"),
        _f(
            "seen_at",
            TIMESTAMP,
            "when a LedgerStore refresh first added the task (client clock, UTC); null in tasks_frame",
        ),
    ]
)
# Columns filled from the local label store (attribution), null in a bare listing.
LABEL_COLUMNS: Final[tuple[str, ...]] = ("project", "tags", "key_id")

TRACE: Final[pa.Schema] = pa.schema(
    [
        _f("run_task_id", pa.string(), "the Agent One run"),
        _f("run_model", pa.string(), "the run's tier: flash, standard, pro"),
        _f("step_index", pa.int32(), "the step's index in the trace; null on the fee row"),
        _f("kind", pa.string(), "tool_call, prose, verification, or agent_fee (the run's own fee)"),
        _f("tool", pa.string(), "tool called (null for prose, verification, fee)"),
        _f("tool_id", pa.string(), "tool id called (the run's own tool id on the fee row)"),
        _f("status", pa.string(), "status of the call (the run's status on the fee row)"),
        _f("cost_usd", MONEY, "billed cost of the step (0 for prose and verification)"),
        _f("task_id", pa.string(), "the sub-task (the run's own id on the fee row)"),
        _f("file_ids", pa.list_(pa.string()), "files the step produced"),
        _f("text", pa.string(), "prose, verification note or call summary"),
    ]
)

GROUP_KEYS: Final[dict[str, pa.DataType]] = {
    "operation": pa.string(),
    "model": pa.string(),
    "tier": pa.string(),
    "license": pa.int8(),
    "day": pa.date32(),
    "week": pa.date32(),
    "month": pa.string(),
    "status": pa.string(),
    "tool_id": pa.string(),
    "cost_source": pa.string(),
    "project": pa.string(),
    "tag": pa.string(),
    "key_id": pa.string(),
}

SPEND_VALUES: Final[pa.Schema] = pa.schema(
    [
        _f("tasks", pa.int64(), "number of top-level tasks in the group"),
        _f("cost_usd", MONEY_SUM, "what they cost: billed, else a completed task's estimate"),
        _f("billed_tasks", pa.int64(), "tasks whose cost the service reported"),
        _f("billed_usd", MONEY_SUM, "sum of billed_usd"),
        _f("estimated_tasks", pa.int64(), "tasks whose cost is the list-price estimate"),
        _f("estimated_usd", MONEY_SUM, "the part of cost_usd that is an estimate"),
        _f("unknown_tasks", pa.int64(), "tasks of unknown cost (not in cost_usd: null)"),
        _f("pending_tasks", pa.int64(), "tasks still queued or processing (nothing spent yet)"),
        _f("pending_usd", MONEY_SUM, "their list-price estimate (not in cost_usd)"),
        _f("failed_tasks", pa.int64(), "failed tasks (released: 0)"),
    ]
)

TIERS: Final[pa.Schema] = pa.schema(
    [
        _f("license", pa.int8(), "tier number 1-5"),
        _f("tier", pa.string(), "tier name"),
        _f("tasks", pa.int64(), "tasks compared (billed or estimated, priceable in every tier)"),
        _f("priced_usd", MONEY_SUM, "the same tasks at this tier's prices"),
        _f("actual_usd", MONEY_SUM, "what those tasks actually cost"),
        _f("difference_usd", MONEY_SUM, "priced_usd - actual_usd"),
    ]
)


def source_array(indices: Column, dictionary: Column = FACT_DICT) -> Column:
    """A ``SOURCE`` column from int8 positions in ``dictionary`` (never null)."""
    return pa.DictionaryArray.from_arrays(pc.cast(indices, pa.int8()), dictionary)


def source_codes(column: Column | Chunked, dictionary: Column = FACT_DICT) -> Column:
    """The int8 positions in ``dictionary`` of a source column's values (null -> unknown), for a
    column of any dictionary (one read back from Parquet or pandas has its own)."""
    chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
    unknown = len(dictionary) - 1
    out: list[Column] = []
    for chunk in chunks:
        encoded = (
            chunk if isinstance(chunk, pa.DictionaryArray) else _arrow.dictionary_encode(chunk)
        )
        where = pc.index_in(encoded.dictionary, value_set=dictionary)
        taken = _arrow.fill_null(pc.take(where, encoded.indices), pa.scalar(unknown, pa.int32()))
        out.append(pc.cast(taken, pa.int8()))
    if not out:
        return pa.array([], pa.int8())
    return pa.concat_arrays(out) if len(out) > 1 else out[0]


def _amount(value: object) -> str:
    """An exact amount as plain text with all its places (``0.00000000``, never ``0E-8``)."""
    return format(value, "f") if isinstance(value, Decimal) else str(value)


def _amount_repr(value: object) -> str:
    return f"Decimal('{value:f}')" if isinstance(value, Decimal) else repr(value)


class MoneyArray(pd.arrays.ArrowExtensionArray):
    """A pyarrow-backed column that prints its decimals as amounts.

    pandas prints an Arrow decimal through ``str(Decimal)``, which writes a zero with 8
    places as ``0E-8`` (and anything under 0.000001 in E-notation). This array is pandas'
    own ``ArrowExtensionArray`` (same data, same kernels, same results) with one change,
    its scalar formatter (``ExtensionArray._formatter``, pandas' documented hook):
    ``0.00000000``, ``0.00158225``, ``12.50000000``.
    """

    _pa_array: Chunked  # pandas' own attribute, which pandas-stubs leave out

    def __init__(self, values: Column | Chunked) -> None:
        super().__init__(values)
        if pa.types.is_decimal(self._pa_array.type):
            self._dtype = MoneyDtype(self._pa_array.type)

    def _from_pyarrow_array(self, pa_array: Column | Chunked) -> object:
        # pandas' shortcut for an operation's result (3.x) skips __init__: money stays
        # money, anything else (a comparison's booleans, ...) is a plain Arrow array
        out = super()._from_pyarrow_array(pa_array)  # type: ignore[misc]  # a hook the stubs omit
        if not pa.types.is_decimal(out._pa_array.type):
            return pd.arrays.ArrowExtensionArray(out._pa_array)
        out._dtype = MoneyDtype(out._pa_array.type)
        return out

    def _formatter(self, boxed: bool = False) -> object:
        if not pa.types.is_decimal(self._pa_array.type):
            return super()._formatter(boxed)  # type: ignore[misc]  # a hook the stubs omit
        return _amount if boxed else _amount_repr


class MoneyDtype(pd.ArrowDtype):
    """``pd.ArrowDtype`` of a decimal type whose columns print as amounts (:class:`MoneyArray`).

    Equal to ``pd.ArrowDtype`` of the same Arrow type, either way round, with the same name
    (``decimal128(18, 8)[pyarrow]``): code that checks dtypes sees no difference. Arithmetic,
    filters, sorts, ``groupby`` sums and concatenation keep it.
    """

    def construct_array_type(self) -> type[MoneyArray]:
        return MoneyArray

    def __eq__(self, other: object) -> bool:
        if isinstance(other, pd.ArrowDtype):
            return bool(self.pyarrow_dtype == other.pyarrow_dtype)
        return bool(super().__eq__(other))

    def __hash__(self) -> int:
        return hash(str(self))


def pandas_type(t: pa.DataType) -> pd.ArrowDtype:
    """The dtype of a ledger frame's column of Arrow type ``t``: money (any decimal) prints
    as amounts (:class:`MoneyDtype`), every other type is plain ``pd.ArrowDtype``."""
    return MoneyDtype(t) if pa.types.is_decimal(t) else pd.ArrowDtype(t)


def arrow_array(values: Sequence[object], dtype: pd.ArrowDtype) -> pd.api.extensions.ExtensionArray:
    """``pd.array(values, dtype=dtype)``: pandas-stubs has an overload per dtype family and
    none for an Arrow dtype, which pandas takes (a :class:`MoneyDtype` gives a MoneyArray)."""
    out: pd.api.extensions.ExtensionArray = pd.array(values, dtype=dtype)  # type: ignore[call-overload]
    return out


def money_array(values: Sequence[Decimal | None], type_: pa.DataType = MONEY_SUM) -> MoneyArray:
    """``Decimal`` values (None: missing) as a money column of ``type_``."""
    return MoneyArray(pa.array(values, type_))


def to_frame(table: pa.Table) -> pd.DataFrame:
    """An Arrow table as a DataFrame whose every column is ``pd.ArrowDtype`` (money: the
    :class:`MoneyDtype` that prints amounts, never ``0E-8``)."""
    return table.to_pandas(types_mapper=pandas_type, ignore_metadata=True)


def to_table(frame: pd.DataFrame, schema: pa.Schema, *, keep_dictionary: bool = False) -> pa.Table:
    """A frame's columns of ``schema`` as a table of exactly that schema; with
    ``keep_dictionary``, a dictionary-of-strings column where the schema says string is
    kept as it is (zero-copy: the same values, not spelled out row by row)."""
    missing = [n for n in schema.names if n not in frame.columns]
    if missing:
        raise ValueError(f"frame: missing column(s) {', '.join(missing)}")
    arrays, fields = [], []
    for field in schema:
        dtype = frame[field.name].dtype
        kept = (
            keep_dictionary
            and isinstance(dtype, pd.ArrowDtype)
            and isinstance(dtype.pyarrow_dtype, pa.DictionaryType)
            and pa.types.is_string(dtype.pyarrow_dtype.value_type)
            and pa.types.is_string(field.type)
        )
        type_ = dtype.pyarrow_dtype if kept and isinstance(dtype, pd.ArrowDtype) else field.type
        arrays.append(pa.array(frame[field.name], type=type_, from_pandas=True))
        fields.append(field.with_type(type_))
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields, metadata=_arrow.metadata(schema)))


def cost_of(billed: Column, estimate: Column, status: Column) -> tuple[Column, Column]:
    """``cost_usd`` and ``cost_source`` of tasks: **the one rule of what counts**.

    Billed when the service shows a cost; else 0 for a failed task (released: unbilled);
    else, for a completed task, its list-price estimate (labelled ``estimate``); else, for
    a task still queued or processing, nothing yet (``pending``: cost null, its estimate
    stays in ``estimate_usd``); else ``unknown``: null, never 0.
    """
    status = pc.cast(status, pa.string())
    no = pa.scalar(False)
    failed = _arrow.fill_null(pc.equal(status, pa.scalar("failed")), no)
    done = _arrow.fill_null(pc.equal(status, pa.scalar("completed")), no)
    running = _arrow.fill_null(pc.is_in(status, value_set=pa.array(["queued", "processing"])), no)
    zero = pa.scalar(Decimal(0), MONEY)
    none = pa.scalar(None, MONEY)
    cost = _arrow.coalesce(
        billed, _arrow.if_else(failed, zero, _arrow.if_else(done, estimate, none))
    )
    pos = _arrow.if_else(
        pc.is_valid(billed),
        COST_SOURCES.index(BILLED),
        _arrow.if_else(
            failed,
            COST_SOURCES.index(UNBILLED),
            _arrow.if_else(
                pc.and_(done, pc.is_valid(estimate)),
                COST_SOURCES.index(ESTIMATE),
                _arrow.if_else(running, COST_SOURCES.index(PENDING), COST_SOURCES.index(UNKNOWN)),
            ),
        ),
    )
    return cost, source_array(pos, COST_DICT)


def as_table(tasks: object, *, keep_dictionary: bool = False) -> pa.Table:
    """A tasks frame or table as an Arrow table with the tasks schema (``keep_dictionary``:
    see :func:`to_table`; for readers that take dictionary columns, like DuckDB)."""
    if isinstance(tasks, pa.Table):
        return tasks
    if isinstance(tasks, pd.DataFrame):
        return to_table(tasks, TASKS, keep_dictionary=keep_dictionary)
    raise TypeError(f"tasks: expected a tasks DataFrame or Arrow table, got {type(tasks).__name__}")


def empty_table(schema: pa.Schema) -> pa.Table:
    return schema.empty_table()


def plain_text(values: Column) -> Column:
    """Decimal amounts as plain text with all their places (``0.00000000``, ``-1.50``)."""
    t = values.type
    if not isinstance(t, pa.Decimal128Type | pa.Decimal256Type):
        raise TypeError(f"values: expected decimal amounts, got {t}")
    scale = t.scale
    shift = pa.scalar(10**scale, pa.decimal128(scale + 1, 0))
    ints = pc.cast(pc.multiply(values, shift), pa.int64())
    if scale == 0:
        return pc.cast(ints, pa.string())
    negative = pc.less(ints, pa.scalar(0, pa.int64()))
    magnitude = pc.abs(ints)
    unit = pa.scalar(10**scale, pa.int64())
    whole = pc.divide(magnitude, unit)  # integer division on int64
    frac = pc.subtract(magnitude, pc.multiply(whole, unit))
    text = _arrow.join_strings(
        pc.cast(whole, pa.string()),
        pc.utf8_lpad(pc.cast(frac, pa.string()), width=scale, padding="0"),
        pa.scalar("."),
    )
    signed = _arrow.join_strings(pa.scalar("-"), text, pa.scalar(""))
    return _arrow.if_else(negative, signed, text)
