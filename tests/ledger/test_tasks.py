"""The tasks frame: columns, dtypes, which cost counts, exact money, any source shape."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pandas as pd
import pyarrow as pa
import pytest

from songlab import pricing
from songlab.ledger import TASKS, tasks_frame
from tests.ledger._util import snap


def test_columns_and_dtypes_are_the_schema(records: list[dict[str, Any]]) -> None:
    df = tasks_frame(records)
    assert list(df.columns) == TASKS.names
    for field in TASKS:
        assert df[field.name].dtype == pd.ArrowDtype(field.type), field.name
    assert len(df) == len(records)
    assert df["task_id"].tolist() == [r["task_id"] for r in records]  # source order kept


def test_empty_source_gives_the_empty_frame() -> None:
    df = tasks_frame([])
    assert list(df.columns) == TASKS.names and df.empty
    assert df["cost_usd"].dtype == pd.ArrowDtype(pa.decimal128(18, 8))


def test_money_sums_exactly(records: list[dict[str, Any]]) -> None:
    df = tasks_frame(records)
    expected = sum(
        (Decimal(r["cost_usd"]) for r in records if r["cost_usd"] is not None), Decimal(0)
    )
    assert df["billed_usd"].sum() == expected
    assert isinstance(df["billed_usd"].sum(), Decimal)


@pytest.mark.parametrize(
    ("fields", "source", "cost", "estimate"),
    [
        ({}, "billed", "0.12", "0.12"),
        ({"status": "completed", "cost_usd": None, "license": 5}, "estimate", "1.67", "1.67"),
        # still running: nothing spent yet; its list price stays in estimate_usd
        ({"status": "processing", "cost_usd": None, "license": 5}, "pending", None, "1.67"),
        (
            {"status": "failed", "cost_usd": None, "failure": {"error": "GenerationFailed"}},
            "unbilled",
            "0",
            "0.12",
        ),
        ({"status": "failed", "cost_usd": "0.00000000"}, "billed", "0", "0.12"),
        ({"operation": "mystery", "cost_usd": None, "status": "completed"}, "unknown", None, None),
        ({"operation": "mystery", "cost_usd": None, "status": "queued"}, "pending", None, None),
        (
            {
                "operation": "song_translation",
                "model": "pipeline",
                "license": 2,
                "cost_usd": None,
                "status": "completed",
            },
            "estimate",
            str(pricing.estimate_translation(2)),
            None,
        ),
        (
            {"operation": "karaoke-tracks", "model": "workflow", "cost_usd": "0.13000000"},
            "billed",
            "0.13",
            str(pricing.estimate_workflow("karaoke-tracks")),
        ),
    ],
    ids=[
        "billed",
        "estimate",
        "pending",
        "failed-unbilled",
        "failed-reported-0",
        "unknown",
        "unknown-pending",
        "translation",
        "workflow",
    ],
)
def test_cost_source(
    fields: dict[str, Any], source: str, cost: str | None, estimate: str | None
) -> None:
    row = tasks_frame([snap("t1", **fields)]).iloc[0]
    assert row["cost_source"] == source
    if cost is None:
        assert pd.isna(row["cost_usd"])
    else:
        assert row["cost_usd"] == Decimal(cost)
    if estimate is not None:
        assert row["estimate_usd"] == Decimal(estimate)


def test_license_zero_is_royalty_free_and_a_missing_one_unknown() -> None:
    df = tasks_frame(
        [
            snap("a", license=0),
            snap("b", license=None, cost_usd=None),
            snap("c", license=4),
            snap("d", license=None, cost_usd=None, operation="extend_song"),
        ]
    )
    assert df["license"].tolist()[0::2] == [1, 4] and df["license"].isna().tolist()[1::2] == [
        True,
        True,
    ]
    assert df["license_source"].tolist() == ["service", "unknown", "service", "unknown"]
    assert df["tier"].isna().tolist() == [False, True, False, True]
    # a v7 song's price depends on the tier: unknown, never 0; extend costs the same in all
    assert df["cost_usd"].isna()[1] and df["cost_source"][1] == "unknown"
    assert df["cost_usd"][3] == Decimal("0.07") and df["cost_source"][3] == "estimate"


def test_duration_only_once_terminal() -> None:
    df = tasks_frame([snap("a"), snap("b", status="processing")])
    assert df["duration"].iloc[0] == pd.Timedelta(seconds=5)
    assert pd.isna(df["duration"].iloc[1])


def test_failure_error_and_agent_trace_kept() -> None:
    df = tasks_frame(
        [
            snap("a", status="failed", failure={"error": "GenerationFailed", "message": "x"}),
            snap("b", operation="agent", model="flash", output={"metadata_json": '{"steps": []}'}),
        ]
    )
    assert df["failure_error"].tolist()[0] == "GenerationFailed"
    assert pd.isna(df["failure_error"].iloc[1])
    assert df["metadata_json"].iloc[1] == '{"steps": []}'


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"license": 9}, "license must be 0-5"),
        ({"cost_usd": 0.12}, "cost_usd must be a decimal string"),
        ({"cost_usd": "0.123456789"}, "cost_usd"),
        ({"created_at": "yesterday"}, "created_at"),
    ],
    ids=["license", "float-cost", "nine-decimals", "timestamp"],
)
def test_bad_records_name_the_field(fields: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        tasks_frame([snap("t1", **fields)])


def test_odd_but_valid_value_types_are_accepted() -> None:
    t0 = datetime(2026, 11, 20, 10, tzinfo=UTC)
    df = tasks_frame(
        [
            snap(
                "a", cost_usd=Decimal("0.12"), created_at=t0, updated_at=t0 + timedelta(seconds=3)
            ),
            snap("b", created_at="2026-11-20T10:00:00", updated_at="2026-11-20T10:00:01+00:00"),
        ]
    )
    assert df["cost_usd"].iloc[0] == Decimal("0.12")
    assert df["duration"].tolist() == [pd.Timedelta(seconds=3), pd.Timedelta(seconds=1)]


class _Task:
    def __init__(self, raw: dict[str, Any]) -> None:
        self.raw = raw


class _Generations:
    def __init__(self, items: list[Any]) -> None:
        self.items = items
        self.limits: list[int] = []

    def list(self, *, limit: int = 20) -> Any:
        self.limits.append(limit)
        return iter(self.items)


class _Client:
    def __init__(self, items: list[Any]) -> None:
        self.generations = _Generations(items)


def test_sources_client_objects_and_generators_agree(records: list[dict[str, Any]]) -> None:
    expected = tasks_frame(records)
    client = _Client([_Task(r) for r in records])
    pd.testing.assert_frame_equal(tasks_frame(client), expected)
    assert client.generations.limits == [100]
    pd.testing.assert_frame_equal(tasks_frame(_Task(r) for r in records), expected)
    chunked = tasks_frame(iter(records), chunk_size=128)
    pd.testing.assert_frame_equal(chunked, expected)


def test_a_single_dict_is_refused() -> None:
    with pytest.raises(TypeError, match="task: expected a dict"):
        tasks_frame(iter([1, 2]))
    with pytest.raises(TypeError, match="source"):
        tasks_frame(snap("a"))  # type: ignore[arg-type]


def test_estimate_is_the_price_list_for_every_priced_row(records: list[dict[str, Any]]) -> None:
    df = tasks_frame(records)
    plain = df[df["operation"] != "agent"]
    for op, model, lic, est in plain[["operation", "model", "license", "estimate_usd"]].itertuples(
        index=False
    ):
        assert est == pricing.price(op, model, lic)


def test_agent_estimate_from_the_trace_equals_the_billed_total(
    records: list[dict[str, Any]],
) -> None:
    df = tasks_frame(records)
    runs = df[(df["operation"] == "agent") & (df["status"] == "completed")]
    assert len(runs) > 0
    assert (runs["estimate_usd"] == runs["billed_usd"]).all()
