"""The sandbox's own JSON rules: nesting depth and numbers, the same on every Python.

Request bodies and ``payload_json`` texts are parsed here. Nesting is measured
before ``json.loads`` runs, without recursion, so whether a document is refused
never depends on the interpreter (3.11 and 3.12 raise RecursionError around
depth 1000, 3.13 parses 5,000 levels happily). A document nested deeper than
:data:`MAX_DEPTH` containers, an integer of more than :data:`MAX_INT_DIGITS`
digits is read as a float (so an integer field refuses it by name), and
``NaN``/``Infinity`` or a decimal number that overflows a float is 422
InvalidGenerationInput naming the field. Size is the body limit of ``app.py``
(every JSON text arrives inside a request body).
"""

from __future__ import annotations

import json
import re
from typing import Any

import songlab.sandbox.errors as errors

MAX_DEPTH = 32  # objects and arrays inside one another; real payloads use 3 or 4
MAX_INT_DIGITS = 20  # room for any 64-bit integer; Python's own limit (4300) is configurable
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_KEEP = b"[]{}"
_DROP = bytes(b for b in range(256) if b not in _KEEP)
_ONE_KIND = bytes.maketrans(b"{}", b"[]")


def depth_exceeds(text: str, limit: int = MAX_DEPTH) -> bool:
    """Whether the JSON text ``text`` nests more than ``limit`` containers deep.

    Strings are removed first (a bracket inside a string does not nest), then
    everything but brackets, and ``{}`` become ``[]``; each pass then removes the
    innermost empty pairs, so a document of depth d is empty after d passes. Text
    that still holds brackets after ``limit`` passes nests deeper (or is broken,
    which the parser reports anyway). Every step is one pass in C.
    """
    if sum(map(text.count, "[{")) <= limit:
        return False  # too few containers to nest that deep
    brackets = _STRING.sub("", text).encode().translate(_ONE_KIND, _DROP)
    for _ in range(limit):
        if not brackets:
            return False
        shorter = brackets.replace(b"[]", b"")
        if shorter == brackets:
            return False  # unbalanced: not deep, malformed; json.loads names it
        brackets = shorter
    return bool(brackets)


class _NumberError(Exception):
    pass


def _int(text: str) -> int | float:
    """An integer; one of more than MAX_INT_DIGITS digits becomes a float (``inf`` past
    1e308), which every integer field refuses by name, on any Python whatever its
    ``int_max_str_digits``."""
    return int(text) if len(text.lstrip("-")) <= MAX_INT_DIGITS else float(text)


def _float(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise _NumberError(f"holds a number too large for a float ({text[:40]})")
    return value


def _constant(text: str) -> float:
    raise _NumberError(f"holds {text}, which is not JSON")


def loads(raw: str | bytes, field: str) -> Any:
    """Parse JSON text under the sandbox's rules, or 422 naming ``field``."""
    try:
        text = raw.decode("utf-8") if isinstance(raw, bytes | bytearray) else raw
    except UnicodeDecodeError:
        raise errors.invalid(field, "is not UTF-8 JSON text") from None
    if depth_exceeds(text):
        raise errors.invalid(field, f"nests deeper than {MAX_DEPTH} levels of objects and arrays")
    try:
        return json.loads(text, parse_int=_int, parse_float=_float, parse_constant=_constant)
    except _NumberError as exc:
        raise errors.invalid(field, str(exc)) from None
    except RecursionError:  # pragma: no cover - the depth rule refuses these first
        raise errors.invalid(
            field, f"nests deeper than {MAX_DEPTH} levels of objects and arrays"
        ) from None
    except ValueError as exc:
        assert isinstance(exc, json.JSONDecodeError)  # the only ValueError json.loads raises here
        raise errors.invalid(
            field, f"is not valid JSON text ({exc.msg} at character {exc.pos})"
        ) from None


def loads_object(raw: bytes, field: str = "body") -> dict[str, Any]:
    """A JSON object body, or 422 InvalidGenerationInput naming ``field``."""
    if not raw:
        raise errors.invalid(field, "must be a JSON object (the body is empty)")
    body = loads(raw, field)
    if not isinstance(body, dict):
        raise errors.invalid(field, "must be a JSON object")
    return body
