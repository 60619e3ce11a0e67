"""Every ``__all__`` of songlab is sorted and names only what exists; every package has one."""

from __future__ import annotations

import importlib

import pytest

from tests.architecture._graph import build

GRAPH = build()
# ``__main__`` modules run when imported; nothing else is left out
MODULES = sorted(n for n in GRAPH.files if not n.endswith("__main__"))


@pytest.mark.parametrize("name", MODULES)
def test_all_is_sorted_and_complete(name: str) -> None:
    module = importlib.import_module(name)
    names = getattr(module, "__all__", None)
    if name in GRAPH.packages:
        assert names is not None, f"{name}: a package says its public names in __all__"
    if names is None:
        return
    assert list(names) == sorted(names), f"{name}.__all__ is not sorted"
    assert len(set(names)) == len(names), f"{name}.__all__ repeats a name"
    missing = [n for n in names if not hasattr(module, n)]
    assert missing == [], f"{name}.__all__ names what it does not define"
