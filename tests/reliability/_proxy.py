"""A misbehaving HTTP proxy between a client and the sandbox: a small asyncio TCP server.

Every client connection carries one request (the proxy reads its head and its
``Content-Length`` body, and forwards it with ``Connection: close`` so the next
request opens a new connection and meets a new fate). What happens to it is drawn
from a seeded schedule:

- ``pass``: forwarded; the answer (an SSE stream included) is piped back whole;
- ``reset``: forwarded, so the service acts on it, then the answer is cut mid-body
  with a TCP reset (SO_LINGER 0): a create whose answer is lost, a stream cut;
- ``html502`` / ``html504``: a load balancer's HTML error page, not forwarded;
- ``retry_after``: an HTML 503 with ``Retry-After: 1``, not forwarded;
- during a ``blackhole(seconds)`` window every request is read and then held with
  no answer (the client's timeouts fire) and never forwarded.

Counts of each fate are kept in ``proxy.fates``. The proxy runs on its own thread
and event loop, bound to 127.0.0.1 port 0; ``stop()`` closes everything it opened.
"""

from __future__ import annotations

import asyncio
import random
import socket
import struct
import threading
import time
from collections import Counter
from typing import Any

FATES = ("pass", "reset", "html502", "html504", "retry_after")
DEFAULT_WEIGHTS = {"pass": 0.6, "reset": 0.14, "html502": 0.1, "html504": 0.1, "retry_after": 0.06}
_PAGES = {
    "html502": (502, "Bad Gateway", {}),
    "html504": (504, "Gateway Timeout", {}),
    "retry_after": (503, "Service Unavailable", {"Retry-After": "1"}),
}


def _page(fate: str) -> bytes:
    status, reason, headers = _PAGES[fate]
    body = (
        f"<html><head><title>{status} {reason}</title></head><body><center><h1>{status} "
        f"{reason}</h1></center><hr><center>nginx</center></body></html>"
    ).encode()
    extra = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
    return (
        f"HTTP/1.1 {status} {reason}\r\nContent-Type: text/html\r\n"
        f"Content-Length: {len(body)}\r\n{extra}Connection: close\r\n\r\n"
    ).encode() + body


class FaultProxy:
    def __init__(
        self, upstream_port: int, *, seed: int = 7, weights: dict[str, float] | None = None
    ) -> None:
        self.upstream_port = upstream_port
        self.rng = random.Random(seed)
        self.weights = dict(DEFAULT_WEIGHTS if weights is None else weights)
        self.fates: Counter[str] = Counter()
        self.blackhole_until = 0.0
        self._loop = asyncio.new_event_loop()
        self._server: asyncio.Server | None = None
        self._conns: set[asyncio.Task[Any]] = set()
        started = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(started,), daemon=True)
        self._thread.start()
        started.wait(10)
        assert self._server is not None
        self.port = self._server.sockets[0].getsockname()[1]
        self.base_url = f"http://127.0.0.1:{self.port}"

    # -- control (from any thread) -----------------------------------------------------

    def blackhole(self, seconds: float) -> None:
        self.blackhole_until = time.monotonic() + seconds

    def set_weights(self, **weights: float) -> None:
        self.weights = weights

    def stop(self) -> None:
        async def shutdown() -> None:
            assert self._server is not None
            self._server.close()
            for t in list(self._conns):
                t.cancel()
            await asyncio.gather(*self._conns, return_exceptions=True)

        asyncio.run_coroutine_threadsafe(shutdown(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()

    def __enter__(self) -> FaultProxy:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    # -- the proxy ---------------------------------------------------------------------

    def _run(self, started: threading.Event) -> None:
        asyncio.set_event_loop(self._loop)

        async def start() -> None:
            self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)

        self._loop.run_until_complete(start())
        started.set()
        self._loop.run_forever()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._conns.add(task)
        try:
            await self._handle(reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            pass
        finally:
            self._conns.discard(task)
            writer.close()

    def _fate(self) -> str:
        if time.monotonic() < self.blackhole_until:
            return "blackhole"
        names = list(self.weights)
        return self.rng.choices(names, weights=[self.weights[n] for n in names])[0]

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        length = 0
        kept = [lines[0]]
        for line in lines[1:]:
            name = line.split(":", 1)[0].strip().lower()
            if name == "content-length":
                length = int(line.split(":", 1)[1])
            if name and name not in ("connection", "keep-alive"):
                kept.append(line)
        body = await reader.readexactly(length) if length else b""
        fate = self._fate()
        self.fates[fate] += 1
        if fate == "blackhole":
            await asyncio.sleep(max(0.0, self.blackhole_until - time.monotonic()) + 0.5)
            return
        if fate in _PAGES:
            writer.write(_page(fate))
            await writer.drain()
            return
        request = ("\r\n".join(kept) + "\r\nConnection: close\r\n\r\n").encode("latin-1") + body
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.upstream_port)
        try:
            up_writer.write(request)
            await up_writer.drain()
            if fate == "reset":
                await self._cut(up_reader, writer)
            else:
                while chunk := await up_reader.read(65536):
                    writer.write(chunk)
                    await writer.drain()
        finally:
            up_writer.close()

    async def _cut(self, up: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Pass the head and part of the body on, then reset the connection."""
        data = await up.readuntil(b"\r\n\r\n")
        more = await up.read(65536)
        writer.write(data + more[: max(1, len(more) // 2)])
        await writer.drain()
        sock = writer.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        writer.transport.abort()
