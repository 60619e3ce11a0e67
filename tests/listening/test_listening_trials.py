"""Trial design: randomised from a seed, positions balanced within one."""

from __future__ import annotations

from collections import Counter
from itertools import product

import numpy as np
import pytest

from songlab.listening._trials import (
    abx_plans,
    latin_plans,
    pair_plans,
    position_counts,
    tournament,
    williams,
)

CASES = list(product(range(2, 7), (1, 2, 3, 4, 5, 7), (1, 2)))


def _spread(counts: dict[str, list[int]]) -> int:
    return max(max(v) - min(v) for v in counts.values())


@pytest.mark.parametrize("n", range(2, 9))
def test_tournament_orients_each_pair_once_and_balances_first_places(n: int) -> None:
    pairs = tournament(n)
    assert sorted(tuple(sorted(p)) for p in pairs) == [
        (i, j) for i in range(n) for j in range(i + 1, n)
    ]
    first = Counter(a for a, _ in pairs)
    wins = [first.get(i, 0) for i in range(n)]
    assert max(wins) - min(wins) <= 1


@pytest.mark.parametrize("k", range(2, 8))
def test_williams_rows_are_latin_and_carryover_balanced(k: int) -> None:
    rows = williams(k)
    assert len(rows) == (k if k % 2 == 0 else 2 * k)
    for square in (rows[:k], rows[k:] or rows[:k]):
        assert all(sorted(r) == list(range(k)) for r in square)
        assert all(sorted(col) == list(range(k)) for col in zip(*square, strict=True))
    follows = Counter((r[i], r[i + 1]) for r in rows for i in range(k - 1))
    assert len(set(follows.values())) == 1 and len(follows) == k * (
        k - 1
    )  # each ordered pair equally often


@pytest.mark.parametrize(("k", "n_prompts", "repeats"), CASES)
def test_every_design_balances_positions_within_one(k: int, n_prompts: int, repeats: int) -> None:
    models = [f"m{i}" for i in range(k)]
    for seed in range(3):
        for make in (pair_plans, abx_plans, latin_plans):
            plans = make(
                models, n_prompts=n_prompts, repeats=repeats, rng=np.random.default_rng(seed)
            )
            counts = position_counts(plans)
            assert _spread(counts) <= 1, (make.__name__, counts)
            if make is latin_plans:
                assert len(plans) == n_prompts * repeats
                by_position = list(zip(*counts.values(), strict=True))
                assert max(max(c) - min(c) for c in by_position) <= 1
            else:
                assert len(plans) == k * (k - 1) // 2 * n_prompts * repeats
            # every (pair or set, prompt) appears repeats times
            seen = Counter((frozenset(p.models), p.prompt) for p in plans)
            assert set(seen.values()) == {repeats}


@pytest.mark.parametrize(("k", "n_prompts", "repeats"), CASES)
def test_abx_reference_is_balanced(k: int, n_prompts: int, repeats: int) -> None:
    models = [f"m{i}" for i in range(k)]
    plans = abx_plans(models, n_prompts=n_prompts, repeats=repeats, rng=np.random.default_rng(1))
    x_is_a = sum(p.x == 0 for p in plans)
    assert abs(x_is_a - (len(plans) - x_is_a)) <= 1  # X = A as often as X = B, within one
    per_pair: dict[frozenset, Counter] = {}
    for p in plans:
        per_pair.setdefault(frozenset(p.models), Counter())[p.models[p.x]] += 1
    r = n_prompts * repeats
    for pair, c in per_pair.items():
        spread = abs(c[sorted(pair)[0]] - c[sorted(pair)[1]])
        assert spread <= (2 if r % 4 == 2 else 1)  # which model X is: balanced per block of four


def test_designs_are_seeded_and_randomised() -> None:
    models = ["a", "b", "c"]
    make = lambda seed: pair_plans(models, n_prompts=6, repeats=1, rng=np.random.default_rng(seed))  # noqa: E731
    assert make(5) == make(5)
    assert make(5) != make(6)
    orders = {tuple(p.prompt for p in make(s)) for s in range(10)}
    assert len(orders) == 10
