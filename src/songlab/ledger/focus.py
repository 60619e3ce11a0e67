"""FOCUS 1.2: the ledger in the FinOps Foundation's open cost and usage format.

Finance teams' tools read FOCUS. This is one more view over the ledger engine's one
relation (``ledger``), so its totals are the report's:

- one **Usage** row per top-level task whose cost is known: billed by the service, or a
  completed task's list-price estimate (``x_CostSource`` says which). The balance is
  prepaid tokens (1 token = $0.01), which FOCUS 1.2's appendix ("Virtual Currency Pricing
  Model") models as a virtual currency: ``PricingCurrency`` is ``Token`` and the token
  amounts are in the ``PricingCurrency*`` columns; ``EffectiveCost`` is the task's cost in
  USD (what the report sums); ``BilledCost`` is 0, because the tokens were paid for when
  they were bought (the appendix's scenario A2);
- one **Purchase** row per balance top-up that the ledger's balance snapshots prove
  (:func:`top_ups`): ``BilledCost`` is what the tokens cost, ``EffectiveCost`` 0 (prepaid,
  spread over the usage rows).

A task of unknown cost (never 0), a task still pending and a sub-task (inside its Agent One
run's cost) have no row; a task with no date cannot have a charge period, so it is left
out and counted (:class:`FocusExport`). ``docs/ledger/focus-spark.md`` maps every column.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from songlab.ledger.backends import Backend
    from songlab.ledger.dates import Period
    from songlab.ledger.engine import Ledger

import pyarrow as pa
import pyarrow.compute as pc

import songlab.ledger._arrow as _arrow
import songlab.ledger._schema as _schema
from songlab.ledger._arrow import Column, ColumnLike
from songlab.ledger.relation import day_filter

__all__ = [
    "Account",
    "COLUMNS",
    "Exporter",
    "FOCUS_VERSION",
    "FocusColumn",
    "FocusExport",
    "SCHEMA",
    "SCHEMA_ID",
    "TopUps",
    "USAGE_SQL",
    "account_of_key",
    "check_path",
    "focus_batches",
    "focus_rows",
    "focus_table",
    "metadata",
    "top_ups",
    "write_focus",
]

FOCUS_VERSION: Final[str] = "1.2"
DATA_GENERATOR: Final[str] = "songlab"
# The schema below was made on this date; a change of columns makes a new SchemaId (derived
# from the column definitions) and this date moves with it.
SCHEMA_CREATED: Final[str] = "2026-11-26T00:00:00Z"
PROVIDER: Final[str] = "Enterprise Audio Generation API"  # the spec's name of the service
SERVICE_CATEGORY: Final[str] = "AI and Machine Learning"
SERVICE_SUBCATEGORY: Final[str] = "Generative AI"
BILLING_CURRENCY: Final[str] = "USD"
TOKEN: Final[str] = "Token"  # the virtual currency of the balance (PricingCurrency)
TOKEN_USD: Final[Decimal] = Decimal("0.01")  # the spec: one token equals 0.01 USD
TASKS_UNIT: Final[str] = "Tasks"  # a usage row prices one task
TOKENS_UNIT: Final[str] = "Tokens"  # a purchase row prices its tokens
TAG_PREFIX: Final[str] = "tag/"  # the tags' scheme; the project's is prefixless ("project")
CHUNK: Final[int] = 131_072  # rows finished and written at a time

# Arrow types of the columns (the Parquet file's, and the CSV's before it is text)
_COST = _schema.MONEY  # decimal(18, 8): the price list's 8 places
_TOKENS = pa.decimal128(20, 6)  # USD x 100: exact in 6 places
_QUANTITY = pa.decimal128(18, 6)  # a Decimal, also in CSV text ("1.000000")
_TIME = _schema.TIMESTAMP


@dataclass(frozen=True, slots=True)
class FocusColumn:
    """A column of the export: ``kind`` is its FOCUS data type (String, Decimal, Date/Time,
    JSON), ``nullable`` what FOCUS 1.2 allows, ``doc`` how songlab fills it."""

    name: str
    kind: str
    type: pa.DataType
    nullable: bool
    doc: str


def _c(name: str, kind: str, type_: pa.DataType, nullable: bool, doc: str) -> FocusColumn:
    return FocusColumn(name, kind, type_, nullable, doc)


S, D, T, J = "String", "Decimal", "Date/Time", "JSON"
# FOCUS columns first, in the specification's (alphabetical) order, then the custom ``x_``.
COLUMNS: Final[tuple[FocusColumn, ...]] = (
    _c("BilledCost", D, _COST, False, "usage: 0 (paid from prepaid tokens); purchase: its cost"),
    _c("BillingAccountId", S, pa.string(), False, "the account (given, or of the reading key)"),
    _c("BillingAccountName", S, pa.string(), True, "given, else null (the spec shows none)"),
    _c("BillingCurrency", S, pa.string(), False, "USD"),
    _c("BillingPeriodEnd", T, _TIME, False, "first instant of the next UTC month"),
    _c("BillingPeriodStart", T, _TIME, False, "first instant of the charge's UTC month"),
    _c("ChargeCategory", S, pa.string(), False, "Usage (a task) or Purchase (a top-up)"),
    _c("ChargeClass", S, pa.string(), True, "null: no row corrects an earlier invoice"),
    _c("ChargeDescription", S, pa.string(), True, "operation, model, tier, cost source"),
    _c("ChargeFrequency", S, pa.string(), False, "Usage-Based (task), One-Time (top-up)"),
    _c(
        "ChargePeriodEnd", T, _TIME, False, "usage: next UTC midnight; purchase: the later snapshot"
    ),
    _c("ChargePeriodStart", T, _TIME, False, "usage: UTC day of the task; purchase: earlier one"),
    _c("ConsumedQuantity", D, _QUANTITY, True, "usage: 1 task; purchase: null"),
    _c("ConsumedUnit", S, pa.string(), True, "usage: Tasks; purchase: null"),
    _c("ContractedCost", D, _COST, False, "= ListCost (no negotiated prices are known)"),
    _c("ContractedUnitPrice", D, _COST, True, "= ListUnitPrice"),
    _c("EffectiveCost", D, _COST, False, "usage: the task's cost_usd; purchase: 0 (prepaid)"),
    _c("InvoiceId", S, pa.string(), True, "null: no invoice is known (the spec shows none)"),
    _c("InvoiceIssuerName", S, pa.string(), False, PROVIDER),
    _c("ListCost", D, _COST, False, "usage: the list price (else cost); purchase: tokens x 0.01"),
    _c("ListUnitPrice", D, _COST, True, "ListCost per unit (1 task; 1 token = 0.01)"),
    _c("PricingCategory", S, pa.string(), True, "Standard"),
    _c("PricingCurrency", S, pa.string(), True, "usage: Token; purchase: USD"),
    _c("PricingCurrencyContractedUnitPrice", D, _TOKENS, True, "in PricingCurrency"),
    _c("PricingCurrencyEffectiveCost", D, _TOKENS, False, "usage: tokens spent; purchase: 0"),
    _c("PricingCurrencyListUnitPrice", D, _TOKENS, True, "in PricingCurrency"),
    _c("PricingQuantity", D, _QUANTITY, True, "usage: 1; purchase: tokens bought"),
    _c("PricingUnit", S, pa.string(), True, "usage: Tasks; purchase: Tokens"),
    _c("ProviderName", S, pa.string(), False, PROVIDER),
    _c("PublisherName", S, pa.string(), False, PROVIDER),
    _c("ServiceCategory", S, pa.string(), False, SERVICE_CATEGORY),
    _c("ServiceName", S, pa.string(), False, PROVIDER),
    _c("ServiceSubcategory", S, pa.string(), False, SERVICE_SUBCATEGORY),
    _c("SkuId", S, pa.string(), True, "operation/model (a price-list entry), else the tool id"),
    _c("SkuMeter", S, pa.string(), True, "the operation"),
    _c("SkuPriceDetails", J, pa.string(), True, "null (the price is ListUnitPrice)"),
    _c("SkuPriceId", S, pa.string(), True, "SkuId/tier (Agent One: SkuId; top-up: token)"),
    _c("SubAccountId", S, pa.string(), True, "the ledger's key_id of the API key (not the key)"),
    _c("SubAccountName", S, pa.string(), True, "API key <key_id>"),
    _c("Tags", J, pa.string(), True, '{"project": ..., "tag/<tag>": true}'),
    _c("x_CostSource", S, pa.string(), True, "billed or estimate (usage), balance (top-up)"),
    _c("x_LicenseTier", S, pa.string(), True, "royalty_free ... master (null: Agent One)"),
    _c("x_Model", S, pa.string(), True, "the task's model"),
    _c("x_TaskCreatedAt", T, _TIME, True, "the task's created_at (ChargePeriod is its day)"),
    _c("x_TaskId", S, pa.string(), True, "the task's id (null on a purchase)"),
    _c("x_TaskStatus", S, pa.string(), True, "completed or failed (a failed billed task)"),
)
SCHEMA: Final[pa.Schema] = pa.schema(
    [pa.field(c.name, c.type, metadata={"doc": c.doc}) for c in COLUMNS]
)
NAMES: Final[tuple[str, ...]] = tuple(c.name for c in COLUMNS)


def _column_definitions() -> list[dict[str, object]]:
    out: list[dict[str, object]] = []
    for c in COLUMNS:
        d: dict[str, object] = {"ColumnName": c.name, "DataType": c.kind.replace("/", "").upper()}
        if c.kind == D and isinstance(c.type, pa.Decimal128Type):
            d["NumericPrecision"] = c.type.precision
            d["NumberScale"] = c.type.scale
        elif c.kind in (S, J):
            d["StringEncoding"] = "UTF-8"
        if c.name == "Tags":
            d["ProviderTagPrefixes"] = []  # both schemes are the user's labels (docs)
        out.append(d)
    return out


# Stable for these columns: a new column list is a new schema, with a new id.
SCHEMA_ID: Final[str] = str(
    uuid.uuid5(uuid.NAMESPACE_URL, "songlab:focus:" + json.dumps(_column_definitions()))
)


def metadata(data_location: Sequence[dict[str, object]] = ()) -> dict[str, object]:
    """The FOCUS metadata: data generator and schema (every column's definition), plus where
    the data is (``data_location``: filepath, total_bytes, total_rows)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        generator_version = version("songlab")
    except PackageNotFoundError:  # pragma: no cover - a source tree that was not installed
        generator_version = "unknown"
    out: dict[str, object] = {
        "DataGenerator": DATA_GENERATOR,
        "DataGeneratorVersion": generator_version,
        "SchemaId": SCHEMA_ID,
        "FocusVersion": FOCUS_VERSION,
        "CreationDate": SCHEMA_CREATED,
        "ColumnDefinition": _column_definitions(),
    }
    if data_location:
        out["data_location"] = list(data_location)
    return out


# ---------------------------------------------------------------------------------- usage

# The usage rows, over the engine's relation ``ledger`` (DuckDB's dialect; the engine
# transpiles it for Spark): the top-level tasks whose cost is known and dated, of a period.
USAGE_SQL: Final[str] = """
SELECT task_id, day, created_at, status, operation, model, tool_id,
       CASE WHEN operation = 'agent' THEN NULL ELSE tier END AS license_tier,
       project, tags, key_id, cost_source,
       CAST(cost_usd AS DECIMAL(18, 8)) AS effective_usd,
       CAST(coalesce(estimate_usd, cost_usd) AS DECIMAL(18, 8)) AS list_usd
FROM ledger
WHERE top_level AND cost_source IN ('billed', 'estimate') AND day IS NOT NULL AND {where}
"""
# What the rows add up to, and what has no row (counted, so nothing is silently dropped).
COUNTS_SQL: Final[str] = """
SELECT CAST(coalesce(sum(CASE WHEN {usage} AND day IS NULL THEN 1 ELSE 0 END), 0) AS BIGINT)
           AS undated_tasks,
       CAST(coalesce(sum(CASE WHEN {usage} AND day IS NULL THEN cost_usd END), 0)
            AS DECIMAL(38, 8)) AS undated_usd,
       CAST(coalesce(sum(CASE WHEN cost_source = 'estimate' AND day IS NULL THEN 1 ELSE 0 END),
                     0) AS BIGINT) AS undated_estimated_tasks,
       CAST(coalesce(sum(CASE WHEN cost_source = 'estimate' AND day IS NULL THEN cost_usd END),
                     0) AS DECIMAL(38, 8)) AS undated_estimated_usd,
       CAST(coalesce(sum(CASE WHEN cost_source = 'unknown' THEN 1 ELSE 0 END), 0) AS BIGINT)
           AS unknown_cost_tasks,
       CAST(coalesce(sum(CASE WHEN cost_source = 'pending' THEN 1 ELSE 0 END), 0) AS BIGINT)
           AS pending_tasks,
       CAST(coalesce(sum(CASE WHEN cost_source = 'unbilled' THEN 1 ELSE 0 END), 0) AS BIGINT)
           AS released_tasks,
       CAST(coalesce(sum(CASE WHEN {usage} AND day IS NOT NULL THEN 1 ELSE 0 END), 0)
            AS BIGINT) AS usage_tasks
FROM ledger
WHERE top_level AND {where}
"""
_USAGE: Final[str] = "cost_source IN ('billed', 'estimate')"


def _repeat(value: object, n: int, type_: pa.DataType) -> Column:
    """A constant column (or nulls)."""
    if value is None:
        return _arrow.nulls(n, type_)
    return _arrow.repeat(value, n, type_)


def _join(*parts: object) -> Column:
    """Strings joined element-wise (a null part makes the result null)."""
    return _arrow.join_strings(*parts, "")


def _tokens(usd: Column) -> Column:
    """USD amounts as tokens (x 100), exact."""
    hundred = pa.scalar(Decimal(100), pa.decimal128(3, 0))
    return pc.cast(pc.multiply(usd, hundred), _TOKENS)


def _tags(project: Column, tags: Column) -> Column:
    """``Tags``: the project under ``project`` and each tag under ``tag/<tag>`` (valueless:
    true), as a JSON object; null when there is neither. One ``json.dumps`` per distinct pair
    (labels repeat: a handful per ledger)."""
    pairs = _arrow.dictionary_encode(
        _arrow.join_strings(
            _arrow.fill_null(project, "\x00"), _arrow.fill_null(tags, "\x00"), "\x01"
        )
    )
    values = []
    for key in pairs.dictionary.to_pylist():
        proj, tag_text = str(key).split("\x01")  # never null: nulls are filled above
        obj: dict[str, object] = {}
        if proj != "\x00":
            obj["project"] = proj
        if tag_text not in ("\x00", ""):
            for tag in sorted({t for t in tag_text.split(",") if t}):
                obj[TAG_PREFIX + tag] = True
        values.append(json.dumps(obj, ensure_ascii=False, separators=(",", ":")) if obj else None)
    return pc.take(pa.array(values, pa.string()), pairs.indices)


@dataclass(frozen=True, slots=True)
class Account:
    """The FOCUS billing account: the spec shows no account id or name."""

    id: str
    name: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.id, str) or not self.id.strip():
            raise ValueError("account: a non-empty billing account id (the spec shows none)")
        if self.name is not None and (not isinstance(self.name, str) or not self.name.strip()):
            raise ValueError("account_name: a non-empty name, or None")


def account_of_key(key_id: str) -> str:
    """The default billing account id when songlab reads with one API key: the account
    that key belongs to, named by the key's id (never the key)."""
    return f"account-of-{key_id}"


def _constants(n: int, account: Account, usage: bool) -> dict[str, ColumnLike]:
    base = {
        "BillingAccountId": account.id,
        "BillingAccountName": account.name,
        "BillingCurrency": BILLING_CURRENCY,
        "ChargeCategory": "Usage" if usage else "Purchase",
        "ChargeClass": None,
        "ChargeFrequency": "Usage-Based" if usage else "One-Time",
        "InvoiceId": None,
        "InvoiceIssuerName": PROVIDER,
        "PricingCategory": "Standard",
        "PricingCurrency": TOKEN if usage else BILLING_CURRENCY,
        "PricingUnit": TASKS_UNIT if usage else TOKENS_UNIT,
        "ProviderName": PROVIDER,
        "PublisherName": PROVIDER,
        "ServiceCategory": SERVICE_CATEGORY,
        "ServiceName": PROVIDER,
        "ServiceSubcategory": SERVICE_SUBCATEGORY,
        "SkuPriceDetails": None,
    }
    return {k: _repeat(v, n, SCHEMA.field(k).type) for k, v in base.items()}


def _month_bounds(start: Column) -> tuple[Column, Column]:
    """(first instant of the month, of the next month) of each timestamp."""
    month = pc.floor_temporal(start, unit="month")
    later = pc.add(month, pa.scalar(timedelta(days=31), pa.duration("us")))
    return month, pc.floor_temporal(later, unit="month")


def _usage(raw: pa.RecordBatch, account: Account) -> pa.Table:
    """FOCUS usage rows of a slice of ``USAGE_SQL``'s result."""
    n = raw.num_rows
    start = pc.cast(pc.cast(raw["day"], pa.date32()), pa.timestamp("us"))
    # the stub's overloads of assume_timezone name no array of timestamp("us")
    start = pc.assume_timezone(start, timezone="UTC")  # type: ignore[call-overload]
    end = pc.add(start, pa.scalar(timedelta(days=1), pa.duration("us")))
    month, next_month = _month_bounds(start)
    effective = pc.cast(raw["effective_usd"], _COST)
    listed = pc.cast(raw["list_usd"], _COST)
    op, model, tool = raw["operation"], raw["model"], raw["tool_id"]
    tier = pc.cast(raw["license_tier"], pa.string())
    sku = _arrow.coalesce(_join(op, "/", model), tool, _repeat("task", n, pa.string()))
    source = pc.cast(raw["cost_source"], pa.string())
    how = _arrow.if_else(
        pc.equal(source, pa.scalar("billed")),
        "billed by the service",
        "list-price estimate: the service shows no cost",
    )
    what = _arrow.coalesce(
        _join(op, " (", model, ", ", tier, " tier)"),
        _join(op, " (", model, ")"),
        _join("tool ", tool),
        _repeat("a task", n, pa.string()),
    )
    key = raw["key_id"]
    one = _arrow.repeat(Decimal(1), n, _QUANTITY)
    cols: dict[str, ColumnLike] = _constants(n, account, usage=True)
    cols |= {
        "BilledCost": _arrow.repeat(Decimal(0), n, _COST),
        "BillingPeriodEnd": next_month,
        "BillingPeriodStart": month,
        "ChargeDescription": _join(what, "; ", how),
        "ChargePeriodEnd": end,
        "ChargePeriodStart": start,
        "ConsumedQuantity": one,
        "ConsumedUnit": _repeat(TASKS_UNIT, n, pa.string()),
        "ContractedCost": listed,
        "ContractedUnitPrice": listed,
        "EffectiveCost": effective,
        "ListCost": listed,
        "ListUnitPrice": listed,
        "PricingCurrencyContractedUnitPrice": _tokens(listed),
        "PricingCurrencyEffectiveCost": _tokens(effective),
        "PricingCurrencyListUnitPrice": _tokens(listed),
        "PricingQuantity": one,
        "SkuId": sku,
        "SkuMeter": _arrow.coalesce(op, _join("tool ", tool), _repeat("task", n, pa.string())),
        "SkuPriceId": _arrow.coalesce(_join(sku, "/", tier), sku),
        "SubAccountId": key,
        "SubAccountName": _join("API key ", key),
        "Tags": _tags(raw["project"], raw["tags"]),
        "x_CostSource": source,
        "x_LicenseTier": tier,
        "x_Model": model,
        "x_TaskCreatedAt": pc.cast(raw["created_at"], _TIME),
        "x_TaskId": raw["task_id"],
        "x_TaskStatus": pc.cast(raw["status"], pa.string()),
    }
    return _table(cols, n)


def _table(cols: dict[str, ColumnLike], n: int) -> pa.Table:
    arrays = []
    for f in SCHEMA:
        a = cols[f.name]
        if isinstance(a, pa.ChunkedArray):
            a = a.combine_chunks()
        if a.type != f.type:
            a = pc.cast(a, f.type)
        arrays.append(a)
    return pa.Table.from_arrays(arrays, schema=SCHEMA)


# ------------------------------------------------------------------------------- top-ups


@dataclass(frozen=True, slots=True)
class TopUps:
    """The top-ups the balance snapshots prove (``rows``: ``start``, ``end``, ``tokens``),
    and how many periods show tokens added that the snapshots cannot size (``unsized``)."""

    rows: list[tuple[datetime, datetime, int]]
    unsized: int


def top_ups(balances: pa.Table | None) -> TopUps:
    """Top-ups between consecutive balance snapshots (``LedgerStore.balance_table()``).

    A top-up adds extra tokens, and work spends the base balance before any extra token
    (design.md: the sandbox; the spec shows ``extra_tokens`` as "additional tokens"). So
    when ``extra_tokens`` rose and the later snapshot still has a base balance, no extra
    token was spent in between: the rise is the top-up, exactly. When the base was used up
    (extra tokens may have been spent too), or the total rose with no rise in extra tokens,
    tokens were added but their number is not known: counted in ``unsized``, no row.
    """
    if balances is None or balances.num_rows < 2:
        return TopUps([], 0)
    snaps = balances.sort_by("taken_at").to_pylist()
    rows: list[tuple[datetime, datetime, int]] = []
    unsized = 0
    for before, after in zip(snaps, snaps[1:], strict=False):
        rise = int(after["extra_tokens"]) - int(before["extra_tokens"])
        if rise > 0 and int(after["base_effective"]) > 0:
            rows.append((before["taken_at"], after["taken_at"], rise))
        elif rise > 0 or (
            int(after["base_effective"]) == 0
            and int(after["total_effective"]) > int(before["total_effective"])
        ):
            unsized += 1
    return TopUps(rows, unsized)


def _seconds(t: datetime, *, up: bool) -> datetime:
    t = t.astimezone(UTC)
    whole = t.replace(microsecond=0)
    return whole + timedelta(seconds=1) if up and whole != t else whole


def _purchases(rows: Sequence[tuple[datetime, datetime, int]], account: Account) -> pa.Table:
    """FOCUS purchase rows: one per top-up, charged between the two snapshots around it."""
    n = len(rows)
    start = pa.array([_seconds(r[0], up=False) for r in rows], _TIME)
    end = pa.array([_seconds(r[1], up=True) for r in rows], _TIME)
    month, next_month = _month_bounds(end if n else start)
    tokens = pa.array([Decimal(r[2]) for r in rows], _QUANTITY)
    usd = pa.array([Decimal(r[2]) * TOKEN_USD for r in rows], _COST)
    price = _arrow.repeat(TOKEN_USD, n, _COST)
    zero = _arrow.repeat(Decimal(0), n, _COST)
    cols: dict[str, ColumnLike] = _constants(n, account, usage=False)
    cols |= {
        "BilledCost": usd,
        "BillingPeriodEnd": next_month,
        "BillingPeriodStart": month,
        "ChargeDescription": pa.array(
            [f"Top-up of {r[2]:,} tokens (extra tokens, $0.01 each)" for r in rows], pa.string()
        ),
        "ChargePeriodEnd": end,
        "ChargePeriodStart": start,
        "ConsumedQuantity": _arrow.nulls(n, _QUANTITY),
        "ConsumedUnit": _arrow.nulls(n, pa.string()),
        "ContractedCost": usd,
        "ContractedUnitPrice": price,
        "EffectiveCost": zero,
        "ListCost": usd,
        "ListUnitPrice": price,
        "PricingCurrencyContractedUnitPrice": pc.cast(price, _TOKENS),
        "PricingCurrencyEffectiveCost": pc.cast(zero, _TOKENS),
        "PricingCurrencyListUnitPrice": pc.cast(price, _TOKENS),
        "PricingQuantity": tokens,
        "SkuId": _repeat("token", n, pa.string()),
        "SkuMeter": _repeat("tokens", n, pa.string()),
        "SkuPriceId": _repeat("token", n, pa.string()),
        "SubAccountId": _arrow.nulls(n, pa.string()),
        "SubAccountName": _arrow.nulls(n, pa.string()),
        "Tags": _arrow.nulls(n, pa.string()),
        "x_CostSource": _repeat("balance", n, pa.string()),
        "x_LicenseTier": _arrow.nulls(n, pa.string()),
        "x_Model": _arrow.nulls(n, pa.string()),
        "x_TaskCreatedAt": _arrow.nulls(n, _TIME),
        "x_TaskId": _arrow.nulls(n, pa.string()),
        "x_TaskStatus": _arrow.nulls(n, pa.string()),
    }
    return _table(cols, n)


# --------------------------------------------------------------------------------- rows


@dataclass
class FocusExport:
    """What an export wrote and what has no row (so nothing is silently missing).

    ``effective_usd`` (the usage rows' ``EffectiveCost``) is the report's spend of the
    period less ``undated_usd`` (dated tasks only: a charge needs a period).
    """

    rows: int = 0
    usage_rows: int = 0
    purchase_rows: int = 0
    effective_usd: Decimal = field(default_factory=lambda: Decimal(0))
    billed_usd: Decimal = field(default_factory=lambda: Decimal(0))
    list_usd: Decimal = field(default_factory=lambda: Decimal(0))
    undated_tasks: int = 0  # cost known, no date: no charge period, no row
    undated_usd: Decimal = field(default_factory=lambda: Decimal(0))
    undated_estimated_tasks: int = 0  # of which estimates
    undated_estimated_usd: Decimal = field(default_factory=lambda: Decimal(0))
    unknown_cost_tasks: int = 0  # never a row: their cost is not known (not 0)
    pending_tasks: int = 0  # queued or processing: nothing spent yet
    released_tasks: int = 0  # failed, not billed: no charge
    unsized_top_ups: int = 0  # tokens were added, how many is not known
    path: Path | None = None
    metadata_path: Path | None = None

    def notes(self) -> list[str]:
        """One line per thing the export does not hold, for a reader."""
        out = []
        if self.undated_tasks:
            out.append(
                f"{self.undated_tasks:,} task(s) of known cost (${self.undated_usd:,.2f}) have "
                "no date: FOCUS needs a charge period, so they have no row"
            )
        if self.unknown_cost_tasks:
            out.append(f"{self.unknown_cost_tasks:,} task(s) of unknown cost: no row (never 0)")
        if self.pending_tasks:
            out.append(f"{self.pending_tasks:,} task(s) still pending: nothing charged yet")
        if self.unsized_top_ups:
            out.append(
                f"{self.unsized_top_ups:,} period(s) between balance snapshots added tokens "
                "the snapshots cannot size: no purchase row"
            )
        return out


Query = Callable[[str], pa.Table]


# Rows asked of the engine at a time: days are grouped until they hold this many, so a
# chunk's rows fit in memory on any engine (Spark collects a result in its driver first).
PART_ROWS: Final[int] = 250_000
DAYS_SQL: Final[str] = """
SELECT day, CAST(count(*) AS BIGINT) AS n FROM ledger
WHERE top_level AND cost_source IN ('billed', 'estimate') AND day IS NOT NULL AND {where}
GROUP BY day ORDER BY day
"""


def _parts(days: Sequence[tuple[date, int]], rows: int = PART_ROWS) -> Iterator[tuple[date, date]]:
    """``[first, end)`` day ranges of consecutive days holding at most ``rows`` rows each
    (a day holding more is a range of its own), never across a month."""
    start: date | None = None
    held = 0
    last: date | None = None
    for day, n in days:
        new_month = start is not None and (day.year, day.month) != (start.year, start.month)
        if start is not None and last is not None and (held + n > rows or new_month):
            yield start, last + timedelta(days=1)
            start, held = None, 0
        if start is None:
            start = day
        held += n
        last = day
    if start is not None and last is not None:
        yield start, last + timedelta(days=1)


def focus_rows(
    query: Query,
    *,
    account: Account,
    p: Period | None = None,
    balances: pa.Table | None = None,
    report: FocusExport | None = None,
) -> Iterator[pa.Table]:
    """The FOCUS rows of the relation ``ledger`` that ``query`` runs SQL on, a month at a
    time (then the purchases), in slices of at most ``CHUNK`` rows; ``report`` is filled
    with the counts and totals as the rows go."""
    out = report if report is not None else FocusExport()
    where = day_filter(p)  # the engine's own period rule: the report's rows, no copy
    counts = query(COUNTS_SQL.format(usage=_USAGE, where=where)).to_pylist()[0]
    usage_n = int(counts["usage_tasks"])
    out.undated_tasks, out.undated_usd = int(counts["undated_tasks"]), counts["undated_usd"]
    out.undated_estimated_tasks = int(counts["undated_estimated_tasks"])
    out.undated_estimated_usd = counts["undated_estimated_usd"]
    out.unknown_cost_tasks = int(counts["unknown_cost_tasks"])
    out.pending_tasks = int(counts["pending_tasks"])
    out.released_tasks = int(counts["released_tasks"])
    if usage_n:
        days = [(r["day"], int(r["n"])) for r in query(DAYS_SQL.format(where=where)).to_pylist()]
        for start, end in _parts(days):
            part = f"{where} AND day >= DATE '{start}' AND day < DATE '{end}'"
            for raw in query(USAGE_SQL.format(where=part)).to_batches(CHUNK):
                rows = _usage(raw, account)
                _tally(out, rows)
                yield rows
    found = top_ups(balances)
    out.unsized_top_ups = found.unsized
    lo_t, hi_t = p.bounds() if p is not None else (None, None)
    kept = [
        r for r in found.rows if (lo_t is None or r[1] >= lo_t) and (hi_t is None or r[1] < hi_t)
    ]
    if kept:
        rows = _purchases(kept, account)
        _tally(out, rows)
        yield rows


def _tally(out: FocusExport, rows: pa.Table) -> None:
    n = rows.num_rows
    usage = int(
        pc.sum(
            pc.cast(
                pc.equal(pc.cast(rows["ChargeCategory"], pa.string()), pa.scalar("Usage")),
                pa.int64(),
            )
        ).as_py()
        or 0
    )
    out.rows += n
    out.usage_rows += usage
    out.purchase_rows += n - usage
    for attr, col in (
        ("effective_usd", "EffectiveCost"),
        ("billed_usd", "BilledCost"),
        ("list_usd", "ListCost"),
    ):
        total = pc.sum(rows[col]).as_py()
        setattr(out, attr, getattr(out, attr) + (total or Decimal(0)))


# ------------------------------------------------------------------------------- the API


def _account(source: object, account: str | Account | None, name: str | None) -> Account:
    if isinstance(account, Account):
        return account
    if account is None:
        key_id = getattr(source, "key_id", None)
        if not isinstance(key_id, str):
            raise ValueError(
                "account: FOCUS needs the billing account's id and the service shows none; "
                "pass account='...' (a client source names it by its key: account-of-key_...)"
            )
        account = account_of_key(key_id)
    return Account(account, name)


def _balances(source: object, balances: pa.Table | None) -> pa.Table | None:
    if balances is not None:
        return balances
    if isinstance(source, str) and "://" in source:
        return None  # a dataset only the engine reads: its snapshots are not here
    if isinstance(source, str | os.PathLike):
        from songlab.ledger.store import LedgerStore

        return LedgerStore(source).balance_table()
    table = getattr(source, "balance_table", None)
    return table() if callable(table) else None


def focus_batches(
    source: object,
    *,
    account: str | Account | None = None,
    account_name: str | None = None,
    period: Period | None = None,
    balances: pa.Table | None = None,
    engine: str | Backend = "duckdb",
    report: FocusExport | None = None,
) -> Iterator[pa.Table]:
    """The FOCUS rows of ``source`` (anything the engine reads: a tasks frame, a
    ``LedgerStore`` or its path, a client), in slices (tables of ``SCHEMA``), computed on
    ``engine`` (``engine.open_ledger``: ``"duckdb"``, ``"spark"`` or a backend)."""
    from songlab.ledger.engine import open_ledger

    acct = _account(source, account, account_name)
    snaps = _balances(source, balances)
    with open_ledger(source, engine=engine) as lg:
        yield from focus_rows(lg.arrow, account=acct, p=period, balances=snaps, report=report)


def focus_table(source: object, **options: Any) -> pa.Table:
    """All the FOCUS rows of ``source`` in one Arrow table (``focus_batches``' options);
    ``.to_pandas()`` for a frame. For a large ledger write a file (:func:`write_focus`)."""
    parts = list(focus_batches(source, **options))
    return pa.concat_tables(parts) if parts else SCHEMA.empty_table()


def write_focus(
    source: object,
    path: str | os.PathLike[str],
    *,
    account: str | Account | None = None,
    account_name: str | None = None,
    period: Period | None = None,
    balances: pa.Table | None = None,
    engine: str | Backend = "duckdb",
) -> FocusExport:
    """Write ``source``'s FOCUS 1.2 rows to ``path`` (``.csv`` or ``.parquet``) and its
    metadata to ``NAME.metadata.json`` beside it (``out.csv.metadata.json``); returns what
    was written and what has no row.

    ``account``: the billing account id (the spec shows none; a client source defaults
    to ``account-of-<its key id>``); ``period``: a ``periods.Period`` (tasks by their UTC
    day, top-ups by the later snapshot); ``balances``: balance snapshots (default: a
    ``LedgerStore``'s); ``engine``: ``"duckdb"``, ``"spark"`` or a backend object.
    """
    import songlab.ledger._focus_files as _focus_files

    _focus_files.check(Path(path))
    report = FocusExport()
    rows = focus_batches(
        source,
        account=account,
        account_name=account_name,
        period=period,
        balances=balances,
        engine=engine,
        report=report,
    )
    return _write(rows, path, report)


def _write(
    rows: Iterator[pa.Table], path: str | os.PathLike[str], report: FocusExport
) -> FocusExport:
    import songlab.ledger._focus_files as _focus_files

    report.path, report.metadata_path = _focus_files.write(
        rows, path, schema=SCHEMA, metadata=metadata, count=lambda: report.rows
    )
    return report


def check_path(path: str | os.PathLike[str]) -> Path:
    """``path`` as a FOCUS file name (``.csv`` or ``.parquet``), or a ``ValueError`` that
    says so (before anything is read or sent)."""
    import songlab.ledger._focus_files as _focus_files

    _focus_files.check(Path(path))
    return Path(path)


class Exporter:
    """The FOCUS export as one more view of a report's open ledger
    (``report.write_report(..., also=[Exporter(path, account=...)])``): the same relation,
    the same engine session. ``result`` is the :class:`FocusExport` once written."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        account: str | Account,
        account_name: str | None = None,
        period: Period | None = None,
    ) -> None:
        import songlab.ledger._focus_files as _focus_files

        _focus_files.check(Path(path))
        self.path = Path(path)
        self.account = _account(None, account, account_name)
        self.period = period
        self.result: FocusExport | None = None

    def __call__(self, ledger: Ledger, source: object) -> FocusExport:

        report = FocusExport()
        rows = focus_rows(
            ledger.arrow,
            account=self.account,
            p=self.period,
            balances=_balances(source, None),
            report=report,
        )
        self.result = _write(rows, self.path, report)
        return self.result
