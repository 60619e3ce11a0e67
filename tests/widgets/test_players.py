"""Audio views from bytes and arrays (no server): player element, plots, stems side by side."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from songlab import audio
from songlab.widgets.players import AudioView, StemsView, task_audio

SR = 22050


def clip(freq: float, seconds: float = 1.0) -> np.ndarray:
    t = np.arange(int(seconds * SR)) / SR
    return (0.3 * np.sin(2 * np.pi * freq * t)).astype(np.float32)[None]


def test_view_of_bytes_has_player_waveform_and_spectrogram(voice_mp3) -> None:
    view = AudioView(None, voice_mp3, label="voice")
    assert view.sink.errors == []
    assert "<audio controls" in view.player.value and "autoplay" not in view.player.value
    assert view.waveform.value[:4] == b"\x89PNG" and view.spectrogram.value[:4] == b"\x89PNG"
    assert view.waveform.layout.display == "" and abs(view.duration - 3.0) < 0.1
    assert view.loaded.is_set()


def test_view_created_empty_then_loaded() -> None:
    view = AudioView(None, plots=("waveform",))
    assert view.player.value == "" and view.waveform.layout.display == "none"
    assert len(view.children) == 4  # title, player, plots row, status line
    view.load((clip(440), SR), label="a")
    assert "<audio" in view.player.value and view.waveform.value[:4] == b"\x89PNG"


def test_titles_carry_short_ids_not_whole_ones(monkeypatch) -> None:
    from songlab.widgets import players

    task = "3f2a9c1e-1234-4abc-8def-0123456789ab"
    assert players.short_ids(f"generate_song v7 - {task}") == "generate_song v7 - 3f2a9c1e\u2026"
    assert players.short_ids("ballad v7, take 2") == "ballad v7, take 2"
    titles = []
    real = players.audio.waveform
    monkeypatch.setattr(
        players.audio, "waveform", lambda *a, **k: titles.append(k["title"]) or real(*a, **k)
    )
    view = AudioView(None, plots=("waveform",))
    view.load((clip(440), SR), label=f"ballad v7 - {task}")
    assert titles == ["waveform ballad v7 - 3f2a9c1e\u2026"]
    assert task not in view.title.value.split(">", 1)[1]  # shown short; the tooltip has it whole


def test_errors_are_shown_in_the_view() -> None:
    view = AudioView(None, "some-file-id")
    assert view.sink.errors == ["audio: ValueError: client: needed to play a file id"]
    assert "needed to play a file id" in view.sink.line.value
    bad = AudioView(None, b"not audio at all")
    assert bad.sink.errors and bad.player.value == ""
    with pytest.raises(ValueError, match="plots: each one of"):
        AudioView(None, plots=("sonogram",))


def test_stems_side_by_side() -> None:
    row = StemsView(None, {"vocals": (clip(300), SR), "instrumental": (clip(100), SR)})
    assert list(row.columns) == ["vocals", "instrumental"]
    assert [c.title.value for c in row.children] == ["<b>vocals</b>", "<b>instrumental</b>"]
    assert all("<audio" in c.player.value for c in row.children)
    with pytest.raises(ValueError, match="stems: a non-empty mapping"):
        StemsView(None, {})


def test_stems_from_task_use_asset_names() -> None:
    data = audio.encode(clip(200), sr=SR, format="wav")
    files = SimpleNamespace(download=lambda fid: data)
    client = SimpleNamespace(files=files)
    assets = tuple(
        SimpleNamespace(file_id=f"f{i}", raw={"name": n})
        for i, n in enumerate(["vocals", "instrumental"])
    )
    task = SimpleNamespace(status="completed", output=SimpleNamespace(assets=assets))
    row = StemsView.from_task(client, task)
    assert list(row.columns) == ["vocals", "instrumental"]
    assert all(c.file_id in ("f0", "f1") and c.sink.errors == [] for c in row.children)
    none = task_audio(client, SimpleNamespace(status="failed", file_ids=()))
    assert "no audio in this task (status failed)" in none.children[0].value
