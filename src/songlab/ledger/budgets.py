"""Budgets as people set them, kept in a TOML file a team can version: one parse, every user.

```toml
[[budget]]                 # the whole account (no project, key or tag)
usd = "500"                # per period: a string or an integer (exact; a float is refused)
period = "month"           # day, week (from Monday), month or quarter: UTC calendar periods,
                           # each starting from $0 (the reset)
[[budget]]
project = "podcast"        # or key = "key_0a1b2c3d4e5f", or tag = "launch"
usd = "120.50"
period = "month"
hard = true                # soft (false, the default): alerts; hard: the client also refuses
                           # the creates that would go over (budgets.hold)
near = 80                  # % used that raises "near" (default 80)

[anomalies]                # optional; the defaults are songlab.ledger.anomalies.Thresholds'
min_usd = "10"             # absolute impact (default: 20% of the account's usual day, >= $1)
min_percent = 50           # percentage impact
combine = "and"            # and: both thresholds; or: either
z = 6                      # spreads above its usual that are out of the ordinary
monitors = ["total", "project", "key", "tool", "tier"]
days = 7                   # anomalies of the last 7 days (today included) are active

[forecast]
level = 80                 # the interval, in %

[expiry]
warn_days = 45             # alert on tokens expiring unused, or the balance running out,
min_tokens = 100           # within this many days; fewer tokens than this are not worth one
```

:func:`load` (a path) and :func:`parse` (text) return :class:`Guardrails`; anything wrong
is a :class:`BudgetFileError` (a ``ValueError``) naming the file, the budget and the field
and saying the rule, in one line, before anything is checked or held: however large, deep or
strange the file (a FIFO, a directory, 1 GB, 100,000 nested arrays, a 5,000-digit number,
``usd = "1e30"``, NaN, a name with an escape sequence). Amounts follow ``amounts.usd_amount``
(exact, at most 8 decimals, at most a trillion dollars). A ``key`` is a key *id* (``key_``
and 12 hex digits, as the ledger shows them), never the API key: a value that is not a key
id is refused without being repeated (it may be a key). A webhook URL has no place here:
it is a secret (``songlab report --check --webhook`` or ``$SONGLAB_ALERT_WEBHOOK``).

:func:`status` judges one budget from its spend so far and its forecast; :func:`hold`
makes the hard ones active on a client (``client.budget``, scoped like the rule).

:func:`from_amounts` reads the short form the report and notebook 03 take (``--budget 500``,
``--budget podcast=120``: monthly and soft, the account or a project) into the same rules, so
a budget given either way is judged once, by :func:`status`, wherever it is shown.
"""

from __future__ import annotations

import math
import os
import re
import stat
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import date
from decimal import Decimal
from pathlib import Path
from typing import Any, Final, TypeGuard

import pandas as pd
import pyarrow as pa

import songlab.ledger._schema as _schema
import songlab.ledger.derived as derived
from songlab.ledger.amounts import shown, usd_amount
from songlab.ledger.anomalies import DIMENSIONS, Thresholds
from songlab.ledger.forecasts import LEVEL, PERIODS, SpendForecast, period_bounds

__all__ = [
    "BUDGET_STATES",
    "BudgetFileError",
    "BudgetRule",
    "BudgetState",
    "Budgets",
    "DEFAULT_NEAR",
    "ExpirySettings",
    "Guardrails",
    "MAX_BUDGETS",
    "MAX_FILE_BYTES",
    "SCOPES",
    "STATUSES",
    "budget_frame",
    "from_amounts",
    "load",
    "parse",
    "parse_budgets",
    "status",
    "worst_budget",
]

SCOPES: Final[tuple[str, ...]] = ("account", "project", "key", "tag")
# A budget's states, worst first: a card or a line that shows one state shows the worst.
STATUSES: Final[tuple[str, ...]] = ("over", "forecast over", "near", "ok")
BUDGET_STATES: Final[tuple[str, ...]] = STATUSES
DEFAULT_NEAR: Final[Decimal] = Decimal("80")
KEY_ID: Final[re.Pattern[str]] = re.compile(r"key_[0-9a-f]{12}")
_BUDGET_FIELDS: Final[frozenset[str]] = frozenset(
    {"name", "usd", "period", "project", "key", "tag", "hard", "near"}
)
_TOP: Final[frozenset[str]] = frozenset({"budget", "anomalies", "forecast", "expiry"})
_ANOMALY_FIELDS: Final[frozenset[str]] = frozenset(
    {"min_usd", "min_percent", "combine", "z", "monitors", "days"}
)
MAX_FILE_BYTES: Final[int] = 1 << 20  # 1 MiB: a thousand budgets take about 100 kB
MAX_BUDGETS: Final[int] = 1_000  # each is judged, and forecast from its own days
MAX_TOKENS: Final[int] = 10**15  # expiry's min_tokens: more than any balance holds


class BudgetFileError(ValueError):
    """The budgets file breaks a rule: names the file, the entry, the field and the rule."""


@dataclass(frozen=True, slots=True)
class BudgetRule:
    """One budget: an amount per calendar period for the account, a project, a key or a tag."""

    usd: Decimal
    period: str  # day, week, month, quarter
    scope: str = "account"  # account, project, key, tag
    value: str | None = None  # the project, key id or tag (None for the account)
    hard: bool = False
    near: Decimal = DEFAULT_NEAR  # % used that is "near"
    name: str | None = None

    @property
    def subject(self) -> str:
        """``project podcast`` / ``the account`` / ``key key_0a1b...`` / ``tag launch``."""
        return "the account" if self.scope == "account" else f"{self.scope} {self.value}"

    @property
    def label(self) -> str:
        """``project podcast ($120.00 a month, hard)``; a named one ``Podcast (project ...)``."""
        per = {"day": "a day", "week": "a week", "month": "a month", "quarter": "a quarter"}
        terms = f"${self.usd:,.2f} {per[self.period]}, {'hard' if self.hard else 'soft'}"
        if self.name:
            return f"{self.name} ({self.subject}, {terms})"
        return f"{self.subject} ({terms})"

    @property
    def key(self) -> str:
        """Stable identity of the rule (its scope, period and amount)."""
        return f"{self.scope}:{self.value or ''}:{self.period}:{self.usd.normalize():f}"

    def bounds(self, at: date) -> tuple[date, date, str]:
        """The rule's period holding ``at``: first day, last day (UTC), label."""
        return period_bounds(self.period, at)

    def matches(self, project: str | None, tags: Sequence[str], key_id: str | None) -> bool:
        """Whether a task with these labels counts against this budget."""
        if self.scope == "account":
            return True
        if self.scope == "project":
            return project == self.value
        if self.scope == "key":
            return key_id == self.value
        return self.value in tags


@dataclass(frozen=True, slots=True)
class ExpirySettings:
    warn_days: int = 45
    min_tokens: int = 100


@dataclass(frozen=True, slots=True)
class Guardrails:
    """The budgets file: budgets, anomaly thresholds, the forecast level, expiry warnings."""

    budgets: tuple[BudgetRule, ...] = ()
    thresholds: Thresholds = field(default_factory=Thresholds)
    monitors: tuple[str, ...] = tuple(DIMENSIONS)
    anomaly_days: int = 7
    level: float = LEVEL
    expiry: ExpirySettings = field(default_factory=ExpirySettings)
    source: str = "(defaults)"

    @property
    def hard(self) -> tuple[BudgetRule, ...]:
        return tuple(b for b in self.budgets if b.hard)

    def including(self, rules: Sequence[BudgetRule]) -> Guardrails:
        """These settings with ``rules`` added (a rule already here, same scope, period and
        amount, is not added twice)."""
        have = {b.key for b in self.budgets}
        extra = tuple(r for r in rules if r.key not in have)
        if not extra:
            return self
        return replace(self, budgets=self.budgets + extra)


# ----------------------------------------------------------------- the short form


class Budgets(dict[str | None, Decimal]):
    """Monthly budgets, parsed once: scope (None: the whole account; else a project) -> USD.

    Made by :func:`parse_budgets`; passing a ``Budgets`` on (CLI -> report -> tables) never
    parses it again.
    """


def parse_budgets(items: Any) -> Budgets:
    """Budgets from ``["500", "jingles=120.50"]`` or a mapping (key None: overall) -> Decimal USD.

    A :class:`Budgets` is returned as it is (parsed once); None or empty gives none. Each
    amount follows ``amounts.usd_amount`` (exact, at most 8 decimals, at most a trillion
    dollars) and each project name the labels' rule (``songlab.client.make_labels``); a
    ``ValueError`` names the budget and the rule.
    """
    if isinstance(items, Budgets):
        return items
    pairs: list[tuple[str | None, Any]] = []
    if isinstance(items, Mapping):
        pairs = [(None if k in (None, "", "overall") else str(k), v) for k, v in items.items()]
    else:
        for item in [items] if isinstance(items, str | int | Decimal) else list(items or ()):
            name, _, amount = str(item).rpartition("=")
            pairs.append((name or None, amount))
    out = Budgets()
    for scope, amount in pairs:
        if scope is not None:
            _check_project(scope, f"budget {shown(scope)}")
        where = "budget" if scope is None else f"budget {scope}"  # a checked name
        try:
            out[scope] = usd_amount(amount)
        except ValueError as exc:
            raise ValueError(f"{where}: {exc} (like 500 or project=120.50)") from None
    return out


def _check_project(name: str, where: str) -> None:
    from songlab.client import make_labels

    try:
        make_labels(project=name)
    except ValueError:
        raise ValueError(
            f"{where}: a project name of 1-64 characters of A-Z a-z 0-9 _ . : - and inner "
            "spaces (as labels are)"
        ) from None


def from_amounts(items: object) -> tuple[BudgetRule, ...]:
    """The report's short form of budgets (``["500", "podcast=120"]``, a mapping with None
    for the account, or a parsed ``Budgets``) as rules: monthly, soft, the account or a
    project. A ``$0`` budget is refused (``budget: an amount above 0``), as in the file."""
    out = []
    for scope, usd in parse_budgets(items).items():
        if usd <= 0:
            where = "the account" if scope is None else f"project {scope}"  # a checked name
            raise ValueError(f"budget: an amount above 0 for {where}, got {usd}")
        out.append(BudgetRule(usd, "month", "account" if scope is None else "project", scope))
    return tuple(out)


@dataclass(frozen=True, slots=True)
class BudgetState:
    """A budget judged at a time: spent so far, its forecast, its status."""

    rule: BudgetRule
    period: str  # the period's label (2026-11, 2026-Q4, week of 2026-11-16, 2026-11-20)
    start: date
    end: date
    spent_usd: Decimal  # exact
    remaining_usd: Decimal  # usd - spent (negative when over)
    used_percent: Decimal  # to 0.1
    forecast: SpendForecast | None
    p_over: float | None  # share of the forecast's futures over the budget
    status: str  # over, forecast over, near, ok


def status(
    rule: BudgetRule, spent: Decimal, forecast: SpendForecast | None, *, at: date
) -> BudgetState:
    """The budget in its period holding ``at``: ``over`` (spent more than the budget, to the
    cent), ``forecast over`` (the forecast's mean is over it), ``near`` (``near`` % of it
    used), else ``ok``. The share used is derived from the amounts as stated
    (``songlab.ledger.derived``), so "spent $3.53 of $2.00 (176.5%)" divides."""
    used = derived.percent_of(spent, rule.usd) or Decimal(0)  # a rule's usd is above 0
    p_over = forecast.p_over(rule.usd) if forecast is not None else None
    if derived.stated_usd(spent) > derived.stated_usd(rule.usd):
        state = "over"
    elif forecast is not None and forecast.mean_usd > rule.usd:
        state = "forecast over"
    elif used >= rule.near:
        state = "near"
    else:
        state = "ok"
    start, end, label = rule.bounds(at)
    return BudgetState(
        rule, label, start, end, spent, rule.usd - spent, used, forecast, p_over, state
    )


# ---------------------------------------------------------------------- the table


def budget_frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """The budget table's frame (its columns and types) from its rows."""
    money = pa.decimal128(38, 8)
    columns: list[tuple[str, pa.DataType]] = [
        ("scope", pa.string()),
        ("month", pa.string()),
        ("budget_usd", money),
        ("spent_usd", money),
        ("remaining_usd", money),
        ("used_pct", pa.decimal128(9, 1)),
        ("forecast_usd", money),
        ("status", pa.string()),
    ]
    schema = pa.schema(columns)
    return _schema.to_frame(pa.Table.from_pylist(rows, schema=schema))


def worst_budget(rows: pd.DataFrame) -> dict[str, Any] | None:
    """The row of the budget table in the worst state (``BUDGET_STATES`` order; among
    equals the most used), or None when no budget is set."""
    if rows.empty:
        return None
    records: list[dict[str, Any]] = [
        {str(k): v for k, v in r.items()} for r in rows.to_dict("records")
    ]

    def rank(r: dict[str, Any]) -> tuple[int, Decimal]:
        used = r.get("used_pct")
        return BUDGET_STATES.index(r["status"]), -(
            used if isinstance(used, Decimal) else Decimal(0)
        )

    return min(records, key=rank)


# ------------------------------------------------------------------------------- the file


def load(path: str | os.PathLike[str]) -> Guardrails:
    """The budgets file at ``path`` (TOML), checked whole: a regular file of at most
    ``MAX_FILE_BYTES``, UTF-8 text (a leading byte-order mark is allowed)."""
    p = Path(path)
    try:
        info = p.stat()
        if not stat.S_ISREG(info.st_mode):
            raise BudgetFileError(f"{p}: not a regular file (a budgets file is TOML text)")
        if info.st_size > MAX_FILE_BYTES:
            raise BudgetFileError(
                f"{p}: {info.st_size:,} bytes; a budgets file is at most {MAX_FILE_BYTES:,}"
            )
        with p.open("rb") as fh:  # read no more than the limit, whatever the file became
            data = fh.read(MAX_FILE_BYTES + 1)
    except FileNotFoundError:
        raise BudgetFileError(f"{p}: no such budgets file") from None
    except OSError as exc:
        raise BudgetFileError(
            f"{p}: cannot read it ({exc.strerror or type(exc).__name__})"
        ) from None
    if len(data) > MAX_FILE_BYTES:
        raise BudgetFileError(f"{p}: more than {MAX_FILE_BYTES:,} bytes")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BudgetFileError(f"{p}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    return parse(text.removeprefix("\ufeff"), source=str(p))


def parse(text: str, *, source: str = "budgets.toml") -> Guardrails:
    """The budgets file's text (TOML), checked whole."""
    doc = _toml(text, source)
    unknown = sorted(set(doc) - _TOP)
    if unknown:
        raise BudgetFileError(
            f"{source}: unknown table or key {', '.join(map(shown, unknown[:3]))}; "
            f"the file holds {', '.join(sorted(_TOP))} (a budget is [[budget]])"
        )
    raw_budgets = doc.get("budget", [])
    if not isinstance(raw_budgets, list) or not all(isinstance(b, dict) for b in raw_budgets):
        raise BudgetFileError(f"{source}: budget: an array of tables, written [[budget]]")
    if len(raw_budgets) > MAX_BUDGETS:
        raise BudgetFileError(
            f"{source}: budget: at most {MAX_BUDGETS:,} budgets, got {len(raw_budgets):,}"
        )
    budgets = tuple(_budget(b, i, source) for i, b in enumerate(raw_budgets))
    names = [b.name for b in budgets if b.name]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise BudgetFileError(f"{source}: budget names must differ; repeated: {shown(twice)}")
    thresholds, monitors, days = _anomalies(_table(doc, "anomalies", source), source)
    level = _level(_table(doc, "forecast", source), source)
    expiry = _expiry(_table(doc, "expiry", source), source)
    return Guardrails(budgets, thresholds, monitors, days, level, expiry, source)


def _toml(text: str, source: str) -> dict[str, Any]:
    """The TOML document, or a one-line ``BudgetFileError`` whatever the text holds."""
    if len(text) > MAX_FILE_BYTES:
        raise BudgetFileError(f"{source}: more than {MAX_FILE_BYTES:,} characters")
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise BudgetFileError(f"{source}: not valid TOML: {exc}") from None
    except RecursionError:  # tomllib parses nested arrays and tables recursively
        raise BudgetFileError(
            f"{source}: not valid here: arrays or tables nested too deeply"
        ) from None
    except ValueError as exc:  # a number of more digits than Python converts (4,300)
        raise BudgetFileError(f"{source}: not valid here: {str(exc).split(';')[0]}") from None


def _table(doc: Mapping[str, object], name: str, source: str) -> dict[str, Any]:
    value = doc.get(name, {})
    if not isinstance(value, dict):
        raise BudgetFileError(f"{source}: {name}: a table, written [{name}]")
    return value


def _key(name: str) -> str:
    """A key of the file as a message names it: as it is when short and printable."""
    return name if name.isprintable() and 0 < len(name) <= 40 else shown(name)


def _where(source: str, i: int, raw: Mapping[str, object]) -> str:
    what = next(
        (
            f" ({k} {shown(raw[k])})"
            for k in ("name", "project", "tag")
            if isinstance(raw.get(k), str)
        ),
        "",
    )
    return f"{source}: budget {i + 1}{what}"


Bad = Callable[[str, str], BudgetFileError]


def _budget(raw: Mapping[str, object], i: int, source: str) -> BudgetRule:
    where = _where(source, i, raw)

    def bad(fieldname: str, rule: str) -> BudgetFileError:
        return BudgetFileError(f"{where}: {fieldname}: {rule}")

    unknown = sorted(set(raw) - _BUDGET_FIELDS)
    if unknown:
        raise bad(
            _key(unknown[0]),
            f"not a budget field; a budget has {', '.join(sorted(_BUDGET_FIELDS))}",
        )
    if "usd" not in raw:
        raise bad("usd", 'required: the amount per period, e.g. usd = "120.50"')
    usd = _money(raw["usd"], lambda rule: bad("usd", rule))
    if usd <= 0:
        raise bad("usd", f"an amount above 0, got {shown(raw['usd'])}")
    period = raw.get("period", "month")
    if period not in PERIODS:
        raise bad("period", f"one of {', '.join(PERIODS)}, got {shown(period)}")
    scope, value = _scope(raw, bad)
    hard = raw.get("hard", False)
    if not isinstance(hard, bool):
        raise bad(
            "hard",
            f"true (the client refuses creates that would go over) or false "
            f"(alerts only), got {shown(hard)}",
        )
    near = _near(raw.get("near", DEFAULT_NEAR), bad)
    name = _name(raw.get("name"), bad)
    return BudgetRule(usd, period, scope, value, hard, near, name)


def _scope(raw: Mapping[str, object], bad: Bad) -> tuple[str, str | None]:
    scopes = [k for k in ("project", "key", "tag") if k in raw]
    if len(scopes) > 1:
        raise bad(
            scopes[1],
            f"a budget is for one of project, key or tag (or, with none, the "
            f"whole account), got {' and '.join(scopes)}",
        )
    if not scopes:
        return "account", None
    scope = scopes[0]
    return scope, _scope_value(scope, raw[scope], lambda rule: bad(scope, rule))


def _near(near: object, bad: Bad) -> Decimal:
    if isinstance(near, Decimal):  # the default
        return near
    if isinstance(near, bool) or not isinstance(near, int | float):
        raise bad("near", f"a percentage from 1 to 100, got {shown(near)}")
    if isinstance(near, int) and not 1 <= near <= 100:  # an int of 5,000 digits included
        raise bad("near", f"a percentage from 1 to 100, got {shown(near)}")
    near_d = Decimal(str(near))
    if not near_d.is_finite() or not 1 <= near_d <= 100:
        raise bad("near", f"a percentage from 1 to 100, got {shown(near)}")
    return near_d


def _name(name: object, bad: Bad) -> str | None:
    if name is None:
        return None
    if not isinstance(name, str) or not 1 <= len(name.strip()) <= 100:
        raise bad("name", f"1-100 characters of text, got {shown(name)}")
    if not name.isprintable():  # a newline or an escape would forge or garble an alert line
        raise bad("name", f"printable text: no control characters, got {shown(name)}")
    return name.strip()


def _money(value: object, bad: Callable[[str], BudgetFileError]) -> Decimal:
    """``amounts.usd_amount``'s rule, its message in the file's words."""
    try:
        return usd_amount(value)
    except ValueError as exc:
        raise bad(str(exc).replace("a float is not exact", "a TOML float is not exact")) from None


def _scope_value(scope: str, value: Any, bad: Callable[[str], BudgetFileError]) -> str:
    if scope == "key":
        if not isinstance(value, str) or not KEY_ID.fullmatch(value):
            # never repeat it: it may be an API key pasted by mistake
            raise bad(
                "a key id, key_ and 12 hex digits (the ledger's key_id column: "
                "ledger.spend(tasks, ['key_id'])), never the API key itself; the value given "
                "is not shown in case it is one"
            )
        return value
    from songlab.client import make_labels

    try:
        if scope == "project":
            make_labels(project=value)
        else:
            make_labels(tags=[value])
    except ValueError:
        rule = (
            "1-64 characters of A-Z a-z 0-9 _ . : - and inner spaces"
            if scope == "project"
            else "each 1-64 characters of A-Z a-z 0-9 _ . : -"
        )
        raise bad(f"{rule}, got {shown(value)}") from None
    return str(value)


def _whole(value: object, lo: int, hi: int) -> TypeGuard[int]:
    """Whether ``value`` is a whole number (not a bool) from ``lo`` to ``hi``."""
    return isinstance(value, int) and not isinstance(value, bool) and lo <= value <= hi


def _number(value: object, lo: float, hi: float) -> TypeGuard[float]:
    """Whether ``value`` is a number (not a bool, not NaN) from ``lo`` to ``hi``."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    if isinstance(value, int):
        return lo <= value <= hi
    return math.isfinite(value) and lo <= value <= hi


def _anomalies(raw: Mapping[str, object], source: str) -> tuple[Thresholds, tuple[str, ...], int]:
    def bad(fieldname: str, rule: str) -> BudgetFileError:
        return BudgetFileError(f"{source}: anomalies: {fieldname}: {rule}")

    unknown = sorted(set(raw) - _ANOMALY_FIELDS)
    if unknown:
        raise bad(
            _key(unknown[0]),
            f"not an anomalies field; they are {', '.join(sorted(_ANOMALY_FIELDS))}",
        )
    min_usd = None
    if "min_usd" in raw:
        min_usd = _money(raw["min_usd"], lambda rule: bad("min_usd", rule))
    pct = raw.get("min_percent", 50)
    if not _number(pct, 0, 10_000):
        raise bad("min_percent", f"a percentage from 0 to 10,000, like 50, got {shown(pct)}")
    combine = raw.get("combine", "and")
    if combine not in ("and", "or"):
        raise bad("combine", f'"and" (both thresholds) or "or" (either), got {shown(combine)}')
    z = raw.get("z", 6)
    if not _number(z, 1, 100):
        raise bad("z", f"a number of spreads from 1 to 100, like 6, got {shown(z)}")
    monitors = raw.get("monitors", list(DIMENSIONS))
    if (
        not isinstance(monitors, list)
        or not monitors
        or not all(isinstance(m, str) and m in DIMENSIONS for m in monitors)
    ):
        raise bad("monitors", f"a list of {', '.join(DIMENSIONS)}, got {shown(monitors)}")
    days = raw.get("days", 7)
    if not _whole(days, 1, 92):
        raise bad("days", f"a whole number of days from 1 to 92, got {shown(days)}")
    th = Thresholds(min_usd, Decimal(str(pct)), combine, float(z))
    return th, tuple(dict.fromkeys(monitors)), days


def _level(raw: Mapping[str, object], source: str) -> float:
    unknown = sorted(set(raw) - {"level"})
    if unknown:
        raise BudgetFileError(
            f"{source}: forecast: {_key(unknown[0])}: not a forecast field (level)"
        )
    level = raw.get("level", LEVEL * 100)
    if not _number(level, 50, 99):
        raise BudgetFileError(
            f"{source}: forecast: level: the interval in %, from 50 to 99, got {shown(level)}"
        )
    return float(level) / 100


def _expiry(raw: Mapping[str, object], source: str) -> ExpirySettings:
    unknown = sorted(set(raw) - {"warn_days", "min_tokens"})
    if unknown:
        raise BudgetFileError(
            f"{source}: expiry: {_key(unknown[0])}: not an expiry field (warn_days, min_tokens)"
        )
    warn = raw.get("warn_days", 45)
    if not _whole(warn, 1, 400):
        raise BudgetFileError(
            f"{source}: expiry: warn_days: a whole number of days from 1 to 400, got {shown(warn)}"
        )
    tokens = raw.get("min_tokens", 100)
    if not _whole(tokens, 0, MAX_TOKENS):
        raise BudgetFileError(
            f"{source}: expiry: min_tokens: a whole number of tokens from 0 to "
            f"{MAX_TOKENS:,}, got {shown(tokens)}"
        )
    return ExpirySettings(warn, tokens)
