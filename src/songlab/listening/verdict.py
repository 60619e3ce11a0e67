"""One verdict: every sentence that ranks models, names a winner or compares two of them.

Theory of operation. A screen that says "v7 is best" beside a table must say only what
that table's numbers carry. So the sentence is never written by hand: :func:`verdict`
renders it from the same estimates the table shows (each a point value with its
interval, or a pairwise p-value) and one stated rule:

* **Ranking** (one :class:`Estimate` per model): the best point value is named the winner
  only when it is *separated* from every other model. By intervals (the default), its
  interval lies wholly above every other model's (below, when lower is better); by tests
  (``tests=``, the p-values the table shows, Holm-adjusted where it adjusts), each of its
  pairwise tests gives p < alpha. Where any other model is not separated, the sentence
  says "no clear winner" and which models overlap, and names no winner. A model without
  an interval (or without a test) separates from nothing: the sentence says so.
* **Pairs against chance** (``Measure(chance=0.5)``; one :class:`Estimate` per pair, its
  ``name`` and ``other``): a pair is separated when its interval excludes chance (or its
  test gives p < alpha); a directional measure (a preference share) says which of the two
  is preferred, a non-directional one (an ABX rate) only that the two were told apart.

Separation is decided on the numbers *as shown* (rounded to the measure's ``digits``), so
a sentence never names a winner whose interval looks, on the screen, as if it touched
another's. The same estimates in any order give the same sentence; the sentence states
its rule. Ratios (points per dollar, dollars per point) carry an interval only through
:func:`per` and :func:`price_per`, which propagate it; where the price is unknown the
ratio has no interval and the sentence says that it cannot separate the models.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Literal

from songlab.listening._errors import ListeningError

__all__ = ["Estimate", "Measure", "Verdict", "per", "price_per", "verdict"]

Better = Literal["higher", "lower"]


@dataclass(frozen=True)
class Measure:
    """What the numbers are and how a person reads them.

    ``what``: the quantity in words ("MOS", "choice share", "listening points per dollar").
    ``better``: "higher" or "lower". A value shows as ``prefix`` + (value x ``scale``,
    ``digits`` places) + ``suffix`` ("$0.0021", "83 %"); separation is decided at that
    precision. ``interval`` names the interval ("95 % interval (Wilson)"). ``chance``: set
    for pairs against a value of no difference (0.5); ``directional`` pairs say which is
    preferred (``over``), others that the two were ``apart``. ``test`` names the test when
    the rule is a test; ``alpha`` its level.
    """

    what: str
    better: Better = "higher"
    digits: int = 2
    scale: float = 1.0
    prefix: str = ""
    suffix: str = ""
    interval: str = "95 % interval"
    chance: float | None = None
    directional: bool = True
    over: str = "preferred to"
    apart: str = "told apart"
    test: str = "test"
    alpha: float = 0.05

    def __post_init__(self) -> None:
        if not isinstance(self.what, str) or not self.what.strip():
            raise ListeningError("what", f"must name the quantity in words; got {self.what!r}")
        if self.better not in ("higher", "lower"):
            raise ListeningError("better", f"must be 'higher' or 'lower'; got {self.better!r}")
        if isinstance(self.digits, bool) or not isinstance(self.digits, int) or self.digits < 0:
            raise ListeningError("digits", f"must be a whole number >= 0; got {self.digits!r}")
        if not _finite(self.scale) or self.scale <= 0:
            raise ListeningError("scale", f"must be a number > 0; got {self.scale!r}")
        if self.chance is not None and not _finite(self.chance):
            raise ListeningError("chance", f"must be a number or None; got {self.chance!r}")
        if not _finite(self.alpha) or not 0 < self.alpha < 1:
            raise ListeningError("alpha", f"must be in (0, 1); got {self.alpha!r}")

    def level(self, x: float) -> float:
        """``x`` at the precision shown (nan stays nan, infinities stay)."""
        if not math.isfinite(x):
            return x
        return round(x * self.scale, self.digits)

    def show(self, x: float) -> str:
        """``x`` as a person reads it: "$0.0021", "83 %", "4.12"; "-" when unknown."""
        if math.isnan(x):
            return "-"
        if math.isinf(x):
            return "unbounded" if x > 0 else "-unbounded"
        text = f"{self.level(x):,.{self.digits}f}"
        sign, text = ("-", text[1:]) if text.startswith("-") else ("", text)
        return f"{sign}{self.prefix}{text}{self.suffix}"

    def span(self, low: float, high: float) -> str:
        """An interval as shown: "60-91 %", "$0.0019-$0.0026"; one figure where both ends show
        the same (an exact price); "not known" without one."""
        if math.isnan(low) or math.isnan(high):
            return "not known"
        if self.level(low) == self.level(high):
            return self.show(low)
        if self.prefix or not self.suffix:
            return f"{self.show(low)}-{self.show(high)}"
        return f"{self.show(low).removesuffix(self.suffix)}-{self.show(high)}"


@dataclass(frozen=True)
class Estimate:
    """One row of the table: a model's ``value`` with its interval ``low``-``high`` (nan when
    there is none). For pairs, ``name`` against ``other`` (``value`` is ``name``'s share or
    rate) and, when the rule is a test, its ``p``."""

    name: str
    value: float
    low: float = math.nan
    high: float = math.nan
    other: str | None = None
    p: float | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ListeningError("name", f"must be a model's name; got {self.name!r}")
        for key in ("value", "low", "high"):
            number = getattr(self, key)
            if isinstance(number, bool) or not isinstance(number, int | float | Decimal):
                raise ListeningError(key, f"{self.name}: must be a number; got {number!r}")
            object.__setattr__(self, key, float(number))
        if self.low > self.high:
            raise ListeningError(
                "low", f"{self.name}: the interval's low ({self.low}) is above its high"
            )
        if self.p is not None and (not _finite(self.p) or not 0 <= self.p <= 1):
            raise ListeningError("p", f"{self.name}: must be a probability; got {self.p!r}")

    @property
    def known(self) -> bool:
        """Whether the interval is known (both bounds are numbers)."""
        return not (math.isnan(self.low) or math.isnan(self.high))


@dataclass(frozen=True)
class Verdict:
    """The sentence (``text``) and what it rests on.

    ``winner``: the model named best, or None. ``order``: every model, best point value first
    (ties by name). ``leaders``: the best one and every model not separated from it (only the
    winner when there is one). ``behind``: models every leader is separated from.
    ``separated``: ``(better, worse)`` pairs the rule separates (for pairs, the preferred
    first). ``unknown``: models or pairs without the interval or test the rule needs.
    """

    text: str
    rule: str
    winner: str | None
    order: tuple[str, ...] = ()
    leaders: tuple[str, ...] = ()
    behind: tuple[str, ...] = ()
    separated: tuple[tuple[str, str], ...] = ()
    unknown: tuple[str, ...] = ()
    measure: Measure | None = field(default=None, compare=False, repr=False)

    def __str__(self) -> str:
        return self.text


def per(estimate: Estimate, price: Decimal | float | None) -> Estimate:
    """``estimate`` per unit of an exact ``price`` (points per dollar): the value and both
    bounds divided by it. An unknown or non-positive price leaves no value and no interval."""
    if price is None or not _finite(price) or float(price) <= 0:
        return Estimate(estimate.name, math.nan)
    d = float(price)
    return Estimate(estimate.name, estimate.value / d, estimate.low / d, estimate.high / d)


def price_per(estimate: Estimate, price: Decimal | float | None) -> Estimate:
    """An exact ``price`` per unit of ``estimate`` (dollars per point): ``price / value``,
    its interval ``price / high`` to ``price / low`` (open above, ``inf``, when ``low`` is 0
    or less). An unknown price, or a value of 0 or less, leaves no value and no interval."""
    if price is None or not _finite(price) or float(price) <= 0 or not estimate.value > 0:
        return Estimate(estimate.name, math.nan)
    d = float(price)
    high = d / estimate.low if estimate.low > 0 else math.inf
    low = d / estimate.high if estimate.high > 0 else math.nan
    if math.isnan(estimate.low) or math.isnan(estimate.high):
        low = high = math.nan
    return Estimate(estimate.name, d / estimate.value, low, high)


def verdict(
    estimates: Iterable[Estimate],
    /,
    *,
    measure: Measure,
    tests: Mapping[frozenset[str], float] | None = None,
) -> Verdict:
    """The sentence that ranks ``estimates`` by ``measure`` (or, with ``measure.chance``, says
    which pairs differ from chance), by intervals, or by ``tests`` (``{frozenset({a, b}): p}``
    for a ranking; each pair's ``p`` for pairs). See the module's docstring for the rule."""
    if not isinstance(measure, Measure):
        raise ListeningError("measure", f"must be a Measure; got {type(measure).__name__}")
    rows = list(estimates)
    for e in rows:
        if not isinstance(e, Estimate):
            raise ListeningError("estimates", f"must be Estimates; got {type(e).__name__}")
    if measure.chance is not None:
        return _pairs(
            rows, measure, by_test=tests is not None or any(e.p is not None for e in rows)
        )
    names = [e.name for e in rows]
    if len(set(names)) != len(names):
        twice = sorted({n for n in names if names.count(n) > 1})
        raise ListeningError("estimates", f"name each model once; {', '.join(twice)} twice")
    return _ranking(rows, measure, tests)


# -- a ranking ------------------------------------------------------------------------------


def _finite(x: object) -> bool:
    if isinstance(x, bool) or not isinstance(x, int | float | Decimal):
        return False
    return math.isfinite(float(x))


def _sign(measure: Measure) -> int:
    return 1 if measure.better == "higher" else -1


def _order(rows: Sequence[Estimate], measure: Measure) -> list[Estimate]:
    """Best shown value first; unknown values last; ties by name (so any order of the same
    rows gives the same list)."""

    def key(e: Estimate) -> tuple[int, float, str]:
        level = measure.level(e.value)
        if math.isnan(level):
            return (1, 0.0, e.name)
        return (0, -_sign(measure) * level, e.name)

    return sorted(rows, key=key)


def _apart(
    a: Estimate, b: Estimate, measure: Measure, tests: Mapping[frozenset[str], float] | None
) -> bool | None:
    """Whether ``a`` is separated as better than ``b`` (None: the rule cannot tell)."""
    va, vb = measure.level(a.value), measure.level(b.value)
    if math.isnan(va) or math.isnan(vb):
        return None
    if tests is not None:
        p = tests.get(frozenset((a.name, b.name)))
        if p is None or not _finite(p):
            return None
        return bool(p < measure.alpha and _sign(measure) * (va - vb) > 0)
    if not (a.known and b.known):
        return None
    if measure.better == "higher":
        return bool(measure.level(a.low) > measure.level(b.high))
    return bool(measure.level(a.high) < measure.level(b.low))


def _rule(measure: Measure, tests: object) -> str:
    if tests is not None:
        return (
            f"a model is named best only when its {measure.test} against every other model "
            f"gives p < {measure.alpha:g}"
        )
    side = "above" if measure.better == "higher" else "below"
    return (
        f"a model is named best only when its {measure.interval} lies wholly {side} every "
        "other model's, at the precision shown"
    )


def _value(e: Estimate, measure: Measure) -> str:
    level = measure.level
    if e.known and level(e.low) == level(e.value) == level(e.high):
        return measure.show(e.value)  # exact: its interval is the figure itself
    return f"{measure.show(e.value)} ({measure.interval} {measure.span(e.low, e.high)})"


def _names(names: Sequence[str]) -> str:
    if len(names) <= 2:
        return " and ".join(names)
    return ", ".join(names[:-1]) + " and " + names[-1]


def _ranking(
    rows: list[Estimate], measure: Measure, tests: Mapping[frozenset[str], float] | None
) -> Verdict:
    rule = _rule(measure, tests)
    order = _order(rows, measure)
    names = tuple(e.name for e in order)
    if len(order) < 2:
        what = f"one model only ({order[0].name})" if order else "no model"
        return Verdict(
            f"No winner on {measure.what}: {what}, nothing to compare.",
            rule,
            None,
            names,
            names,
            measure=measure,
        )
    top = order[0]
    separated = tuple(
        (a.name, b.name)
        for a in order
        for b in order
        if a is not b and _apart(a, b, measure, tests)
    )
    apart = set(separated)
    unknown = tuple(
        e.name
        for e in order
        if math.isnan(measure.level(e.value)) or (tests is None and not e.known)
    )
    if all((top.name, e.name) in apart for e in order[1:]):
        return Verdict(
            _clear(top, order[1:], measure, tests) + f" Rule: {rule}.",
            rule,
            top.name,
            names,
            (top.name,),
            names[1:],
            separated,
            unknown,
            measure,
        )
    leaders = tuple(e.name for e in order if e is top or (top.name, e.name) not in apart)
    behind = tuple(
        e.name
        for e in order
        if e.name not in leaders and all((x, e.name) in apart for x in leaders)
    )
    text = _unclear(order, leaders, behind, unknown, measure, tests) + f" Rule: {rule}."
    return Verdict(text, rule, None, names, leaders, behind, separated, unknown, measure)


def _best_word(measure: Measure) -> str:
    return "Highest" if measure.better == "higher" else "Lowest"


def _clear(
    top: Estimate,
    others: Sequence[Estimate],
    measure: Measure,
    tests: Mapping[frozenset[str], float] | None,
) -> str:
    head = f"{_best_word(measure)} {measure.what}: {top.name}, {_value(top, measure)}"
    if tests is not None:
        weakest = max(others, key=lambda e: (tests[frozenset((top.name, e.name))], e.name))
        p = tests[frozenset((top.name, weakest.name))]
        return f"{head}; separated from every other model (largest p: {weakest.name}, {_p(p)})."
    if measure.better == "higher":
        nearest = max(others, key=lambda e: (measure.level(e.high), e.name))
    else:
        nearest = min(others, key=lambda e: (measure.level(e.low), e.name))
    return (
        f"{head}; clear of every other model's interval (the nearest: {nearest.name}, "
        f"{measure.span(nearest.low, nearest.high)})."
    )


def _p(p: float) -> str:
    return "p < 0.001" if p < 0.001 else f"p = {p:.3f}"


def _unclear(
    order: Sequence[Estimate],
    leaders: Sequence[str],
    behind: Sequence[str],
    unknown: Sequence[str],
    measure: Measure,
    tests: Mapping[frozenset[str], float] | None,
) -> str:
    by = {e.name: e for e in order}
    top = order[0]
    rivals = [n for n in leaders if n != top.name and n not in unknown]
    parts = []
    if rivals:
        verb = "are not separated" if tests is not None else "overlap"
        if len(rivals) == 1:
            parts.append(f"{top.name} and {rivals[0]} {verb}")
        else:
            parts.append(f"{top.name} and each of {_names(rivals)} {verb}")
        shown = "; ".join(
            f"{n} {measure.show(by[n].value)}"
            + ("" if tests is not None else f", {measure.span(by[n].low, by[n].high)}")
            for n in (top.name, *rivals)
        )
        if tests is not None:
            shown += "; " + ", ".join(
                f"{top.name}-{n} {_p(tests[frozenset((top.name, n))])}"
                for n in rivals
                if frozenset((top.name, n)) in tests
            )
        parts[-1] += f" ({shown})"
    missing = [n for n in leaders if n in unknown]
    if missing:
        what = "test" if tests is not None else "interval"
        lead = "" if rivals or top.name in missing else f"{top.name} leads on value, but "
        parts.append(
            f"{lead}{_names(missing)} {'has' if len(missing) == 1 else 'have'} "
            f"no {what} to separate by"
        )
    text = f"No clear winner on {measure.what}: " + "; ".join(parts)
    if behind:
        both = "both" if len(leaders) == 2 else "all of them"
        text += f"; {_names(behind)} {'is' if len(behind) == 1 else 'are'} behind {both}"
    return text + "."


# -- pairs against chance -------------------------------------------------------------------


def _pair_rule(measure: Measure, by_test: bool) -> str:
    chance = measure.show(measure.chance if measure.chance is not None else math.nan)
    if by_test:
        return f"a pair is separated only when its {measure.test} gives p < {measure.alpha:g}"
    side = "excludes" if measure.directional else "lies wholly above"
    return f"a pair is separated only when its {measure.interval} {side} {chance}, at the precision shown"


def _pair_side(e: Estimate, measure: Measure, by_test: bool) -> int | None:
    """+1: ``name`` above chance; -1: below; 0: not separated; None: cannot tell."""
    chance = measure.level(measure.chance if measure.chance is not None else math.nan)
    value = measure.level(e.value)
    if math.isnan(value):
        return None
    if by_test:
        if e.p is None:
            return None
        side = (value > chance) - (value < chance)
        return side if e.p < measure.alpha else 0
    if not e.known:
        return None
    if measure.level(e.low) > chance:
        return 1
    if measure.level(e.high) < chance:
        return -1
    return 0


def _pairs(rows: list[Estimate], measure: Measure, *, by_test: bool) -> Verdict:
    rule = _pair_rule(measure, by_test)
    seen = set()
    for e in rows:
        if e.other is None:
            raise ListeningError("other", f"{e.name}: a pair names the model it is compared with")
        key = frozenset((e.name, e.other))
        if key in seen:
            raise ListeningError("estimates", f"the pair {e.name}-{e.other} is given twice")
        seen.add(key)
    rows = sorted(rows, key=lambda e: tuple(sorted((e.name, str(e.other)))))
    said, apart, flat, unknown = [], [], [], []
    for e in rows:
        side = _pair_side(e, measure, by_test)
        other = str(e.other)
        if side is None:
            unknown.append(f"{e.name} vs {other}")
        elif side == 0 or (side < 0 and not measure.directional):
            flat.append(f"{e.name} vs {other}")
        else:
            first, second = (e.name, other) if side > 0 else (other, e.name)
            apart.append((first, second))
            evidence = f"{measure.what} {_value(e, measure)}" + (
                f", {_p(e.p)}" if by_test and e.p is not None else ""
            )
            phrase = (
                f"{first} {measure.over} {second}"
                if measure.directional
                else f"{e.name} and {other} {measure.apart}"
            )
            said.append(f"{phrase} ({e.name} vs {other}: {evidence})")
    if said:
        text = "; ".join(said)
    else:
        chance = measure.show(measure.chance if measure.chance is not None else math.nan)
        text = f"No pair separated from chance ({chance}) on {measure.what}"
    if flat:
        text += f"; not separated: {', '.join(flat)}"
    if unknown:
        text += f"; nothing to separate by for {', '.join(unknown)}"
    return Verdict(
        f"{text}. Rule: {rule}.",
        rule,
        None,
        separated=tuple(apart),
        unknown=tuple(unknown),
        measure=measure,
    )
