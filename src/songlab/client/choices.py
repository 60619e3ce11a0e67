"""Names a caller types, checked against the names that exist: refuse, never replace.

One rule for every name the client and the panels take (an operation, a model, a license
tier, an Agent One tier, a route, a choice field's value, a payload or body key): a name
that is not one of the allowed ones is a :class:`~songlab.client.ValidationError` naming
the field, the allowed values and the nearest of them::

    model: one of v5, v6, v7 (the models of generate_song), got 'v8'; did you mean 'v7'?
    payload.promt: not a field of generate_song (its fields: prompt, lyrics, ...); did you mean 'prompt'?

Nothing is priced or sent for a name that is not there, and no default takes its place.
``songlab.widgets`` words its gates with the same functions, so the form and the client
refuse alike.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from typing import TypeVar

from songlab.client._exceptions import ValidationError

__all__ = ["check_keys", "check_name", "did_you_mean", "nearest", "one_of"]

T = TypeVar("T")

# how alike a name must be to be offered (difflib's ratio: "promt"/"prompt" 0.91,
# "v8"/"v7" 0.5, "generte_song"/"generate_song" 0.96, "bogus"/"prompt" 0.18)
CUTOFF = 0.5


def nearest(value: object, allowed: Iterable[object]) -> str | None:
    """The allowed name closest to ``value`` (case aside), or None when none is close."""
    if not isinstance(value, str) or not value:
        return None
    names = [str(a) for a in allowed]
    folded = {n.casefold(): n for n in names}
    if value.casefold() in folded:
        return folded[value.casefold()]
    match = difflib.get_close_matches(value.casefold(), list(folded), n=1, cutoff=CUTOFF)
    return folded[match[0]] if match else None


def did_you_mean(value: object, allowed: Iterable[object]) -> str:
    """``"; did you mean 'v7'?"``, or ``""`` when no allowed name is near ``value``."""
    near = nearest(value, allowed)
    return f"; did you mean {near!r}?" if near is not None else ""


def one_of(value: object, allowed: Iterable[object], *, of: str = "") -> str:
    """The rule's words for a value not among ``allowed``: ``"one of a, b (of), got 'x';
    did you mean 'a'?"`` (``of`` says whose values they are)."""
    names = [str(a) for a in allowed]
    whose = f" ({of})" if of else ""
    listed = ", ".join(names) if names else "nothing"
    return f"one of {listed}{whose}, got {value!r}{did_you_mean(value, names)}"


def check_name(value: T, field: str, allowed: Iterable[object], *, of: str = "") -> T:
    """``value`` when it is one of ``allowed``, else a ValidationError naming ``field``,
    the allowed values and the nearest."""
    names = list(allowed)
    if value in names:
        return value
    raise ValidationError(field, one_of(value, names, of=of))


def check_keys(
    given: Iterable[object],
    allowed: Iterable[str],
    *,
    prefix: str = "",
    of: str,
    rules: Mapping[str, str] | None = None,
) -> None:
    """Every key of ``given`` is one of ``allowed``; the first that is not is refused as
    ``prefix + key`` (``payload.promt``), naming ``of`` (``generate_song``), its fields and
    the nearest. ``rules``: keys that have a rule of their own (refused with it)."""
    names = list(allowed)
    for key in given:
        if key in names:
            continue
        if rules and isinstance(key, str) and key in rules:
            raise ValidationError(f"{prefix}{key}", rules[key])
        fields = ", ".join(names) if names else "none"
        raise ValidationError(
            f"{prefix}{key}",
            f"not a field of {of} (its fields: {fields}){did_you_mean(key, names)}",
        )
