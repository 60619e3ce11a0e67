"""Notebook parameters as people type them: a list or dict given to papermill as JSON text.

papermill's ``-p NAME VALUE`` passes text (numbers aside), so ``-p MODELS '["v6", "v7"]'``
gives the notebook the *string* ``'["v6", "v7"]'``, and a notebook that loops over it would
make songs for the models ``[``, ``"``, ``v`` ... The cell after a notebook's parameters cell
reads its list and dict parameters through :func:`lists` / :func:`dicts`:

- a list (a dict) is kept as it is (``-y 'MODELS: [v6, v7]'``, the defaults);
- JSON text of a list (a dict) becomes that list (dict);
- anything else stops the notebook at once, before anything is sent or spent, with a
  :class:`ParameterError` that names the parameter and shows the ``-y`` (YAML) form that
  works, e.g. ``-y 'MODELS: [v6, v7]'``.

This module imports nothing of songlab.
"""

from __future__ import annotations

import json
import re
from typing import Any, Final

__all__ = ["ParameterError", "dicts", "lists"]

_WORD: Final = re.compile(r"^[A-Za-z0-9_.:/+-]+$")


class ParameterError(ValueError):
    """A notebook parameter that is not what the notebook needs; the message names it."""


def _yaml_item(text: str) -> str:
    """An item as YAML shows it: bare when it is a plain word, else quoted."""
    return text if _WORD.match(text) else json.dumps(text)


def _hint(name: str, value: Any, kind: type) -> str:
    """The ``-y`` form that works, from what was typed when it can be read as items."""
    if kind is dict:
        return f"-y '{name}: {{key: value, other: value}}'"
    items = []
    if isinstance(value, str):
        items = [p.strip().strip("'\"") for p in value.strip().strip("[]").split(",")]
        items = [p for p in items if p]
    shown = ", ".join(_yaml_item(p) for p in items) if items else "a, b"
    return f"-y '{name}: [{shown}]'"


def _one(name: str, value: Any, kind: type) -> Any:
    what = "list" if kind is list else "dict"
    if isinstance(value, kind):
        return value
    if kind is list and isinstance(value, tuple):
        return list(value)
    if isinstance(value, str):
        try:
            parsed = json.loads(value)
        except ValueError:
            parsed = None
        if isinstance(parsed, kind):
            return parsed
        raise ParameterError(
            f"{name}: must be a {what}, got the text {value!r} (papermill's -p passes text; "
            f"JSON text of a {what} is read too). Pass it as YAML: papermill ... "
            f"{_hint(name, value, kind)}"
        )
    raise ParameterError(
        f"{name}: must be a {what}, got {type(value).__name__} {value!r}. Pass it as YAML: "
        f"papermill ... {_hint(name, value, kind)}"
    )


def lists(**parameters: Any) -> Any:
    """Each keyword's value as a list (see the module's rules), in the order given: one
    value for one keyword, else a tuple. ``MODELS, PROMPTS = lists(MODELS=MODELS,
    PROMPTS=PROMPTS)``."""
    out = tuple(_one(name, value, list) for name, value in parameters.items())
    return out[0] if len(out) == 1 else out


def dicts(**parameters: Any) -> Any:
    """Each keyword's value as a dict (JSON text of an object is read), like :func:`lists`."""
    out = tuple(_one(name, value, dict) for name, value in parameters.items())
    return out[0] if len(out) == 1 else out
