"""Inline players: never autoplay, never rescale, bounded embedding, duck-typed file providers."""

from __future__ import annotations

import base64
import re
from types import SimpleNamespace

import numpy as np
import pytest

from songlab.audio import AudioError, Player, decode, encode, player, player_row

SR = 16000


def _tone(seconds: float, amp: float = 0.1, sr: int = SR) -> np.ndarray:
    t = np.arange(int(sr * seconds)) / sr
    return (amp * np.sin(2 * np.pi * 440 * t)).astype(np.float32)


def _embedded(p: Player) -> bytes:
    match = re.search(r'src="data:[^;]+;base64,([^"]+)"', p.html)
    assert match, p.html[:200]
    return base64.b64decode(match.group(1))


def test_short_array_is_embedded_as_wav_without_autoplay_or_normalisation() -> None:
    p = player(_tone(2.0, amp=0.1), sr=SR)
    assert p.mode == "embed" and p.mime_type == "audio/wav"
    assert "<audio controls" in p.html and "autoplay" not in p.html
    y, sr = decode(_embedded(p))
    assert sr == SR
    assert float(np.max(np.abs(y))) == pytest.approx(0.1, abs=1e-3)  # not peak-normalised to 1.0
    assert p._repr_html_() == p.html
    assert "base64" not in repr(p)


def test_long_array_becomes_a_compressed_excerpt() -> None:
    p = player((_tone(70.0, sr=8000), 8000))
    assert p.mode == "excerpt" and p.mime_type == "audio/mpeg"
    assert p.duration == pytest.approx(70.0) and p.seconds == pytest.approx(30.0)
    assert p.embedded_bytes <= 2_000_000
    assert "excerpt" in p.html and "autoplay" not in p.html
    y, sr = decode(_embedded(p))
    assert 29.0 < y.shape[1] / sr < 31.5


def test_large_bytes_are_cut_to_the_byte_budget() -> None:
    data = encode(_tone(20.0), sr=SR, format="wav")  # 640 kB
    p = player(data, max_bytes=100_000, excerpt_seconds=30.0, max_seconds=60.0)
    assert p.mode == "excerpt" and p.embedded_bytes <= 100_000
    assert len(_embedded(p)) == p.embedded_bytes


def test_small_bytes_are_embedded_as_they_are() -> None:
    data = encode(_tone(1.0), sr=SR, format="flac")
    p = player(data)
    assert p.mode == "embed" and p.mime_type == "audio/flac" and _embedded(p) == data


class _Files:
    """A files resource as a client would have it: download -> bytes, link -> object with .url."""

    def __init__(self, data: bytes) -> None:
        self.data, self.links = data, 0

    def download(self, file_id: str) -> bytes:
        return self.data

    def link(self, file_id: str) -> SimpleNamespace:
        self.links += 1
        return SimpleNamespace(url=f"http://127.0.0.1:1/_signed/{file_id}-{self.links}")


def test_file_id_with_a_callable_provider() -> None:
    data = encode(_tone(1.0), sr=SR)
    assert player("f1", files=lambda fid: data).mode == "embed"
    p = player("f1", files=lambda fid: f"https://cdn.example/{fid}.mp3")
    assert (
        p.mode == "url"
        and 'src="https://cdn.example/f1.mp3"' in p.html
        and "autoplay" not in p.html
    )


def test_long_file_id_plays_from_a_fresh_link_and_short_one_is_embedded() -> None:
    files = _Files(encode(_tone(20.0), sr=SR))
    client = SimpleNamespace(files=files)
    long = player("song", files=client, max_bytes=100_000)
    assert long.mode == "url" and long.src.endswith("song-1")
    again = player("song", files=client, max_bytes=100_000)
    assert again.src.endswith("song-2")  # a fresh link each time
    assert player("song", files=client).mode == "embed"
    assert player("song", files=client, mode="link").mode == "url"


def test_long_file_id_without_links_falls_back_to_an_excerpt() -> None:
    only_download = SimpleNamespace(download=lambda fid: encode(_tone(20.0), sr=SR))
    p = player("song", files=only_download, max_bytes=100_000)
    assert p.mode == "excerpt" and p.embedded_bytes <= 100_000


def test_file_id_errors_name_files() -> None:
    with pytest.raises(AudioError, match="^files: is required"):
        player("f1")
    with pytest.raises(AudioError, match="^files: gave neither"):
        player("f1", files=lambda fid: 42)


@pytest.mark.parametrize(
    ("kwargs", "argument"),
    [
        ({"mode": "stream"}, "mode"),
        ({"max_bytes": 10}, "max_bytes"),
        ({"excerpt_seconds": 90.0}, "excerpt_seconds"),
        ({"preload": "eager"}, "preload"),
    ],
    ids=["mode", "max_bytes", "excerpt", "preload"],
)
def test_player_checks_options(kwargs: dict, argument: str) -> None:
    with pytest.raises(AudioError) as info:
        player(_tone(1.0), sr=SR, **kwargs)
    assert info.value.argument == argument


def test_player_row_shares_the_budget_and_labels_each_player() -> None:
    stems = {
        name: (_tone(20.0, amp=a), SR)
        for name, a in [("drums", 0.2), ("bass", 0.1), ("vocal", 0.05)]
    }
    row = player_row(stems, max_total_bytes=600_000)
    assert list(row.players) == ["drums", "bass", "vocal"]
    assert all(p.embedded_bytes <= 200_000 for p in row.players.values())
    assert row.html.count("<audio controls") == 3 and "autoplay" not in row.html
    assert all(f"<figcaption>{n}</figcaption>" in row.html for n in stems)
    with pytest.raises(AudioError, match="^sources: "):
        player_row({})


def test_label_is_escaped() -> None:
    p = player(_tone(1.0), sr=SR, label="<b>v7</b>")
    assert "<b>v7</b>" not in p.html and "&lt;b&gt;v7&lt;/b&gt;" in p.html


def test_long_file_from_a_bytes_callable_becomes_an_excerpt() -> None:
    calls = []

    def fetch(fid: str) -> bytes:
        calls.append(fid)
        return encode(_tone(20.0), sr=SR)

    p = player("song", files=fetch, max_bytes=100_000)
    assert p.mode == "excerpt" and p.embedded_bytes <= 100_000 and calls[0] == "song"


def test_session_clip_encodes_for_audio_widgets() -> None:
    from songlab.listening import abx

    t = np.arange(SR) / SR
    clips = {
        m: [(a * np.sin(2 * np.pi * f * t), SR)] for m, a, f in (("p", 0.3, 300), ("q", 0.1, 500))
    }
    s = abx(clips, seed=0)
    y, sr = decode(s.encoded(0, "X", format="flac"))
    np.testing.assert_allclose(y, s.clip(0, "X")[0], atol=1 / 32768 + 1e-7)


def test_an_excerpts_label_says_the_length_it_holds() -> None:
    """02 showed "first 2.0 s" beside a 1.96 s player: the label rounds down, to 0.01 s."""
    noise = (0.1 * np.random.default_rng(1).standard_normal((1, 20 * SR))).astype(np.float32)
    p = player((noise, SR), max_bytes=60_000, excerpt_seconds=30.0, max_seconds=60.0)
    assert p.mode == "excerpt" and p.seconds < 20.0
    shown = float(p.note.split("first ")[1].split(" s")[0])
    assert shown <= p.seconds < shown + 0.01, (p.note, p.seconds)
    assert p.note.endswith("of 20.0 s (MP3)")
