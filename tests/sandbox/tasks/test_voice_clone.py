"""Voice clones: every field rule, consent, ownership of the saved voice, its use."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.sandbox._util import (
    assert_invalid,
    balance,
    client,
    create,
    ledger,
    m4a_tone,
    tid,
    tone,
    upload,
    wait,
)

MiB = 1024 * 1024


def voice_recording(seconds: float = 3.0, f0: float = 140.0, sr: int = 22050) -> bytes:
    import io

    import soundfile as sf

    t = np.arange(int(seconds * sr)) / sr
    vib = f0 * (1 + 0.03 * np.sin(2 * np.pi * 5 * t))
    phase = 2 * np.pi * np.cumsum(vib) / sr
    x = sum(np.sin(k * phase) / k for k in range(1, 12)) * 0.2
    buf = io.BytesIO()
    sf.write(buf, x.astype(np.float32), sr, format="MP3")
    return buf.getvalue()


@pytest.fixture
def ref(acct):
    return upload(acct, voice_recording())


def clone_body(ref: str, **over):
    return {
        "reference_file_id": ref,
        "consent": True,
        "rights_attestation": "I am the speaker and own this recording.",
        **over,
    }


def test_clone_creates_consent_then_a_saved_voice(acct, admin, ref):
    r = acct.post("/v1/voice-clones", json=clone_body(ref, name="Me", version="v6"))
    assert r.status_code == 201
    body = r.json()
    assert set(body) == {"task_id", "status", "consent_id"} and body["status"] == "queued"
    snap = wait(acct, body["task_id"])
    assert snap["status"] == "completed", snap
    assert (snap["operation"], snap["model"]) == ("vocal_clone", "v6")
    assert snap["tool_id"] == tid("vocal_clone", "v6")
    assert "assets" not in snap["output"]
    meta = json.loads(snap["output"]["metadata_json"])
    assert meta["vocal_id"].startswith("voice_")
    lines = ledger(admin, acct.account_id)
    assert [(x["kind"], x["amount_usd"]) for x in lines] == [("voice_clone", "12.00000000")]
    assert balance(acct)["total_effective"] == 100000 - 1200


def test_clone_flat_price_in_every_tier(acct, admin, ref):
    r = acct.post("/v1/voice-clones", json=clone_body(ref, license="master"))
    snap = wait(acct, r.json()["task_id"])
    assert snap["cost_usd"] == "12.00000000" and snap["license"] == 5


def test_clone_accepts_m4a(acct):
    fid = upload(acct, m4a_tone(2.0, freq=150.0), name="v.m4a", mime="audio/mp4")
    r = acct.post("/v1/voice-clones", json=clone_body(fid))
    assert r.status_code == 201, r.text


@pytest.mark.parametrize(
    "over,field",
    [
        ({"consent": False}, "consent"),
        ({"consent": "true"}, "consent"),
        ({"consent": None}, "consent"),
        ({"rights_attestation": None}, "rights_attestation"),
        ({"rights_attestation": ""}, "rights_attestation"),
        ({"rights_attestation": "a" * 2049}, "rights_attestation"),
        ({"name": "n" * 256}, "name"),
        ({"name": 5}, "name"),
        ({"description": "d" * 1025}, "description"),
        ({"version": "v4"}, "version"),
        ({"license": 2}, "license"),
        ({"license": "platinum"}, "license"),
        ({"reference_file_id": None}, "reference_file_id"),
        ({"reference_file_id": "not-a-uuid"}, "reference_file_id"),
        ({"reference_file_id": "00000000-0000-0000-0000-000000000000"}, "reference_file_id"),
    ],
    ids=lambda v: str(v)[:40],
)
def test_clone_field_rules(acct, admin, ref, over, field):
    assert_invalid(acct.post("/v1/voice-clones", json=clone_body(ref, **over)), field)
    assert acct.get("/v1/generations").json()["data"] == []
    assert ledger(admin, acct.account_id) == []


def test_clone_limits_at_the_edges_are_accepted(acct, ref):
    body = clone_body(
        ref,
        name="n" * 255,
        description="d" * 1024,
        rights_attestation="a" * 2048,
        version="v7",
        license="standard",
    )
    assert acct.post("/v1/voice-clones", json=body).status_code == 201


def test_clone_reference_must_be_mp3_or_m4a_and_at_most_15_mib(acct):
    wav = upload(acct, tone(1.0, fmt="WAV"), name="a.wav", mime="audio/wav")
    assert_invalid(acct.post("/v1/voice-clones", json=clone_body(wav)), "reference_file_id")
    big = upload(acct, voice_recording() + b"\0" * (15 * MiB), name="big.mp3")
    assert_invalid(acct.post("/v1/voice-clones", json=clone_body(big)), "reference_file_id")


def test_clone_reference_of_another_account_is_refused(sandbox, acct, new_account):
    with client(sandbox, new_account().api_key) as other:
        theirs = upload(other, voice_recording())
    assert_invalid(acct.post("/v1/voice-clones", json=clone_body(theirs)), "reference_file_id")


def test_clone_is_idempotent(acct, ref):
    a = acct.post("/v1/voice-clones", json=clone_body(ref), headers={"Idempotency-Key": "vc"})
    b = acct.post("/v1/voice-clones", json=clone_body(ref), headers={"Idempotency-Key": "vc"})
    assert a.json() == b.json() and "consent_id" in a.json()


def test_saved_voice_is_usable_only_by_its_account(sandbox, acct, ref, new_account):
    snap = wait(acct, acct.post("/v1/voice-clones", json=clone_body(ref)).json()["task_id"])
    vocal_id = json.loads(snap["output"]["metadata_json"])["vocal_id"]
    song = acct.post(
        "/v7/generate/song",
        json={"prompt": "ballad", "lyrics": "la la", "vocal_id": vocal_id, "duration_seconds": 5},
    )
    assert song.status_code == 201, song.text
    assert wait(acct, song.json()["task_id"])["status"] == "completed"
    sing = acct.post(
        "/v5/generate/singing",
        json={"styleOfMusic": "soul", "lyrics": "oh", "vocal_id": vocal_id, "duration_seconds": 5},
    )
    assert sing.status_code == 201, sing.text
    with client(sandbox, new_account().api_key) as other:
        r = other.post("/v7/generate/song", json={"prompt": "x", "vocal_id": vocal_id})
        assert_invalid(r, "vocal_id")
    assert_invalid(
        acct.post("/v7/generate/song", json={"prompt": "x", "vocal_id": "voice_nope"}), "vocal_id"
    )
    r = create(acct, "melody_to_song", "v5", {"melody": f"file_id:{ref}", "vocal_id": vocal_id})
    assert_invalid(r, "vocal_id")


def test_native_vocal_clone_with_an_issued_consent_id(acct, admin, ref):
    consent_id = acct.post("/v1/voice-clones", json=clone_body(ref)).json()["consent_id"]
    r = create(acct, "vocal_clone", "v5", {"consent_id": consent_id})
    assert r.status_code == 201, r.text
    snap = wait(acct, r.json()["task_id"])
    assert snap["status"] == "completed"
    assert json.loads(snap["output"]["metadata_json"])["vocal_id"]


def test_foreign_consent_id_is_refused(sandbox, acct, ref, new_account):
    consent_id = acct.post("/v1/voice-clones", json=clone_body(ref)).json()["consent_id"]
    with client(sandbox, new_account().api_key) as other:
        assert_invalid(create(other, "vocal_clone", "v5", {"consent_id": consent_id}), "consent_id")
