"""The dedicated routes (voice clones, song translations) and the workflow routes: each one's
body fields, billed steps and vocal rule (``ROUTES``, ``WORKFLOWS``)."""

from __future__ import annotations

from typing import Final

from songlab.spec._entries import Field, Route, Step
from songlab.spec._licenses import LICENSE_NAMES
from songlab.spec._limits import LIMITS
from songlab.spec._vocabulary import AUDIO_FORMATS, MIDI, MP3_M4A, SONG_VERSIONS, TRANSCRIBE_MODEL

__all__ = [
    "ROUTES",
    "TRANSLATION_STEPS",
    "WORKFLOWS",
    "WORKFLOW_ROUTES",
    "route",
]


_TEXT = int(LIMITS["text_chars"])
_ID = int(LIMITS["id_chars"])
_TIER = Field("license", "tier", default="royalty_free", choices=tuple(LICENSE_NAMES.values()))


def _file_id(
    name: str,
    input: str,
    formats: tuple[str, ...] = AUDIO_FORMATS,
    *,
    max_bytes: int | None = None,
    size_label: str | None = None,
) -> Field:
    return Field(
        name,
        "file_id",
        required=True,
        formats=formats,
        input=input,
        max_bytes=int(LIMITS["upload_bytes"]) if max_bytes is None else max_bytes,
        size_label=size_label,
    )


def _text(name: str, required: bool = False, max_len: int = _TEXT) -> Field:
    return Field(name, "string", required=required, max_len=max_len)


def _vocal(required: bool) -> Field:
    return Field("vocal_id", "voice", required=required, max_len=_ID)


def _wf(
    path: str,
    fields: tuple[Field, ...],
    steps: tuple[Step, ...],
    forbidden: tuple[tuple[str, str], ...] = (),
    *,
    origin: str = "spec",
) -> Route:
    vocal = next(
        ("required" if f.required else "optional" for f in fields if f.type == "voice"), None
    )
    return Route(path, "workflow", (*fields, _TIER), steps, vocal, forbidden, origin)


_SONG = _file_id("song_file_id", "song")
_SEP2 = Step("separate", "separate_stems", "2stem")
_MIX = Step("mix", "mix", "v5")
_RENDER = Step("render", "audio_effect", "v5")
_MS_MAX = LIMITS["ms_max"]

_ROUTES: tuple[Route, ...] = (
    Route(
        "voice-clones",
        "dedicated",
        (
            _file_id(
                "reference_file_id",
                "reference",
                MP3_M4A,
                max_bytes=int(LIMITS["voice_clone_reference_bytes"]),
                size_label="15 MiB",
            ),
            _text("name", max_len=int(LIMITS["voice_clone_name_chars"])),
            _text("description", max_len=int(LIMITS["voice_clone_description_chars"])),
            Field("version", "choice", default="v5", choices=SONG_VERSIONS),
            _TIER,
            Field(
                "consent",
                "boolean",
                required=True,
                choices=(True,),
                description="must be true (consent of the voice's owner)",
            ),
            _text("rights_attestation", True, int(LIMITS["rights_attestation_chars"])),
        ),
    ),  # one vocal_clone task on the chosen version's model; no pipeline
    Route(
        "song-translations",
        "dedicated",
        (
            _file_id(
                "song_file_id",
                "song",
                max_bytes=int(LIMITS["translation_source_bytes"]),
                size_label="60 MiB",
            ),
            _text("target_language", True, int(LIMITS["target_language_chars"])),
            Field("syllable_matched", "boolean", default=True),
            _text("song_style", True, int(LIMITS["song_style_chars"])),
            _TIER,
        ),
        steps=(
            Step("transcribe", "transcribe", TRANSCRIBE_MODEL),
            Step("translate", "translate_lyrics", "v5"),
            _SEP2,
            Step("revoice", "generate_singing", "v5"),
            Step("layer", "mix", "v5"),
            _RENDER,
        ),
    ),
    _wf(
        "beat-swaps",
        (_SONG, _text("prompt", True)),
        (_SEP2, Step("beat", "generate_music", "v5"), _MIX),
    ),
    _wf("karaoke-tracks", (_SONG,), (_SEP2, _RENDER)),
    _wf("drumless-mixes", (_SONG,), (Step("separate", "separate_stems", "6-stem"), _MIX)),
    # design.md: song_file_id and vocal_id only; the song is re-sung with its own words,
    # so `lyrics` is refused by the sandbox and the client alike (docs/sandbox.md).
    _wf(
        "revoicings",
        (_SONG, _vocal(True)),
        (_SEP2, Step("sing", "generate_singing", "v5"), _MIX),
        forbidden=(
            (
                "lyrics",
                "not a field of /v1/revoicings: the song is re-sung with "
                "its own words (fields: song_file_id, vocal_id)",
            ),
        ),
    ),
    _wf(
        "instrument-layers",
        (_SONG, _text("instrument", True)),
        (Step("part", "generate_music", "v5"), _MIX),
    ),
    _wf(
        "hummed-songs",
        (_file_id("hum_file_id", "hum"), _text("prompt", True), _text("lyrics")),
        (Step("song", "melody_to_song", "v5"), _RENDER),
    ),
    _wf(
        "trending-songs",
        (_text("genre", True), _text("prompt"), _text("lyrics")),
        (
            Step("search", "web_search", "internal"),
            Step("lyrics", "write_lyrics", "v5"),
            Step("song", "generate_song", "v5"),
        ),
    ),
    _wf(
        "voice-songs",
        (_file_id("recording_file_id", "recording"), _text("prompt", True), _text("lyrics")),
        (Step("song", "similar_song", "v5"), _RENDER),
    ),
    _wf("genre-remixes", (_SONG, _text("genre", True)), (Step("remix", "remix_song", "v5"),)),
    _wf(
        "midi-songs",
        (_file_id("midi_file_id", "midi", MIDI), _text("prompt", True), _text("lyrics")),
        (Step("song", "midi_to_song", "v5"), _RENDER),
    ),
    _wf(
        "vocal-layers",
        (_SONG, _text("lyrics", True), _vocal(False)),
        (Step("sing", "generate_singing", "v5"), _MIX),
    ),
    _wf(
        "audio-inpainting",
        (
            _SONG,
            Field(
                "start_ms",
                "integer",
                required=True,
                min=0,
                max=_MS_MAX,
                description="ms from the song's start",
            ),
            Field(
                "end_ms",
                "integer",
                required=True,
                min=0,
                max=_MS_MAX,
                description="ms, greater than start_ms, inside the song",
            ),
            _text("lyrics"),
        ),
        (Step("inpaint", "inpaint", "v5"),),
    ),
    # the sandbox's own product (the spec lists no such route): a song's vocal alone, the
    # twin of karaoke-tracks; the spec profile answers 404 for it (docs/sandbox.md)
    _wf("acapellas", (_SONG,), (_SEP2, _RENDER), origin="sandbox"),
)
ROUTES: Final[dict[str, Route]] = {r.path: r for r in _ROUTES}
WORKFLOWS: Final[dict[str, Route]] = {p: r for p, r in ROUTES.items() if r.kind == "workflow"}
WORKFLOW_ROUTES: Final[tuple[str, ...]] = tuple(WORKFLOWS)
# Song translation's progress steps (design.md): transcribe ... render.
TRANSLATION_STEPS: Final[tuple[str, ...]] = tuple(s.name for s in ROUTES["song-translations"].steps)


def route(path: str) -> Route:
    """The registry's entry of a dedicated or workflow route (``"karaoke-tracks"``)."""
    return ROUTES[path.rsplit("/", 1)[-1]]
