"""Charts drawn to PNG on worker processes while the report writes the rest of its page.

Drawing a chart (matplotlib's Agg canvas: laying out and rasterizing its text, encoding the
PNG) is most of a small report's time, and all of it holds one core. :func:`draw` hands a
chart, as its function and data (pickled), to a ready worker and returns at once, so the
charts are drawn on the other cores while the caller goes on.

Each worker is a plain child process (``python -m songlab.ledger._drawing``) that imports
matplotlib once, says it is ready, and answers pickled requests on its stdin, one at a
time: nothing of the caller's main module runs again in it (as multiprocessing's spawn
would do), and none of the caller's threads (DuckDB's) is forked. A worker costs about a
second of CPU to start, more than the six charts of one report, so a process's first
report draws its charts itself and starts the workers when it is done (:func:`warm`): a
notebook's or a service's next reports find them ready; a one-off command
(``songlab report``) never starts them. A chart is drawn here whenever no worker is ready,
or its worker dies or fails: the same bytes, or the chart's own error.
``SONGLAB_CHART_WORKERS`` sets how many (0: none); the default is one per core, at most
three.
"""

from __future__ import annotations

import atexit
import os
import pickle
import queue
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import IO, TYPE_CHECKING, Final

if TYPE_CHECKING:
    from matplotlib.figure import Figure

# a chart: a module-level function of picklable data that makes a Figure
Chart = Callable[..., "Figure"]

__all__ = ["WORKERS_ENV", "draw", "one_off", "warm", "workers"]

WORKERS_ENV: Final[str] = "SONGLAB_CHART_WORKERS"
_MAX_WORKERS: Final[int] = 3
_SECRET_NAMES: Final[tuple[str, ...]] = ("KEY", "TOKEN", "SECRET", "PASSWORD")


def workers() -> int:
    """How many workers draw charts (``SONGLAB_CHART_WORKERS``, else one per core, at most
    three; 0 where this Python cannot start itself)."""
    if not sys.executable:
        return 0
    given = os.environ.get(WORKERS_ENV, "").strip()
    if given.isdigit():
        return int(given)
    return min(_MAX_WORKERS, os.cpu_count() or 1)


def _png(function: Chart, args: tuple[object, ...], kwargs: dict[str, object]) -> bytes:
    from songlab.ledger.plots import png_bytes

    return png_bytes(function(*args, **kwargs))


# ------------------------------------------------------------------------ the wire


def _send(stream: IO[bytes], payload: bytes) -> None:
    stream.write(len(payload).to_bytes(8, "big") + payload)
    stream.flush()


def _receive(stream: IO[bytes]) -> bytes | None:
    """One message; None at the end of the stream (the other side has gone)."""
    header = stream.read(8)
    if len(header) < 8:
        return None
    size = int.from_bytes(header, "big")
    payload = stream.read(size)
    return payload if len(payload) == size else None


READY: Final[bytes] = b"ready"


def serve(requests: IO[bytes], replies: IO[bytes]) -> None:
    """A worker's loop: :data:`READY` once matplotlib is imported, then each request
    (function, args, kwargs) answered with (True, PNG bytes), or (False, what went wrong)
    for the caller to draw it itself."""
    import songlab.ledger.plots  # noqa: F401 - matplotlib imported once, before the first chart

    _send(replies, READY)
    while (request := _receive(requests)) is not None:
        try:
            reply: tuple[bool, object] = (True, _png(*pickle.loads(request)))
        except Exception as error:  # noqa: BLE001 - any failure: the caller draws it and sees it
            reply = (False, f"{type(error).__name__}: {error}")
        _send(replies, pickle.dumps(reply, protocol=pickle.HIGHEST_PROTOCOL))


# ------------------------------------------------------------------------ the workers


class _WorkerGone(RuntimeError):
    """The worker could not take or answer the request."""


def _environment() -> dict[str, str]:
    """The worker's environment: this one without secrets (a chart needs none), with the
    directory this songlab is imported from first on its path."""
    env = {k: v for k, v in os.environ.items() if not any(s in k.upper() for s in _SECRET_NAMES)}
    here = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (here, env.get("PYTHONPATH", "")) if p)
    env["MPLBACKEND"] = "agg"
    return env


class _Worker:
    """One worker process and the thread that feeds it its queue of charts, one at a time."""

    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "songlab.ledger._drawing"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=_environment(),
        )
        self.jobs: queue.SimpleQueue[tuple[bytes, Future[bytes]] | None] = queue.SimpleQueue()
        self.waiting = 0  # charts given and not yet drawn (which worker gets the next one)
        self.drawn = 0
        self.alive = True
        self.ready = threading.Event()
        self.settled = threading.Event()  # ready, or could not start
        threading.Thread(target=self._feed, name="songlab-chart-worker", daemon=True).start()

    def submit(self, payload: bytes) -> Future[bytes]:
        future: Future[bytes] = Future()
        self.waiting += 1
        self.jobs.put((payload, future))
        return future

    def _feed(self) -> None:
        stdout = self.process.stdout
        if stdout is None or _receive(stdout) != READY:  # could not start: matplotlib, ...
            self.alive = False
            global _failed_starts
            _failed_starts += 1
            self.settled.set()
            return
        self.ready.set()
        self.settled.set()
        while (job := self.jobs.get()) is not None:
            payload, future = job
            try:
                future.set_result(self._ask(payload))
            except Exception as error:  # noqa: BLE001 - handed to the caller, who draws it here
                future.set_exception(error)
            finally:
                self.waiting -= 1

    def _ask(self, payload: bytes) -> bytes:
        stdin, stdout = self.process.stdin, self.process.stdout
        if not self.alive or stdin is None or stdout is None:
            raise _WorkerGone("the chart worker has stopped")
        try:
            _send(stdin, payload)
            reply = _receive(stdout)
        except OSError as error:
            self.alive = False
            raise _WorkerGone(f"the chart worker has stopped: {error}") from error
        if reply is None:
            self.alive = False
            raise _WorkerGone("the chart worker has stopped")
        ok, value = pickle.loads(reply)
        if not ok:
            raise _WorkerGone(str(value))
        png: bytes = value
        self.drawn += 1
        return png

    def stop(self) -> None:
        """Ask the worker to end (its stdin closed: it ends after its chart, if any), without
        waiting for it."""
        self.alive = False
        self.jobs.put(None)
        try:
            if self.process.stdin is not None:
                self.process.stdin.close()
        except OSError:
            self.process.kill()


_pool: list[_Worker] = []
_lock = threading.Lock()
# workers that ended before they were ready: past MAX_FAILED_STARTS, none is started again in
# this process (a Python that cannot import matplotlib in a child would otherwise try anew
# after every report)
_failed_starts = 0
MAX_FAILED_STARTS: Final[int] = 3


def _workers() -> list[_Worker]:
    """The live workers (ready or starting), started (again) as needed."""
    with _lock:
        want = workers()
        for worker in _pool[want:]:  # fewer asked for now
            worker.stop()
        for worker in _pool:
            if worker.process.poll() is not None:  # ended: its failed start counted first
                worker.settled.wait(5)
        _pool[:] = [w for w in _pool[:want] if w.alive and w.process.poll() is None]
        while len(_pool) < want and _failed_starts < MAX_FAILED_STARTS:
            try:
                _pool.append(_Worker())
            except OSError:
                break
        return list(_pool)


@atexit.register
def _stop_all() -> None:
    with _lock:
        for worker in _pool:
            worker.stop()
        _pool.clear()


_one_off: ContextVar[bool] = ContextVar("songlab_chart_one_off", default=False)


@contextmanager
def one_off() -> Iterator[None]:
    """Within: the caller makes one report and ends (a command): no worker is started for a
    next one (a running one is still used)."""
    reset = _one_off.set(True)
    try:
        yield
    finally:
        _one_off.reset(reset)


def warm(wait: float = 0.0) -> bool:
    """Start the workers that are not running (they import matplotlib meanwhile), unless
    :func:`one_off`; with ``wait``, wait up to that many seconds for each to be ready (or to
    have failed). Whether there are workers and every one is ready."""
    if _one_off.get():
        return False
    pool = _workers()
    if wait:
        for worker in pool:
            worker.settled.wait(wait)
    return bool(pool) and all(w.ready.is_set() for w in pool)


def draw(function: Chart, *args: object, **kwargs: object) -> Callable[[], bytes]:
    """The PNG of the figure ``function(*args, **kwargs)`` (a module-level function; its
    arguments picklable): drawn by a ready worker, started now; call the result for the
    bytes. A chart no worker is ready for, or its worker cannot draw, is drawn here when
    asked for."""
    with _lock:
        pool = [w for w in _pool if w.alive and w.ready.is_set()]
    if not pool:  # none ready (none started yet, or still starting): drawn here
        return lambda: _png(function, args, kwargs)
    try:
        payload = pickle.dumps((function, args, kwargs), protocol=pickle.HIGHEST_PROTOCOL)
    except (pickle.PicklingError, TypeError, AttributeError):
        return lambda: _png(function, args, kwargs)
    future = min(pool, key=lambda w: w.waiting).submit(payload)

    def result() -> bytes:
        try:
            return future.result()
        except Exception:  # noqa: BLE001 - drawn here: the same bytes, or the real error
            return _png(function, args, kwargs)

    return result


if __name__ == "__main__":
    _replies = sys.stdout.buffer
    sys.stdout = sys.stderr  # a stray print must not reach the caller's pipe
    serve(sys.stdin.buffer, _replies)
