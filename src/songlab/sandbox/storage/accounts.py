"""Accounts and API keys: the demo account, admin-made accounts, keys kept as SHA-256 hashes.

Valid keys are cached in memory (the hot path authenticates every poll); a
revoked key leaves the cache at once.
"""

from __future__ import annotations

import hashlib
import secrets
import uuid

import songlab.sandbox.errors as errors
from songlab.sandbox.config import DEMO_ACCOUNT_ID, DEMO_API_KEY, DEMO_TOKENS
from songlab.sandbox.ports import Now
from songlab.sandbox.storage import billing
from songlab.sandbox.storage.db import Store


def _hash(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


class Accounts:
    def __init__(self, store: Store, clock: Now) -> None:
        self._store = store
        self._clock = clock
        self._keys: dict[str, str] = {}

    def seed_demo(self) -> None:
        """The demo account (once) and its well-known key (re-activated on every start)."""
        store = self._store
        with store.tx():
            if store.one("SELECT 1 FROM accounts WHERE id = ?", (DEMO_ACCOUNT_ID,)) is None:
                billing.create_account(
                    store, DEMO_ACCOUNT_ID, "demo", DEMO_TOKENS, 0, self._clock.now()
                )
            store.execute(
                "INSERT INTO api_keys (key_hash, account_id, created_at, revoked_at) "
                "VALUES (?,?,?,NULL) ON CONFLICT(key_hash) DO UPDATE SET revoked_at = NULL",
                (_hash(DEMO_API_KEY), DEMO_ACCOUNT_ID, self._clock.now()),
            )

    def create_account(self, name: str | None, tokens: int, extra_tokens: int) -> tuple[str, str]:
        account_id = "acct_" + uuid.uuid4().hex[:20]
        with self._store.tx():
            billing.create_account(
                self._store, account_id, name, tokens, extra_tokens, self._clock.now()
            )
            key = self._new_key(account_id)
        return account_id, key

    def add_key(self, account_id: str) -> str:
        with self._store.tx():
            if not self.account_exists(account_id):
                raise KeyError(account_id)
            return self._new_key(account_id)

    def _new_key(self, account_id: str) -> str:
        key = "sk-sandbox-" + secrets.token_urlsafe(24)
        self._store.execute(
            "INSERT INTO api_keys (key_hash, account_id, created_at) VALUES (?,?,?)",
            (_hash(key), account_id, self._clock.now()),
        )
        return key

    def revoke_key(self, key: str) -> bool:
        with self._store.tx():
            cur = self._store.execute(
                "UPDATE api_keys SET revoked_at = ? WHERE key_hash = ? AND revoked_at IS NULL",
                (self._clock.now(), _hash(key)),
            )
        self._keys.pop(key, None)
        return cur.rowcount > 0

    def account_exists(self, account_id: str) -> bool:
        return self._store.one("SELECT 1 FROM accounts WHERE id = ?", (account_id,)) is not None

    def authenticate(self, header: str | None) -> str:
        """The account of a ``Bearer`` header, or raise the spec's 401 bodies."""
        if not header or header[:7].lower() != "bearer ":
            raise errors.UNAUTHENTICATED
        key = header[7:].strip()
        account = self._keys.get(key)
        if account is not None:
            return account
        row = self._store.one(
            "SELECT account_id FROM api_keys WHERE key_hash = ? AND revoked_at IS NULL",
            (_hash(key),),
        )
        if row is None:
            raise errors.INVALID_API_KEY
        account_id: str = row[0]
        self._keys[key] = account_id
        return account_id
