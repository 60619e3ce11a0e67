"""Compat routes: old-style URLs and field names; the service resolves the tool.

``POST /v{5,6,7}/generate/song``, ``/v{5,6,7}/generate/singing``,
``/v{5,6,7}/extend/song``, ``/v5/extend/music`` and its alias
``/v1/generate/extend``. Fields the spec does not list pass through as keyword
arguments (``**fields``), unchanged.
"""

from __future__ import annotations

from songlab.client._call import NOT_GIVEN, NotGiven, Op
from songlab.client._cost_estimate import estimate_route
from songlab.client._create import create_op, reuse_of, route_request
from songlab.client._handle import TaskHandle
from songlab.client._typing import C, Resource, creates
from songlab.client._validate import (
    ValidationError,
    choice,
    extend_at_ms,
    field_rule,
    known_file_input,
    license_number,
    require,
    text,
)
from songlab.spec import LIMITS, REGISTRY, SONG_VERSIONS

__all__ = ["Compat"]

# the registry's extend payloads: their ranges, choices and file limits, as the service checks them
_EXTEND_SONG, _EXTEND_MUSIC = REGISTRY["extend_song"], REGISTRY["extend_music"]


class Compat(Resource[C]):
    def _op(
        self,
        path: str,
        body: dict[str, object],
        key: str | NotGiven,
        take: int,
        fresh: bool,
    ) -> Op[TaskHandle[C]]:
        reuse = reuse_of(key, take, fresh)
        body = {k: v for k, v in body.items() if v is not None}
        lic = body.get("license")
        estimate = estimate_route(path, None if lic is None else license_number(lic))
        return (yield from create_op(self._c, route_request(path, body, estimate), reuse))

    @creates
    def generate_song(
        self,
        /,
        version: str = "v5",
        *,
        prompt: str,
        lyrics: str | None = None,
        vocal_id: str | None = None,
        idempotency_key: str | NotGiven = NOT_GIVEN,
        take: int = 1,
        fresh: bool = False,
        **fields: object,
    ) -> Op[TaskHandle[C]]:
        """``POST /{version}/generate/song``."""
        choice(version, "version", SONG_VERSIONS)
        text(prompt, "prompt", required=True)
        text(lyrics, "lyrics")
        text(vocal_id, "vocal_id")
        require(
            not (vocal_id and fields.get("melody_url")),
            "vocal_id",
            "a saved voice does not work with melody_url",
        )
        return self._op(
            f"/{version}/generate/song",
            {"prompt": prompt, "lyrics": lyrics, "vocal_id": vocal_id, **fields},
            idempotency_key,
            take,
            fresh,
        )

    @creates
    def generate_singing(
        self,
        /,
        version: str = "v5",
        *,
        style_of_music: str,
        lyrics: str,
        vocal_id: str | None = None,
        idempotency_key: str | NotGiven = NOT_GIVEN,
        take: int = 1,
        fresh: bool = False,
        **fields: object,
    ) -> Op[TaskHandle[C]]:
        """``POST /{version}/generate/singing`` (``styleOfMusic`` in place of ``prompt``)."""
        choice(version, "version", SONG_VERSIONS)
        text(style_of_music, "style_of_music", required=True)
        text(lyrics, "lyrics", required=True)
        text(vocal_id, "vocal_id")
        require(
            not (vocal_id and fields.get("melody_url")),
            "vocal_id",
            "a saved voice does not work with melody_url",
        )
        return self._op(
            f"/{version}/generate/singing",
            {"styleOfMusic": style_of_music, "lyrics": lyrics, "vocal_id": vocal_id, **fields},
            idempotency_key,
            take,
            fresh,
        )

    @creates
    def extend_song(
        self,
        /,
        version: str = "v5",
        *,
        audio_url: str,
        lyrics: str | None = None,
        idempotency_key: str | NotGiven = NOT_GIVEN,
        take: int = 1,
        fresh: bool = False,
        **fields: object,
    ) -> Op[TaskHandle[C]]:
        """``POST /{version}/extend/song``; ``audio_url`` is required (else 400 MISSING_FIELD)."""
        choice(version, "version", SONG_VERSIONS)
        text(audio_url, "audio_url", required=True)
        text(lyrics, "lyrics", max_chars=int(LIMITS["extend_lyrics_chars"]))
        known_file_input(audio_url, "audio_url", self._c._uploads, _EXTEND_SONG.field("song"))
        if fields.get("extend_type") is not None:
            field_rule(_EXTEND_SONG.field("extend_type"), fields["extend_type"], "extend_type")
        if fields.get("extend_at_ms") is not None:
            extend_at_ms(fields["extend_at_ms"])
        return self._op(
            f"/{version}/extend/song",
            {"audio_url": audio_url, "lyrics": lyrics, **fields},
            idempotency_key,
            take,
            fresh,
        )

    @creates
    def extend_music(
        self,
        /,
        *,
        audio_url: str,
        prompt: str | None = None,
        extend_seconds: float | None = None,
        side: str | None = None,
        alias: bool = False,
        idempotency_key: str | NotGiven = NOT_GIVEN,
        take: int = 1,
        fresh: bool = False,
        **fields: object,
    ) -> Op[TaskHandle[C]]:
        """``POST /v5/extend/music`` (``alias=True``: ``/v1/generate/extend``), v5 only."""
        text(audio_url, "audio_url", required=True)
        text(prompt, "prompt")
        for name, value in (("extend_seconds", extend_seconds), ("side", side)):
            if value is not None:
                field_rule(_EXTEND_MUSIC.field(name), value, name)
        known_file_input(audio_url, "audio_url", self._c._uploads, _EXTEND_MUSIC.field("music"))
        if "version" in fields:
            raise ValidationError("version", "extend_music is v5 only")
        path = "/v1/generate/extend" if alias else "/v5/extend/music"
        return self._op(
            path,
            {
                "audio_url": audio_url,
                "prompt": prompt,
                "extend_seconds": extend_seconds,
                "side": side,
                **fields,
            },
            idempotency_key,
            take,
            fresh,
        )
