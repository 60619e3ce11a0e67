"""Best of n against the sandbox: priced first, within the budget, ranked, bought once."""

from __future__ import annotations

from decimal import Decimal

import pytest

from songlab.audio.best_of import best_of
from songlab.client import BudgetExceeded, Client

REQUEST = {
    "operation": "generate_song",
    "model": "v5",
    "payload": {"prompt": "folk in G major, 100 bpm", "duration_seconds": 5},
}


@pytest.mark.slow
def test_n_takes_ranked_and_bought_once(sandbox, new_account):
    acct = new_account()
    with Client(base_url=sandbox.base_url, api_key=acct.api_key, quiet=True) as client:
        before = client.account.balance().total_effective
        with pytest.raises(BudgetExceeded):  # 3 x $0.07 over $0.20: nothing sent
            best_of(client, REQUEST, n=3, k=1, budget_usd="0.20")
        assert client.account.balance().total_effective == before
        got = best_of(client, REQUEST, n=3, k=2, budget_usd="0.25")
        assert got.new_usd == Decimal("0.21") and len(got.top) == 2
        assert list(got.frame["clip"]) != [] and set(got.frame["clip"]) == {
            "take 1",
            "take 2",
            "take 3",
        }
        scores = got.frame["adherence"].tolist()
        assert scores == sorted(scores, reverse=True)
        assert got.top == list(got.frame["file_id"][:2])
        spent = before - client.account.balance().total_effective
        again = best_of(client, REQUEST, n=3, k=2, budget_usd="0.25")  # a re-run buys nothing
        assert again.new_usd == Decimal(0) and again.batch.reused == 3
        assert before - client.account.balance().total_effective == spent == 21
        assert again.top == got.top
