"""Money of the sandbox: balances, reservations, charges and the ledger.

Amounts are kept exact as integer *units* of 1e-8 USD (prices have up to 8
decimals); the API reports whole tokens (1 token = $0.01 = 1,000,000 units).
A reservation takes the price off the balance at create (base balance first,
then extra tokens) and is recorded on the task; completion charges it (and
gives back any unused part), failure releases it. Once ``base_expires_at``
passes, the base balance counts as 0 and only extra tokens are spent.
Every function here runs inside the caller's :meth:`Store.tx`.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from songlab.sandbox.storage.clock import iso
from songlab.sandbox.storage.db import Store

UNITS_PER_USD = 100_000_000
UNITS_PER_TOKEN = 1_000_000
YEAR_SECONDS = 365 * 86400


def to_units(amount: Decimal) -> int:
    units = amount * UNITS_PER_USD
    if units != units.to_integral_value():
        raise ValueError(f"amount {amount} has more than 8 decimals")
    return int(units)


def usd(units: int) -> str:
    """Units as a decimal string of USD with 8 decimals (``"0.07000000"``)."""
    return f"{Decimal(units) / UNITS_PER_USD:.8f}"


def tokens_to_units(tokens: int) -> int:
    return int(tokens) * UNITS_PER_TOKEN


class InsufficientFunds(Exception):
    def __init__(self, needed: int, available: int) -> None:
        super().__init__(
            f"reservation of ${usd(needed)} failed: the account has ${usd(available)} "
            f"available, ${usd(needed - available)} short"
        )


@dataclass(frozen=True, slots=True)
class Reservation:
    base: int
    extra: int


def _account(store: Store, account_id: str) -> Any:
    row = store.one("SELECT * FROM accounts WHERE id = ?", (account_id,))
    if row is None:
        raise KeyError(account_id)
    return row


def available(store: Store, account_id: str, now: float) -> tuple[int, int]:
    """(usable base units, extra units) at ``now``."""
    a = _account(store, account_id)
    base = a["base_units"] if now < a["base_expires_at"] else 0
    return max(base, 0), a["extra_units"]


def reserve(store: Store, account_id: str, units: int, now: float) -> Reservation:
    """Take ``units`` off the balance, base first; raise :class:`InsufficientFunds`."""
    base, extra = available(store, account_id, now)
    if units > base + extra:
        raise InsufficientFunds(units, base + extra)
    from_base = min(units, base)
    from_extra = units - from_base
    store.execute(
        "UPDATE accounts SET base_units = base_units - ?, extra_units = extra_units - ? "
        "WHERE id = ?",
        (from_base, from_extra, account_id),
    )
    return Reservation(from_base, from_extra)


def release(store: Store, account_id: str, r: Reservation) -> None:
    store.execute(
        "UPDATE accounts SET base_units = base_units + ?, extra_units = extra_units + ? "
        "WHERE id = ?",
        (r.base, r.extra, account_id),
    )


def settle(store: Store, account_id: str, r: Reservation, charged: int, now: float) -> int:
    """Turn a reservation into a charge of ``charged`` units; returns what was charged.

    The unused part goes back (extra first, as base was spent first). A charge
    above the reservation takes the difference from what is available, never
    below zero.
    """
    held = r.base + r.extra
    if charged <= held:
        back = held - charged
        back_extra = min(back, r.extra)
        release(store, account_id, Reservation(back - back_extra, back_extra))
        return charged
    base, extra = available(store, account_id, now)
    more = min(charged - held, base + extra)
    from_base = min(more, base)
    store.execute(
        "UPDATE accounts SET base_units = base_units - ?, extra_units = extra_units - ? "
        "WHERE id = ?",
        (from_base, more - from_base, account_id),
    )
    return held + more


def add_line(
    store: Store,
    *,
    account_id: str,
    task_id: str,
    parent_task_id: str | None,
    tool_id: str | None,
    operation: str,
    model: str,
    license: int,
    kind: str,
    units: int,
    now: float,
) -> None:
    store.execute(
        "INSERT INTO ledger (account_id, task_id, parent_task_id, tool_id, operation, model, "
        "license, kind, amount_units, created_at) VALUES (?,?,?,?,?,?,?,?,?,?)",
        (account_id, task_id, parent_task_id, tool_id, operation, model, license, kind, units, now),
    )


def ledger(store: Store, account_id: str) -> list[dict[str, Any]]:
    rows = store.all("SELECT * FROM ledger WHERE account_id = ? ORDER BY id", (account_id,))
    return [
        {
            "task_id": r["task_id"],
            "parent_task_id": r["parent_task_id"],
            "tool_id": r["tool_id"],
            "operation": r["operation"],
            "model": r["model"],
            "license": r["license"],
            "kind": r["kind"],
            "amount_usd": usd(r["amount_units"]),
            "created_at": iso(r["created_at"]),
        }
        for r in rows
    ]


def balance(store: Store, account_id: str, now: float) -> dict[str, Any]:
    """The spec's balance object: whole tokens (rounded down) and the base expiry."""
    a = _account(store, account_id)
    base, extra = available(store, account_id, now)
    return {
        "total_effective": (base + extra) // UNITS_PER_TOKEN,
        "base_effective": base // UNITS_PER_TOKEN,
        "extra_tokens": extra // UNITS_PER_TOKEN,
        "base_expires_at": iso(a["base_expires_at"]),
    }


def create_account(
    store: Store, account_id: str, name: str | None, tokens: int, extra_tokens: int, now: float
) -> None:
    store.execute(
        "INSERT INTO accounts (id, name, created_at, base_expires_at, base_units, extra_units) "
        "VALUES (?,?,?,?,?,?)",
        (
            account_id,
            name,
            now,
            now + YEAR_SECONDS,
            tokens_to_units(tokens),
            tokens_to_units(extra_tokens),
        ),
    )


def top_up(store: Store, account_id: str, tokens: int) -> None:
    """Admin top-up: adds extra tokens (they do not expire)."""
    _account(store, account_id)
    store.execute(
        "UPDATE accounts SET extra_units = extra_units + ? WHERE id = ?",
        (tokens_to_units(tokens), account_id),
    )
