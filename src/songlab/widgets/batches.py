"""``client.batch`` for a person: a progress bar in a notebook, a line on a terminal, a frame.

The client's batch shows nothing and returns typed rows; it tells its ``on_progress``
callback a :class:`~songlab.client.BatchProgress` as it goes. :class:`BatchDisplay` is such
a callback: one ipywidgets bar (and a label) in a notebook, one rewritten stderr line on a
terminal, nothing otherwise. :func:`batch` (and :func:`abatch` for an ``AsyncClient``) runs
the batch with it and returns ``songlab.ledger.batch_frame`` of the result.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable, Mapping
from typing import Unpack

import ipywidgets as W
import pandas as pd
from IPython.display import display

from songlab.client import AsyncClient, BatchArgs, BatchProgress, Client
from songlab.ledger.batches import batch_frame

__all__ = ["BatchDisplay", "abatch", "batch"]

BatchRequest = Mapping[str, object]  # generations.create's arguments


def _in_kernel() -> bool:
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    return shell is not None and type(shell).__name__ == "ZMQInteractiveShell"


def _interactive() -> bool:
    return _in_kernel() or sys.stderr.isatty()


class BatchDisplay:
    """A batch's progress: one bar in a notebook, one rewritten line elsewhere.

    ``show``: None shows it when interactive (a notebook, or stderr on a terminal). Call it
    with each :class:`BatchProgress` (``client.batch(..., on_progress=display)``), or drive
    it with :meth:`update`; :meth:`close` ends the terminal line. ``text`` is the last line.
    """

    def __init__(self, total: int, *, show: bool | None = None) -> None:
        self.total = total
        self.show = _interactive() if show is None else show
        self._bar: W.IntProgress | None = None
        self._label: W.Label | None = None
        self._last = 0.0
        self.text = ""
        if self.show and _in_kernel():
            self._bar = W.IntProgress(min=0, max=max(total, 1), description="batch")
            self._label = W.Label()
            display(W.HBox([self._bar, self._label]))  # type: ignore[no-untyped-call]

    def __call__(self, progress: BatchProgress) -> None:
        notes = [
            f"{n} {what}"
            for n, what in (
                (progress.reused, "re-attached"),
                (progress.failed, "not created"),
                (progress.rate_limited, "rate-limit pauses"),
            )
            if n
        ]
        extra = f" ({', '.join(notes)})" if notes else ""
        if progress.phase == "done":
            self.update("done", progress.total, extra, force=True)
        else:
            self.update(progress.phase, progress.done, extra)

    def update(self, phase: str, done: int, extra: str = "", *, force: bool = False) -> None:
        self.text = f"batch: {phase} {done}/{self.total}{extra}"
        if not self.show:
            return
        if self._bar is not None and self._label is not None:
            self._bar.value = done
            self._bar.description = phase
            self._label.value = f"{done}/{self.total}{extra}"
            return
        now = time.monotonic()
        if force or now - self._last > 0.2:
            self._last = now
            sys.stderr.write("\r" + self.text.ljust(78))
            sys.stderr.flush()

    def close(self) -> None:
        if self.show and self._bar is None:
            sys.stderr.write("\r" + self.text.ljust(78) + "\n")
            sys.stderr.flush()


def batch(
    client: Client,
    requests: Iterable[BatchRequest],
    *,
    progress: bool | None = None,
    **options: Unpack[BatchArgs],
) -> pd.DataFrame:
    """``client.batch(requests, **options)`` with its progress shown (``progress``: one bar in
    a notebook, one line on a terminal; None: when interactive) -> a frame, one row per
    request (``songlab.ledger.batch_frame``). ``options``: ``client.batch``'s
    (:class:`~songlab.client.BatchArgs`)."""
    requests = list(requests)
    shown = BatchDisplay(len(requests), show=progress)
    try:
        result = client.batch(requests, on_progress=shown, **options)
    finally:
        shown.close()
    return batch_frame(result)


async def abatch(
    client: AsyncClient,
    requests: Iterable[BatchRequest],
    *,
    progress: bool | None = None,
    **options: Unpack[BatchArgs],
) -> pd.DataFrame:
    """:func:`batch` for an ``AsyncClient``: ``await songlab.widgets.abatch(client, ...)``."""
    requests = list(requests)
    shown = BatchDisplay(len(requests), show=progress)
    try:
        result = await client.batch(requests, on_progress=shown, **options)
    finally:
        shown.close()
    return batch_frame(result)
