"""Compat routes: old-style URLs and field names; the service resolves the tool.

``POST /v{5,6,7}/generate/song``, ``/v{5,6,7}/generate/singing``,
``/v{5,6,7}/extend/song``, ``/v5/extend/music`` and its alias
``/v1/generate/extend``. Fields the spec does not list pass through as keyword
arguments (``**fields``), unchanged.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Generic, overload

from songlab.client._call import NOT_GIVEN, NotGiven, Op
from songlab.client._estimate import estimate_route
from songlab.client._generations import resolve_key
from songlab.client._typing import Awaiting, C
from songlab.client._validate import (
    FILE_LIMITS,
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

if TYPE_CHECKING:
    from songlab.client._async import AsyncClient
    from songlab.client._handle import TaskHandle
    from songlab.client._sync import Client

__all__ = ["Compat"]

# the registry's extend payloads: their ranges and choices, as the service checks them
_EXTEND_SONG, _EXTEND_MUSIC = REGISTRY["extend_song"], REGISTRY["extend_music"]


class Compat(Generic[C]):
    def __init__(self, client: C) -> None:
        self._c = client

    def _op(self, path: str, body: dict[str, Any], key: Any) -> Op:
        key = resolve_key(key)
        take, fresh = body.pop("take", 1), body.pop("fresh", False)  # not sent: reuse options
        lic = body.get("license")
        est = estimate_route(path, license_number(lic) if lic is not None else None)
        return (yield from self._c._create_op(path, body, est, key, take, fresh))

    def _send(self, path: str, body: dict[str, Any], key: Any) -> Any:
        return self._c._drive(self._op(path, {k: v for k, v in body.items() if v is not None}, key))

    @overload
    def generate_song(
        self: Compat[Client],
        version: str = ...,
        *,
        prompt: str,
        lyrics: str | None = ...,
        vocal_id: str | None = ...,
        idempotency_key: str | NotGiven = ...,
        **fields: Any,
    ) -> TaskHandle[Client]: ...
    @overload
    def generate_song(
        self: Compat[AsyncClient],
        version: str = ...,
        *,
        prompt: str,
        lyrics: str | None = ...,
        vocal_id: str | None = ...,
        idempotency_key: str | NotGiven = ...,
        **fields: Any,
    ) -> Awaiting[TaskHandle[AsyncClient]]: ...
    def generate_song(
        self,
        version: str = "v5",
        *,
        prompt: str,
        lyrics: str | None = None,
        vocal_id: str | None = None,
        idempotency_key: str | NotGiven = NOT_GIVEN,
        **fields: Any,
    ) -> Any:
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
        return self._send(
            f"/{version}/generate/song",
            {"prompt": prompt, "lyrics": lyrics, "vocal_id": vocal_id, **fields},
            idempotency_key,
        )

    @overload
    def generate_singing(
        self: Compat[Client],
        version: str = ...,
        *,
        style_of_music: str,
        lyrics: str,
        vocal_id: str | None = ...,
        idempotency_key: str | NotGiven = ...,
        **fields: Any,
    ) -> TaskHandle[Client]: ...
    @overload
    def generate_singing(
        self: Compat[AsyncClient],
        version: str = ...,
        *,
        style_of_music: str,
        lyrics: str,
        vocal_id: str | None = ...,
        idempotency_key: str | NotGiven = ...,
        **fields: Any,
    ) -> Awaiting[TaskHandle[AsyncClient]]: ...
    def generate_singing(
        self,
        version: str = "v5",
        *,
        style_of_music: str,
        lyrics: str,
        vocal_id: str | None = None,
        idempotency_key: str | NotGiven = NOT_GIVEN,
        **fields: Any,
    ) -> Any:
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
        return self._send(
            f"/{version}/generate/singing",
            {"styleOfMusic": style_of_music, "lyrics": lyrics, "vocal_id": vocal_id, **fields},
            idempotency_key,
        )

    @overload
    def extend_song(
        self: Compat[Client],
        version: str = ...,
        *,
        audio_url: str,
        lyrics: str | None = ...,
        idempotency_key: str | NotGiven = ...,
        **fields: Any,
    ) -> TaskHandle[Client]: ...
    @overload
    def extend_song(
        self: Compat[AsyncClient],
        version: str = ...,
        *,
        audio_url: str,
        lyrics: str | None = ...,
        idempotency_key: str | NotGiven = ...,
        **fields: Any,
    ) -> Awaiting[TaskHandle[AsyncClient]]: ...
    def extend_song(
        self,
        version: str = "v5",
        *,
        audio_url: str,
        lyrics: str | None = None,
        idempotency_key: str | NotGiven = NOT_GIVEN,
        **fields: Any,
    ) -> Any:
        """``POST /{version}/extend/song``; ``audio_url`` is required (else 400 MISSING_FIELD)."""
        choice(version, "version", SONG_VERSIONS)
        text(audio_url, "audio_url", required=True)
        text(lyrics, "lyrics", max_chars=int(LIMITS["extend_lyrics_chars"]))
        _, max_bytes, limit_text, formats = FILE_LIMITS["extend_song"]
        known_file_input(
            audio_url,
            "audio_url",
            self._c._uploads,
            max_bytes=max_bytes,
            limit_text=limit_text,
            formats=formats,
        )
        if fields.get("extend_type") is not None:
            field_rule(_EXTEND_SONG.field("extend_type"), fields["extend_type"], "extend_type")
        if fields.get("extend_at_ms") is not None:
            extend_at_ms(fields["extend_at_ms"])
        return self._send(
            f"/{version}/extend/song",
            {"audio_url": audio_url, "lyrics": lyrics, **fields},
            idempotency_key,
        )

    @overload
    def extend_music(
        self: Compat[Client],
        *,
        audio_url: str,
        prompt: str | None = ...,
        extend_seconds: float | None = ...,
        side: str | None = ...,
        alias: bool = ...,
        idempotency_key: str | NotGiven = ...,
        **fields: Any,
    ) -> TaskHandle[Client]: ...
    @overload
    def extend_music(
        self: Compat[AsyncClient],
        *,
        audio_url: str,
        prompt: str | None = ...,
        extend_seconds: float | None = ...,
        side: str | None = ...,
        alias: bool = ...,
        idempotency_key: str | NotGiven = ...,
        **fields: Any,
    ) -> Awaiting[TaskHandle[AsyncClient]]: ...
    def extend_music(
        self,
        *,
        audio_url: str,
        prompt: str | None = None,
        extend_seconds: float | None = None,
        side: str | None = None,
        alias: bool = False,
        idempotency_key: str | NotGiven = NOT_GIVEN,
        **fields: Any,
    ) -> Any:
        """``POST /v5/extend/music`` (``alias=True``: ``/v1/generate/extend``), v5 only."""
        text(audio_url, "audio_url", required=True)
        text(prompt, "prompt")
        for name, value in (("extend_seconds", extend_seconds), ("side", side)):
            if value is not None:
                field_rule(_EXTEND_MUSIC.field(name), value, name)
        _, max_bytes, limit_text, formats = FILE_LIMITS["extend_music"]
        known_file_input(
            audio_url,
            "audio_url",
            self._c._uploads,
            max_bytes=max_bytes,
            limit_text=limit_text,
            formats=formats,
        )
        if "version" in fields:
            raise ValidationError("version", "extend_music is v5 only")
        path = "/v1/generate/extend" if alias else "/v5/extend/music"
        return self._send(
            path,
            {
                "audio_url": audio_url,
                "prompt": prompt,
                "extend_seconds": extend_seconds,
                "side": side,
                **fields,
            },
            idempotency_key,
        )
