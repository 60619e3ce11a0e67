"""Expiring tokens: at the spend rate, how many base tokens will be left when they expire, and
whether the balance runs out first.

The account balance (the spec's object: ``total_effective``, ``base_effective``,
``extra_tokens``, ``base_expires_at``; 1 token = $0.01) is spent base first, then extra
tokens; once ``base_expires_at`` passes, what is left of the base is gone (``base_effective``
0). From the newest balance snapshot (``LedgerStore.balances()``; taken as the balance at
``as_of``) and the same simulated futures of daily spend as the forecasts
(``forecasts.simulate`` over the account's daily history: its model, its weekly season, its
interval), each future burns the balance day by day (the rest of today at its share, the
expiry day up to its hour):

- **unused at expiry** = the base left at ``base_expires_at`` (0 where the future spends it
  all): the mean and the interval over the futures, in tokens and USD;
- **runs out** = the day the total balance reaches 0, when that comes before
  ``base_expires_at``: the median day over the futures that run out, its interval, and the
  share of futures that do.

**The spend rate** is the ledger's (billed and list-price estimates, the report's figures).
The balance may show more: work the ledger cannot see or price (made outside songlab on a
service that shows no cost, as in the spec profile). With snapshots spanning a day or more of
the last 28, the balance's own burn (drops in ``total_effective``; rises, which are top-ups,
skipped) is measured; when it is over the ledger's rate by more than 10%, the futures are
scaled up to it (``rate_source = "balance"``, said in the note), and with no ledger spend at
all the balance's rate is the straight line. Pure: a balance and a history in, an
:class:`ExpiryOutlook` out.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from decimal import ROUND_HALF_EVEN, Decimal
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from songlab.ledger.forecasts import LEVEL, PATHS, RESAMPLE_DAYS, Daily, simulate

__all__ = [
    "ExpiryOutlook",
    "TOKEN_USD",
    "balance_rate",
    "outlook",
]

TOKEN_USD: Final[Decimal] = Decimal("0.01")
RATE_DAYS: Final[int] = 28  # the window of the balance's own burn rate
MIN_SPAN_DAYS: Final[float] = 1.0  # snapshots must span this much to give a rate
LEDGER_SHORT: Final[float] = 1.10  # balance rate over the ledger's by more: the balance's
MAX_DAYS: Final[int] = 800  # futures are simulated this far at most


@dataclass(frozen=True, slots=True)
class ExpiryOutlook:
    """The balance's future at the spend rate: base tokens left at expiry, or running out."""

    as_of: datetime
    taken_at: datetime  # the snapshot used
    total_tokens: int
    base_tokens: int
    extra_tokens: int
    base_expires_at: datetime | None
    days_to_expiry: float | None
    rate_usd_per_day: Decimal  # the mean daily spend of the futures (to the cent)
    rate_source: str  # "ledger" or "balance"
    unused_tokens: int  # base tokens expected to be left at base_expires_at (mean)
    unused_low: int | None  # the interval (None: no interval, see note)
    unused_high: int | None
    p_unused: float  # share of futures that leave base tokens unused
    runs_out_on: date | None  # median day the balance reaches 0, if before expiry
    runs_out_low: date | None
    runs_out_high: date | None
    p_runs_out: float  # share of futures where the balance runs out before expiry
    level: float
    method: str
    note: str

    @property
    def unused_usd(self) -> Decimal:
        return Decimal(self.unused_tokens) * TOKEN_USD

    def describe(self) -> str:
        if self.base_expires_at is None:
            return "the balance shows no base_expires_at: nothing known to expire"
        head = (
            f"{self.unused_tokens:,} base tokens (${self.unused_usd:,.2f}) expected to expire "
            f"unused at {self.base_expires_at:%Y-%m-%d %H:%M} UTC"
        )
        if self.unused_low is not None and self.unused_high is not None:
            head += f" ({self.level:.0%}: {self.unused_low:,} to {self.unused_high:,})"
        head += f", at ${self.rate_usd_per_day:,.2f} a day ({self.rate_source})"
        if self.runs_out_on is not None:
            head += f"; the balance runs out around {self.runs_out_on} first"
        return head


def _tokens(value: Any, name: str) -> int:
    if isinstance(value, bool) or value is None:
        raise ValueError(f"balance: {name}: a whole number of tokens, got {value!r}")
    try:
        out = int(value)
    except (TypeError, ValueError):
        raise ValueError(f"balance: {name}: a whole number of tokens, got {value!r}") from None
    if out != value and not isinstance(value, str):
        raise ValueError(f"balance: {name}: a whole number of tokens, got {value!r}")
    return out


def _when(value: object, name: str) -> datetime | None:
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            raise ValueError(f"balance: {name}: an ISO 8601 UTC time, got {value!r}") from None
    if not isinstance(value, datetime):
        to = getattr(value, "to_pydatetime", None)
        if not callable(to):
            raise ValueError(f"balance: {name}: a time, got {value!r}")
        value = to()
    assert isinstance(value, datetime)
    return value.astimezone(UTC) if value.tzinfo else value.replace(tzinfo=UTC)


def balance_rate(snapshots: Sequence[Mapping[str, object]], *, as_of: datetime) -> float | None:
    """Tokens a day the balance burnt over the snapshots of the last ``RATE_DAYS`` days (drops in
    ``total_effective``; rises, top-ups, skipped); None if they span less than a day."""
    rows = sorted(
        (
            (t, _tokens(s["total_effective"], "total_effective"))
            for s in snapshots
            if (t := _when(s.get("taken_at"), "taken_at")) is not None
            and as_of - timedelta(days=RATE_DAYS) <= t <= as_of
        ),
        key=lambda r: r[0],
    )
    if len(rows) < 2:
        return None
    span = (rows[-1][0] - rows[0][0]) / timedelta(days=1)
    if span < MIN_SPAN_DAYS:
        return None
    burnt = sum(max(0, a[1] - b[1]) for a, b in zip(rows, rows[1:], strict=False))
    return burnt / span


def outlook(
    balance: Mapping[str, object],
    history: Daily,
    *,
    as_of: datetime,
    snapshots: Sequence[Mapping[str, object]] = (),
    level: float = LEVEL,
    paths: int = PATHS,
    seed: int = 0,
) -> ExpiryOutlook:
    """The outlook of ``balance`` (the newest snapshot: the spec's four fields, and
    ``taken_at``) at the spend of ``history`` (daily spend of the account, as for
    :func:`songlab.ledger.forecasts.forecast`), from ``as_of``."""
    if as_of.tzinfo is None:
        raise ValueError("as_of: must be timezone-aware (UTC)")
    as_of = as_of.astimezone(UTC)
    total = _tokens(balance.get("total_effective"), "total_effective")
    base = _tokens(balance.get("base_effective"), "base_effective")
    extra = _tokens(balance.get("extra_tokens", 0) or 0, "extra_tokens")
    expires = _when(balance.get("base_expires_at"), "base_expires_at")
    taken = _when(balance.get("taken_at"), "taken_at") or as_of
    if expires is not None and expires <= as_of:
        base = 0  # past base_expires_at the base is gone, whatever the snapshot said
    today = as_of.date()
    complete = _complete_days(history, today)
    end = expires if expires is not None and expires > as_of else None
    horizon_end = end or as_of + timedelta(days=MAX_DAYS)
    horizon = min(MAX_DAYS, (horizon_end.date() - today).days + 1)
    usd, method, _, note = simulate(np.array(complete), horizon, paths=paths, seed=seed)
    weights = _weights(as_of, horizon_end, horizon)
    futures = _Futures(usd, method, "ledger", note)
    by_balance = balance_rate(snapshots, as_of=as_of)
    if by_balance is not None:
        futures = _against_balance(futures, by_balance * float(TOKEN_USD), weights, paths)
    # tokens burnt by the end of each future day, and at expiry
    burnt = np.cumsum(futures.usd * weights[None, :], axis=1) / float(TOKEN_USD)
    at_end = burnt[:, -1] if horizon else np.zeros(paths)
    unused = np.maximum(0.0, base - at_end) if end is not None else np.zeros(paths)
    out_day = np.where((burnt >= total).any(axis=1), (burnt >= total).argmax(axis=1), -1)
    runs_out = out_day >= 0
    interval = len(complete) >= RESAMPLE_DAYS and not np.all(futures.usd == futures.usd[:1])
    lo_q, hi_q = (1 - level) / 2, 1 - (1 - level) / 2

    def day_of(q: float) -> date | None:
        if not runs_out.any():
            return None
        return today + timedelta(days=int(np.quantile(out_day[runs_out], q, method="nearest")))

    rate = _rate(futures.usd, weights)
    half = bool(runs_out.mean() >= 0.5)
    return ExpiryOutlook(
        as_of=as_of,
        taken_at=taken,
        total_tokens=total,
        base_tokens=base,
        extra_tokens=extra,
        base_expires_at=expires,
        days_to_expiry=(end - as_of) / timedelta(days=1) if end is not None else None,
        rate_usd_per_day=Decimal(str(rate)).quantize(Decimal("0.01"), ROUND_HALF_EVEN),
        rate_source=futures.source,
        unused_tokens=int(round(float(np.mean(unused)))),
        unused_low=int(math.floor(np.quantile(unused, lo_q))) if interval and end else None,
        unused_high=int(math.ceil(np.quantile(unused, hi_q))) if interval and end else None,
        p_unused=float(np.mean(unused > 0)),
        runs_out_on=day_of(0.5) if half else None,
        runs_out_low=day_of(lo_q) if half and interval else None,
        runs_out_high=day_of(hi_q) if half and interval else None,
        p_runs_out=float(runs_out.mean()),
        level=level,
        method=futures.method,
        note=futures.note,
    )


@dataclass(frozen=True)
class _Futures:
    """Simulated daily spend in USD (paths x days), how it was made and whose rate it is."""

    usd: npt.NDArray[np.float64]
    method: str
    source: str  # "ledger", or "balance" (the balance's own burn)
    note: str


def _complete_days(history: Daily, today: date) -> list[float]:
    """Spend of each whole day from the first that spent anything up to yesterday."""
    amounts = {d: float(v or 0) for d, v in history.items() if d < today}
    spent_days = sorted(d for d, v in amounts.items() if v)
    if not spent_days:
        return []
    first = spent_days[0]
    return [amounts.get(first + timedelta(days=i), 0.0) for i in range((today - first).days)]


def _rate(usd: npt.NDArray[np.float64], weights: npt.NDArray[np.float64]) -> float:
    """The futures' mean spend a day over the horizon (0 for no horizon)."""
    if not len(weights):
        return 0.0
    return float(np.mean(usd @ weights) / max(weights.sum(), 1e-9))


def _against_balance(
    futures: _Futures, usd_a_day: float, weights: npt.NDArray[np.float64], paths: int
) -> _Futures:
    """The futures checked against the balance's own burn (``usd_a_day``): that rate, straight,
    where the ledger prices no spend; scaled up to it where the ledger's is short of it."""
    ledger_rate = _rate(futures.usd, weights)
    if ledger_rate <= 0 and usd_a_day > 0:
        return _Futures(
            np.full((paths, len(weights)), usd_a_day),
            "the balance's own burn, straight line",
            "balance",
            "the ledger shows no spend it can price; the rate is the balance's own drop "
            "over its snapshots (no interval)",
        )
    if usd_a_day > ledger_rate * LEDGER_SHORT:
        note = futures.note
        return _Futures(
            futures.usd * (usd_a_day / ledger_rate),
            futures.method,
            "balance",
            f"the balance burnt ${usd_a_day:,.2f} a day, more than the ledger's "
            f"${ledger_rate:,.2f} (work it cannot see or price): the futures are scaled to "
            "the balance's rate" + (f"; {note}" if note else ""),
        )
    return futures


def _weights(as_of: datetime, until: datetime, horizon: int) -> npt.NDArray[np.float64]:
    """Each future day's share of a day that lies in ``[as_of, until)``."""
    w = np.ones(horizon)
    if not horizon:
        return w
    today = as_of.date()
    midnight = datetime.combine(today, time(), UTC)
    w[0] = 1.0 - (as_of - midnight) / timedelta(days=1)
    last = (until.date() - today).days
    if 0 <= last < horizon:
        part = (until - datetime.combine(until.date(), time(), UTC)) / timedelta(days=1)
        w[last] = part if last else min(w[0], part - (as_of - midnight) / timedelta(days=1))
        w[last + 1 :] = 0.0
    return w
