"""Helpers of the tests against the real sandbox (fixtures from tests/conftest.py)."""

from __future__ import annotations

import io
from contextlib import contextmanager
from decimal import Decimal
from typing import Any

import httpx
import numpy as np
import soundfile as sf

from songlab.client import Client, RetryPolicy

LIVE_RETRY = RetryPolicy(max_attempts=8, base_s=0.005, cap_s=0.05, max_total_s=20.0)


def tone_mp3(seconds: float = 3.0, rate: int = 22050, freq: float = 220.0) -> bytes:
    t = np.arange(int(seconds * rate)) / rate
    x = (0.3 * np.sin(2 * np.pi * freq * t) * (1 + 0.3 * np.sin(2 * np.pi * 3 * t))).astype(
        np.float32
    )
    buf = io.BytesIO()
    sf.write(buf, x, rate, format="MP3")
    return buf.getvalue()


OPEN: list[Client] = []  # closed after each test by tests/client/conftest.py


def live_client(sandbox: Any, api_key: str, **kw: Any) -> Client:
    c = Client(api_key, base_url=sandbox.base_url, retry=kw.pop("retry", LIVE_RETRY), **kw)
    OPEN.append(c)
    return c


def ledger(admin: httpx.Client, account_id: str) -> list[dict[str, Any]]:
    r = admin.get(f"/_sandbox/accounts/{account_id}/ledger")
    assert r.status_code == 200, r.text
    return r.json()["entries"]


def ledger_total(entries: list[dict[str, Any]], task_id: str | None = None) -> Decimal:
    return sum(
        (
            Decimal(e["amount_usd"])
            for e in entries
            if task_id is None or e["task_id"] == task_id or e.get("parent_task_id") == task_id
        ),
        Decimal(0),
    )


@contextmanager
def faults(admin: httpx.Client, **settings: Any):
    r = admin.put("/_sandbox/faults", json=settings)
    assert r.status_code == 200, r.text
    try:
        yield
    finally:
        assert admin.delete("/_sandbox/faults").status_code == 204


@contextmanager
def tool_switch(admin: httpx.Client, tool_id: str, **body: Any):
    r = admin.put(f"/_sandbox/tools/{tool_id}", json=body)
    assert r.status_code == 200, r.text
    try:
        yield
    finally:
        r = admin.put(
            f"/_sandbox/tools/{tool_id}", json={"active": True, "priced_licenses": [1, 2, 3, 4, 5]}
        )
        assert r.status_code == 200, r.text
