"""Every ``__all__`` of songlab (private modules too) is sorted, repeats nothing and names only
what exists; every package and the shared top-level modules have one."""

from __future__ import annotations

import importlib

import pytest

from tests.architecture._graph import build

GRAPH = build()
# ``__main__`` modules run when imported; nothing else is left out
MODULES = sorted(n for n in GRAPH.files if not n.endswith("__main__"))
# what must say its public names: every package, and the shared modules at the top
MUST_SAY = GRAPH.packages | {
    "songlab.codec",
    "songlab.localfiles",
    "songlab.params",
    "songlab.pricing",
    "songlab.spec",
}


@pytest.mark.parametrize("name", MODULES)
def test_all_is_sorted_and_complete(name: str) -> None:
    module = importlib.import_module(name)
    names = getattr(module, "__all__", None)
    if name in MUST_SAY:
        assert names is not None, f"{name}: says its public names in __all__"
    if names is None:
        return
    assert list(names) == sorted(names), f"{name}.__all__ is not sorted"
    assert len(set(names)) == len(names), f"{name}.__all__ repeats a name"
    missing = [n for n in names if not hasattr(module, n)]
    assert missing == [], f"{name}.__all__ names what it does not define"
