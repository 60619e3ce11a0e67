"""What importing songlab's light modules pulls in: every notebook kernel and every process pays it.

``songlab.audio`` imports its loudness (pyloudnorm, scipy.signal) and plots (matplotlib) on the
first use of one of their names; the player's resampler only when a long excerpt needs it.
"""

from __future__ import annotations

import subprocess
import sys

HEAVY = ("scipy.signal", "matplotlib", "pyloudnorm")


def test_songlab_audio_imports_no_scipy_signal_or_matplotlib_until_used() -> None:
    code = (
        "import sys\n"
        "from songlab import audio\n"
        "import songlab.audio._codec\n"
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
