"""Small shared pieces of the panels: a status line, an error sink, a callback guard.

ipywidgets' ``CallbackDispatcher`` swallows exceptions raised in callbacks, and
ipykernel 7 drops ``with output:`` writes made from other threads. So every
panel owns an :class:`ErrorSink`: a visible status line (an ``HTML`` whose value
is set, which works from any thread) and an ``Output`` log filled with
``append_stderr`` (also thread-safe); :meth:`ErrorSink.guard` wraps callbacks so
their errors land there, never lost.
"""

from __future__ import annotations

import functools
import html
import threading
from collections.abc import Callable
from typing import Any, TypeVar

import ipywidgets as W

__all__ = ["ErrorSink", "describe_error", "status_html"]

F = TypeVar("F", bound=Callable[..., Any])

_COLORS = {"info": "#555", "ok": "#1a7f37", "error": "#b42318", "warn": "#9a6700"}


def status_html(text: str, tone: str = "info") -> str:
    """Escaped text in the colour of its tone (info, ok, warn, error)."""
    color = _COLORS.get(tone, _COLORS["info"])
    return f'<span style="color:{color}">{html.escape(text)}</span>'


def describe_error(exc: BaseException) -> str:
    """``"InsufficientFunds: message"``: the class (or the service's code) and its text."""
    code = getattr(exc, "code", None) or getattr(exc, "error", None)
    name = str(getattr(code, "value", code)) if code else type(exc).__name__
    text = str(exc).strip()
    if text.startswith(name):
        return text
    return f"{name}: {text}" if text else name


class ErrorSink:
    """A panel's status line plus its error log; ``errors`` keeps every error text."""

    def __init__(self) -> None:
        self.line = W.HTML(value="")
        self.log = W.Output(layout=W.Layout(max_height="8em", overflow="auto"))
        self.errors: list[str] = []
        self._lock = threading.Lock()

    def info(self, text: str, tone: str = "info") -> None:
        self.line.value = status_html(text, tone)

    def error(self, error: BaseException | str, *, context: str = "") -> str:
        text = error if isinstance(error, str) else describe_error(error)
        if context:
            text = f"{context}: {text}"
        with self._lock:
            self.errors.append(text)
        self.line.value = status_html(text, "error")
        self.log.append_stderr(text + "\n")
        return text

    def guard(self, fn: F, *, context: str = "") -> F:
        """``fn`` with every exception shown in the panel instead of swallowed."""

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            try:
                return fn(*args, **kwargs)
            except Exception as exc:  # noqa: BLE001 - shown in the panel, by design
                self.error(exc, context=context)
                return None

        return wrapper  # type: ignore[return-value]
