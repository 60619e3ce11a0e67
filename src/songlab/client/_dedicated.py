"""Dedicated routes: voice clones, song translations and the twelve workflows.

Their ``license`` is a tier name (``royalty_free`` ... ``master``; an integer
0-5 is converted). File-id fields take a string or an :class:`UploadedFile`;
when the client knows the file (it uploaded it, or was given the object) the
route's size and format limits are checked before sending.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Generic, overload

from songlab._vocab import LIMITS, SONG_VERSIONS, WORKFLOW_ROUTES
from songlab.client._base import NOT_GIVEN, NotGiven, Op
from songlab.client._estimate import estimate_route
from songlab.client._files import file_id_of
from songlab.client._generations import resolve_key
from songlab.client._models import UploadedFile, VoiceClone
from songlab.client._typing import Awaiting, C
from songlab.client._validate import (
    WORKFLOW_FIELDS,
    ValidationError,
    check_file,
    choice,
    license_name,
    require,
    text,
    workflow_body,
)

if TYPE_CHECKING:
    from songlab.client._async import AsyncClient
    from songlab.client._handle import TaskHandle
    from songlab.client._sync import Client

__all__ = ["SongTranslations", "VoiceClones", "Workflows", "known_file"]


def known_file(client: Any, value: Any, field: str, *, max_bytes: int, limit_text: str,
               formats: tuple[str, ...] | None = None) -> str:
    """The file id of ``value``, after checking the limits of what the client knows of it."""
    fid = file_id_of(value, field)
    info = value if isinstance(value, UploadedFile) else client._uploads.get(fid)
    if info is not None:
        check_file(field, size=info.size_bytes, mime_type=info.mime_type, filename=None,
                   max_bytes=max_bytes, limit_text=limit_text, formats=formats)
    return fid


def _lic(license: Any) -> str:
    return "royalty_free" if isinstance(license, NotGiven) else license_name(license)


class VoiceClones(Generic[C]):
    def __init__(self, client: C) -> None:
        self._c = client

    def _create_op(self, reference_file_id: Any, consent: Any, rights_attestation: Any,
                   name: Any, description: Any, version: Any, license: Any, key: Any) -> Op:
        key = resolve_key(key)
        require(consent is True, "consent", "must be True (the speaker consented to the clone)")
        text(rights_attestation, "rights_attestation", required=True,
             max_chars=int(LIMITS["rights_attestation_chars"]))
        text(name, "name", max_chars=int(LIMITS["voice_clone_name_chars"]))
        text(description, "description", max_chars=int(LIMITS["voice_clone_description_chars"]))
        choice(version, "version", SONG_VERSIONS)
        lic = _lic(license)
        fid = known_file(self._c, reference_file_id, "reference_file_id",
                         max_bytes=int(LIMITS["voice_clone_reference_bytes"]),
                         limit_text="15 MiB", formats=("mp3", "m4a"))
        body: dict[str, Any] = {"reference_file_id": fid, "consent": True,
                                "rights_attestation": rights_attestation, "version": version,
                                "license": lic}
        if name is not None:
            body["name"] = name
        if description is not None:
            body["description"] = description
        est = estimate_route("/v1/voice-clones", lic, version=version)
        return (yield from self._c._create_op("/v1/voice-clones", body, est, key))

    @overload
    def create(self: VoiceClones[Client], *, reference_file_id: str | UploadedFile, consent: bool,
               rights_attestation: str, name: str | None = ..., description: str | None = ...,
               version: str = ..., license: str | int | NotGiven = ...,
               idempotency_key: str | NotGiven = ...) -> TaskHandle[Client]: ...
    @overload
    def create(self: VoiceClones[AsyncClient], *, reference_file_id: str | UploadedFile,
               consent: bool, rights_attestation: str, name: str | None = ...,
               description: str | None = ..., version: str = ...,
               license: str | int | NotGiven = ..., idempotency_key: str | NotGiven = ...
               ) -> Awaiting[TaskHandle[AsyncClient]]: ...
    def create(
        self,
        *,
        reference_file_id: str | UploadedFile,
        consent: bool,
        rights_attestation: str,
        name: str | None = None,
        description: str | None = None,
        version: str = "v5",
        license: str | int | NotGiven = NOT_GIVEN,
        idempotency_key: str | NotGiven = NOT_GIVEN,
    ) -> Any:
        """``POST /v1/voice-clones`` -> :class:`TaskHandle` with ``consent_id``.

        The reference is an uploaded mp3/m4a of at most 15 MiB; ``consent`` must
        be True. When the task completes, ``task.vocal_id`` is the saved voice.
        """
        return self._c._drive(self._create_op(reference_file_id, consent, rights_attestation,
                                              name, description, version, license,
                                              idempotency_key))

    @overload
    def clone(self: VoiceClones[Client], *, timeout: float = ..., **fields: Any) -> VoiceClone: ...
    @overload
    def clone(self: VoiceClones[AsyncClient], *, timeout: float = ..., **fields: Any
              ) -> Awaiting[VoiceClone]: ...
    def clone(self, *, timeout: float = 600.0, **fields: Any) -> Any:
        """create() and wait -> :class:`VoiceClone` with the ``vocal_id`` to use."""
        def finish(handle: Any) -> Any:
            return self._c._then(
                handle.wait(timeout=timeout),
                lambda task: VoiceClone(task.vocal_id, handle.consent_id, task.task_id, task))

        me: Any = self  # the overloads above say what create() returns
        return self._c._then(me.create(**fields), finish)


class SongTranslations(Generic[C]):
    def __init__(self, client: C) -> None:
        self._c = client

    def _create_op(self, song_file_id: Any, target_language: Any, song_style: Any,
                   syllable_matched: Any, license: Any, key: Any) -> Op:
        key = resolve_key(key)
        text(target_language, "target_language", required=True)
        text(song_style, "song_style", required=True)
        require(isinstance(syllable_matched, bool), "syllable_matched", "must be a boolean")
        lic = _lic(license)
        fid = known_file(self._c, song_file_id, "song_file_id",
                         max_bytes=int(LIMITS["translation_source_bytes"]), limit_text="60 MiB")
        body = {"song_file_id": fid, "target_language": target_language,
                "song_style": song_style, "syllable_matched": syllable_matched, "license": lic}
        est = estimate_route("/v1/song-translations", lic)
        return (yield from self._c._create_op("/v1/song-translations", body, est, key))

    @overload
    def create(self: SongTranslations[Client], *, song_file_id: str | UploadedFile,
               target_language: str, song_style: str, syllable_matched: bool = ...,
               license: str | int | NotGiven = ..., idempotency_key: str | NotGiven = ...
               ) -> TaskHandle[Client]: ...
    @overload
    def create(self: SongTranslations[AsyncClient], *, song_file_id: str | UploadedFile,
               target_language: str, song_style: str, syllable_matched: bool = ...,
               license: str | int | NotGiven = ..., idempotency_key: str | NotGiven = ...
               ) -> Awaiting[TaskHandle[AsyncClient]]: ...
    def create(
        self,
        *,
        song_file_id: str | UploadedFile,
        target_language: str,
        song_style: str,
        syllable_matched: bool = True,
        license: str | int | NotGiven = NOT_GIVEN,
        idempotency_key: str | NotGiven = NOT_GIVEN,
    ) -> Any:
        """``POST /v1/song-translations`` (six billed steps) -> :class:`TaskHandle`."""
        return self._c._drive(self._create_op(song_file_id, target_language, song_style,
                                              syllable_matched, license, idempotency_key))


_FILE_FIELDS = ("song_file_id", "hum_file_id", "recording_file_id", "midi_file_id")


class Workflows(Generic[C]):
    """The twelve workflow routes; each bills every step of its fixed pipeline."""

    def __init__(self, client: C) -> None:
        self._c = client

    def _create_op(self, route: str, fields: dict[str, Any], license: Any, key: Any) -> Op:
        key = resolve_key(key)
        route = route.strip("/").removeprefix("v1/")
        if route not in WORKFLOW_ROUTES:
            raise ValidationError("route", f"one of {', '.join(WORKFLOW_ROUTES)}, got {route!r}")
        fields = {k: v for k, v in fields.items() if v is not None}
        for f in _FILE_FIELDS:
            if f in fields:
                fields[f] = file_id_of(fields[f], f)
        workflow_body(route, fields)
        lic = _lic(license)
        est = estimate_route(route, lic)
        return (yield from self._c._create_op(f"/v1/{route}", {**fields, "license": lic}, est, key))

    @overload
    def create(self: Workflows[Client], route: str, *, license: str | int | NotGiven = ...,
               idempotency_key: str | NotGiven = ..., **fields: Any) -> TaskHandle[Client]: ...
    @overload
    def create(self: Workflows[AsyncClient], route: str, *, license: str | int | NotGiven = ...,
               idempotency_key: str | NotGiven = ..., **fields: Any
               ) -> Awaiting[TaskHandle[AsyncClient]]: ...
    def create(self, route: str, *, license: str | int | NotGiven = NOT_GIVEN,
               idempotency_key: str | NotGiven = NOT_GIVEN, **fields: Any) -> Any:
        """``POST /v1/{route}`` with the route's fields -> :class:`TaskHandle`."""
        return self._c._drive(self._create_op(route, fields, license, idempotency_key))

    def _named(self, route: str, license: Any, key: Any, **fields: Any) -> Any:
        return self._c._drive(self._create_op(route, fields, license, key))

    @overload
    def beat_swap(self: Workflows[Client], *, song_file_id: Any, prompt: str, license: Any = ...,
                  idempotency_key: Any = ...) -> TaskHandle[Client]: ...
    @overload
    def beat_swap(self: Workflows[AsyncClient], *, song_file_id: Any, prompt: str,
                  license: Any = ..., idempotency_key: Any = ...
                  ) -> Awaiting[TaskHandle[AsyncClient]]: ...
    def beat_swap(self, *, song_file_id: Any, prompt: str, license: Any = NOT_GIVEN,
                  idempotency_key: Any = NOT_GIVEN) -> Any:
        """Replace the beat under a track and keep the vocal."""
        return self._named("beat-swaps", license, idempotency_key, song_file_id=song_file_id,
                           prompt=prompt)

    @overload
    def karaoke_track(self: Workflows[Client], *, song_file_id: Any, license: Any = ...,
                      idempotency_key: Any = ...) -> TaskHandle[Client]: ...
    @overload
    def karaoke_track(self: Workflows[AsyncClient], *, song_file_id: Any, license: Any = ...,
                      idempotency_key: Any = ...) -> Awaiting[TaskHandle[AsyncClient]]: ...
    def karaoke_track(self, *, song_file_id: Any, license: Any = NOT_GIVEN,
                      idempotency_key: Any = NOT_GIVEN) -> Any:
        """Strip the vocal and render a backing track."""
        return self._named("karaoke-tracks", license, idempotency_key, song_file_id=song_file_id)

    @overload
    def drumless_mix(self: Workflows[Client], *, song_file_id: Any, license: Any = ...,
                     idempotency_key: Any = ...) -> TaskHandle[Client]: ...
    @overload
    def drumless_mix(self: Workflows[AsyncClient], *, song_file_id: Any, license: Any = ...,
                     idempotency_key: Any = ...) -> Awaiting[TaskHandle[AsyncClient]]: ...
    def drumless_mix(self, *, song_file_id: Any, license: Any = NOT_GIVEN,
                     idempotency_key: Any = NOT_GIVEN) -> Any:
        """Remove drums and render a practice mix."""
        return self._named("drumless-mixes", license, idempotency_key, song_file_id=song_file_id)

    @overload
    def revoicing(self: Workflows[Client], *, song_file_id: Any, vocal_id: str, license: Any = ...,
                  idempotency_key: Any = ...) -> TaskHandle[Client]: ...
    @overload
    def revoicing(self: Workflows[AsyncClient], *, song_file_id: Any, vocal_id: str,
                  license: Any = ..., idempotency_key: Any = ...
                  ) -> Awaiting[TaskHandle[AsyncClient]]: ...
    def revoicing(self, *, song_file_id: Any, vocal_id: str, license: Any = NOT_GIVEN,
                  idempotency_key: Any = NOT_GIVEN) -> Any:
        """Re-sing a song in a different (saved) voice."""
        return self._named("revoicings", license, idempotency_key, song_file_id=song_file_id,
                           vocal_id=vocal_id)

    @overload
    def instrument_layer(self: Workflows[Client], *, song_file_id: Any, instrument: str,
                         license: Any = ..., idempotency_key: Any = ...) -> TaskHandle[Client]: ...
    @overload
    def instrument_layer(self: Workflows[AsyncClient], *, song_file_id: Any, instrument: str,
                         license: Any = ..., idempotency_key: Any = ...
                         ) -> Awaiting[TaskHandle[AsyncClient]]: ...
    def instrument_layer(self, *, song_file_id: Any, instrument: str, license: Any = NOT_GIVEN,
                         idempotency_key: Any = NOT_GIVEN) -> Any:
        """Add a generated instrument part."""
        return self._named("instrument-layers", license, idempotency_key,
                           song_file_id=song_file_id, instrument=instrument)

    @overload
    def hummed_song(self: Workflows[Client], *, hum_file_id: Any, prompt: str,
                    lyrics: str | None = ..., license: Any = ..., idempotency_key: Any = ...
                    ) -> TaskHandle[Client]: ...
    @overload
    def hummed_song(self: Workflows[AsyncClient], *, hum_file_id: Any, prompt: str,
                    lyrics: str | None = ..., license: Any = ..., idempotency_key: Any = ...
                    ) -> Awaiting[TaskHandle[AsyncClient]]: ...
    def hummed_song(self, *, hum_file_id: Any, prompt: str, lyrics: str | None = None,
                    license: Any = NOT_GIVEN, idempotency_key: Any = NOT_GIVEN) -> Any:
        """Turn a hummed melody into a produced song."""
        return self._named("hummed-songs", license, idempotency_key, hum_file_id=hum_file_id,
                           prompt=prompt, lyrics=lyrics)

    @overload
    def trending_song(self: Workflows[Client], *, genre: str, prompt: str | None = ...,
                      lyrics: str | None = ..., license: Any = ..., idempotency_key: Any = ...
                      ) -> TaskHandle[Client]: ...
    @overload
    def trending_song(self: Workflows[AsyncClient], *, genre: str, prompt: str | None = ...,
                      lyrics: str | None = ..., license: Any = ..., idempotency_key: Any = ...
                      ) -> Awaiting[TaskHandle[AsyncClient]]: ...
    def trending_song(self, *, genre: str, prompt: str | None = None, lyrics: str | None = None,
                      license: Any = NOT_GIVEN, idempotency_key: Any = NOT_GIVEN) -> Any:
        """A song in a chosen genre, or ``genre="trending"``."""
        return self._named("trending-songs", license, idempotency_key, genre=genre,
                           prompt=prompt, lyrics=lyrics)

    @overload
    def voice_song(self: Workflows[Client], *, recording_file_id: Any, prompt: str,
                   lyrics: str | None = ..., license: Any = ..., idempotency_key: Any = ...
                   ) -> TaskHandle[Client]: ...
    @overload
    def voice_song(self: Workflows[AsyncClient], *, recording_file_id: Any, prompt: str,
                   lyrics: str | None = ..., license: Any = ..., idempotency_key: Any = ...
                   ) -> Awaiting[TaskHandle[AsyncClient]]: ...
    def voice_song(self, *, recording_file_id: Any, prompt: str, lyrics: str | None = None,
                   license: Any = NOT_GIVEN, idempotency_key: Any = NOT_GIVEN) -> Any:
        """A song that sounds like the caller's recording."""
        return self._named("voice-songs", license, idempotency_key,
                           recording_file_id=recording_file_id, prompt=prompt, lyrics=lyrics)

    @overload
    def genre_remix(self: Workflows[Client], *, song_file_id: Any, genre: str, license: Any = ...,
                    idempotency_key: Any = ...) -> TaskHandle[Client]: ...
    @overload
    def genre_remix(self: Workflows[AsyncClient], *, song_file_id: Any, genre: str,
                    license: Any = ..., idempotency_key: Any = ...
                    ) -> Awaiting[TaskHandle[AsyncClient]]: ...
    def genre_remix(self, *, song_file_id: Any, genre: str, license: Any = NOT_GIVEN,
                    idempotency_key: Any = NOT_GIVEN) -> Any:
        """Re-style a song into another genre."""
        return self._named("genre-remixes", license, idempotency_key, song_file_id=song_file_id,
                           genre=genre)

    @overload
    def midi_song(self: Workflows[Client], *, midi_file_id: Any, prompt: str,
                  lyrics: str | None = ..., license: Any = ..., idempotency_key: Any = ...
                  ) -> TaskHandle[Client]: ...
    @overload
    def midi_song(self: Workflows[AsyncClient], *, midi_file_id: Any, prompt: str,
                  lyrics: str | None = ..., license: Any = ..., idempotency_key: Any = ...
                  ) -> Awaiting[TaskHandle[AsyncClient]]: ...
    def midi_song(self, *, midi_file_id: Any, prompt: str, lyrics: str | None = None,
                  license: Any = NOT_GIVEN, idempotency_key: Any = NOT_GIVEN) -> Any:
        """Build a produced song around a MIDI file."""
        return self._named("midi-songs", license, idempotency_key, midi_file_id=midi_file_id,
                           prompt=prompt, lyrics=lyrics)

    @overload
    def vocal_layer(self: Workflows[Client], *, song_file_id: Any, lyrics: str,
                    vocal_id: str | None = ..., license: Any = ..., idempotency_key: Any = ...
                    ) -> TaskHandle[Client]: ...
    @overload
    def vocal_layer(self: Workflows[AsyncClient], *, song_file_id: Any, lyrics: str,
                    vocal_id: str | None = ..., license: Any = ..., idempotency_key: Any = ...
                    ) -> Awaiting[TaskHandle[AsyncClient]]: ...
    def vocal_layer(self, *, song_file_id: Any, lyrics: str, vocal_id: str | None = None,
                    license: Any = NOT_GIVEN, idempotency_key: Any = NOT_GIVEN) -> Any:
        """Layer a new vocal on a track."""
        return self._named("vocal-layers", license, idempotency_key, song_file_id=song_file_id,
                           lyrics=lyrics, vocal_id=vocal_id)

    @overload
    def audio_inpainting(self: Workflows[Client], *, song_file_id: Any, start_ms: int, end_ms: int,
                         lyrics: str | None = ..., license: Any = ..., idempotency_key: Any = ...
                         ) -> TaskHandle[Client]: ...
    @overload
    def audio_inpainting(self: Workflows[AsyncClient], *, song_file_id: Any, start_ms: int,
                         end_ms: int, lyrics: str | None = ..., license: Any = ...,
                         idempotency_key: Any = ...) -> Awaiting[TaskHandle[AsyncClient]]: ...
    def audio_inpainting(self, *, song_file_id: Any, start_ms: int, end_ms: int,
                         lyrics: str | None = None, license: Any = NOT_GIVEN,
                         idempotency_key: Any = NOT_GIVEN) -> Any:
        """Rewrite one section (``start_ms`` < ``end_ms``); flat price."""
        return self._named("audio-inpainting", license, idempotency_key,
                           song_file_id=song_file_id, start_ms=start_ms, end_ms=end_ms,
                           lyrics=lyrics)


assert set(WORKFLOW_FIELDS) == set(WORKFLOW_ROUTES)
