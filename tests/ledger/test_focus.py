"""``songlab report --focus`` as a user runs it: tasks and a real top-up on the sandbox, a
Parquet ledger refreshed around the top-up, the FOCUS file beside the report; bad options
refused before anything is read or sent; the Python API's rules."""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from songlab import cli
from songlab.ledger import _schema, tables
from songlab.ledger.focus import account_of_key, focus_table, top_ups, write_focus
from songlab.ledger.synthetic import synthetic_table
from tests.ledger.test_focus_conformance import _balances, _edge_rows


def test_cli_focus_with_a_real_top_up(
    sandbox: Any,
    admin: Any,
    new_account: Callable[..., Any],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from songlab.client import Client
    from songlab.ledger import LedgerStore, attribution

    acct = new_account()
    ledger = tmp_path / "ledger"
    made = []
    with Client(acct.api_key, base_url=sandbox.base_url) as c:
        store = LedgerStore(ledger).track(c)
        with attribution(project="radio-ads", tags=["spring"]):
            h = c.generations.create(operation="write_lyrics", model="v5", payload={"prompt": "x"})
        made.append(c.generations.wait(h.task_id, timeout=30))
        store.refresh(c)  # the first balance snapshot
        r = admin.post(f"/_sandbox/accounts/{acct.account_id}/topup", json={"tokens": 5000})
        assert r.status_code == 200
        h = c.generations.create(operation="write_lyrics", model="v5", payload={"prompt": "y"})
        made.append(c.generations.wait(h.task_id, timeout=30))
        key_id = c.key_id
    monkeypatch.setenv("SONGLAB_API_KEY", acct.api_key)
    monkeypatch.setenv("SONGLAB_BASE_URL", sandbox.base_url)
    out, focus = tmp_path / "r.html", tmp_path / "focus" / "costs.parquet"
    argv = ["report", "--out", str(out), "--ledger", str(ledger), "--focus", str(focus)]
    assert cli.main(argv) == 0  # refreshes the ledger: the second snapshot, after the top-up
    printed = capsys.readouterr().out
    rows = pq.read_table(focus).to_pylist()
    usage = [r for r in rows if r["ChargeCategory"] == "Usage"]
    purchase = [r for r in rows if r["ChargeCategory"] == "Purchase"]
    assert sorted(r["x_TaskId"] for r in usage) == sorted(t.task_id for t in made)
    assert all(r["EffectiveCost"] == Decimal("0.02") and r["BilledCost"] == 0 for r in usage)
    assert all(r["PricingCurrencyEffectiveCost"] == 2 for r in usage)  # 2 tokens
    assert all(r["SubAccountId"] == key_id and r["BillingAccountId"] == account_of_key(key_id)
               for r in usage)  # fmt: skip
    labelled = [r for r in usage if r["x_TaskId"] == made[0].task_id][0]
    assert labelled["Tags"] == '{"project":"radio-ads","tag/spring":true}'
    (top_up,) = purchase
    assert (top_up["PricingQuantity"], top_up["BilledCost"]) == (5000, Decimal("50.00"))
    assert top_up["EffectiveCost"] == 0
    # the same figures as the report of the same ledger
    report = tables.build(LedgerStore(ledger))
    assert sum(r["EffectiveCost"] for r in usage) == report.figures["spend"]
    assert "FOCUS 1.2: 2 usage rows" in printed and "1 top-up rows" in printed
    assert (tmp_path / "focus" / "costs.parquet.metadata.json").exists()
    assert acct.api_key not in printed + focus.read_bytes().decode("latin-1")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--focus", "costs.xlsx"], "must end in .csv or .parquet"),
        (["--focus-account", "a-1"], "--focus-account: goes with --focus"),
        (["--spark-remote", "http://example:15002"], "sc://HOST:PORT"),
        (["--engine", "duckdb", "--spark-remote", "sc://h:1"], "cannot go with --engine duckdb"),
    ],
    ids=["bad-suffix", "account-alone", "remote-not-sc", "remote-with-duckdb"],
)
def test_cli_refuses_bad_focus_and_engine_options_before_connecting(
    args: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["report", "--out", str(tmp_path / "r.html"), *args]
    assert cli.main(argv) == 2
    assert message in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_python_api_rules(tmp_path: Path) -> None:
    frame = pd.concat(
        [_schema.to_frame(synthetic_table(500, seed=2, labels=True)), _edge_rows()],
        ignore_index=True,
    )
    with pytest.raises(ValueError, match="account: FOCUS needs the billing account's id"):
        write_focus(frame, tmp_path / "f.csv")
    with pytest.raises(ValueError, match="must end in .csv or .parquet"):
        write_focus(frame, tmp_path / "f.json", account="a")
    assert list(tmp_path.iterdir()) == []  # nothing half-written
    table = focus_table(frame, account="a", balances=_balances())
    report = tables.build(frame)
    usage = table.filter(pc.equal(table["ChargeCategory"], "Usage"))
    undated = frame[frame["created_at"].isna() & frame["cost_source"].isin(["billed", "estimate"])]
    assert (
        sum(usage["EffectiveCost"].to_pylist()) + sum(undated["cost_usd"].tolist())
        == (report.figures["spend"])
    )


def test_top_ups_only_where_the_snapshots_prove_them() -> None:
    snaps = _balances().to_pylist()
    # the base used up in the later snapshot: extra tokens may have been spent, size unknown
    unsized = [dict(snaps[0]), dict(snaps[1], base_effective=0, total_effective=5_000)]
    # the total rose with no rise in extra tokens and no base left: tokens came, how many?
    grown = [dict(snaps[0], base_effective=0, extra_tokens=10), dict(snaps[0], base_effective=0,
             extra_tokens=10, total_effective=95_000)]  # fmt: skip
    from songlab.ledger.store import BALANCE

    assert top_ups(_balances()).rows[0][2] == 5_000 and top_ups(_balances()).unsized == 0
    found = top_ups(pa.Table.from_pylist(unsized, schema=BALANCE))
    assert (found.rows, found.unsized) == ([], 1)
    found = top_ups(pa.Table.from_pylist(grown, schema=BALANCE))
    assert (found.rows, found.unsized) == ([], 1)
    assert top_ups(None).rows == [] and top_ups(_balances().slice(0, 1)).rows == []
