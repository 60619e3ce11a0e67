"""Input audio is probed once per file, in a worker thread, never under the store's lock."""

from __future__ import annotations

import asyncio
import base64

import pytest

from songlab.sandbox.tasks import validation
from tests.sandbox._util import assert_invalid, create, tone, upload


@pytest.fixture
def probes(sandbox, monkeypatch):
    """Every probe the sandbox runs: (on the event loop?, store lock held?)."""
    calls: list[tuple[bool, bool]] = []
    real = validation.probe_verdict
    lock = sandbox.sandbox.store.lock

    def spy(data: bytes) -> dict:
        try:
            asyncio.get_running_loop()
            on_loop = True
        except RuntimeError:
            on_loop = False
        calls.append((on_loop, lock._is_owned()))
        return real(data)

    monkeypatch.setattr(validation, "probe_verdict", spy)
    return calls


def test_an_upload_is_probed_once_and_its_creates_reuse_the_verdict(acct, probes):
    fid = upload(acct, tone(2.0))
    assert len(probes) == 1
    for _ in range(3):
        r = acct.post("/v1/karaoke-tracks", json={"song_file_id": fid})
        assert r.status_code == 201, r.text
        assert (
            create(acct, "separate_stems", "2stem", {"audio": f"file_id:{fid}"}).status_code == 201
        )
    assert len(probes) == 1
    assert probes == [(False, False)]  # a worker thread, the lock free


def test_a_bad_file_is_refused_from_its_cached_verdict(acct, probes):
    fid = upload(acct, b"ID3" + bytes(3000), "bad.mp3")
    for _ in range(2):
        assert_invalid(acct.post("/v1/karaoke-tracks", json={"song_file_id": fid}), "song_file_id")
    assert len(probes) == 1


def test_inline_and_task_output_inputs_are_probed_off_the_loop_and_lock(acct, probes):
    b64 = base64.b64encode(tone(1.0)).decode()
    r = create(acct, "transcribe", "whisper-transcribe-v1", {"audio": {"base64": b64}})
    assert r.status_code == 201, r.text
    assert probes and all(p == (False, False) for p in probes)
