"""The public surface of songlab.widgets: sorted, complete, importable."""

from __future__ import annotations

import songlab.widgets as widgets


def test_all_is_sorted_and_every_name_exists() -> None:
    assert widgets.__all__ == sorted(widgets.__all__)
    assert len(set(widgets.__all__)) == len(widgets.__all__)
    for name in widgets.__all__:
        assert getattr(widgets, name).__module__.startswith("songlab.widgets.")


def test_every_public_class_of_the_modules_is_exported() -> None:
    import inspect

    from songlab.widgets import clone, cost, form, listening, players, progress

    for module in (clone, cost, form, listening, players, progress):
        for name in module.__all__:
            assert name in widgets.__all__, f"{module.__name__}.{name} not re-exported"
            assert inspect.getmodule(getattr(module, name)) is module
