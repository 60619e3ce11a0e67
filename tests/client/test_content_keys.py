"""Creates costly to repeat do not depend on the record alone: an upload is keyed by its
bytes, and a create that names an uploaded file is keyed by the file's SHA-256 (and its
settings), not by the file id. With the record lost, the service's idempotency returns the
original voice clone: nothing is bought twice, whether or not the service also
deduplicates the upload itself.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from songlab.client import Client
from songlab.client._create import content_keyed
from songlab.client._files import upload_key
from songlab.client._models import UploadedFile

DATA = Path(__file__).resolve().parents[2] / "data"
REFERENCE = DATA / "voice_female.mp3"
ATTEST = "I am the singer in this recording and I own all rights to it."


def _balance(c: Client) -> int:
    return c.account.balance().total_effective


def _clone(c: Client, name: str = "Ana") -> tuple[str, str]:
    up = c.files.upload(REFERENCE)
    h = c.voice_clones.create(
        reference_file_id=up, name=name, consent=True, rights_attestation=ATTEST
    )
    return up.file_id, h.task_id


def _ignore_upload_keys(c: Client) -> None:
    """A service that does not deduplicate uploads: the key never reaches it."""

    def strip(request):
        if request.url.path == "/v1/files":
            request.headers.pop("Idempotency-Key", None)

    c._http.event_hooks["request"].append(strip)


@pytest.mark.parametrize("service_dedups_uploads", [True, False], ids=["sandbox", "no-upload-keys"])
def test_a_lost_record_does_not_buy_the_clone_again(
    sandbox, new_account, tmp_path, service_dedups_uploads
):
    acct = new_account()
    opts = {"base_url": sandbox.base_url, "quiet": True, "reuse": "account"}
    with Client(acct.api_key, record=tmp_path / "first.sqlite", **opts) as c:
        file1, task1 = _clone(c)
        c.generations.wait(task1, timeout=120)
        spent = _balance(c)
    assert spent < 100000  # the clone was bought
    # the record is lost: a new, empty one (and a new process would have no memory either)
    with Client(acct.api_key, record=tmp_path / "second.sqlite", **opts) as c:
        if not service_dedups_uploads:
            _ignore_upload_keys(c)
        file2, task2 = _clone(c)
        assert task2 == task1  # the service returned the original clone
        assert c.generations.wait(task2, timeout=120).status == "completed"
        assert _balance(c) == spent  # nothing bought twice
        assert (file2 == file1) is service_dedups_uploads
        clones = [t for t in c.generations.list(limit=100) if t.operation == "vocal_clone"]
        assert len(clones) == 1


def test_other_settings_are_another_clone(sandbox, new_account, tmp_path):
    acct = new_account()
    with Client(
        acct.api_key, base_url=sandbox.base_url, quiet=True, record=tmp_path / "r.sqlite"
    ) as c:
        _, first = _clone(c, name="Ana")
        _, second = _clone(c, name="Bea")  # same bytes, another name: a new clone
        assert first != second


def test_the_upload_carries_a_key_of_its_bytes_and_the_sandbox_keeps_the_file(
    sandbox, new_account, tmp_path
):
    acct = new_account()
    sent: list[str | None] = []
    data = REFERENCE.read_bytes()
    for n in range(2):  # two clients, each with a record of its own
        with Client(
            acct.api_key, base_url=sandbox.base_url, quiet=True, record=tmp_path / f"{n}.sqlite"
        ) as c:
            c._http.event_hooks["request"].append(
                lambda r: (
                    sent.append(r.headers.get("idempotency-key"))
                    if r.url.path == "/v1/files"
                    else None
                )
            )
            up = c.files.upload(data, filename="voice.mp3")
            assert up.sha256 == hashlib.sha256(data).hexdigest()
            if n == 0:
                first = up.file_id
    assert up.file_id == first
    assert sent[0] == sent[1] == upload_key(c.key_id, c.base_url, up.sha256, "audio/mpeg")
    # reuse=False: no key, a new file
    with Client(acct.api_key, base_url=sandbox.base_url, quiet=True, reuse=False) as off:
        assert off.files.upload(data, filename="voice.mp3").file_id != first


def test_content_keyed_replaces_only_files_it_knows():
    sha = "a" * 64
    up = UploadedFile("11111111-2222-4333-8444-555555555555", "audio/mpeg", 10, sha, {})
    canonical = '{"name":"Ana","reference_file_id":"11111111-2222-4333-8444-555555555555"}'
    own = hashlib.sha256(canonical.encode()).hexdigest()
    keyed = content_keyed(canonical, own, {up.file_id: up})
    assert (
        keyed
        == hashlib.sha256(
            f'{{"name":"Ana","reference_file_id":"sha256:{sha}"}}'.encode()
        ).hexdigest()
    )
    assert content_keyed(canonical, own, {}) == own  # a file id it did not upload
    other = UploadedFile(up.file_id, None, None, None, {})  # bytes not known (a URL upload)
    assert content_keyed(canonical, own, {up.file_id: other}) == own
