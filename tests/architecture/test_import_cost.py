"""What importing songlab's light modules pulls in: every notebook kernel and every process pays it.

``songlab.audio`` imports its loudness (pyloudnorm, scipy.signal) and plots (matplotlib) on the
first use of one of their names; the player's resampler only when a long excerpt needs it.
``songlab.widgets`` imports each panel's module on first use of its name, and
``songlab.listening`` loads scipy (stats, signal), pyloudnorm and matplotlib when a statistic,
a filter, a loudness or a chart is first computed (scipy.signal imports scipy.stats).
"""

from __future__ import annotations

import subprocess
import sys

import pytest

HEAVY = ("scipy.signal", "matplotlib", "pyloudnorm")


def test_songlab_audio_imports_no_scipy_signal_or_matplotlib_until_used() -> None:
    code = (
        "import sys\n"
        "from songlab import audio\n"
        "import songlab.audio._clips\n"
        f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))\n"
        "audio.integrated_loudness, audio.waveform\n"
        f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    before, after = done.stdout.splitlines()
    assert before == "[]", before
    assert after == str(sorted(HEAVY)), after


def test_every_lazy_name_is_its_submodules_object() -> None:
    from importlib import import_module

    from songlab import audio

    loudness, player, plots = (
        import_module(f"songlab.audio.{m}") for m in ("loudness", "player", "plots")
    )

    for name in audio.__all__:
        value = getattr(audio, name)
        assert value is not None, name
    assert audio.integrated_loudness is loudness.integrated_loudness
    assert audio.waveform is plots.waveform
    assert audio.player is player.player  # a function, though songlab.audio.player is a module
    assert callable(audio.player)
    assert set(audio.__all__) <= set(dir(audio))


def _loaded(code: str, modules: tuple[str, ...]) -> list[list[str]]:
    """Run ``code`` (lines separated by ``print(LOADED)``) in a fresh interpreter: which of
    ``modules`` were in ``sys.modules`` at each ``print(LOADED)``."""
    probe = f"print(sorted(m for m in {modules!r} if m in sys.modules))"
    done = subprocess.run(
        [sys.executable, "-c", "import sys\n" + code.replace("print(LOADED)", probe)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return [eval(line) for line in done.stdout.splitlines()]


def test_one_panel_loads_its_own_module_not_the_statistics_or_charts() -> None:
    heavy = ("scipy.stats", "scipy.signal", "matplotlib", "pyloudnorm")
    first, clone, listening, drawn = _loaded(
        "import songlab.widgets\n"
        "print(LOADED)\n"
        "from songlab.widgets import ClonePanel, GenerationForm, ProgressPanel\n"
        "print(LOADED)\n"
        "import songlab.listening\n"
        "from songlab.widgets import listening_panel\n"
        "print(LOADED)\n"
        "songlab.listening.stats.binomial_p(7, 10)\n"
        "songlab.listening.lowpass_anchor([[0.0] * 64], sr=48000)\n"
        "from songlab.widgets import AudioView\n"
        "print(LOADED)\n",
        heavy,
    )
    assert first == clone == listening == [], (first, clone, listening)
    assert drawn == ["scipy.signal", "scipy.stats"], drawn  # used, so loaded


def test_every_lazy_panel_is_its_submodules_object() -> None:
    from importlib import import_module

    import songlab.widgets as widgets

    assert set(widgets.__all__) == set(widgets._LAZY)
    assert not set(widgets._LAZY) & set(widgets._LAZY.values())  # no name is a submodule's
    for name, module in widgets._LAZY.items():
        assert getattr(widgets, name) is getattr(import_module(f"songlab.widgets.{module}"), name)
    assert set(widgets.__all__) <= set(dir(widgets))
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        widgets.Nope  # noqa: B018
