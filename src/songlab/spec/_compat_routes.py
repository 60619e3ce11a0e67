"""The compat routes: old-style URLs and field names of some operations (``COMPAT``,
``COMPAT_ROUTES``), each body its operation's fields under the old names."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Final

from songlab.spec._entries import Compat, Field
from songlab.spec._licenses import LICENSE_NAMES
from songlab.spec._limits import LIMITS
from songlab.spec._operations import REGISTRY
from songlab.spec._vocabulary import SONG_VERSIONS

_TEXT = int(LIMITS["text_chars"])
_ID = int(LIMITS["id_chars"])
_V5 = ("v5",)

__all__ = [
    "COMPAT",
    "COMPAT_ROUTES",
]


def _c(operation: str, name: str, *, body_name: str | None = None, **rules: Any) -> Field:
    """``operation``'s field ``name`` as a compat body states it: under ``body_name`` (the
    payload keeps ``name``), with the body's own ``rules``; no default (the payload's
    defaults apply at generation)."""
    f = REGISTRY[operation].field(name)
    if body_name is not None:
        rules.update(name=body_name, input=name)
    return replace(f, default=None, **rules)


_COMPAT_LICENSE = Field(
    "license",
    "license",
    min=LIMITS["license_min"],
    max=LIMITS["license_max"],
    choices=tuple(LICENSE_NAMES.values()),
    description="license tier 0-5 or its name",
)
_SECONDS = "seconds"
_COMPAT: tuple[Compat, ...] = (
    Compat(
        "generate_song",
        "CompatSong",
        "``POST /v{5,6,7}/generate/song``.",
        ("/{v}/generate/song",),
        SONG_VERSIONS,
        (
            _c("generate_song", "prompt", max_len=_TEXT),
            _c("generate_song", "lyrics", max_len=_TEXT),
            _c("generate_song", "vocal_id", max_len=_ID, filled=True),
            _c("generate_song", "duration_seconds", description=_SECONDS),
            _c("generate_song", "seed"),
            _COMPAT_LICENSE,
        ),
    ),
    Compat(
        "generate_singing",
        "CompatSinging",
        "``POST /v{5,6,7}/generate/singing`` (``styleOfMusic`` in place of ``prompt``).",
        ("/{v}/generate/singing",),
        SONG_VERSIONS,
        (
            _c("generate_singing", "lyrics", max_len=_TEXT),
            _c("generate_singing", "prompt", max_len=_TEXT),
            _c("generate_singing", "styleOfMusic", max_len=_TEXT),
            _c("generate_singing", "vocal_id", max_len=_ID, filled=True),
            _c("generate_singing", "vocal_reference"),
            _c("generate_singing", "duration_seconds", description=_SECONDS),
            _c("generate_singing", "seed"),
            _COMPAT_LICENSE,
        ),
    ),
    Compat(
        "extend_song",
        "CompatExtendSong",
        "``POST /v{5,6,7}/extend/song``; without ``audio_url``: 400 MISSING_FIELD.",
        ("/{v}/extend/song",),
        SONG_VERSIONS,
        (
            _c(
                "extend_song",
                "song",
                body_name="audio_url",
                description="the song to extend (a file input, mp3 or m4a, up to 40 MB)",
            ),
            _c("extend_song", "lyrics"),
            _c(
                "extend_song",
                "extend_at_ms",
                description=(
                    "0 continues from the end, else 8000-420000; clamped at generation time"
                ),
            ),
            _c(
                "extend_song",
                "extend_type",
                max_len=100,
                description=(
                    "tail or head; another value fails during generation, as the spec says"
                ),
            ),
            _c("extend_song", "duration_seconds", description=_SECONDS),
            _COMPAT_LICENSE,
        ),
        missing_field="audio_url",
    ),
    Compat(
        "extend_music",
        "CompatExtendMusic",
        "``POST /v5/extend/music`` and ``/v1/generate/extend``.",
        ("/v5/extend/music", "/v1/generate/extend"),
        _V5,
        (
            _c(
                "extend_music",
                "music",
                body_name="audio_url",
                description="the music to extend (a file input, mp3 or m4a, up to 40 MB)",
            ),
            _c("extend_music", "prompt", max_len=_TEXT),
            _c("extend_music", "extend_seconds"),
            _c("extend_music", "side"),
            _COMPAT_LICENSE,
        ),
        missing_field="audio_url",
    ),
)
COMPAT: Final[dict[str, Compat]] = {c.operation: c for c in _COMPAT}
# path -> (its Compat, the model it runs), in the order the routes are served and documented
COMPAT_ROUTES: Final[dict[str, tuple[Compat, str]]] = {
    **{
        p.format(v=v): (c, v)
        for v in SONG_VERSIONS
        for c in _COMPAT
        for p in c.paths
        if "{v}" in p and v in c.versions
    },
    **{p: (c, c.versions[0]) for c in _COMPAT for p in c.paths if "{v}" not in p},
}
