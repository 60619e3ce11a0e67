"""Text from the data made safe for a terminal, a log or a webhook: control characters escaped.

A project name, a budget name, a tag, a tool id or a file path can hold a newline, an ANSI
escape (``\\x1b[2J`` clears a terminal) or a bidirectional override (``\\u202e`` shows text
backwards): printed as it is, one alert could read as two, or a line could say what it does
not. :func:`printable` is the one function that shows such characters as escapes
(``\\n``, ``\\x1b``, ``\\u202e``), used wherever text leaves songlab for a reader that is not
HTML (the HTML report escapes its own way): ``songlab report``'s stdout and stderr, the
guardrails' lines and the webhook's JSON (:func:`printable_json`). Everything else is kept as
it is (accents, CJK, emoji, spaces).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping
from typing import Final

__all__ = ["ESCAPED", "printable", "printable_json"]

# Unicode categories shown as escapes: controls (C0, C1, DEL), format characters (bidi
# overrides and isolates, zero-width joiners, the BOM), surrogates, private use, unassigned,
# and the line and paragraph separators.
ESCAPED: Final[frozenset[str]] = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})
_NAMED: Final[dict[str, str]] = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(ch: str) -> str:
    named = _NAMED.get(ch)
    if named is not None:
        return named
    code = ord(ch)
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def printable(text: object) -> str:
    """``text`` (made a ``str``) with every character of the ``ESCAPED`` categories shown as
    its escape: one line, nothing that moves the cursor, colours, clears or reorders."""
    s = str(text)
    if s.isprintable():  # the common case: nothing to escape (a space is printable)
        return s
    return "".join(_escape(ch) if unicodedata.category(ch) in ESCAPED else ch for ch in s)


def printable_json(value: object) -> object:
    """A JSON value with :func:`printable` applied to every string in it, keys included."""
    if isinstance(value, str):
        return printable(value)
    if isinstance(value, Mapping):
        return {printable(k): printable_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [printable_json(v) for v in value]
    return value
