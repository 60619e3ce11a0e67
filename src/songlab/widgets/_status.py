"""What a panel says: the status of the last action, and what each button would do.

A panel's status line belongs to the last action a person took (an edit, a click, an
upload): the next action replaces it, an error included, so no message outlives its cause.
A :class:`Status` is written for a person (what happened, what to do next) and carries the
developer detail (the error's class, code and message) that :func:`render` puts one click
away, in a ``<details>`` element. :func:`from_error` words every error of the client that
way and says whether pressing the same button again can succeed (``retry``): a request the
service refused stays refused until a value changes, so a panel disables its button for it.

A :class:`Button` is a button's state in a panel's model: enabled or not, and ``does``,
what a click would do or why it cannot (its tooltip, and the panel's "why" line).
"""

from __future__ import annotations

import html
from dataclasses import dataclass

__all__ = ["Button", "Status", "from_error", "render"]

_COLORS = {"info": "#555", "ok": "#1a7f37", "error": "#b42318", "warn": "#9a6700"}


@dataclass(frozen=True, slots=True)
class Status:
    """The outcome of one action: ``text`` for a person, its ``tone`` (info, ok, warn,
    error), the ``detail`` a developer wants (one click away), and whether the same
    action may succeed if repeated unchanged (``retry``; False: change something first)."""

    action: str
    text: str = ""
    tone: str = "info"
    detail: str = ""
    retry: bool = True


@dataclass(frozen=True, slots=True)
class Button:
    """A button in a panel's model: ``enabled``, and what a click does (or why it cannot)."""

    enabled: bool
    does: str


def render(status: Status) -> str:
    """The status line's HTML: the text in its tone's colour, the detail in a closed
    ``<details>`` ("details") under it. Empty for an empty status."""
    if not status.text:
        return ""
    color = _COLORS.get(status.tone, _COLORS["info"])
    line = f'<span style="color:{color}">{html.escape(status.text)}</span>'
    if not status.detail:
        return line
    return (
        f'<div class="songlab-status">{line}<details style="font-size:85%;color:#555">'
        f"<summary>details</summary><pre style='white-space:pre-wrap;margin:.2em 0'>"
        f"{html.escape(status.detail)}</pre></details></div>"
    )


def _detail(exc: BaseException) -> str:
    code = getattr(exc, "code", None)
    name = type(exc).__name__
    shown = str(getattr(code, "value", code)) if code else ""
    head = f"{name} ({shown})" if shown and shown != name else name
    status = getattr(exc, "status_code", None)
    head += f" [{status}]" if status else ""
    text = str(exc).strip()
    return f"{head}: {text}" if text else head


# (client error class name, what a person reads, can the same request succeed again)
_WORDS: tuple[tuple[str, str, bool], ...] = (
    ("ValidationError", "Not sent: {rule}. Change {field} and try again.", False),
    (
        "BudgetExceeded",
        "Not sent: it would go over your budget. Raise the budget or choose a cheaper request.",
        False,
    ),
    (
        "InsufficientFunds",
        "The account's balance is too low for this request. Top it up "
        "or choose a cheaper model or tier.",
        False,
    ),
    (
        "InvalidGenerationInput",
        "The service refused this request: {message}. Change it and try again.",
        False,
    ),
    (
        "ToolNotPriced",
        "The service has no price for this tool at this license tier. "
        "Choose another tier or model.",
        False,
    ),
    (
        "UnknownTool",
        "The service does not offer this tool (any more). Choose another model.",
        False,
    ),
    (
        "RateLimited",
        "The service is busy (too many requests). Wait a moment and press "
        "again: the same request is never billed twice.",
        True,
    ),
    (
        "DependencyUnavailable",
        "The service is briefly unavailable. Press again in a "
        "moment: the same request is never billed twice.",
        True,
    ),
    (
        "CreateUnconfirmed",
        "The answer was lost: the task may exist. Press again: the same "
        "request finds it, never billed twice.",
        True,
    ),
    (
        "APITimeoutError",
        "The service did not answer in time. Press again: the same request is never billed twice.",
        True,
    ),
    (
        "APIConnectionError",
        "Could not reach the service. Check the connection and press "
        "again: the same request is never billed twice.",
        True,
    ),
    ("Unauthenticated", "The service refused the API key. Check SONGLAB_API_KEY.", False),
    ("InvalidApiKey", "The service refused the API key. Check SONGLAB_API_KEY.", False),
)


def from_error(action: str, exc: BaseException) -> Status:
    """The status of ``action`` that raised ``exc``: person words (what to do next), the
    error as detail, and whether the same request may succeed again (``retry``)."""
    names = [cls.__name__ for cls in type(exc).__mro__]
    for name, words, retry in _WORDS:
        if name in names:
            text = words.format(
                field=getattr(exc, "field", "the request"),
                rule=getattr(exc, "rule", str(exc)),
                message=str(getattr(exc, "message", "") or exc).rstrip("."),
            )
            return Status(action, text, "error", _detail(exc), retry)
    return Status(
        action,
        f"Something went wrong ({type(exc).__name__}). Press again, or open the details.",
        "error",
        _detail(exc),
        True,
    )
