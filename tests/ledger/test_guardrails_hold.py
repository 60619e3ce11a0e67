"""Hard budgets from the budgets file, held by the client (``guardrails.hold``): the same
definitions as the alerts; a create that would go over is refused before anything is sent."""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from songlab.client import BudgetExceeded, Client
from songlab.ledger import LedgerStore, attribution, budgets, guardrails

FILE = """
[[budget]]
project = "podcast"
usd = "0.05"
period = "month"
hard = true

[[budget]]
project = "jingles"
usd = "0.01"
period = "month"        # soft: alerts only, never refuses

[[budget]]
tag = "launch"
usd = "0.03"
period = "day"
hard = true
"""


def _lyrics(c: Client, project: str, tags: list[str] | None = None) -> str:
    with attribution(project=project, tags=tags or []):
        h = c.generations.create(operation="write_lyrics", model="v5", payload={"prompt": "x"})
    c.generations.wait(h.task_id, timeout=60)
    return h.task_id


def test_hard_budgets_refuse_what_would_go_over(
    sandbox: Any, new_account: Callable[..., Any], tmp_path: Path
) -> None:
    acct = new_account()
    settings = budgets.parse(FILE, source="team.toml")
    with Client(acct.api_key, base_url=sandbox.base_url, reuse=False) as c:
        store = LedgerStore(tmp_path / "ledger").track(c)
        made = [_lyrics(c, "podcast"), _lyrics(c, "podcast")]  # $0.04 of the $0.05
        store.refresh(c)
        with guardrails.hold(c, settings, store) as held:
            assert [(b.project, b.tag, b.limit, b.spent) for b in held] == [
                ("podcast", None, Decimal("0.05"), Decimal("0.04")),
                (None, "launch", Decimal("0.03"), Decimal("0")),
            ]
            with pytest.raises(BudgetExceeded) as info:  # $0.02 more: over
                _lyrics(c, "podcast")
            assert "budget project podcast ($0.05 a month, hard) in 20" in str(info.value)
            assert "remaining $0.01" in str(info.value)
            made.append(_lyrics(c, "jingles"))  # soft, and another project: not held
            made.append(_lyrics(c, "jingles", ["launch"]))  # the tag's budget: $0.02 of $0.03
            with pytest.raises(BudgetExceeded, match="tag launch"):
                _lyrics(c, "jingles", ["launch"])
        _lyrics(c, "podcast")  # outside the block: client.budget as usual, nothing held
        listed = {t.task_id for t in c.generations.list()}
    assert set(made) <= listed and len(listed) == len(made) + 1  # the refused were never sent


def test_hold_reads_the_clients_own_listing_and_a_key_rule(
    sandbox: Any, new_account: Callable[..., Any]
) -> None:
    acct = new_account()
    with Client(acct.api_key, base_url=sandbox.base_url, reuse=False) as c:
        _lyrics(c, "any")
        rules = budgets.parse(
            f'[[budget]]\nkey = "{c.key_id}"\nusd = "0.03"\nperiod = "week"\nhard = true\n'
            '[[budget]]\nkey = "key_000000000000"\nusd = "0"\nperiod = "day"\nhard = true\n'.replace(
                'usd = "0"', 'usd = "0.01"'
            )
        )
        with guardrails.hold(c, rules) as held:
            assert held[0].spent == Decimal("0.02") and held[0].key_id == c.key_id
            with pytest.raises(BudgetExceeded):
                _lyrics(c, "any")  # $0.02 + $0.02 > $0.03: this key's budget
        with guardrails.hold(c, budgets.parse("")) as none:
            assert none == []
            _lyrics(c, "any")


def test_a_scoped_client_budget_checks_its_input() -> None:
    from songlab.client import ValidationError

    with Client("sk-test-not-sent", base_url="http://127.0.0.1:9", reuse=False) as c:
        b = c.budget(usd="1.50", spent="0.25", project="podcast", label="team podcast")
        assert (b.remaining, b.project) == (Decimal("1.25"), "podcast")
        assert "project='podcast'" in repr(b) and "sk-test" not in repr(b)
        assert b.covers("podcast", (), None) and not b.covers("jingles", (), None)
        with pytest.raises(ValidationError, match="spent"):
            c.budget(usd="1", spent="-1")
        with pytest.raises(ValidationError, match="project"):
            c.budget(usd="1", project="bad/name")
        with pytest.raises(ValidationError, match="tags"):
            c.budget(usd="1", tag="has space")
