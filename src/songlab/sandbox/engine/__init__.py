"""The sandbox's audio engine: deterministic, procedural rendering of every audio operation.

Contract between the sandbox worker and the engine (the worker never renders
audio itself, the engine never touches storage, HTTP or billing):

``render(operation, model, payload, *, seed, inputs, voice) -> RenderResult``
    ``operation``/``model``: a catalog tool (or an internal one: ``mix``,
    ``translate_lyrics``, ``web_search``). ``payload``: the task's decoded
    ``payload_json`` with file-input fields removed; the resolved file inputs
    are in ``inputs`` keyed by field name (``song``, ``audio``, ``music``,
    ``melody``, ``midi``, ``vocal_reference``; ``mix`` takes ``tracks`` as
    ``track0``, ``track1``...). ``voice``: the saved voice's timbre when the
    payload carried a ``vocal_id``. Deterministic: the same arguments give the
    same bytes. Raises :class:`RenderError` for what fails *during generation*
    (an unknown ``extend_type``); the task then fails and is released.

``check_audio(data, *, field, formats) -> AudioInfo``
    Decode-check an upload at create time; raises :class:`EngineInputError`
    naming ``field`` for non-audio, truncated or wrong-format data.

``extract_voice(data) -> Voice``
    Timbre of a reference recording, stored with the saved voice (JSON-able).

Every output :class:`Asset` carries a ``recipe``: a JSON-able dict the sandbox
stores with the file and hands back as ``AudioIn.recipe`` when the file is
used as an input later, so a sandbox song's stems, lyrics and timbre can be
recovered exactly (``separate_stems`` of a sandbox song returns its true
stems; ``transcribe`` returns its lyrics).
"""

from __future__ import annotations

from songlab.sandbox.engine._api import (
    AudioIn,
    AudioInfo,
    Asset,
    EngineInputError,
    RenderError,
    RenderResult,
    Voice,
    check_audio,
    extract_voice,
    render,
)

__all__ = [
    "Asset",
    "AudioIn",
    "AudioInfo",
    "EngineInputError",
    "RenderError",
    "RenderResult",
    "Voice",
    "check_audio",
    "extract_voice",
    "render",
]
