"""The budgets file (``songlab.ledger.budgets``): a team's TOML read whole, every mistake named
with its field and rule (an API key never repeated), budgets judged in their period."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import pytest

from songlab.ledger import budgets, forecasts

FILE = """
# the team's budgets, versioned with the code
[[budget]]
usd = "500"
period = "month"

[[budget]]
name = "Podcast"
project = "podcast"
usd = "120.50"
period = "month"
hard = true
near = 90

[[budget]]
key = "key_0a1b2c3d4e5f"
usd = 50
period = "week"

[[budget]]
tag = "launch"
usd = "1_000"
period = "quarter"

[[budget]]
usd = "40"
period = "day"

[anomalies]
min_usd = "10"
min_percent = 30
combine = "or"
z = 5
monitors = ["total", "project"]
days = 3

[forecast]
level = 90

[expiry]
warn_days = 30
min_tokens = 500
"""


def test_a_team_file_reads_whole() -> None:
    g = budgets.parse(FILE, source="team.toml")
    assert [(b.scope, b.value, b.usd, b.period, b.hard) for b in g.budgets] == [
        ("account", None, Decimal("500"), "month", False),
        ("project", "podcast", Decimal("120.50"), "month", True),
        ("key", "key_0a1b2c3d4e5f", Decimal("50"), "week", False),
        ("tag", "launch", Decimal("1000"), "quarter", False),
        ("account", None, Decimal("40"), "day", False),
    ]
    assert g.budgets[1].near == Decimal("90") and g.budgets[0].near == Decimal("80")
    assert g.budgets[1].label == "Podcast (project podcast, $120.50 a month, hard)"
    assert g.budgets[3].label == "tag launch ($1,000.00 a quarter, soft)"
    assert [b.value for b in g.hard] == ["podcast"]
    t = g.thresholds
    assert (t.min_usd, t.min_percent, t.combine, t.z) == (Decimal("10"), Decimal("30"), "or", 5.0)
    assert g.monitors == ("total", "project") and g.anomaly_days == 3
    assert g.level == 0.9
    assert (g.expiry.warn_days, g.expiry.min_tokens) == (30, 500)
    assert g.source == "team.toml"


def test_an_empty_file_is_the_defaults() -> None:
    g = budgets.parse("")
    assert g.budgets == () and g.thresholds.min_usd is None and g.level == forecasts.LEVEL


def test_load_reads_a_path(tmp_path: Path) -> None:
    p = tmp_path / "budgets.toml"
    p.write_text(FILE, encoding="utf-8")
    assert len(budgets.load(p).budgets) == 5
    with pytest.raises(budgets.BudgetFileError, match="no such budgets file"):
        budgets.load(tmp_path / "missing.toml")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[[budget]]\nusd = 120.5\n", r"budget 1: usd: .*a TOML float is not exact"),
        ("[[budget]]\nperiod = 'month'\n", r"budget 1: usd: required"),
        ("[[budget]]\nusd = 'lots'\n", r"budget 1: usd: an amount in USD"),
        ("[[budget]]\nusd = '0'\n", r"budget 1: usd: an amount above 0"),
        ("[[budget]]\nusd = '-5'\n", r"budget 1: usd: a non-negative amount"),
        ("[[budget]]\nusd = '1.000000001'\n", r"usd: at most 8 decimals"),
        ("[[budget]]\nusd = 'Infinity'\n", r"usd: a finite amount"),
        ("[[budget]]\nusd = '5'\nperiod = 'year'\n", r"period: one of day, week, month, quarter"),
        ("[[budget]]\nusd = '5'\nperod = 'month'\n", r"budget 1: perod: not a budget field"),
        (
            "[[budget]]\nusd = '5'\nproject = 'a'\ntag = 'b'\n",
            r"budget 1 \(project 'a'\): tag: a budget is for one of project, key or tag",
        ),
        ("[[budget]]\nusd = '5'\nproject = 'bad/name'\n", r"project: 1-64 characters"),
        ("[[budget]]\nusd = '5'\ntag = 'has space'\n", r"tag: each 1-64 characters"),
        ("[[budget]]\nusd = '5'\nhard = 'yes'\n", r"hard: true .* or false"),
        ("[[budget]]\nusd = '5'\nnear = 0\n", r"near: a percentage from 1 to 100"),
        ("[[budget]]\nusd = '5'\nnear = true\n", r"near: a percentage from 1 to 100"),
        ("[[budget]]\nusd = '5'\nname = ''\n", r"name: 1-100 characters"),
        (
            "[[budget]]\nusd='5'\nname='x'\n[[budget]]\nusd='6'\nname='x'\n",
            r"budget names must differ; repeated: \['x'\]",
        ),
        ("budget = 5\n", r"budget: an array of tables, written \[\[budget\]\]"),
        ("[budgets]\nusd = '5'\n", r"unknown table or key 'budgets'"),
        ("[anomalies]\nmin_usd = 5.5\n", r"anomalies: min_usd: .*not exact"),
        ("[anomalies]\ncombine = 'xor'\n", r"anomalies: combine: \"and\" .* or \"or\""),
        ("[anomalies]\nmonitors = ['team']\n", r"anomalies: monitors: a list of total"),
        ("[anomalies]\nz = 0\n", r"anomalies: z: a number of spreads from 1 to 100"),
        ("[anomalies]\ndays = 0\n", r"anomalies: days: a whole number of days from 1 to 92"),
        ("[anomalies]\nthreshold = 1\n", r"anomalies: threshold: not an anomalies field"),
        ("[forecast]\nlevel = 0.8\n", r"forecast: level: the interval in %, from 50 to 99"),
        ("[expiry]\nwarn_days = -1\n", r"expiry: warn_days: a whole number of days"),
        ("[expiry]\nmin_tokens = 'many'\n", r"expiry: min_tokens: a whole number of tokens"),
        ("[[budget]\nusd = 5\n", r"not valid TOML: .*line 1"),
    ],
)
def test_bad_input_names_the_field_and_the_rule(text: str, message: str) -> None:
    with pytest.raises(budgets.BudgetFileError, match=message) as info:
        budgets.parse(text, source="team.toml")
    assert str(info.value).startswith("team.toml: ")
    assert isinstance(info.value, ValueError)


def test_a_key_that_is_not_a_key_id_is_never_repeated() -> None:
    secret = "sk-live-" + "9" * 40
    with pytest.raises(budgets.BudgetFileError) as info:
        budgets.parse(f"[[budget]]\nusd = '5'\nkey = '{secret}'\n")
    assert "key: a key id, key_ and 12 hex digits" in str(info.value)
    assert secret not in str(info.value) and "999999" not in str(info.value)
    assert secret not in repr(info.value)


def test_a_webhook_url_is_not_a_budget_setting() -> None:
    with pytest.raises(budgets.BudgetFileError, match="unknown table or key 'webhook'"):
        budgets.parse("[webhook]\nurl = 'https://hooks.example.com/T000/B000/xyz'\n")


def _fc(mean: str, spent: str, period: str = "month") -> forecasts.SpendForecast:
    """A forecast of a steady $10 a day with the spend so far ``spent``."""
    as_of = datetime(2026, 11, 20, 12, tzinfo=UTC)
    hist = {as_of.date() - timedelta(days=i): Decimal(mean) for i in range(1, 40)}
    hist[as_of.date()] = Decimal(spent) - sum(
        v for d, v in hist.items() if d.month == 11 and d != as_of.date()
    )
    return forecasts.forecast(hist, as_of=as_of, period=period, paths=200)


@pytest.mark.parametrize(
    ("usd", "state"),
    [
        ("150", "over"),  # spent 195 > 150
        ("250", "forecast over"),  # spent 195, forecast 300 > 250
        ("240", "forecast over"),
        ("320", "ok"),  # 195 = 61% of 320, forecast 300 under
        ("230", "forecast over"),
    ],
)
def test_budget_states(usd: str, state: str) -> None:
    fc = _fc("10", "195")
    assert fc.mean_usd == Decimal("300.00")  # $195 by noon of the 20th, then $10 a day
    rule = budgets.BudgetRule(Decimal(usd), "month")
    s = budgets.status(rule, fc.spent_usd, fc, at=date(2026, 11, 20))
    assert s.status == state
    assert (s.period, s.start, s.end) == ("2026-11", date(2026, 11, 1), date(2026, 11, 30))
    assert s.remaining_usd == Decimal(usd) - fc.spent_usd


def test_near_is_the_share_used() -> None:
    fc = _fc("1", "195")  # a quiet rest of the month: the forecast stays under
    near = budgets.BudgetRule(Decimal("220"), "month", near=Decimal("85"))
    s = budgets.status(near, fc.spent_usd, fc, at=date(2026, 11, 20))
    assert (s.status, s.used_percent) == ("near", Decimal("88.6"))
    relaxed = budgets.BudgetRule(Decimal("220"), "month", near=Decimal("95"))
    assert budgets.status(relaxed, fc.spent_usd, fc, at=date(2026, 11, 20)).status == "ok"


def test_rule_matches_the_labels_of_a_create() -> None:
    project = budgets.BudgetRule(Decimal(1), "month", "project", "podcast")
    tag = budgets.BudgetRule(Decimal(1), "month", "tag", "launch")
    key = budgets.BudgetRule(Decimal(1), "month", "key", "key_0a1b2c3d4e5f")
    account = budgets.BudgetRule(Decimal(1), "month")
    assert project.matches("podcast", (), None) and not project.matches("jingles", (), None)
    assert tag.matches(None, ("q4", "launch"), None) and not tag.matches(None, ("q4",), None)
    assert key.matches(None, (), "key_0a1b2c3d4e5f") and not key.matches(None, (), "key_x")
    assert account.matches(None, (), None)
