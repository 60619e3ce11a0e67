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

``decode(data) -> (float32 (channels, samples), sr)``, ``excerpt(data, seconds) -> bytes``
(the worker's partial_output), ``fingerprint(data) -> str`` and
``similarity(fp_a, fp_b) -> float`` (the worker matches a copyright check
against other accounts' outputs with these; the engine never sees the store).

Internal operations: ``mix`` (inputs ``track0``..``trackN``, payload
``gains``: list of linear gains, optional) -> one ``mix`` asset;
``translate_lyrics`` (payload ``lyrics``, ``target_language``,
``syllable_matched``) -> ``text``; ``web_search`` (payload ``query``) -> ``text``
and ``metadata["results"]``. ``transcribe`` -> ``text`` (the lyrics) and
``metadata = {"language", "segments": [{"start_ms", "end_ms", "text"}]}``.
``separate_stems`` -> one asset per stem of the model, named as
``songlab.spec.STEMS``. ``write_lyrics`` -> ``text``.

Every output :class:`Asset` carries a ``recipe``: a JSON-able dict the sandbox
stores with the file and hands back as ``AudioIn.recipe`` when the file is
used as an input later, so a sandbox song's stems, lyrics and timbre can be
recovered exactly (``separate_stems`` of a sandbox song returns its true
stems; ``transcribe`` returns its lyrics). Recipes are ``{"engine": 1, "kind":
"layers", ...}`` (re-renderable: scores, windows, gains, effects) or ``{"engine":
1, "kind": "foreign", ...}`` (made from audio the engine cannot re-render).

Additions to the first contract (all optional, nothing removed):

- payload ``format`` (every audio operation): ``mp3`` (default), ``wav``,
  ``flac``, ``ogg`` or ``m4a`` for the output assets.
- payload ``seed`` (music operations) overrides the worker's ``seed``: the
  composition depends on (prompt, lyrics, seed), not on the model, so the same
  request on v5/v6/v7 is the same song rendered by three models.
- payload ``duration_seconds`` of ``extend_song`` (length of the new part,
  default 30); ``language`` of ``generate_song``/``generate_singing`` (guessed
  from the lyrics otherwise); ``semitones`` of ``audio_effect`` pitch_shift
  (else ``amount * 12``); ``generate_music``/``similar_*`` keep the tempo and key
  of an input ``song``/``music`` when given.
- ``extract_voice(data, *, field="reference_file_id")``: raises
  :class:`EngineInputError` naming ``field`` when the bytes are not audio or
  hold no voice.
- ``similarity`` is calibrated: >= 0.9 is a near copy (re-encoded, trimmed,
  lightly edited), unrelated audio scores about 0.
- Metadata: music operations return ``genre``, ``tempo_bpm``, ``key``,
  ``mode``, ``instruments``, ``duration_s``, ``channels``, ``model`` (and
  ``voice``); ``extend_*`` return ``extend_at_ms`` (the applied, clamped value),
  ``extend_type``, ``join_s``, ``added_s``; ``separate_stems`` returns
  ``stems`` and ``method`` (``recipe`` or ``spectral``); ``copyright`` returns
  ``fingerprint``; ``translate_lyrics`` returns ``language``; ``audio_effect``
  returns the applied settings (``loudness_lufs`` after ``normalize``).
- :class:`RenderError` also covers a bad ``effect``, ``side``, a stem model
  that is not a stem model, and an inpaint range outside the song.

Models: v5 renders mono, band-limited to 8 kHz, 6 partials per note; v6
stereo (narrower image), 14 kHz, 12 partials; v7 stereo, full band, 28
partials with a slower roll-off. See docs/audio-engine.md.
"""

from __future__ import annotations

from songlab.sandbox.engine._entry_points import (
    Asset,
    AudioIn,
    AudioInfo,
    EngineInputError,
    Metadata,
    Recipe,
    RenderError,
    RenderResult,
    Voice,
    check_audio,
    decode,
    excerpt,
    extract_voice,
    fingerprint,
    render,
    similarity,
)

__all__ = [
    "Asset",
    "AudioIn",
    "AudioInfo",
    "EngineInputError",
    "Metadata",
    "Recipe",
    "RenderError",
    "RenderResult",
    "Voice",
    "check_audio",
    "decode",
    "excerpt",
    "extract_voice",
    "fingerprint",
    "render",
    "similarity",
]
