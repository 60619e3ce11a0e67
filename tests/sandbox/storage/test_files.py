"""Files: upload, link and download routes, signed URLs, storage locators, file inputs."""

from __future__ import annotations

import base64
import hashlib
import http.server
import socket
import threading

import httpx
import pytest

from tests.sandbox._util import (
    assert_invalid,
    client,
    create,
    m4a_tone,
    run,
    signed_url,
    tone,
    upload,
    wait,
)

MiB = 1024 * 1024


@pytest.fixture
def other(sandbox, new_account):
    with client(sandbox, new_account().api_key) as c:
        yield c


def test_multipart_upload_answers_file_id_mime_size_sha(acct):
    data = tone(1.0)
    r = acct.post("/v1/files", files={"file": ("a.mp3", data, "audio/mpeg")})
    assert r.status_code == 201
    body = r.json()
    assert set(body) == {"file_id", "mime_type", "size_bytes", "sha256"}
    assert body["size_bytes"] == len(data)
    assert body["sha256"] == hashlib.sha256(data).hexdigest()
    assert body["mime_type"] == "audio/mpeg"


def test_link_and_download_routes_and_signed_url(acct):
    data = tone(1.0)
    fid = upload(acct, data)
    link = acct.get(f"/v1/files/{fid}/url")
    assert link.status_code == 200
    body = link.json()
    assert set(body) == {"file_id", "url", "mime_type", "expires_at"}
    assert body["file_id"] == fid and body["expires_at"].endswith("Z")
    assert "/_signed/" in body["url"]
    got = httpx.get(body["url"])  # no auth header needed
    assert got.status_code == 200 and got.content == data
    dl = acct.get(f"/v1/files/{fid}/download")
    assert dl.status_code == 200 and set(dl.json()) == {"file_id", "url", "expires_at"}
    assert httpx.get(dl.json()["url"]).content == data


def test_foreign_and_absent_files_answer_the_same_404(acct, other):
    fid = upload(acct, tone(1.0))
    for route in ("url", "download"):
        foreign = other.get(f"/v1/files/{fid}/{route}")
        absent = other.get(f"/v1/files/00000000-0000-0000-0000-000000000000/{route}")
        assert foreign.status_code == absent.status_code == 404
        assert foreign.json() == absent.json() == {"error": "ResourceNotFound"}


def test_signed_url_expires_on_the_sandbox_clock(acct, admin):
    fid = upload(acct, tone(1.0))
    url = signed_url(acct, fid)
    assert httpx.get(url).status_code == 200
    admin.post("/_sandbox/clock", json={"advance_seconds": 590})
    assert httpx.get(url).status_code == 200  # about 10 minutes
    admin.post("/_sandbox/clock", json={"advance_seconds": 11})
    r = httpx.get(url)
    assert r.status_code == 403
    assert signed_url(acct, fid) != url
    assert httpx.get(signed_url(acct, fid)).status_code == 200


def test_tampered_signed_url_is_403(acct):
    url = signed_url(acct, upload(acct, tone(1.0)))
    assert httpx.get(url[:-2] + ("AA" if not url.endswith("AA") else "BB")).status_code == 403
    head, _, tail = url.rpartition("/_signed/")
    fid, exp, mac = tail.split(".")
    assert httpx.get(f"{head}/_signed/{fid}.{int(exp) + 1000}.{mac}").status_code == 403


def test_asset_url_is_a_private_locator_with_xml_404(acct):
    snap = run(acct, "sfx_gen", "v5", {"prompt": "door", "duration_seconds": 1})
    url = snap["output"]["assets"][0]["url"]
    r = httpx.get(url)
    assert r.status_code == 404
    assert r.headers["content-type"].startswith("application/xml")
    assert "<Error><Code>ResourceNotFound</Code>" in r.text
    assert httpx.get(url, headers=acct.headers).status_code == 404


def test_outputs_are_downloadable_by_the_owner_only(acct, other):
    snap = run(acct, "sfx_gen", "v5", {"prompt": "door", "duration_seconds": 1})
    fid = snap["output"]["assets"][0]["file_id"]
    data = httpx.get(signed_url(acct, fid)).content
    assert hashlib.sha256(data).hexdigest() == snap["output"]["assets"][0]["blob_hash"]
    assert other.get(f"/v1/files/{fid}/url").status_code == 404


def test_source_url_upload_copies_a_signed_url(acct, other):
    data = tone(1.0)
    url = signed_url(acct, upload(acct, data))
    r = other.post("/v1/files", json={"source_url": url})
    assert r.status_code == 201
    new_id = r.json()["file_id"]
    assert httpx.get(signed_url(other, new_id)).content == data


def test_source_url_elsewhere_is_refused_and_never_fetched(acct):
    hits: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            hits.append(self.path)
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    srv = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    t = threading.Thread(target=srv.serve_forever, args=(0.01,), daemon=True)
    t.start()
    try:
        url = f"http://127.0.0.1:{srv.server_port}/song.mp3"
        assert_invalid(acct.post("/v1/files", json={"source_url": url}), "source_url")
        assert_invalid(create(acct, "separate_stems", "2stem", {"audio": url}), "audio")
    finally:
        srv.shutdown()
        srv.server_close()
    assert hits == []


@pytest.mark.parametrize(
    "body", [{}, {"source_url": 5}, {"source_url": "ftp://x"}, {"source_url": "file:///etc/passwd"}]
)
def test_source_url_rules(acct, body):
    assert_invalid(acct.post("/v1/files", json=body), "source_url")


def test_expired_signed_source_url_is_refused(acct, admin):
    url = signed_url(acct, upload(acct, tone(1.0)))
    admin.post("/_sandbox/clock", json={"advance_seconds": 700})
    assert_invalid(acct.post("/v1/files", json={"source_url": url}), "source_url")


def test_upload_over_64_mib_is_refused_before_read_whole(acct):
    size = 64 * MiB + 1
    sent = 0

    def body():
        nonlocal sent
        boundary = b'--xyz\r\nContent-Disposition: form-data; name="file"; filename="a.bin"\r\n\r\n'
        yield boundary
        chunk = b"\0" * MiB
        for _ in range(size // MiB + 1):
            sent += len(chunk)
            yield chunk
        yield b"\r\n--xyz--\r\n"

    r = acct.post(
        "/v1/files", content=body(), headers={"Content-Type": "multipart/form-data; boundary=xyz"}
    )
    assert_invalid(r, "file")
    assert acct.get("/v1/generations").status_code == 200  # the connection pool still works


def test_declared_oversize_upload_is_refused_on_the_header_alone(sandbox, acct):
    host, port = sandbox.base_url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(
            b"POST /v1/files HTTP/1.1\r\nHost: x\r\n"
            b"Authorization: " + acct.headers["authorization"].encode() + b"\r\n"
            b"Content-Type: multipart/form-data; boundary=xyz\r\n"
            b"Content-Length: 70000000\r\n\r\n"
        )
        answer = b""
        while b"}" not in answer:  # answered although no body byte was sent
            chunk = sock.recv(65536)
            assert chunk, answer
            answer += chunk
        answer = answer.decode()
    assert answer.startswith("HTTP/1.1 422")
    assert "InvalidGenerationInput" in answer and "file" in answer


def test_malformed_multipart_is_refused_naming_file(acct):
    r = acct.post(
        "/v1/files",
        content=b"garbage",
        headers={"Content-Type": "multipart/form-data; boundary=xyz"},
    )
    assert_invalid(r, "file")


def test_upload_exactly_at_a_normal_size_works_and_non_audio_is_kept(acct):
    r = acct.post("/v1/files", files={"file": ("cover.png", b"\x89PNG\r\n\x1a\nxx", "image/png")})
    assert r.status_code == 201 and r.json()["mime_type"] == "image/png"


def test_multipart_without_a_file_part(acct):
    body = b'--q\r\nContent-Disposition: form-data; name="note"\r\n\r\nx\r\n--q--\r\n'
    r = acct.post(
        "/v1/files", content=body, headers={"Content-Type": "multipart/form-data; boundary=q"}
    )
    assert_invalid(r, "file")


@pytest.mark.parametrize("form", ["object_url", "bare_url", "base64", "file_id"])
def test_file_input_forms(acct, form):
    data = tone(1.0)
    fid = upload(acct, data)
    value = {
        "object_url": {"url": signed_url(acct, fid)},
        "bare_url": signed_url(acct, fid),
        "base64": {"base64": base64.b64encode(data).decode(), "filename": "x.mp3"},
        "file_id": f"file_id:{fid}",
    }[form]
    snap = run(acct, "separate_stems", "2stem", {"audio": value})
    assert snap["status"] == "completed", snap
    assert len(snap["output"]["assets"]) >= 2


def test_foreign_file_id_input_is_refused(acct, other):
    fid = upload(acct, tone(1.0))
    assert_invalid(create(other, "separate_stems", "2stem", {"audio": f"file_id:{fid}"}), "audio")
    assert_invalid(create(other, "separate_stems", "2stem", {"audio": "file_id:nope"}), "audio")


def test_storage_locator_as_input_is_refused(acct):
    snap = run(acct, "sfx_gen", "v5", {"prompt": "door", "duration_seconds": 1})
    locator = snap["output"]["assets"][0]["url"]
    assert_invalid(create(acct, "separate_stems", "2stem", {"audio": {"url": locator}}), "audio")


def test_non_audio_input_is_refused(acct):
    fid = upload(acct, b"just text", name="a.txt", mime="text/plain")
    assert_invalid(
        create(acct, "transcribe", "whisper-transcribe-v1", {"audio": f"file_id:{fid}"}), "audio"
    )


def test_extend_input_must_be_mp3_or_m4a(acct):
    wav = upload(acct, tone(1.0, fmt="WAV"), name="a.wav", mime="audio/wav")
    assert_invalid(create(acct, "extend_song", "v5", {"song": f"file_id:{wav}"}), "song")
    assert_invalid(create(acct, "extend_music", "v5", {"music": f"file_id:{wav}"}), "music")
    m4a = upload(acct, m4a_tone(1.0), name="a.m4a", mime="audio/mp4")
    r = create(acct, "extend_song", "v5", {"song": f"file_id:{m4a}", "duration_seconds": 5})
    assert r.status_code == 201, r.text
    assert wait(acct, r.json()["task_id"])["status"] == "completed"
