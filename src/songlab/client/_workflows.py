"""The workflow routes (``POST /v1/beat-swaps`` ...): one create per product, each
billing every step of its fixed pipeline. ``license`` is a tier name (an integer 0-5 is
converted); file-id fields take a string, an :class:`UploadedFile` or an :class:`Asset`.

``workflows.create(route, **fields)`` reaches any workflow route of the registry
(``songlab.spec.WORKFLOWS``), a new one included; a named method is one declaration below
(its fields, then the :class:`CreateOptions` every create takes).
"""

from __future__ import annotations

from typing import Unpack

from songlab.client._call import NOT_GIVEN, NotGiven, Op
from songlab.client._cost_estimate import estimate_route
from songlab.client._create import (
    CreateOptions,
    Reuse,
    create_op,
    create_options,
    reuse_of,
    route_request,
)
from songlab.client._dedicated import license_or_default
from songlab.client._files import FileRef, file_id_of
from songlab.client._handle import TaskHandle
from songlab.client._typing import C, Resource, creates
from songlab.client._validate import ValidationError, workflow_body
from songlab.spec import WORKFLOWS

__all__ = ["Workflows"]


class Workflows(Resource[C]):
    """The workflow routes; each bills every step of its fixed pipeline."""

    def _op(
        self,
        route: str,
        license: int | str | NotGiven,
        reuse: Reuse,
        fields: dict[str, object],
    ) -> Op[TaskHandle[C]]:
        route = route.strip("/").removeprefix("v1/")
        spec = WORKFLOWS.get(route)
        if spec is None:
            raise ValidationError("route", f"one of {', '.join(WORKFLOWS)}, got {route!r}")
        body = {k: v for k, v in fields.items() if v is not None}
        for f in spec.fields:
            if f.type == "file_id" and f.name in body:
                body[f.name] = file_id_of(body[f.name], f.name)
        workflow_body(route, body, self._c._uploads)
        lic = license_or_default(license)
        body["license"] = lic
        request = route_request(f"/v1/{route}", body, estimate_route(route, lic))
        return (yield from create_op(self._c, request, reuse))

    def _named(
        self, method: str, route: str, options: CreateOptions, **fields: object
    ) -> Op[TaskHandle[C]]:
        reuse, license = create_options(options, method)
        return self._op(route, license, reuse, fields)

    @creates
    def create(
        self,
        /,
        route: str,
        *,
        license: int | str | NotGiven = NOT_GIVEN,
        idempotency_key: str | NotGiven = NOT_GIVEN,
        take: int = 1,
        fresh: bool = False,
        **fields: object,
    ) -> Op[TaskHandle[C]]:
        """``POST /v1/{route}`` with the route's fields -> :class:`TaskHandle`."""
        return self._op(route, license, reuse_of(idempotency_key, take, fresh), fields)

    @creates
    def beat_swap(
        self,
        *,
        song_file_id: FileRef,
        prompt: str,
        **options: Unpack[CreateOptions],
    ) -> Op[TaskHandle[C]]:
        """Replace the beat under a track and keep the vocal."""
        return self._named(
            "beat_swap", "beat-swaps", options, song_file_id=song_file_id, prompt=prompt
        )

    @creates
    def karaoke_track(
        self,
        *,
        song_file_id: FileRef,
        **options: Unpack[CreateOptions],
    ) -> Op[TaskHandle[C]]:
        """Strip the vocal and render a backing track."""
        return self._named("karaoke_track", "karaoke-tracks", options, song_file_id=song_file_id)

    @creates
    def drumless_mix(
        self,
        *,
        song_file_id: FileRef,
        **options: Unpack[CreateOptions],
    ) -> Op[TaskHandle[C]]:
        """Remove drums and render a practice mix."""
        return self._named("drumless_mix", "drumless-mixes", options, song_file_id=song_file_id)

    @creates
    def revoicing(
        self,
        *,
        song_file_id: FileRef,
        vocal_id: str,
        **options: Unpack[CreateOptions],
    ) -> Op[TaskHandle[C]]:
        """Re-sing a song in a different (saved) voice."""
        return self._named(
            "revoicing", "revoicings", options, song_file_id=song_file_id, vocal_id=vocal_id
        )

    @creates
    def instrument_layer(
        self,
        *,
        song_file_id: FileRef,
        instrument: str,
        **options: Unpack[CreateOptions],
    ) -> Op[TaskHandle[C]]:
        """Add a generated instrument part."""
        return self._named(
            "instrument_layer",
            "instrument-layers",
            options,
            song_file_id=song_file_id,
            instrument=instrument,
        )

    @creates
    def hummed_song(
        self,
        *,
        hum_file_id: FileRef,
        prompt: str,
        lyrics: str | None = None,
        **options: Unpack[CreateOptions],
    ) -> Op[TaskHandle[C]]:
        """Turn a hummed melody into a produced song."""
        return self._named(
            "hummed_song",
            "hummed-songs",
            options,
            hum_file_id=hum_file_id,
            prompt=prompt,
            lyrics=lyrics,
        )

    @creates
    def trending_song(
        self,
        *,
        genre: str,
        prompt: str | None = None,
        lyrics: str | None = None,
        **options: Unpack[CreateOptions],
    ) -> Op[TaskHandle[C]]:
        """A song in a chosen genre, or ``genre="trending"``."""
        return self._named(
            "trending_song", "trending-songs", options, genre=genre, prompt=prompt, lyrics=lyrics
        )

    @creates
    def voice_song(
        self,
        *,
        recording_file_id: FileRef,
        prompt: str,
        lyrics: str | None = None,
        **options: Unpack[CreateOptions],
    ) -> Op[TaskHandle[C]]:
        """A song that sounds like the caller's recording."""
        return self._named(
            "voice_song",
            "voice-songs",
            options,
            recording_file_id=recording_file_id,
            prompt=prompt,
            lyrics=lyrics,
        )

    @creates
    def genre_remix(
        self,
        *,
        song_file_id: FileRef,
        genre: str,
        **options: Unpack[CreateOptions],
    ) -> Op[TaskHandle[C]]:
        """Re-style a song into another genre."""
        return self._named(
            "genre_remix", "genre-remixes", options, song_file_id=song_file_id, genre=genre
        )

    @creates
    def midi_song(
        self,
        *,
        midi_file_id: FileRef,
        prompt: str,
        lyrics: str | None = None,
        **options: Unpack[CreateOptions],
    ) -> Op[TaskHandle[C]]:
        """Build a produced song around a MIDI file."""
        return self._named(
            "midi_song",
            "midi-songs",
            options,
            midi_file_id=midi_file_id,
            prompt=prompt,
            lyrics=lyrics,
        )

    @creates
    def vocal_layer(
        self,
        *,
        song_file_id: FileRef,
        lyrics: str,
        vocal_id: str | None = None,
        **options: Unpack[CreateOptions],
    ) -> Op[TaskHandle[C]]:
        """Layer a new vocal on a track."""
        return self._named(
            "vocal_layer",
            "vocal-layers",
            options,
            song_file_id=song_file_id,
            lyrics=lyrics,
            vocal_id=vocal_id,
        )

    @creates
    def audio_inpainting(
        self,
        *,
        song_file_id: FileRef,
        start_ms: int,
        end_ms: int,
        lyrics: str | None = None,
        **options: Unpack[CreateOptions],
    ) -> Op[TaskHandle[C]]:
        """Rewrite one section (``start_ms`` < ``end_ms``); flat price."""
        return self._named(
            "audio_inpainting",
            "audio-inpainting",
            options,
            song_file_id=song_file_id,
            start_ms=start_ms,
            end_ms=end_ms,
            lyrics=lyrics,
        )
