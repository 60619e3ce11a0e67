"""Dedicated routes: voice clones and song translations (the workflows: ``_workflows``).

Their ``license`` is a tier name (``royalty_free`` ... ``master``; an integer
0-5 is converted). File-id fields take a string or an :class:`UploadedFile`;
when the client knows the file (it uploaded it, or was given the object) the
route's size and format limits are checked before sending.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Unpack

from songlab.client._call import NotGiven, Op
from songlab.client._cost_estimate import estimate_route
from songlab.client._create import (
    CreateOptions,
    CreateRequest,
    create_op,
    create_options,
    route_request,
)
from songlab.client._files import FileRef, file_id_of
from songlab.client._handle import TaskHandle, wait_op
from songlab.client._models import UploadedFile, VoiceClone
from songlab.client._typing import C, Resource, creates, operation
from songlab.client._validate import license_name, require, route_body

if TYPE_CHECKING:
    from songlab.client._base import BaseClient

__all__ = ["SongTranslations", "VoiceClones", "known_files", "license_or_default"]


def known_files(client: BaseClient, value: object) -> dict[str, UploadedFile]:
    """The files the client knows (its uploads, and ``value`` if it is an UploadedFile)."""
    known = dict(client._uploads)
    if isinstance(value, UploadedFile):
        known[value.file_id] = value
    return known


def license_or_default(license: int | str | NotGiven) -> str:
    return "royalty_free" if isinstance(license, NotGiven) else license_name(license)


def _clone_request(
    client: BaseClient,
    reference_file_id: FileRef,
    consent: bool,
    rights_attestation: str,
    name: str | None,
    description: str | None,
    version: str,
    license: int | str | NotGiven,
) -> CreateRequest:
    require(consent is True, "consent", "must be True (the speaker consented to the clone)")
    lic = license_or_default(license)
    body: dict[str, object] = {
        "reference_file_id": file_id_of(reference_file_id, "reference_file_id"),
        "consent": True,
        "rights_attestation": rights_attestation,
        "version": version,
        "license": lic,
    }
    route_body(
        "voice-clones",
        {**body, "name": name, "description": description},
        known_files(client, reference_file_id),
    )
    if name is not None:
        body["name"] = name
    if description is not None:
        body["description"] = description
    estimate = estimate_route("/v1/voice-clones", lic, version=version)
    return route_request("/v1/voice-clones", body, estimate)


class VoiceClones(Resource[C]):
    @creates
    def create(
        self,
        *,
        reference_file_id: FileRef,
        consent: bool,
        rights_attestation: str,
        name: str | None = None,
        description: str | None = None,
        version: str = "v5",
        **options: Unpack[CreateOptions],
    ) -> Op[TaskHandle[C]]:
        """``POST /v1/voice-clones`` -> :class:`TaskHandle` with ``consent_id``.

        The reference is an uploaded mp3/m4a of at most 15 MiB; ``consent`` must
        be True. When the task completes, ``task.vocal_id`` is the saved voice.
        """
        reuse, license = create_options(options, "create")
        request = _clone_request(
            self._c,
            reference_file_id,
            consent,
            rights_attestation,
            name,
            description,
            version,
            license,
        )
        return (yield from create_op(self._c, request, reuse))

    @operation
    def clone(
        self,
        *,
        reference_file_id: FileRef,
        consent: bool,
        rights_attestation: str,
        name: str | None = None,
        description: str | None = None,
        version: str = "v5",
        timeout: float = 600.0,
        **options: Unpack[CreateOptions],
    ) -> Op[VoiceClone]:
        """:meth:`create` and wait (at most ``timeout`` s) -> :class:`VoiceClone` with the
        ``vocal_id`` to use."""
        reuse, license = create_options(options, "clone")
        request = _clone_request(
            self._c,
            reference_file_id,
            consent,
            rights_attestation,
            name,
            description,
            version,
            license,
        )
        handle = yield from create_op(self._c, request, reuse)
        task = yield from wait_op(handle.task_id, timeout, None, True, 0.5, True)
        return VoiceClone(task.vocal_id, handle.consent_id, task.task_id, task)


class SongTranslations(Resource[C]):
    @creates
    def create(
        self,
        *,
        song_file_id: FileRef,
        target_language: str,
        song_style: str,
        syllable_matched: bool = True,
        **options: Unpack[CreateOptions],
    ) -> Op[TaskHandle[C]]:
        """``POST /v1/song-translations`` (six billed steps) -> :class:`TaskHandle`."""
        reuse, license = create_options(options, "create")
        lic = license_or_default(license)
        body: dict[str, object] = {
            "song_file_id": file_id_of(song_file_id, "song_file_id"),
            "target_language": target_language,
            "song_style": song_style,
            "syllable_matched": syllable_matched,
            "license": lic,
        }
        route_body("song-translations", body, known_files(self._c, song_file_id))
        estimate = estimate_route("/v1/song-translations", lic)
        request = route_request("/v1/song-translations", body, estimate)
        return (yield from create_op(self._c, request, reuse))
