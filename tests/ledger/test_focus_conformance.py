"""The FOCUS export against the FOCUS 1.2 column definitions, written from the specification
(``specification/columns/*.md`` and ``attributes/*.md`` of FOCUS_Spec at tag v1.2), not
from songlab's own column list: presence, types, allowed values, nullability, the date
format, numeric format, key-value format, the ``x_`` prefix and the schema metadata; in the
CSV and the Parquet file alike.
"""

from __future__ import annotations

import csv
import json
import re
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from songlab.ledger import _schema
from songlab.ledger.focus import write_focus
from songlab.ledger.store import BALANCE
from songlab.ledger.synthetic import synthetic_table

# Every column FOCUS 1.2 defines: (feature level, allows nulls, data type).
SPEC: dict[str, tuple[str, bool, str]] = {
    "AvailabilityZone": ("Recommended", True, "String"),
    "BilledCost": ("Mandatory", False, "Decimal"),
    "BillingAccountId": ("Mandatory", False, "String"),
    "BillingAccountName": ("Mandatory", True, "String"),
    "BillingAccountType": ("Conditional", False, "String"),
    "BillingCurrency": ("Mandatory", False, "String"),
    "BillingPeriodEnd": ("Mandatory", False, "Date/Time"),
    "BillingPeriodStart": ("Mandatory", False, "Date/Time"),
    "CapacityReservationId": ("Conditional", True, "String"),
    "CapacityReservationStatus": ("Conditional", True, "String"),
    "ChargeCategory": ("Mandatory", False, "String"),
    "ChargeClass": ("Mandatory", True, "String"),
    "ChargeDescription": ("Mandatory", True, "String"),
    "ChargeFrequency": ("Recommended", False, "String"),
    "ChargePeriodEnd": ("Mandatory", False, "Date/Time"),
    "ChargePeriodStart": ("Mandatory", False, "Date/Time"),
    "CommitmentDiscountCategory": ("Conditional", True, "String"),
    "CommitmentDiscountId": ("Conditional", True, "String"),
    "CommitmentDiscountName": ("Conditional", True, "String"),
    "CommitmentDiscountQuantity": ("Conditional", True, "Decimal"),
    "CommitmentDiscountStatus": ("Conditional", True, "String"),
    "CommitmentDiscountType": ("Conditional", True, "String"),
    "CommitmentDiscountUnit": ("Conditional", True, "String"),
    "ConsumedQuantity": ("Conditional", True, "Decimal"),
    "ConsumedUnit": ("Conditional", True, "String"),
    "ContractedCost": ("Mandatory", False, "Decimal"),
    "ContractedUnitPrice": ("Conditional", True, "Decimal"),
    "EffectiveCost": ("Mandatory", False, "Decimal"),
    "InvoiceId": ("Recommended", True, "String"),
    "InvoiceIssuerName": ("Mandatory", False, "String"),
    "ListCost": ("Mandatory", False, "Decimal"),
    "ListUnitPrice": ("Conditional", True, "Decimal"),
    "PricingCategory": ("Conditional", True, "String"),
    "PricingCurrency": ("Conditional", True, "String"),
    "PricingCurrencyContractedUnitPrice": ("Conditional", True, "Decimal"),
    "PricingCurrencyEffectiveCost": ("Conditional", True, "Decimal"),
    "PricingCurrencyListUnitPrice": ("Conditional", True, "Decimal"),
    "PricingQuantity": ("Mandatory", True, "Decimal"),
    "PricingUnit": ("Mandatory", True, "String"),
    "ProviderName": ("Mandatory", False, "String"),
    "PublisherName": ("Mandatory", False, "String"),
    "RegionId": ("Conditional", True, "String"),
    "RegionName": ("Conditional", True, "String"),
    "ResourceId": ("Conditional", True, "String"),
    "ResourceName": ("Conditional", True, "String"),
    "ResourceType": ("Conditional", True, "String"),
    "ServiceCategory": ("Mandatory", False, "String"),
    "ServiceName": ("Mandatory", False, "String"),
    "ServiceSubcategory": ("Recommended", False, "String"),
    "SkuId": ("Conditional", True, "String"),
    "SkuMeter": ("Conditional", True, "String"),
    "SkuPriceDetails": ("Conditional", True, "JSON"),
    "SkuPriceId": ("Conditional", True, "String"),
    "SubAccountId": ("Conditional", True, "String"),
    "SubAccountName": ("Conditional", True, "String"),
    "SubAccountType": ("Conditional", True, "String"),
    "Tags": ("Conditional", True, "JSON"),
}
MANDATORY = sorted(k for k, v in SPEC.items() if v[0] == "Mandatory")
# The conditional columns whose condition holds for this service: a published price list
# with unit prices, usage measured in tasks, sub accounts (API keys), user tags, and prices
# in a virtual currency (tokens) billed in a national one (USD).
CONDITIONS_MET = [
    "ConsumedQuantity",
    "ConsumedUnit",
    "ListUnitPrice",
    "PricingCurrency",
    "PricingCurrencyContractedUnitPrice",
    "PricingCurrencyEffectiveCost",
    "PricingCurrencyListUnitPrice",
    "SkuId",
    "SkuMeter",
    "SkuPriceDetails",
    "SkuPriceId",
    "SubAccountId",
    "SubAccountName",
    "Tags",
]
ALLOWED: dict[str, set[str]] = {
    "ChargeCategory": {"Usage", "Purchase", "Tax", "Credit", "Adjustment"},
    "ChargeClass": {"Correction"},
    "ChargeFrequency": {"One-Time", "Recurring", "Usage-Based"},
    "PricingCategory": {"Standard", "Dynamic", "Committed", "Other"},
    "ServiceCategory": {
        "AI and Machine Learning", "Analytics", "Business Applications", "Compute",
        "Databases", "Developer Tools", "Multicloud", "Identity", "Integration",
        "Internet of Things", "Management and Governance", "Media", "Migration", "Mobile",
        "Networking", "Security", "Storage", "Web", "Other",
    },
}  # fmt: skip
AI_SUBCATEGORIES = {
    "AI Platforms",
    "Bots",
    "Generative AI",
    "Machine Learning",
    "Natural Language Processing",
    "Other (AI and Machine Learning)",
}
# ISO 4217 national currencies this check accepts (BillingCurrency must be national).
NATIONAL = {"USD", "EUR", "GBP", "JPY", "CHF", "CAD", "AUD"}
DATETIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$")
# NumericFormat: an integer, a decimal or E notation with an unsigned positive exponent;
# no "+" sign, no commas, no units.
NUMERIC = re.compile(r"^-?\d+(\.\d+)?(E-?\d+)?$")
PASCAL = re.compile(r"^[A-Z][A-Za-z0-9]*$")
MOMENT = datetime(2026, 9, 20, 12, tzinfo=UTC)


def _edge_rows() -> pd.DataFrame:
    """Tasks the synthetic data lacks: a task of known cost and no date, one of unknown
    cost, hostile labels, a task with no labels at all."""
    base = _schema.to_frame(synthetic_table(4, seed=11, labels=True))
    base["operation"] = pd.array(["generate_song"] * 4, dtype=base["operation"].dtype)
    base["model"] = pd.array(["v7"] * 4, dtype=base["model"].dtype)
    base["tier"] = pd.array(["standard"] * 4, dtype=base["tier"].dtype)
    base["license"] = pd.array([2] * 4, dtype=base["license"].dtype)
    base["status"] = pd.array(["completed"] * 4, dtype=base["status"].dtype)
    base["parent_task_id"] = pd.array([None] * 4, dtype=base["parent_task_id"].dtype)
    base["task_id"] = pd.array([f"edge-{i}" for i in range(4)], dtype=base["task_id"].dtype)
    money = base["cost_usd"].dtype
    base["cost_usd"] = pd.array([Decimal("0.25")] * 3 + [None], dtype=money)
    base["billed_usd"] = pd.array([Decimal("0.25")] * 3 + [None], dtype=money)
    base["estimate_usd"] = pd.array([Decimal("0.25")] * 3 + [None], dtype=money)
    src = base["cost_source"].dtype
    base["cost_source"] = pd.array(["billed", "billed", "billed", "unknown"], dtype=src)
    stamps = [None, MOMENT, MOMENT, MOMENT]
    base["created_at"] = pd.array(stamps, dtype=base["created_at"].dtype)
    base["project"] = pd.array([None, '=HYPERLINK("x")', None, None], dtype=base["project"].dtype)
    base["tags"] = pd.array([None, "a,@b", None, None], dtype=base["tags"].dtype)
    base["key_id"] = pd.array([None, "key_0123456789ab", None, None], dtype=base["key_id"].dtype)
    return base


def _balances() -> pa.Table:
    t0 = datetime(2026, 9, 10, 8, 30, 15, 250_000, tzinfo=UTC)
    rows = [  # a top-up of 5,000 tokens between the first two, then spending only
        (t0, 90_000, 90_000, 0),
        (t0 + timedelta(days=2), 94_000, 89_000, 5_000),
        (t0 + timedelta(days=5), 93_500, 88_500, 5_000),
    ]
    return pa.table(
        {
            "taken_at": [r[0] for r in rows],
            "total_effective": [r[1] for r in rows],
            "base_effective": [r[2] for r in rows],
            "extra_tokens": [r[3] for r in rows],
            "base_expires_at": [t0 + timedelta(days=365)] * 3,
            "tasks_added": [0, 0, 0],
        }
    ).cast(BALANCE)


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    frame = pd.concat(
        [_schema.to_frame(synthetic_table(6_000, seed=4, labels=True)), _edge_rows()],
        ignore_index=True,
    )
    out = tmp_path_factory.mktemp("focus")
    reports = {}
    for name in ("focus.csv", "focus.parquet"):
        reports[name] = write_focus(frame, out / name, account="acct-7", balances=_balances())
    with open(out / "focus.csv", newline="", encoding="utf-8") as fh:
        reader = csv.reader(fh)
        header = next(reader)
        rows = [dict(zip(header, r, strict=True)) for r in reader]
    return {
        "dir": out,
        "csv_header": header,
        "csv": rows,
        "parquet": pq.read_table(out / "focus.parquet"),
        "reports": reports,
        "frame": frame,
    }


def _columns(exported: dict[str, Any]) -> list[str]:
    names = exported["parquet"].column_names
    assert names == exported["csv_header"]
    return list(names)


def test_every_mandatory_column_and_every_met_condition(exported: dict[str, Any]) -> None:
    names = _columns(exported)
    assert len(MANDATORY) == 21
    assert [c for c in MANDATORY if c not in names] == []
    assert [c for c in CONDITIONS_MET if c not in names] == []
    assert len(names) == len(set(names))


def test_custom_columns_are_prefixed_and_come_last(exported: dict[str, Any]) -> None:
    names = _columns(exported)
    custom = [n for n in names if n not in SPEC]
    assert custom and all(n.startswith("x_") for n in custom)
    # FOCUS columns first, then the custom ones, not intermixed
    first_custom = names.index(custom[0])
    assert all(n in SPEC for n in names[:first_custom])
    assert all(n not in SPEC for n in names[first_custom:])
    for n in names:  # ColumnHandling: Pascal case, alphanumeric (after x_), at most 50
        assert PASCAL.match(n.removeprefix("x_")), n
        assert len(n) <= 50


def test_parquet_types_follow_the_data_types(exported: dict[str, Any]) -> None:
    schema = exported["parquet"].schema
    for f in schema:
        kind = SPEC[f.name][2] if f.name in SPEC else None
        if kind == "Decimal":
            assert pa.types.is_decimal(f.type), f.name
        elif kind == "Date/Time":
            assert pa.types.is_timestamp(f.type) and f.type.tz == "UTC", f.name
        elif kind in ("String", "JSON"):
            assert pa.types.is_string(f.type), f.name
    assert pa.types.is_timestamp(schema.field("x_TaskCreatedAt").type)


def _csv_values(exported: dict[str, Any], col: str) -> list[str | None]:
    return [r[col] or None for r in exported["csv"]]  # an empty field is null


def test_nullability_in_both_files(exported: dict[str, Any]) -> None:
    table = exported["parquet"]
    for name in table.column_names:
        if name in SPEC and not SPEC[name][1]:
            assert table[name].null_count == 0, name
            assert None not in _csv_values(exported, name), name
    # NullHandling: never an empty string for "no value"
    for f in table.schema:
        if pa.types.is_string(f.type):
            assert "" not in table[f.name].drop_null().to_pylist(), f.name
    # and in the CSV, no quoted empty field (an empty field is a null)
    with open(exported["dir"] / "focus.csv", encoding="utf-8") as fh:
        assert ',"",' not in fh.read()


def test_values_are_in_their_formats(exported: dict[str, Any]) -> None:
    for name in exported["csv_header"]:
        kind = SPEC[name][2] if name in SPEC else None
        values = [v for v in _csv_values(exported, name) if v is not None]
        if kind == "Date/Time" or name == "x_TaskCreatedAt":
            bad = [v for v in values if not DATETIME.match(v)]
            assert bad == [], (name, bad[:3])
        elif kind == "Decimal":
            bad = [v for v in values if not NUMERIC.match(v)]
            assert bad == [], (name, bad[:3])
            assert not any("E" in v for v in values), name  # songlab writes plain decimals
        elif kind == "JSON":
            for v in values:
                pairs = json.loads(v, object_pairs_hook=lambda kv: kv)
                keys = [k for k, _ in pairs]
                assert len(keys) == len(set(keys)), v  # unique keys
                assert all(not isinstance(x, dict | list) for _, x in pairs), v


def test_allowed_values(exported: dict[str, Any]) -> None:
    table = exported["parquet"]
    for name, allowed in ALLOWED.items():
        if name in table.column_names:
            assert set(table[name].drop_null().to_pylist()) <= allowed, name
    assert table["ServiceCategory"].unique().to_pylist() == ["AI and Machine Learning"]
    assert set(table["ServiceSubcategory"].to_pylist()) <= AI_SUBCATEGORIES
    assert set(table["BillingCurrency"].to_pylist()) <= NATIONAL
    assert table["ChargeClass"].null_count == table.num_rows  # nothing corrects an invoice


def test_conditional_rules(exported: dict[str, Any]) -> None:
    rows = exported["parquet"].to_pylist()
    kinds = {r["ChargeCategory"] for r in rows}
    assert kinds == {"Usage", "Purchase"}
    for r in rows:
        usage = r["ChargeCategory"] == "Usage"
        # Usage and Purchase rows (no correction) carry their prices, quantities and SKU
        for col in (
            "ListUnitPrice",
            "ContractedUnitPrice",
            "PricingCategory",
            "PricingQuantity",
            "PricingCurrencyListUnitPrice",
            "PricingCurrencyContractedUnitPrice",
            "SkuId",
            "SkuPriceId",
        ):
            assert r[col] is not None, col
        assert (r["PricingUnit"] is None) == (r["PricingQuantity"] is None)
        assert (r["ConsumedQuantity"] is None) == (not usage)
        assert (r["ConsumedUnit"] is None) == (r["ConsumedQuantity"] is None)
        assert (r["SubAccountName"] is None) == (r["SubAccountId"] is None)
        assert r["SkuMeter"] is not None  # SHOULD NOT be null when SkuId is not
        assert r["SkuPriceDetails"] is None or r["SkuPriceId"] is not None
        # unit price x quantity = cost (no correction rows)
        assert r["ListUnitPrice"] * r["PricingQuantity"] == r["ListCost"]
        assert r["ContractedUnitPrice"] * r["PricingQuantity"] == r["ContractedCost"]
        assert r["ListUnitPrice"] >= 0 and r["ContractedUnitPrice"] >= 0
        # periods: inclusive start before exclusive end, the charge inside its billing month
        assert r["ChargePeriodStart"] < r["ChargePeriodEnd"]
        assert r["BillingPeriodStart"] < r["BillingPeriodEnd"]
        assert r["BillingPeriodStart"].day == 1 and r["BillingPeriodEnd"].day == 1
        if usage:
            assert r["ChargeFrequency"] == "Usage-Based"
            assert r["BilledCost"] == 0  # paid from prepaid tokens (appendix, scenario A2)
            assert r["PricingCurrency"] == "Token"
            assert r["PricingCurrencyEffectiveCost"] == r["EffectiveCost"] * 100
            assert r["BillingPeriodStart"] <= r["ChargePeriodStart"]
            assert r["ChargePeriodEnd"] <= r["BillingPeriodEnd"]
        else:
            assert r["ChargeFrequency"] != "Usage-Based"
            assert r["EffectiveCost"] == 0  # prepaid: covers future charges
            assert r["PricingCurrencyEffectiveCost"] == 0
            assert r["BilledCost"] == r["ListCost"] > 0


def test_tags_and_sub_accounts(exported: dict[str, Any]) -> None:
    rows = exported["parquet"].to_pylist()
    hostile = [r for r in rows if r["x_TaskId"] == "edge-1"]
    assert len(hostile) == 1
    assert json.loads(hostile[0]["Tags"]) == {
        "project": '=HYPERLINK("x")',
        "tag/a": True,
        "tag/@b": True,
    }
    assert hostile[0]["SubAccountId"] == "key_0123456789ab"
    plain = [r for r in rows if r["x_TaskId"] == "edge-2"]
    assert plain[0]["Tags"] is None and plain[0]["SubAccountId"] is None
    # the CSV keeps a spreadsheet from running the description or ids as formulas, and the
    # key-value text (starting with "{") unchanged
    csv_row = [r for r in exported["csv"] if r["x_TaskId"] == "edge-1"][0]
    assert json.loads(csv_row["Tags"])["project"] == '=HYPERLINK("x")'


def test_metadata(exported: dict[str, Any]) -> None:
    for name, table_cols in (
        ("focus.csv", exported["csv_header"]),
        ("focus.parquet", exported["parquet"].column_names),
    ):
        meta_path = exported["dir"] / f"{name}.metadata.json"
        meta = json.loads(meta_path.read_text())
        assert meta["FocusVersion"] == "1.2"
        assert meta["DataGenerator"] and meta["SchemaId"]
        assert DATETIME.match(meta["CreationDate"])
        defs = {d["ColumnName"]: d for d in meta["ColumnDefinition"]}
        assert list(defs) == table_cols
        for col, d in defs.items():
            assert d["DataType"], col
            if col in SPEC and SPEC[col][2] == "Decimal":
                assert d["DataType"] == "DECIMAL" and d["NumberScale"] >= 0
        assert isinstance(defs["Tags"]["ProviderTagPrefixes"], list)
        (location,) = meta["data_location"]
        assert location["filepath"] == name
        assert location["total_bytes"] == (exported["dir"] / name).stat().st_size
        assert location["total_rows"] == exported["reports"][name].rows
        assert (meta_path.stat().st_mode & 0o777) == 0o600
        assert ((exported["dir"] / name).stat().st_mode & 0o777) == 0o600
    embedded = json.loads(exported["parquet"].schema.metadata[b"focus"])
    assert embedded["SchemaId"] == meta["SchemaId"]


def test_rows_and_what_has_none(exported: dict[str, Any]) -> None:
    frame = exported["frame"]
    rep = exported["reports"]["focus.parquet"]
    other = exported["reports"]["focus.csv"]
    assert (rep.rows, rep.effective_usd, rep.billed_usd) == (
        other.rows,
        other.effective_usd,
        other.billed_usd,
    )
    top = frame[frame["parent_task_id"].isna()]
    known = top[top["cost_source"].isin(["billed", "estimate"])]
    dated = known[known["created_at"].notna()]
    assert rep.usage_rows == len(dated)
    assert rep.effective_usd == sum(dated["cost_usd"].tolist(), Decimal(0))
    assert (rep.undated_tasks, rep.undated_usd) == (1, Decimal("0.25"))
    assert rep.unknown_cost_tasks == int((top["cost_source"] == "unknown").sum()) >= 1
    assert rep.purchase_rows == 1 and rep.billed_usd == Decimal("50.00")
    table = exported["parquet"]
    purchase = [r for r in table.to_pylist() if r["ChargeCategory"] == "Purchase"][0]
    assert purchase["PricingQuantity"] == 5_000
    assert purchase["ChargePeriodStart"] == datetime(2026, 9, 10, 8, 30, 15, tzinfo=UTC)
    assert purchase["ChargePeriodEnd"] == datetime(2026, 9, 12, 8, 30, 16, tzinfo=UTC)
    assert rep.notes() and "no date" in rep.notes()[0]
