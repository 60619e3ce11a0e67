"""Clear errors naming the field and the rule, before anything is sent or billed: a lone
surrogate in any text, an over-long upload file name; and ``files.read`` refusing audio cut
off short of what its header announces (which the service refuses as an input too)."""

from __future__ import annotations

import io
from pathlib import Path

import httpx
import numpy as np
import pytest
import soundfile as sf

from songlab.client import Client, InvalidGenerationInput, ValidationError
from songlab.codec import CodecError, cut_off
from songlab.spec import LIMITS

NAME_MAX = int(LIMITS["upload_filename_chars"])
DATA = Path(__file__).resolve().parents[2] / "data"


@pytest.fixture
def client(sandbox, new_account):
    acct = new_account()
    with Client(acct.api_key, base_url=sandbox.base_url, quiet=True) as c:
        posts: list[str] = []
        c._http.event_hooks["request"].append(
            lambda r: posts.append(r.url.path) if r.method == "POST" else None
        )
        c.posts = posts  # type: ignore[attr-defined]
        yield c


@pytest.mark.parametrize(
    ("make", "field"),
    [
        (
            lambda c: c.generations.create(
                operation="generate_song", model="v5", payload={"prompt": "caf\ud83d"}
            ),
            "payload.prompt",
        ),
        (
            lambda c: c.generations.create(
                operation="generate_song",
                model="v5",
                payload={"prompt": "ok", "lyrics": "la", "tags": ["a", "b\udfff"]},
            ),
            "payload.tags[1]",
        ),
        (
            lambda c: c.generations.create(
                operation="generate_song", model="v5", payload='{"prompt": "\\ud800 x"}'
            ),
            "payload.prompt",
        ),
        (
            lambda c: c.voice_clones.create(
                reference_file_id="00000000-0000-4000-8000-000000000001",
                name="Ana\ud83d",
                consent=True,
                rights_attestation="mine",
            ),
            "name",
        ),
        (lambda c: c.agent.start(tier="flash", prompt="\udc00 jingle"), "payload.prompt"),
    ],
    ids=["native", "nested", "json-text", "dedicated", "agent"],
)
def test_a_lone_surrogate_names_the_field_and_the_rule(client, make, field):
    with pytest.raises(ValidationError) as caught:
        make(client)
    e = caught.value
    assert e.field == field
    assert "must be valid Unicode text: it holds a lone surrogate U+" in str(e)
    assert "emoji cut in two" in str(e)
    assert client.posts == []  # nothing sent, nothing billed


def test_an_emoji_whole_is_fine(client):
    h = client.generations.create(
        operation="write_lyrics", model="v5", payload={"prompt": "coffee \U0001f600"}
    )
    assert h.task_id


def test_an_upload_file_name_is_at_most_255_characters(client):
    ok = client.files.upload(b"\x00" * 10, filename="a" * (NAME_MAX - 4) + ".bin")
    assert ok.file_id
    before = list(client.posts)
    with pytest.raises(ValidationError) as caught:
        client.files.upload(b"\x00" * 10, filename="a" * NAME_MAX + ".bin")
    assert caught.value.field == "filename"
    assert f"at most {NAME_MAX} characters, got {NAME_MAX + 4}" in str(caught.value)
    with pytest.raises(ValidationError, match="filename: must be valid Unicode text"):
        client.files.upload(b"\x00" * 10, filename="x\ud800.bin")
    assert client.posts == before  # refused before sending


def test_the_sandbox_refuses_an_over_long_name_too(sandbox, new_account):
    acct = new_account()
    h = {"Authorization": f"Bearer {acct.api_key}"}
    with httpx.Client(base_url=sandbox.base_url, headers=h) as raw:
        ok = raw.post("/v1/files", files={"file": ("a" * NAME_MAX, b"x", "text/plain")})
        assert ok.status_code == 201
        r = raw.post("/v1/files", files={"file": ("a" * (NAME_MAX + 1), b"x", "text/plain")})
    assert r.status_code == 422
    body = r.json()
    assert body["error"] == "InvalidGenerationInput" and "filename" in body["message"]
    assert f"at most {NAME_MAX} characters" in body["message"]


def _wav(seconds: float = 1.0) -> bytes:
    buf = io.BytesIO()
    sf.write(buf, np.zeros((int(8000 * seconds), 1), np.float32), 8000, format="WAV")
    return buf.getvalue()


def test_files_read_refuses_a_cut_off_wav_naming_the_file(client):
    whole = _wav()
    cut = whole[: len(whole) // 2]
    assert cut_off(whole) is None and "is truncated" in str(cut_off(cut))
    assert sf.read(io.BytesIO(cut))[0].shape[0] > 0  # a decoder reads half without a word
    up = client.files.upload(cut, filename="cut.wav")
    with pytest.raises(CodecError) as caught:
        client.files.read(up)
    text = str(caught.value)
    assert text.startswith(f"file {up.file_id} is truncated (its WAV header announces ")
    assert f"it has {len(cut):,})" in text and "the service refuses it as an input too" in text
    # ... and the service does refuse it as an input, by the same rule
    with pytest.raises(InvalidGenerationInput, match="truncated"):
        client.generations.create(
            operation="audio_effect",
            model="v5",
            payload={"audio": f"file_id:{up.file_id}", "effect": "reverb"},
        )
    assert client.files.read(client.files.upload(whole, filename="whole.wav")).samples.shape[1]
