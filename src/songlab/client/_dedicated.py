"""Dedicated routes: voice clones and song translations (the workflows: ``_workflows``).

Their ``license`` is a tier name (``royalty_free`` ... ``master``; an integer
0-5 is converted). File-id fields take a string or an :class:`UploadedFile`;
when the client knows the file (it uploaded it, or was given the object) the
route's size and format limits are checked before sending.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Generic, overload

from songlab.client._call import NOT_GIVEN, NotGiven, Op
from songlab.client._estimate import estimate_route
from songlab.client._files import file_id_of
from songlab.client._generations import resolve_key
from songlab.client._models import UploadedFile, VoiceClone
from songlab.client._typing import Awaiting, C
from songlab.client._validate import license_name, require, route_body

if TYPE_CHECKING:
    from songlab.client._async import AsyncClient
    from songlab.client._handle import TaskHandle
    from songlab.client._sync import Client

__all__ = ["SongTranslations", "VoiceClones", "license_or_default"]


def _known(client: Any, value: Any) -> dict[str, Any]:
    """The files the client knows (its uploads, and ``value`` if it is an UploadedFile)."""
    known = dict(client._uploads)
    if isinstance(value, UploadedFile):
        known[value.file_id] = value
    return known


def license_or_default(license: Any) -> str:
    return "royalty_free" if isinstance(license, NotGiven) else license_name(license)


class VoiceClones(Generic[C]):
    def __init__(self, client: C) -> None:
        self._c = client

    def _create_op(
        self,
        reference_file_id: Any,
        consent: Any,
        rights_attestation: Any,
        name: Any,
        description: Any,
        version: Any,
        license: Any,
        key: Any,
        take: Any = 1,
        fresh: Any = False,
    ) -> Op:
        key = resolve_key(key)
        require(consent is True, "consent", "must be True (the speaker consented to the clone)")
        lic = license_or_default(license)
        fid = file_id_of(reference_file_id, "reference_file_id")
        body: dict[str, Any] = {
            "reference_file_id": fid,
            "consent": True,
            "rights_attestation": rights_attestation,
            "version": version,
            "license": lic,
        }
        route_body(
            "voice-clones",
            {**body, "name": name, "description": description},
            _known(self._c, reference_file_id),
        )
        if name is not None:
            body["name"] = name
        if description is not None:
            body["description"] = description
        est = estimate_route("/v1/voice-clones", lic, version=version)
        return (yield from self._c._create_op("/v1/voice-clones", body, est, key, take, fresh))

    @overload
    def create(
        self: VoiceClones[Client],
        *,
        reference_file_id: str | UploadedFile,
        consent: bool,
        rights_attestation: str,
        name: str | None = ...,
        description: str | None = ...,
        version: str = ...,
        license: str | int | NotGiven = ...,
        idempotency_key: str | NotGiven = ...,
        take: int = ...,
        fresh: bool = ...,
    ) -> TaskHandle[Client]: ...
    @overload
    def create(
        self: VoiceClones[AsyncClient],
        *,
        reference_file_id: str | UploadedFile,
        consent: bool,
        rights_attestation: str,
        name: str | None = ...,
        description: str | None = ...,
        version: str = ...,
        license: str | int | NotGiven = ...,
        idempotency_key: str | NotGiven = ...,
        take: int = ...,
        fresh: bool = ...,
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
        take: int = 1,
        fresh: bool = False,
    ) -> Any:
        """``POST /v1/voice-clones`` -> :class:`TaskHandle` with ``consent_id``.

        The reference is an uploaded mp3/m4a of at most 15 MiB; ``consent`` must
        be True. When the task completes, ``task.vocal_id`` is the saved voice.
        """
        return self._c._drive(
            self._create_op(
                reference_file_id,
                consent,
                rights_attestation,
                name,
                description,
                version,
                license,
                idempotency_key,
                take,
                fresh,
            )
        )

    @overload
    def clone(self: VoiceClones[Client], *, timeout: float = ..., **fields: Any) -> VoiceClone: ...
    @overload
    def clone(
        self: VoiceClones[AsyncClient], *, timeout: float = ..., **fields: Any
    ) -> Awaiting[VoiceClone]: ...
    def clone(self, *, timeout: float = 600.0, **fields: Any) -> Any:
        """create() and wait -> :class:`VoiceClone` with the ``vocal_id`` to use."""

        def finish(handle: Any) -> Any:
            return self._c._then(
                handle.wait(timeout=timeout),
                lambda task: VoiceClone(task.vocal_id, handle.consent_id, task.task_id, task),
            )

        me: Any = self  # the overloads above say what create() returns
        return self._c._then(me.create(**fields), finish)


class SongTranslations(Generic[C]):
    def __init__(self, client: C) -> None:
        self._c = client

    def _create_op(
        self,
        song_file_id: Any,
        target_language: Any,
        song_style: Any,
        syllable_matched: Any,
        license: Any,
        key: Any,
        take: Any = 1,
        fresh: Any = False,
    ) -> Op:
        key = resolve_key(key)
        lic = license_or_default(license)
        fid = file_id_of(song_file_id, "song_file_id")
        body = {
            "song_file_id": fid,
            "target_language": target_language,
            "song_style": song_style,
            "syllable_matched": syllable_matched,
            "license": lic,
        }
        route_body("song-translations", body, _known(self._c, song_file_id))
        est = estimate_route("/v1/song-translations", lic)
        return (yield from self._c._create_op("/v1/song-translations", body, est, key, take, fresh))

    @overload
    def create(
        self: SongTranslations[Client],
        *,
        song_file_id: str | UploadedFile,
        target_language: str,
        song_style: str,
        syllable_matched: bool = ...,
        license: str | int | NotGiven = ...,
        idempotency_key: str | NotGiven = ...,
        take: int = ...,
        fresh: bool = ...,
    ) -> TaskHandle[Client]: ...
    @overload
    def create(
        self: SongTranslations[AsyncClient],
        *,
        song_file_id: str | UploadedFile,
        target_language: str,
        song_style: str,
        syllable_matched: bool = ...,
        license: str | int | NotGiven = ...,
        idempotency_key: str | NotGiven = ...,
        take: int = ...,
        fresh: bool = ...,
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
        take: int = 1,
        fresh: bool = False,
    ) -> Any:
        """``POST /v1/song-translations`` (six billed steps) -> :class:`TaskHandle`."""
        return self._c._drive(
            self._create_op(
                song_file_id,
                target_language,
                song_style,
                syllable_matched,
                license,
                idempotency_key,
                take,
                fresh,
            )
        )
