"""The public surface: sorted __all__, every name importable."""

from __future__ import annotations

import pytest

import songlab.audio
import songlab.listening


@pytest.mark.parametrize("module", [songlab.audio, songlab.listening], ids=["audio", "listening"])
def test_all_is_sorted_and_complete(module) -> None:
    assert module.__all__ == sorted(module.__all__)
    for name in module.__all__:
        assert hasattr(module, name), name
