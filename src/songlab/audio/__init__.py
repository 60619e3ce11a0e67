"""songlab.audio: decode/encode audio bytes, measure loudness, play inline, plot.

Arrays are float32 ``(channels, samples)`` (time on the last axis) with a
sample rate in Hz. Bad input raises :class:`AudioError` naming the argument.
"""

from __future__ import annotations

from songlab.audio._codec import (
    FORMATS,
    MIME_TYPES,
    as_audio,
    as_channels,
    decode,
    duration,
    encode,
    sniff,
)
from songlab.audio._errors import AudioError
from songlab.audio.loudness import apply_gain, db_to_gain, integrated_loudness, peak, peak_db
from songlab.audio.player import Player, PlayerRow, player, player_row
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
