"""Fixtures of the client tests: clients on the in-memory fake (``fakes.py``), and
closing of the clients made on the shared real sandbox (``live.py``)."""

from __future__ import annotations

import httpx
import pytest

from songlab.client import AsyncClient, Client
from tests.client.fakes import API_KEY, BASE, FAST_RETRY, Fake


@pytest.fixture
def fake() -> Fake:
    return Fake()


@pytest.fixture
def client(fake: Fake) -> Client:
    c = Client(
        API_KEY, base_url=BASE, transport=httpx.MockTransport(fake), retry=FAST_RETRY, seed=1
    )
    c._sleep = lambda s: None
    yield c
    c.close()


@pytest.fixture
def aclient(fake: Fake) -> AsyncClient:
    c = AsyncClient(
        API_KEY, base_url=BASE, transport=httpx.MockTransport(fake), retry=FAST_RETRY, seed=1
    )

    async def nosleep(s: float) -> None:
        return None

    c._sleep = nosleep
    return c


@pytest.fixture(autouse=True)
def _close_live_clients():
    yield
    from tests.client.live import OPEN

    while OPEN:
        OPEN.pop().close()
