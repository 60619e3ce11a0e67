"""Inline players: an HTML ``<audio controls>`` element for a clip, bytes or a file id.

Rules (see docs/listening.md): never ``autoplay``; never rescale the audio
(``IPython.display.Audio`` peak-normalises arrays by default; we build the
element ourselves); never embed more than ``max_bytes`` (2 MB) or
``max_seconds`` (60 s): longer sources play from a fresh URL when one can be
had, else from a compressed excerpt (the first ``excerpt_seconds``, MP3).

A file id needs a ``files`` provider, duck-typed so it works with any client:
a callable ``files(file_id) -> bytes | url``, an object with
``download(file_id) -> bytes`` and/or ``link(file_id).url`` (a files
resource), or an object whose ``.files`` is such a resource (a client).
"""

from __future__ import annotations

import base64
import html
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, overload

import numpy as np

from songlab.audio._audio_error import AudioError
from songlab.audio._clips import MIME_TYPES, as_audio, decode, encode, sniff
from songlab.codec import MP3_RATES

MAX_BYTES = 2_000_000
MAX_SECONDS = 60.0
EXCERPT_SECONDS = 30.0
MAX_TOTAL_BYTES = 8_000_000
_MODES = ("auto", "embed", "link")


@dataclass(frozen=True)
class Player:
    """One inline player. ``html`` is the element (usable in ``ipywidgets.HTML``).

    ``mode``: ``"embed"`` (whole clip inline), ``"excerpt"`` (a compressed
    excerpt inline) or ``"url"`` (plays from ``src``, a link). ``duration``
    is the source's length in seconds when known; ``seconds`` what plays.
    """

    html: str = field(repr=False)
    mode: str
    mime_type: str
    embedded_bytes: int
    duration: float | None
    seconds: float | None
    note: str
    src: str = field(repr=False)

    def _repr_html_(self) -> str:
        return self.html

    def to_ipython(self) -> Any:
        """An ``IPython.display.HTML`` object showing this player."""
        from IPython.display import HTML

        return HTML(self.html)  # type: ignore[no-untyped-call]  # IPython: not annotated


@dataclass(frozen=True)
class PlayerRow:
    """Labelled players side by side (e.g. stems); ``html`` is one flex row."""

    players: Mapping[str, Player]
    html: str = field(repr=False)

    def _repr_html_(self) -> str:
        return self.html


def _as_bytes(value: Any) -> bytes | None:
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value)
    content = getattr(value, "content", None)
    if isinstance(content, bytes | bytearray):
        return bytes(content)
    return None


def _as_url(value: Any) -> str | None:
    if isinstance(value, Mapping):
        value = value.get("url")
    else:
        value = getattr(value, "url", value)
    if isinstance(value, str) and value.startswith(("http://", "https://", "data:", "/")):
        return value
    return None


@overload
def _fetch(files: Any, file_id: str, *, want: Literal["bytes"]) -> bytes | str | None: ...
@overload
def _fetch(files: Any, file_id: str, *, want: Literal["url"]) -> str | None: ...
def _fetch(files: Any, file_id: str, *, want: str) -> bytes | str | None:
    """Bytes (``want="bytes"``; a plain callable may answer a URL instead) or a URL
    (``want="url"``) for ``file_id``, or None if the provider cannot give it."""
    if callable(files) and not hasattr(files, "download") and not hasattr(files, "link"):
        got = files(file_id)
        return (_as_bytes(got) or _as_url(got)) if want == "bytes" else _as_url(got)
    resource = getattr(files, "files", files)
    if want == "bytes" and callable(getattr(resource, "download", None)):
        got = resource.download(file_id)
        return _as_bytes(got)
    if want == "url":
        for name in ("link", "download"):
            method = getattr(resource, name, None)
            if callable(method):
                url = _as_url(method(file_id))
                if url:
                    return url
    return None


def _element(src: str, *, label: str | None, note: str, preload: str) -> str:
    caption = f"<figcaption>{html.escape(label)}</figcaption>" if label else ""
    small = f'<br><small style="opacity:0.7">{html.escape(note)}</small>' if note else ""
    return (
        '<figure class="songlab-player" style="margin:0.25em 0">'
        f'{caption}<audio controls preload="{preload}" src="{html.escape(src, quote=True)}">'
        "</audio>"
        f"{small}</figure>"
    )


def _data_uri(data: bytes, mime: str) -> str:
    return f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"


def _seconds(value: float) -> str:
    """A length as its player shows it: to the hundredth, rounded down, trailing zeros
    dropped to one decimal (1.9612 -> "1.96", 30.0 -> "30.0"); never more than it holds."""
    text = f"{math.floor(value * 100 + 1e-6) / 100:.2f}"
    return text[:-1] if text.endswith("0") else text


def _excerpt(audio: np.ndarray, sr: int, *, seconds: float, max_bytes: int) -> tuple[bytes, float]:
    """MP3 of the first ``seconds`` (resampled to 48 kHz if MP3 cannot hold ``sr``), within ``max_bytes``."""
    if sr not in MP3_RATES:
        from scipy.signal import resample_poly  # only a long excerpt needs it: 1 s of import

        audio = resample_poly(audio, 48000, sr, axis=-1).astype(np.float32)
        sr = 48000
    audio = audio[:2]
    seconds = min(seconds, audio.shape[1] / sr)
    for _ in range(6):
        data = encode(audio[:, : max(1, int(seconds * sr))], sr=sr, format="mp3")
        if len(data) <= max_bytes:
            return data, seconds
        seconds *= 0.9 * max_bytes / len(data)
    raise AudioError("max_bytes", f"is too small to embed even a short excerpt ({max_bytes} bytes)")


_LINK_NOTE = "streams from a signed link (expires; re-run for a fresh one)"


@dataclass(frozen=True, slots=True)
class _Options:
    """A player's checked options (each refused with an :class:`AudioError` naming it)."""

    label: str | None
    mode: str
    max_bytes: int
    max_seconds: float
    excerpt_seconds: float
    preload: str

    def __post_init__(self) -> None:
        if self.mode not in _MODES:
            raise AudioError("mode", f"must be one of {', '.join(_MODES)}; got {self.mode!r}")
        if not isinstance(self.max_bytes, int) or self.max_bytes < 10_000:
            raise AudioError("max_bytes", f"must be an int >= 10000; got {self.max_bytes!r}")
        if not self.max_seconds > 0 or not 0 < self.excerpt_seconds <= self.max_seconds:
            raise AudioError("excerpt_seconds", "must be > 0 and <= max_seconds")
        if self.preload not in ("none", "metadata", "auto"):
            raise AudioError("preload", f"must be none, metadata or auto; got {self.preload!r}")

    def element(self, src: str, note: str) -> str:
        return _element(src, label=self.label, note=note, preload=self.preload)


def _link_player(url: str, shown: str, opts: _Options, note: str | None = None) -> Player:
    """A player on a link: ``shown`` under it; ``note`` (else ``shown``) on the Player."""
    return Player(opts.element(url, shown), "url", "", 0, None, None, note or shown, url)


def _embedded(data: bytes, mime: str, length: float, opts: _Options) -> Player:
    uri = _data_uri(data, mime)
    return Player(opts.element(uri, ""), "embed", mime, len(data), length, length, "", uri)


def _file_id_source(file_id: str, files: Any, opts: _Options) -> Player | bytes:
    """A file id: its bytes to embed, or a player on its signed link (``mode="link"``, a
    provider that gives only a link, or bytes over ``max_bytes`` in ``auto``)."""
    if files is None:
        raise AudioError(
            "files",
            "is required to play a file id (a callable or an object with download/link)",
        )
    got = None if opts.mode == "link" else _fetch(files, file_id, want="bytes")
    if not isinstance(got, bytes):
        url = got if isinstance(got, str) else None
        if url is None and opts.mode != "embed":
            url = _fetch(files, file_id, want="url")
        if url is None:
            raise AudioError("files", f"gave neither bytes nor a URL for file id {file_id!r}")
        return _link_player(url, _LINK_NOTE, opts, note="link")
    if opts.mode == "auto" and len(got) > opts.max_bytes:
        url = _fetch(files, file_id, want="url")
        if url is not None:
            return _link_player(url, f"{len(got) / 1e6:.1f} MB: {_LINK_NOTE}", opts)
    return got


def _array_player(audio: np.ndarray, rate: int, length: float, opts: _Options) -> Player | None:
    """An array embedded whole: 16-bit WAV when it fits, else MP3 (mono or stereo at an MP3
    rate); None when neither fits or it is over ``max_seconds``."""
    if length > opts.max_seconds:
        return None
    for fmt in ("wav", "mp3"):
        if fmt == "mp3" and (rate not in MP3_RATES or audio.shape[0] > 2):
            continue
        data = encode(audio, sr=rate, format=fmt)
        if len(data) <= opts.max_bytes:
            return _embedded(data, MIME_TYPES[fmt], length, opts)
    return None


def _excerpt_player(audio: np.ndarray, rate: int, length: float, opts: _Options) -> Player:
    data, seconds = _excerpt(audio, rate, seconds=opts.excerpt_seconds, max_bytes=opts.max_bytes)
    note = f"excerpt: first {_seconds(seconds)} s of {_seconds(length)} s (MP3)"
    uri = _data_uri(data, "audio/mpeg")
    return Player(
        opts.element(uri, note), "excerpt", "audio/mpeg", len(data), length, seconds, note, uri
    )


def player(
    source: Any,
    /,
    *,
    sr: int | None = None,
    files: Any = None,
    label: str | None = None,
    mode: str = "auto",
    max_bytes: int = MAX_BYTES,
    max_seconds: float = MAX_SECONDS,
    excerpt_seconds: float = EXCERPT_SECONDS,
    preload: str = "metadata",
) -> Player:
    """An inline player for ``source``: a file id (with ``files=``), encoded bytes,
    an ``(array, sr)`` pair, or an array with ``sr=``.

    ``mode="auto"`` embeds sources within ``max_bytes`` and ``max_seconds``;
    a longer file id plays from a fresh link when ``files`` gives one, else
    (and for long bytes/arrays) from an MP3 excerpt of the first
    ``excerpt_seconds``. ``mode="link"`` always plays a file id from its link;
    ``mode="embed"`` never uses a link. Arrays are embedded as 16-bit WAV when
    that fits, else MP3; they are never normalised.
    """
    opts = _Options(label, mode, max_bytes, max_seconds, excerpt_seconds, preload)
    if isinstance(source, str):
        got = _file_id_source(source, files, opts)
        if isinstance(got, Player):
            return got
        source = got
    if isinstance(source, bytes | bytearray | memoryview):
        data = bytes(source)
        audio, rate = decode(data)
        length = audio.shape[1] / rate
        if len(data) <= opts.max_bytes and length <= opts.max_seconds:
            return _embedded(data, MIME_TYPES[sniff(data) or "wav"], length, opts)
    else:
        audio, rate = as_audio(source, sr=sr)
        length = audio.shape[1] / rate
        whole = _array_player(audio, rate, length, opts)
        if whole is not None:
            return whole
    return _excerpt_player(audio, rate, length, opts)


def player_row(
    sources: Mapping[str, Any],
    /,
    *,
    sr: int | None = None,
    files: Any = None,
    max_total_bytes: int = MAX_TOTAL_BYTES,
    **options: Any,
) -> PlayerRow:
    """Labelled players side by side (stems, models): one per ``sources`` item.

    The embedding budget ``max_total_bytes`` (8 MB) is shared: each player
    gets ``min(max_bytes, max_total_bytes // len(sources))``.
    """
    if not isinstance(sources, Mapping) or not sources:
        raise AudioError("sources", "must be a non-empty mapping of label -> source")
    share = min(options.pop("max_bytes", MAX_BYTES), max_total_bytes // len(sources))
    players = {
        str(name): player(src, sr=sr, files=files, label=str(name), max_bytes=share, **options)
        for name, src in sources.items()
    }
    cells = "".join(
        f'<div style="flex:1 1 16em;min-width:14em">{p.html}</div>' for p in players.values()
    )
    return PlayerRow(
        players,
        f'<div class="songlab-player-row" style="display:flex;flex-wrap:wrap;gap:1em">{cells}</div>',
    )
