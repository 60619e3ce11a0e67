"""Names of a package that import their submodule on first use (PEP 562).

A package whose submodules pull in heavy libraries (matplotlib, scipy, pyloudnorm) lists
those names in a map ``{name: submodule}`` and lets :func:`attach` write its module-level
``__getattr__`` and ``__dir__``: ``from package import name`` then imports that one
submodule, and the next lookup is an ordinary attribute. No lazy name may also be a
submodule's name (the import system would hand back the module).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from importlib import import_module
from typing import Any

__all__ = ["attach"]


def attach(
    package: str, namespace: dict[str, Any], lazy: Mapping[str, str]
) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``package`` (its ``__name__``), whose module globals
    are ``namespace``, with ``lazy`` mapping each name to the submodule defining it."""
    clash = sorted(set(lazy) & set(lazy.values()))
    if clash:
        raise ValueError(f"lazy: {package} names {clash} are also submodules' names")

    def __getattr__(name: str) -> object:
        module = lazy.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value: object = getattr(import_module(f"{package}.{module}"), name)
        namespace[name] = value  # the next lookup is an ordinary attribute
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *lazy})

    return __getattr__, __dir__
