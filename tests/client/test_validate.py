"""Every client-side rule: raised before any create is sent, naming the field and the rule."""

from __future__ import annotations

import warnings

import pytest

from songlab.client import ClampWarning, UploadedFile, ValidationError

SONG = {"url": "file_id:f-1"}
OK_CLONE = dict(reference_file_id="f-ref", consent=True, rights_attestation="I own it")


def up(fid="f-big", size=10, mime="audio/mpeg"):
    return UploadedFile(fid, mime, size, None, {})


CASES = [
    # (id, call(client), field, rule fragment)
    (
        "key-too-long",
        lambda c: c.generations.create(
            tool_id="t-song-v5", payload={"prompt": "p"}, idempotency_key="k" * 201
        ),
        "idempotency_key",
        "200",
    ),
    (
        "key-bad-chars",
        lambda c: c.generations.create(
            tool_id="t-song-v5", payload={"prompt": "p"}, idempotency_key="a b/c"
        ),
        "idempotency_key",
        "A-Z",
    ),
    (
        "key-empty",
        lambda c: c.compat.generate_song(prompt="p", idempotency_key=""),
        "idempotency_key",
        "empty",
    ),
    (
        "license-6",
        lambda c: c.generations.create(tool_id="t-song-v5", payload={"prompt": "p"}, license=6),
        "license",
        "0-5",
    ),
    (
        "license-bool",
        lambda c: c.generations.create(tool_id="t-song-v5", payload={"prompt": "p"}, license=True),
        "license",
        "bool",
    ),
    (
        "license-name",
        lambda c: c.song_translations.create(
            song_file_id="f", target_language="French", song_style="pop", license="gold"
        ),
        "license",
        "royalty_free",
    ),
    (
        "payload-list",
        lambda c: c.generations.create(tool_id="t-song-v5", payload=[1]),
        "payload",
        "dict",
    ),
    (
        "payload-text-not-object",
        lambda c: c.generations.create(tool_id="t-song-v5", payload="[1, 2]"),
        "payload",
        "JSON object",
    ),
    (
        "payload-not-json",
        lambda c: c.generations.create(tool_id="t-song-v5", payload="{nope"),
        "payload",
        "not JSON",
    ),
    (
        "payload-unserialisable",
        lambda c: c.generations.create(tool_id="t-song-v5", payload={"prompt": object()}),
        "payload",
        "serialisable",
    ),
    ("no-tool", lambda c: c.generations.create(payload={"prompt": "p"}), "tool_id", "required"),
    (
        "song-prompt",
        lambda c: c.generations.create(tool_id="t-song-v5", payload={}),
        "payload.prompt",
        "required",
    ),
    (
        "song-duration",
        lambda c: c.generations.create(
            tool_id="t-song-v5", payload={"prompt": "p", "duration_seconds": 241}
        ),
        "payload.duration_seconds",
        "5-240",
    ),
    (
        "extend-song-missing",
        lambda c: c.generations.create(tool_id="t-extend-v5", payload={}),
        "payload.song",
        "required",
    ),
    (
        "extend-lyrics",
        lambda c: c.generations.create(
            tool_id="t-extend-v5", payload={"song": SONG, "lyrics": "x" * 3001}
        ),
        "payload.lyrics",
        "3000",
    ),
    (
        "extend-type",
        lambda c: c.generations.create(
            tool_id="t-extend-v5", payload={"song": SONG, "extend_type": "middle"}
        ),
        "payload.extend_type",
        "tail",
    ),
    (
        "extend-at-ms-type",
        lambda c: c.generations.create(
            tool_id="t-extend-v5", payload={"song": SONG, "extend_at_ms": 1.5}
        ),
        "payload.extend_at_ms",
        "integer",
    ),
    (
        "extend-seconds-low",
        lambda c: c.generations.create(
            tool_id="t-xmusic-v5", payload={"music": SONG, "extend_seconds": 0.5}
        ),
        "payload.extend_seconds",
        "1-120",
    ),
    (
        "extend-seconds-high",
        lambda c: c.compat.extend_music(audio_url="u", extend_seconds=121),
        "extend_seconds",
        "1-120",
    ),
    ("extend-side", lambda c: c.compat.extend_music(audio_url="u", side="left"), "side", "tail"),
    (
        "extend-music-v5-only",
        lambda c: c.compat.extend_music(audio_url="u", version="v6"),
        "version",
        "v5",
    ),
    (
        "compat-extend-audio-url",
        lambda c: c.compat.extend_song("v6", audio_url=None),
        "audio_url",
        "required",
    ),
    (
        "compat-extend-lyrics",
        lambda c: c.compat.extend_song(audio_url="u", lyrics="y" * 3001),
        "lyrics",
        "3000",
    ),
    ("compat-version", lambda c: c.compat.generate_song("v8", prompt="p"), "version", "v5"),
    (
        "melody-vocal-native",
        lambda c: c.generations.create(
            tool_id="t-melody-v5", payload={"melody": SONG, "vocal_id": "voice-1"}
        ),
        "payload.vocal_id",
        "melody",
    ),
    (
        "melody-vocal-compat",
        lambda c: c.compat.generate_song(prompt="p", vocal_id="voice-1", melody_url="http://m"),
        "vocal_id",
        "melody_url",
    ),
    (
        "sfx-duration",
        lambda c: c.generations.create(
            tool_id="t-sfx-v5", payload={"prompt": "boom", "duration_seconds": 31}
        ),
        "payload.duration_seconds",
        "0.5-30",
    ),
    (
        "native-clone",
        lambda c: c.generations.create(tool_id="t-clone-v5", payload={}),
        "tool_id",
        "voice_clones",
    ),
    ("agent-tier", lambda c: c.agent.start(tier="ultra", prompt="p"), "tier", "flash"),
    ("agent-prompt", lambda c: c.agent.start(tier="flash", prompt="  "), "payload.prompt", "empty"),
    (
        "agent-steps-high",
        lambda c: c.agent.start(tier="flash", prompt="p", max_steps=51),
        "payload.max_steps",
        "0-50",
    ),
    (
        "agent-steps-neg",
        lambda c: c.agent.start(tier="pro", prompt="p", max_steps=-1),
        "payload.max_steps",
        "0-50",
    ),
    (
        "agent-budget",
        lambda c: c.agent.start(tier="pro", prompt="p", max_budget=-5),
        "payload.max_budget",
        ">= 0",
    ),
    (
        "agent-build-only",
        lambda c: c.agent.start(tier="pro", prompt="p", workflow_build_only=1),
        "payload.workflow_build_only",
        "boolean",
    ),
    (
        "agent-studio",
        lambda c: c.generations.create(
            tool_id="t-agent-flash", payload={"prompt": "p", "studio": {}}
        ),
        "payload.studio",
        "studio",
    ),
    (
        "agent-visualizer",
        lambda c: c.generations.create(
            tool_id="t-agent-flash", payload={"prompt": "p", "visualizer_theme": "x"}
        ),
        "payload.visualizer_theme",
        "studio",
    ),
    (
        "clone-consent",
        lambda c: c.voice_clones.create(**{**OK_CLONE, "consent": False}),
        "consent",
        "True",
    ),
    ("clone-name", lambda c: c.voice_clones.create(**OK_CLONE, name="n" * 256), "name", "255"),
    (
        "clone-description",
        lambda c: c.voice_clones.create(**OK_CLONE, description="d" * 1025),
        "description",
        "1024",
    ),
    (
        "clone-rights",
        lambda c: c.voice_clones.create(**{**OK_CLONE, "rights_attestation": "r" * 2049}),
        "rights_attestation",
        "2048",
    ),
    (
        "clone-rights-missing",
        lambda c: c.voice_clones.create(**{**OK_CLONE, "rights_attestation": None}),
        "rights_attestation",
        "required",
    ),
    ("clone-version", lambda c: c.voice_clones.create(**OK_CLONE, version="v4"), "version", "v5"),
    (
        "clone-ref-size",
        lambda c: c.voice_clones.create(
            **{**OK_CLONE, "reference_file_id": up(size=15 * 1024 * 1024 + 1)}
        ),
        "reference_file_id",
        "15 MiB",
    ),
    (
        "clone-ref-format",
        lambda c: c.voice_clones.create(**{**OK_CLONE, "reference_file_id": up(mime="audio/wav")}),
        "reference_file_id",
        "mp3 or m4a",
    ),
    (
        "translation-size",
        lambda c: c.song_translations.create(
            song_file_id=up(size=60 * 1024 * 1024 + 1), target_language="French", song_style="pop"
        ),
        "song_file_id",
        "60 MiB",
    ),
    (
        "translation-language",
        lambda c: c.song_translations.create(
            song_file_id="f", target_language="", song_style="pop"
        ),
        "target_language",
        "empty",
    ),
    (
        "translation-style",
        lambda c: c.song_translations.create(
            song_file_id="f", target_language="French", song_style=None
        ),
        "song_style",
        "required",
    ),
    (
        "translation-syllables",
        lambda c: c.song_translations.create(
            song_file_id="f", target_language="French", song_style="pop", syllable_matched="yes"
        ),
        "syllable_matched",
        "boolean",
    ),
    (
        "workflow-route",
        lambda c: c.workflows.create("bass-boosts", song_file_id="f"),
        "route",
        "karaoke-tracks",
    ),
    (
        "workflow-unknown-field",
        lambda c: c.workflows.create("karaoke-tracks", song_file_id="f", tempo="fast"),
        "tempo",
        "not a field",
    ),
    (
        "workflow-inpaint-range",
        lambda c: c.workflows.audio_inpainting(song_file_id="f", start_ms=5000, end_ms=5000),
        "end_ms",
        "greater",
    ),
    ("list-limit-low", lambda c: c.generations.list(limit=0), "limit", "1-100"),
    ("list-limit-high", lambda c: c.generations.page(limit=101), "limit", "1-100"),
    ("task-id", lambda c: c.generations.get(""), "task_id", "non-empty"),
    ("wait-timeout", lambda c: c.generations.wait("t", timeout=0), "timeout", "positive"),
    ("file-id", lambda c: c.files.link(None), "file_id", "file id"),
    ("upload-source", lambda c: c.files.upload(12), "source", "path"),
    ("upload-missing", lambda c: c.files.upload("/no/such/file.mp3"), "source", "no file"),
    ("budget", lambda c: c.budget(usd=-1), "usd", "non-negative"),
]

WORKFLOW_REQUIRED = [
    ("beat_swap", {"song_file_id": "f", "prompt": "p"}),
    ("karaoke_track", {"song_file_id": "f"}),
    ("drumless_mix", {"song_file_id": "f"}),
    ("revoicing", {"song_file_id": "f", "vocal_id": "v"}),
    ("instrument_layer", {"song_file_id": "f", "instrument": "cello"}),
    ("hummed_song", {"hum_file_id": "f", "prompt": "p"}),
    ("trending_song", {"genre": "trending"}),
    ("voice_song", {"recording_file_id": "f", "prompt": "p"}),
    ("genre_remix", {"song_file_id": "f", "genre": "jazz"}),
    ("midi_song", {"midi_file_id": "f", "prompt": "p"}),
    ("vocal_layer", {"song_file_id": "f", "lyrics": "la"}),
    ("audio_inpainting", {"song_file_id": "f", "start_ms": 1000, "end_ms": 2000}),
]


@pytest.mark.parametrize(
    ("call", "field", "rule"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_rule(client, fake, call, field, rule):
    with pytest.raises(ValidationError) as info:
        call(client)
    assert info.value.field == field
    assert rule in info.value.rule
    assert field in str(info.value)
    assert fake.paths("POST") == []  # nothing was created
    assert set(fake.paths()) <= {"/v1/tools"}  # at most the (cached) tool listing


@pytest.mark.parametrize(
    ("method", "fields"), WORKFLOW_REQUIRED, ids=[w[0] for w in WORKFLOW_REQUIRED]
)
def test_workflow_required_fields(client, fake, method, fields):
    for missing in fields:
        with pytest.raises(ValidationError) as info:
            getattr(client.workflows, method)(**{**fields, missing: None})
        assert info.value.field == missing and "required" in info.value.rule
    assert fake.paths() == []
    getattr(client.workflows, method)(**fields)  # and with all of them it is sent
    assert len(fake.paths("POST")) == 1


def test_extend_input_size_and_format_of_a_known_upload(client, fake):
    client._uploads["big"] = up("big", size=40_000_001)
    client._uploads["wav"] = up("wav", mime="audio/wav")
    with pytest.raises(ValidationError, match="40 MB"):
        client.generations.create(tool_id="t-extend-v5", payload={"song": "file_id:big"})
    with pytest.raises(ValidationError, match="mp3 or m4a"):
        client.compat.extend_song(audio_url="file_id:wav")
    with pytest.raises(ValidationError, match="40 MB"):
        client.compat.extend_music(audio_url="file_id:big")
    client._uploads["ok"] = up("ok", size=40_000_000)
    client.generations.create(tool_id="t-extend-v5", payload={"song": {"url": "file_id:ok"}})
    assert len(fake.paths("POST")) == 1


def test_upload_over_64_mib_is_refused_before_reading(client, fake, tmp_path):
    big = tmp_path / "big.mp3"
    with big.open("wb") as f:
        f.truncate(64 * 1024 * 1024 + 1)  # sparse: nothing is read
    with pytest.raises(ValidationError, match="64 MiB") as info:
        client.files.upload(big)
    assert info.value.field == "source" and fake.paths() == []


@pytest.mark.parametrize(
    ("value", "applied"), [(5000, 8000), (1, 8000), (420001, 420000), (10**9, 420000)]
)
def test_out_of_range_extend_at_ms_warns_with_the_applied_value(client, fake, value, applied):
    with pytest.warns(ClampWarning, match=f"will apply {applied}"):
        client.generations.create(
            tool_id="t-extend-v5", payload={"song": SONG, "extend_at_ms": value}
        )
    with pytest.warns(ClampWarning, match=f"will apply {applied}"):
        client.compat.extend_song("v7", audio_url="u", extend_at_ms=value)
    assert len(fake.paths("POST")) == 2  # clamped, not rejected: still sent


@pytest.mark.parametrize("value", [0, 8000, 100000, 420000])
def test_in_range_extend_at_ms_is_silent(client, value):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        client.generations.create(
            tool_id="t-extend-v5", payload={"song": SONG, "extend_at_ms": value}
        )


def test_clamp_warning_is_a_user_warning():
    assert issubclass(ClampWarning, UserWarning)
