"""songlab.audio: decode/encode audio bytes, measure loudness, play inline, plot.

Arrays are float32 ``(channels, samples)`` (time on the last axis) with a
sample rate in Hz. Bad input raises :class:`AudioError` naming the argument.

The codec and the player are imported with the package; loudness (pyloudnorm,
which pulls in scipy.signal) and the plots (matplotlib) on first use of one of
their names, so that ``from songlab import audio`` or an import of
``songlab.audio._clips`` costs a kernel or a process neither (about 1.1 s of the
1.7 s the package took to import). The player's resampler (scipy.signal) is
imported when a long excerpt needs it. No lazy name is also a submodule's name
(``player`` is both: it stays eager).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from songlab.audio._audio_error import AudioError
from songlab.audio._clips import (
    FORMATS,
    MIME_TYPES,
    as_audio,
    as_channels,
    decode,
    duration,
    encode,
    sniff,
)
from songlab.audio.player import Player, PlayerRow, player, player_row
from songlab.lazy import attach

if TYPE_CHECKING:
    from songlab.audio.loudness import apply_gain, db_to_gain, integrated_loudness, peak, peak_db
    from songlab.audio.plots import spectrogram, stems, waveform

__all__ = [
    "AudioError",
    "FORMATS",
    "MIME_TYPES",
    "Player",
    "PlayerRow",
    "apply_gain",
    "as_audio",
    "as_channels",
    "db_to_gain",
    "decode",
    "duration",
    "encode",
    "integrated_loudness",
    "peak",
    "peak_db",
    "player",
    "player_row",
    "sniff",
    "spectrogram",
    "stems",
    "waveform",
]

# name -> the submodule that defines it, imported on first use
_LAZY = {
    **dict.fromkeys(
        ("apply_gain", "db_to_gain", "integrated_loudness", "peak", "peak_db"), "loudness"
    ),
    **dict.fromkeys(("spectrogram", "stems", "waveform"), "plots"),
}


__getattr__, __dir__ = attach(__name__, globals(), _LAZY)
