"""The sandbox's core object: store, clock, faults, catalog, signer, events and worker.

The HTTP app (``app.py``) and the worker share one :class:`Sandbox`. It also
owns the accounts and API keys (keys are kept as SHA-256 hashes; valid keys
are cached in memory for the hot path) and seeds the demo account.
"""

from __future__ import annotations

import hashlib
import secrets
import uuid
from typing import Any

from songlab.sandbox import errors
from songlab.sandbox.catalog import Catalog
from songlab.sandbox.config import DEMO_ACCOUNT_ID, DEMO_API_KEY, DEMO_TOKENS, SandboxConfig
from songlab.sandbox.storage import billing
from songlab.sandbox.storage.clock import Clock, iso
from songlab.sandbox.storage.db import Store
from songlab.sandbox.storage.files import SIGNED_PREFIX, SIGNED_URL_SECONDS, Signer
from songlab.sandbox.tasks import events
from songlab.sandbox.tasks.events import EventHub
from songlab.sandbox.tasks.faults import Faults


def _hash(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


class Sandbox:
    def __init__(self, config: SandboxConfig) -> None:
        from songlab.sandbox.tasks.worker import Worker

        self.config = config
        self.store = Store(config.db)
        self.clock = Clock(float(self.store.get_meta("clock_offset") or 0.0))
        self.faults = Faults()
        self.catalog = Catalog(self.store)
        self.signer = Signer(self.store)
        self.hub = EventHub()
        self.clock.on_advance(self.hub.notify_all)
        self.base_url = f"http://{config.host}:{config.port}"
        self._netlocs = {f"{config.host}:{config.port}"}
        self._keys: dict[str, str] = {}
        self._seed_demo()
        self.worker = Worker(self)

    def __repr__(self) -> str:
        return f"Sandbox(base_url={self.base_url!r}, db={self.config.db!r})"

    # --- lifecycle -----------------------------------------------------------------

    def set_address(self, host: str, port: int) -> None:
        self.base_url = f"http://{host}:{port}"
        self._netlocs = {f"{host}:{port}", f"localhost:{port}", f"127.0.0.1:{port}"}

    def netlocs(self) -> set[str]:
        return self._netlocs

    def start(self) -> None:
        self.worker.start()

    def close(self) -> None:
        self.worker.stop()
        self.store.close()

    # --- accounts and keys -------------------------------------------------------

    def _seed_demo(self) -> None:
        with self.store.tx():
            if self.store.one("SELECT 1 FROM accounts WHERE id = ?", (DEMO_ACCOUNT_ID,)) is None:
                billing.create_account(
                    self.store, DEMO_ACCOUNT_ID, "demo", DEMO_TOKENS, 0, self.clock.now()
                )
            self.store.execute(
                "INSERT INTO api_keys (key_hash, account_id, created_at, revoked_at) "
                "VALUES (?,?,?,NULL) ON CONFLICT(key_hash) DO UPDATE SET revoked_at = NULL",
                (_hash(DEMO_API_KEY), DEMO_ACCOUNT_ID, self.clock.now()),
            )

    def create_account(self, name: str | None, tokens: int, extra_tokens: int) -> tuple[str, str]:
        account_id = "acct_" + uuid.uuid4().hex[:20]
        with self.store.tx():
            billing.create_account(self.store, account_id, name, tokens, extra_tokens,
                                   self.clock.now())
            key = self._new_key(account_id)
        return account_id, key

    def add_key(self, account_id: str) -> str:
        with self.store.tx():
            if not self.account_exists(account_id):
                raise KeyError(account_id)
            return self._new_key(account_id)

    def _new_key(self, account_id: str) -> str:
        key = "sk-sandbox-" + secrets.token_urlsafe(24)
        self.store.execute(
            "INSERT INTO api_keys (key_hash, account_id, created_at) VALUES (?,?,?)",
            (_hash(key), account_id, self.clock.now()),
        )
        return key

    def revoke_key(self, key: str) -> bool:
        with self.store.tx():
            cur = self.store.execute(
                "UPDATE api_keys SET revoked_at = ? WHERE key_hash = ? AND revoked_at IS NULL",
                (self.clock.now(), _hash(key)),
            )
        self._keys.pop(key, None)
        return cur.rowcount > 0

    def account_exists(self, account_id: str) -> bool:
        return self.store.one("SELECT 1 FROM accounts WHERE id = ?", (account_id,)) is not None

    def authenticate(self, header: str | None) -> str:
        """The account of a ``Bearer`` header, or raise the spec's 401 bodies."""
        if not header or header[:7].lower() != "bearer ":
            raise errors.UNAUTHENTICATED
        key = header[7:].strip()
        account = self._keys.get(key)
        if account is not None:
            return account
        row = self.store.one(
            "SELECT account_id FROM api_keys WHERE key_hash = ? AND revoked_at IS NULL",
            (_hash(key),),
        )
        if row is None:
            raise errors.INVALID_API_KEY
        self._keys[key] = row[0]
        return row[0]

    # --- clock, events, links ------------------------------------------------------

    def advance_clock(self, seconds: float) -> float:
        now = self.clock.advance(seconds)
        self.store.set_meta("clock_offset", repr(self.clock.offset))
        return now

    def emit(self, task_id: str, kind: str, data: dict[str, Any], *, persist: bool = True) -> int:
        """Append an event and wake the task's stream readers after the commit."""
        seq = events.append(self.store, task_id, kind, data, self.clock.now(), persist=persist)
        self.store.after_commit(lambda: self.hub.notify(task_id))
        return seq

    def signed_url(self, file_id: str) -> tuple[str, str]:
        """A fresh signed URL of a file and its expiry (ISO 8601)."""
        expires = int(self.clock.now()) + SIGNED_URL_SECONDS
        token = self.signer.sign(file_id, expires)
        return f"{self.base_url}{SIGNED_PREFIX}{token}", iso(expires)
