"""The twelve workflow routes (``POST /v1/beat-swaps`` ...): one create per product, each
billing every step of its fixed pipeline. ``license`` is a tier name (an integer 0-5 is
converted); file-id fields take a string or an :class:`UploadedFile`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Generic, overload

from songlab.client._call import NOT_GIVEN, NotGiven, Op
from songlab.client._dedicated import license_or_default
from songlab.client._estimate import estimate_route
from songlab.client._files import file_id_of
from songlab.client._generations import resolve_key
from songlab.client._typing import Awaiting, C
from songlab.client._validate import WORKFLOW_FIELDS, ValidationError, workflow_body
from songlab.spec import WORKFLOW_ROUTES

if TYPE_CHECKING:
    from songlab.client._async import AsyncClient
    from songlab.client._handle import TaskHandle
    from songlab.client._sync import Client

__all__ = ["Workflows"]


_FILE_FIELDS = ("song_file_id", "hum_file_id", "recording_file_id", "midi_file_id")


class Workflows(Generic[C]):
    """The twelve workflow routes; each bills every step of its fixed pipeline."""

    def __init__(self, client: C) -> None:
        self._c = client

    def _create_op(self, route: str, fields: dict[str, Any], license: Any, key: Any) -> Op:
        key = resolve_key(key)
        take, fresh = fields.pop("take", 1), fields.pop("fresh", False)  # not sent: reuse options
        route = route.strip("/").removeprefix("v1/")
        if route not in WORKFLOW_ROUTES:
            raise ValidationError("route", f"one of {', '.join(WORKFLOW_ROUTES)}, got {route!r}")
        fields = {k: v for k, v in fields.items() if v is not None}
        for f in _FILE_FIELDS:
            if f in fields:
                fields[f] = file_id_of(fields[f], f)
        workflow_body(route, fields, self._c._uploads)
        lic = license_or_default(license)
        est = estimate_route(route, lic)
        return (
            yield from self._c._create_op(
                f"/v1/{route}", {**fields, "license": lic}, est, key, take, fresh
            )
        )

    @overload
    def create(
        self: Workflows[Client],
        route: str,
        *,
        license: str | int | NotGiven = ...,
        idempotency_key: str | NotGiven = ...,
        **fields: Any,
    ) -> TaskHandle[Client]: ...
    @overload
    def create(
        self: Workflows[AsyncClient],
        route: str,
        *,
        license: str | int | NotGiven = ...,
        idempotency_key: str | NotGiven = ...,
        **fields: Any,
    ) -> Awaiting[TaskHandle[AsyncClient]]: ...
    def create(
        self,
        route: str,
        *,
        license: str | int | NotGiven = NOT_GIVEN,
        idempotency_key: str | NotGiven = NOT_GIVEN,
        **fields: Any,
    ) -> Any:
        """``POST /v1/{route}`` with the route's fields -> :class:`TaskHandle`."""
        return self._c._drive(self._create_op(route, fields, license, idempotency_key))

    def _named(self, route: str, license: Any, key: Any, **fields: Any) -> Any:
        return self._c._drive(self._create_op(route, fields, license, key))

    @overload
    def beat_swap(
        self: Workflows[Client],
        *,
        song_file_id: Any,
        prompt: str,
        license: Any = ...,
        idempotency_key: Any = ...,
    ) -> TaskHandle[Client]: ...
    @overload
    def beat_swap(
        self: Workflows[AsyncClient],
        *,
        song_file_id: Any,
        prompt: str,
        license: Any = ...,
        idempotency_key: Any = ...,
    ) -> Awaiting[TaskHandle[AsyncClient]]: ...
    def beat_swap(
        self,
        *,
        song_file_id: Any,
        prompt: str,
        license: Any = NOT_GIVEN,
        idempotency_key: Any = NOT_GIVEN,
    ) -> Any:
        """Replace the beat under a track and keep the vocal."""
        return self._named(
            "beat-swaps", license, idempotency_key, song_file_id=song_file_id, prompt=prompt
        )

    @overload
    def karaoke_track(
        self: Workflows[Client],
        *,
        song_file_id: Any,
        license: Any = ...,
        idempotency_key: Any = ...,
    ) -> TaskHandle[Client]: ...
    @overload
    def karaoke_track(
        self: Workflows[AsyncClient],
        *,
        song_file_id: Any,
        license: Any = ...,
        idempotency_key: Any = ...,
    ) -> Awaiting[TaskHandle[AsyncClient]]: ...
    def karaoke_track(
        self, *, song_file_id: Any, license: Any = NOT_GIVEN, idempotency_key: Any = NOT_GIVEN
    ) -> Any:
        """Strip the vocal and render a backing track."""
        return self._named("karaoke-tracks", license, idempotency_key, song_file_id=song_file_id)

    @overload
    def drumless_mix(
        self: Workflows[Client],
        *,
        song_file_id: Any,
        license: Any = ...,
        idempotency_key: Any = ...,
    ) -> TaskHandle[Client]: ...
    @overload
    def drumless_mix(
        self: Workflows[AsyncClient],
        *,
        song_file_id: Any,
        license: Any = ...,
        idempotency_key: Any = ...,
    ) -> Awaiting[TaskHandle[AsyncClient]]: ...
    def drumless_mix(
        self, *, song_file_id: Any, license: Any = NOT_GIVEN, idempotency_key: Any = NOT_GIVEN
    ) -> Any:
        """Remove drums and render a practice mix."""
        return self._named("drumless-mixes", license, idempotency_key, song_file_id=song_file_id)

    @overload
    def revoicing(
        self: Workflows[Client],
        *,
        song_file_id: Any,
        vocal_id: str,
        license: Any = ...,
        idempotency_key: Any = ...,
    ) -> TaskHandle[Client]: ...
    @overload
    def revoicing(
        self: Workflows[AsyncClient],
        *,
        song_file_id: Any,
        vocal_id: str,
        license: Any = ...,
        idempotency_key: Any = ...,
    ) -> Awaiting[TaskHandle[AsyncClient]]: ...
    def revoicing(
        self,
        *,
        song_file_id: Any,
        vocal_id: str,
        license: Any = NOT_GIVEN,
        idempotency_key: Any = NOT_GIVEN,
    ) -> Any:
        """Re-sing a song in a different (saved) voice."""
        return self._named(
            "revoicings", license, idempotency_key, song_file_id=song_file_id, vocal_id=vocal_id
        )

    @overload
    def instrument_layer(
        self: Workflows[Client],
        *,
        song_file_id: Any,
        instrument: str,
        license: Any = ...,
        idempotency_key: Any = ...,
    ) -> TaskHandle[Client]: ...
    @overload
    def instrument_layer(
        self: Workflows[AsyncClient],
        *,
        song_file_id: Any,
        instrument: str,
        license: Any = ...,
        idempotency_key: Any = ...,
    ) -> Awaiting[TaskHandle[AsyncClient]]: ...
    def instrument_layer(
        self,
        *,
        song_file_id: Any,
        instrument: str,
        license: Any = NOT_GIVEN,
        idempotency_key: Any = NOT_GIVEN,
    ) -> Any:
        """Add a generated instrument part."""
        return self._named(
            "instrument-layers",
            license,
            idempotency_key,
            song_file_id=song_file_id,
            instrument=instrument,
        )

    @overload
    def hummed_song(
        self: Workflows[Client],
        *,
        hum_file_id: Any,
        prompt: str,
        lyrics: str | None = ...,
        license: Any = ...,
        idempotency_key: Any = ...,
    ) -> TaskHandle[Client]: ...
    @overload
    def hummed_song(
        self: Workflows[AsyncClient],
        *,
        hum_file_id: Any,
        prompt: str,
        lyrics: str | None = ...,
        license: Any = ...,
        idempotency_key: Any = ...,
    ) -> Awaiting[TaskHandle[AsyncClient]]: ...
    def hummed_song(
        self,
        *,
        hum_file_id: Any,
        prompt: str,
        lyrics: str | None = None,
        license: Any = NOT_GIVEN,
        idempotency_key: Any = NOT_GIVEN,
    ) -> Any:
        """Turn a hummed melody into a produced song."""
        return self._named(
            "hummed-songs",
            license,
            idempotency_key,
            hum_file_id=hum_file_id,
            prompt=prompt,
            lyrics=lyrics,
        )

    @overload
    def trending_song(
        self: Workflows[Client],
        *,
        genre: str,
        prompt: str | None = ...,
        lyrics: str | None = ...,
        license: Any = ...,
        idempotency_key: Any = ...,
    ) -> TaskHandle[Client]: ...
    @overload
    def trending_song(
        self: Workflows[AsyncClient],
        *,
        genre: str,
        prompt: str | None = ...,
        lyrics: str | None = ...,
        license: Any = ...,
        idempotency_key: Any = ...,
    ) -> Awaiting[TaskHandle[AsyncClient]]: ...
    def trending_song(
        self,
        *,
        genre: str,
        prompt: str | None = None,
        lyrics: str | None = None,
        license: Any = NOT_GIVEN,
        idempotency_key: Any = NOT_GIVEN,
    ) -> Any:
        """A song in a chosen genre, or ``genre="trending"``."""
        return self._named(
            "trending-songs", license, idempotency_key, genre=genre, prompt=prompt, lyrics=lyrics
        )

    @overload
    def voice_song(
        self: Workflows[Client],
        *,
        recording_file_id: Any,
        prompt: str,
        lyrics: str | None = ...,
        license: Any = ...,
        idempotency_key: Any = ...,
    ) -> TaskHandle[Client]: ...
    @overload
    def voice_song(
        self: Workflows[AsyncClient],
        *,
        recording_file_id: Any,
        prompt: str,
        lyrics: str | None = ...,
        license: Any = ...,
        idempotency_key: Any = ...,
    ) -> Awaiting[TaskHandle[AsyncClient]]: ...
    def voice_song(
        self,
        *,
        recording_file_id: Any,
        prompt: str,
        lyrics: str | None = None,
        license: Any = NOT_GIVEN,
        idempotency_key: Any = NOT_GIVEN,
    ) -> Any:
        """A song that sounds like the caller's recording."""
        return self._named(
            "voice-songs",
            license,
            idempotency_key,
            recording_file_id=recording_file_id,
            prompt=prompt,
            lyrics=lyrics,
        )

    @overload
    def genre_remix(
        self: Workflows[Client],
        *,
        song_file_id: Any,
        genre: str,
        license: Any = ...,
        idempotency_key: Any = ...,
    ) -> TaskHandle[Client]: ...
    @overload
    def genre_remix(
        self: Workflows[AsyncClient],
        *,
        song_file_id: Any,
        genre: str,
        license: Any = ...,
        idempotency_key: Any = ...,
    ) -> Awaiting[TaskHandle[AsyncClient]]: ...
    def genre_remix(
        self,
        *,
        song_file_id: Any,
        genre: str,
        license: Any = NOT_GIVEN,
        idempotency_key: Any = NOT_GIVEN,
    ) -> Any:
        """Re-style a song into another genre."""
        return self._named(
            "genre-remixes", license, idempotency_key, song_file_id=song_file_id, genre=genre
        )

    @overload
    def midi_song(
        self: Workflows[Client],
        *,
        midi_file_id: Any,
        prompt: str,
        lyrics: str | None = ...,
        license: Any = ...,
        idempotency_key: Any = ...,
    ) -> TaskHandle[Client]: ...
    @overload
    def midi_song(
        self: Workflows[AsyncClient],
        *,
        midi_file_id: Any,
        prompt: str,
        lyrics: str | None = ...,
        license: Any = ...,
        idempotency_key: Any = ...,
    ) -> Awaiting[TaskHandle[AsyncClient]]: ...
    def midi_song(
        self,
        *,
        midi_file_id: Any,
        prompt: str,
        lyrics: str | None = None,
        license: Any = NOT_GIVEN,
        idempotency_key: Any = NOT_GIVEN,
    ) -> Any:
        """Build a produced song around a MIDI file."""
        return self._named(
            "midi-songs",
            license,
            idempotency_key,
            midi_file_id=midi_file_id,
            prompt=prompt,
            lyrics=lyrics,
        )

    @overload
    def vocal_layer(
        self: Workflows[Client],
        *,
        song_file_id: Any,
        lyrics: str,
        vocal_id: str | None = ...,
        license: Any = ...,
        idempotency_key: Any = ...,
    ) -> TaskHandle[Client]: ...
    @overload
    def vocal_layer(
        self: Workflows[AsyncClient],
        *,
        song_file_id: Any,
        lyrics: str,
        vocal_id: str | None = ...,
        license: Any = ...,
        idempotency_key: Any = ...,
    ) -> Awaiting[TaskHandle[AsyncClient]]: ...
    def vocal_layer(
        self,
        *,
        song_file_id: Any,
        lyrics: str,
        vocal_id: str | None = None,
        license: Any = NOT_GIVEN,
        idempotency_key: Any = NOT_GIVEN,
    ) -> Any:
        """Layer a new vocal on a track."""
        return self._named(
            "vocal-layers",
            license,
            idempotency_key,
            song_file_id=song_file_id,
            lyrics=lyrics,
            vocal_id=vocal_id,
        )

    @overload
    def audio_inpainting(
        self: Workflows[Client],
        *,
        song_file_id: Any,
        start_ms: int,
        end_ms: int,
        lyrics: str | None = ...,
        license: Any = ...,
        idempotency_key: Any = ...,
    ) -> TaskHandle[Client]: ...
    @overload
    def audio_inpainting(
        self: Workflows[AsyncClient],
        *,
        song_file_id: Any,
        start_ms: int,
        end_ms: int,
        lyrics: str | None = ...,
        license: Any = ...,
        idempotency_key: Any = ...,
    ) -> Awaiting[TaskHandle[AsyncClient]]: ...
    def audio_inpainting(
        self,
        *,
        song_file_id: Any,
        start_ms: int,
        end_ms: int,
        lyrics: str | None = None,
        license: Any = NOT_GIVEN,
        idempotency_key: Any = NOT_GIVEN,
    ) -> Any:
        """Rewrite one section (``start_ms`` < ``end_ms``); flat price."""
        return self._named(
            "audio-inpainting",
            license,
            idempotency_key,
            song_file_id=song_file_id,
            start_ms=start_ms,
            end_ms=end_ms,
            lyrics=lyrics,
        )


assert set(WORKFLOW_FIELDS) == set(WORKFLOW_ROUTES)
