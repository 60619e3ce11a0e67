"""Every public package and module of songlab: its ``__all__`` is sorted (``sorted()``, so
CONSTANTS, then Classes, then functions only where the letters say so), free of repeats,
and names only things the module has. Each top-level package declares one."""

from __future__ import annotations

import importlib
import pkgutil

import pytest

import songlab

# The top-level packages and modules whose public names are their __all__. Not (yet):
# songlab.spec (the registry, being rewritten), songlab.sandbox (its package exports
# nothing; it is run, or built, through its modules) and songlab.cli (a command).
DECLARING = ("songlab", "songlab.audio", "songlab.client", "songlab.codec", "songlab.ledger",
             "songlab.listening", "songlab.pricing", "songlab.widgets")


def _public_modules() -> list[str]:
    found = ["songlab"]
    for info in pkgutil.walk_packages(songlab.__path__, "songlab."):
        parts = info.name.split(".")[1:]
        if not any(p.startswith("_") for p in parts):
            found.append(info.name)
    return sorted(found)


MODULES = _public_modules()


def test_the_walk_finds_every_package() -> None:
    assert set(DECLARING) <= set(MODULES)
    assert {"songlab.spec", "songlab.cli", "songlab.sandbox.engine"} <= set(MODULES)


@pytest.mark.parametrize("name", DECLARING)
def test_each_top_level_package_declares_its_public_names(name: str) -> None:
    assert isinstance(getattr(importlib.import_module(name), "__all__", None), list | tuple)


@pytest.mark.parametrize("name", MODULES)
def test_all_is_sorted_and_names_what_exists(name: str) -> None:
    module = importlib.import_module(name)
    names = getattr(module, "__all__", None)
    if names is None:
        return
    assert all(isinstance(n, str) for n in names), names
    assert list(names) == sorted(names), f"{name}.__all__ is not sorted: {sorted(names)}"
    assert len(set(names)) == len(names), f"{name}.__all__ names something twice"
    missing = [n for n in names if not hasattr(module, n)]
    assert not missing, f"{name}.__all__ names what it lacks: {missing}"
