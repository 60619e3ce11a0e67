"""Trial design (pure): which models each trial compares, in which positions, in which order.

Three designs, all randomised from one seeded ``np.random.Generator`` and
balanced so that, over the whole session, each model sits in each position
(label) equally often, within one:

* ``pair_plans``: one trial per pair of models per prompt (per repeat). The
  pair's order alternates over its repetitions; when a pair is left with an
  odd repetition, its order comes from a balanced round-robin tournament
  (each model first in half its pairs, within one), so per-model counts
  stay within one.
* ``abx_plans``: pair plans plus which of A/B the reference X repeats. Per
  pair the pattern is X=A, B, B, A (every other pair mirrored), so the
  X=A rate is balanced within one per pair and over the session; which
  *model* X is, is balanced over each block of four repetitions of a pair.
* ``latin_plans``: every model in every trial (k-way preference, MUSHRA).
  Rows of a Williams Latin square (for odd k the square and its mirror),
  taken square by square: each model in each position equally often within
  one, and each model follows each other equally often over full squares.

A plan holds the model behind each label: it is the answer key, and only
:mod:`songlab.listening.session` keeps it (privately). Rater checks (gold clips and
trapping questions) are plans too, placed at random among the others (:func:`with_checks`).
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations

import numpy as np


@dataclass(frozen=True)
class Plan:
    """One trial: the prompt index, the model at each position, and for ABX the position X
    repeats. A rater check (``check``: ``"gold"`` or ``"trap"``) has a check clip at position
    ``at`` (see :func:`with_checks`); ``expect`` is what its answer must be where the
    protocol needs a number (ACR: the count of beeps)."""

    prompt: int
    models: tuple[str, ...]
    x: int | None = None
    check: str | None = None
    at: int | None = None
    expect: int | None = None

    def to_json(self) -> list[object]:
        return [self.prompt, list(self.models), self.x, self.check, self.at, self.expect]

    @classmethod
    def from_json(cls, doc: list[object]) -> Plan:
        prompt, models, x, *rest = doc  # files of songlab.listening/1 hold three fields
        check, at, expect = (list(rest) + [None, None, None])[:3]
        return cls(prompt, tuple(models), x, check, at, expect)  # type: ignore[arg-type]

    @property
    def x_at(self) -> int:
        """ABX: the position X repeats (every ABX plan has one)."""
        if self.x is None:
            raise ValueError("not an ABX plan: X repeats no position")
        return self.x


def tournament(n: int, /) -> list[tuple[int, int]]:
    """Every pair of ``range(n)`` once, oriented (first, second) so that each
    index is first in ``floor((n-1)/2)`` or ``ceil((n-1)/2)`` of its pairs.

    Odd n: i comes first against the next (n-1)/2 indices mod n (a regular
    tournament). Even n: the tournament of n+1 with the extra index dropped.
    """
    m = n if n % 2 else n + 1
    half = (m - 1) // 2
    pairs = []
    for i, j in combinations(range(n), 2):
        pairs.append((i, j) if (j - i) % m <= half else (j, i))
    return pairs


def _prompt_sequence(n_prompts: int, repeats: int, rng: np.random.Generator) -> list[int]:
    """``repeats`` independent shuffles of the prompt indices, concatenated."""
    return [int(p) for _ in range(repeats) for p in rng.permutation(n_prompts)]


def pair_plans(
    models: list[str], /, *, n_prompts: int, repeats: int, rng: np.random.Generator
) -> list[Plan]:
    """Pairwise trials (see module docstring), in random presentation order."""
    order = [models[i] for i in rng.permutation(len(models))]
    plans = []
    for first, second in tournament(len(order)):
        for r, prompt in enumerate(_prompt_sequence(n_prompts, repeats, rng)):
            a, b = (first, second) if r % 2 == 0 else (second, first)
            plans.append(Plan(prompt, (order[a], order[b])))
    return [plans[i] for i in rng.permutation(len(plans))]


# Which position X repeats over a pair's repetitions (0 = A, 1 = B), cycled;
# mirrored on every other pair so the session-wide X=A rate stays within one.
_X_PATTERN = (0, 1, 1, 0)


def abx_plans(
    models: list[str], /, *, n_prompts: int, repeats: int, rng: np.random.Generator
) -> list[Plan]:
    """ABX trials: pair plans where X repeats A or B (see module docstring)."""
    order = [models[i] for i in rng.permutation(len(models))]
    plans = []
    for p, (first, second) in enumerate(tournament(len(order))):
        for r, prompt in enumerate(_prompt_sequence(n_prompts, repeats, rng)):
            a, b = (first, second) if r % 2 == 0 else (second, first)
            x = _X_PATTERN[r % 4] ^ (p % 2)
            plans.append(Plan(prompt, (order[a], order[b]), x))
    return [plans[i] for i in rng.permutation(len(plans))]


def williams(k: int, /) -> list[list[int]]:
    """A Williams design for ``k`` conditions: k rows (even k) or 2k rows (odd k).

    First row 0, 1, k-1, 2, k-2, ...; row r adds r mod k. For odd k the
    mirrored rows follow. Each condition takes each position once per k rows.
    """
    first = [0]
    lo, hi = 1, k - 1
    while len(first) < k:
        first.append(lo)
        lo += 1
        if len(first) < k:
            first.append(hi)
            hi -= 1
    rows = [[(c + r) % k for c in first] for r in range(k)]
    if k % 2:
        rows += [row[::-1] for row in rows]
    return rows


def latin_plans(
    models: list[str], /, *, n_prompts: int, repeats: int, rng: np.random.Generator
) -> list[Plan]:
    """Trials presenting every model, positions from Williams squares (see module docstring)."""
    k = len(models)
    order = [models[i] for i in rng.permutation(k)]
    rows = williams(k)
    squares = [rows[:k], rows[k:]] if len(rows) > k else [rows]
    sequence: list[list[int]] = []
    prompts = _prompt_sequence(n_prompts, repeats, rng)
    while len(sequence) < len(prompts):
        square = squares[(len(sequence) // k) % len(squares)]
        sequence.extend(square[i] for i in rng.permutation(k))
    plans = [
        Plan(prompt, tuple(order[c] for c in row))
        for prompt, row in zip(prompts, sequence, strict=False)
    ]
    return [plans[i] for i in rng.permutation(len(plans))]


def with_checks(
    plans: list[Plan],
    checks: list[Plan],
    /,
    *,
    rng: np.random.Generator,
) -> list[Plan]:
    """``plans`` with the rater checks placed at random positions among them."""
    total = len(plans) + len(checks)
    at = set(int(i) for i in rng.choice(total, size=len(checks), replace=False))
    normal, extra = iter(plans), iter(checks)
    return [next(extra) if i in at else next(normal) for i in range(total)]


def position_counts(plans: list[Plan], /) -> dict[str, list[int]]:
    """How often each model sits at each position: ``{model: [count at 0, at 1, ...]}``."""
    width = max(len(p.models) for p in plans)
    counts: dict[str, list[int]] = {}
    for plan in plans:
        for pos, model in enumerate(plan.models):
            counts.setdefault(model, [0] * width)[pos] += 1
    return counts
