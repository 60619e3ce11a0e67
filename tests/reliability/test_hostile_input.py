"""Hostile input is refused cleanly, and a refused request stores and bills nothing.

Each case runs inside :func:`unchanged`, which compares the account's balance,
ledger, task listing and stored files (and consent records) before and after.
Only loopback is ever contacted: URLs naming other hosts are only sent *as
data*, and a loopback listener proves the sandbox fetches nothing.
"""

from __future__ import annotations

import base64
import json
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import quote

import httpx
import pytest

from songlab.sandbox.http.app import MAX_BODY_BYTES, BodyLimit
from songlab.sandbox.storage.file_store import UPLOAD_MAX_BYTES
from tests.reliability._util import Snapshot, assert_invalid, create, key_client, tone, upload


@pytest.fixture
def victim(sandbox, new_account) -> Iterator[tuple[Any, httpx.Client]]:
    acct = new_account()
    with key_client(sandbox.base_url, acct.api_key) as c:
        yield acct, c


@contextmanager
def unchanged(sandbox: Any, admin: httpx.Client, acct: Any, c: httpx.Client) -> Iterator[None]:
    store = sandbox.sandbox.store

    def consents() -> int:
        return store.one("SELECT COUNT(*) FROM consents WHERE account_id = ?", (acct.account_id,))[
            0
        ]

    before, consents_before = Snapshot.take(sandbox, admin, acct.account_id, c), consents()
    yield
    after = Snapshot.take(sandbox, admin, acct.account_id, c)
    assert after == before
    assert consents() == consents_before


def _raw_exchange(sandbox: Any, head: str, body_start: bytes) -> bytes:
    """Send a request head and only the start of its body; return what the server answers."""
    with socket.create_connection((sandbox.host, sandbox.port), timeout=20) as s:
        s.sendall(head.encode() + body_start)
        answer = b""
        while True:  # until the head and its Content-Length of body are in
            chunk = s.recv(65536)
            if not chunk:
                return answer
            answer += chunk
            head_end = answer.find(b"\r\n\r\n")
            if head_end >= 0:
                length = [
                    int(line.split(b":")[1])
                    for line in answer[:head_end].split(b"\r\n")
                    if line.lower().startswith(b"content-length:")
                ]
                if length and len(answer) >= head_end + 4 + length[0]:
                    return answer


# --- oversize bodies and files ------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "ctype", "field"),
    [
        ("/v1/generations", "application/json", "body"),
        ("/v1/voice-clones", "application/json", "body"),
        ("/v5/generate/song", "application/json", "body"),
        ("/v1/files", "application/json", "body"),
        ("/v1/files", "multipart/form-data; boundary=xyz", "file"),
    ],
    ids=["native", "voice-clone", "compat", "files-json", "files-multipart"],
)
def test_oversize_body_is_refused_before_it_is_read(sandbox, admin, victim, path, ctype, field):
    """The server answers after a few bytes of a declared 200 MB body: it never waits for it."""
    acct, c = victim
    with unchanged(sandbox, admin, acct, c):
        head = (
            f"POST {path} HTTP/1.1\r\nHost: {sandbox.host}:{sandbox.port}\r\n"
            f"Authorization: Bearer {acct.api_key}\r\nContent-Type: {ctype}\r\n"
            f"Content-Length: {200_000_000}\r\n\r\n"
        )
        answer = _raw_exchange(sandbox, head, b"{" * 100)
        status_line, _, rest = answer.partition(b"\r\n")
        assert b" 422 " in status_line, answer[:300]
        body = json.loads(rest.split(b"\r\n\r\n", 1)[1])
        assert body["error"] == "InvalidGenerationInput" and body["message"].startswith(field)


def test_body_limit_cuts_a_chunked_body_at_the_limit():
    """Without Content-Length, the middleware counts and stops reading at the limit."""
    received: list[int] = []

    async def app(scope, receive, send):
        from starlette.requests import Request
        from starlette.responses import Response

        from songlab.sandbox.errors import ApiError

        try:
            body = await Request(scope, receive).body()
        except ApiError as exc:
            await Response(exc.content(), exc.status)(scope, receive, send)
            return
        received.append(len(body))
        await Response(b"ok")(scope, receive, send)

    chunks_sent = 0

    async def chunks():
        nonlocal chunks_sent
        for _ in range(100):
            chunks_sent += 1
            yield b"x" * 1000

    async def go() -> httpx.Response:
        transport = httpx.ASGITransport(app=BodyLimit(app, max_bytes=5000))
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as ac:
            return await ac.post("/v1/generations", content=chunks())

    import asyncio

    r = asyncio.run(go())
    assert r.status_code == 422 and "body: must be at most 5000 bytes" in r.text
    assert received == []
    assert chunks_sent <= 7  # 5 kB allowed: reading stopped at the 6th kB of 100
    assert MAX_BODY_BYTES >= UPLOAD_MAX_BYTES * 4 // 3  # room for a 64 MiB file inline


def test_client_refuses_an_oversize_file_before_reading_it(sandbox, victim, tmp_path):
    from songlab.client import Client, ValidationError

    acct, _ = victim
    big = tmp_path / "big.mp3"
    with open(big, "wb") as f:  # sparse: 65 MiB of size, no disk blocks
        f.truncate(UPLOAD_MAX_BYTES + 1024 * 1024)
    with (
        Client(acct.api_key, base_url=sandbox.base_url) as client,
        pytest.raises(ValidationError, match="source"),
    ):
        client.files.upload(big)


# --- malformed multipart, truncated and non-audio files -------------------------------------


@pytest.mark.parametrize(
    ("ctype", "body"),
    [
        (
            "multipart/form-data",
            b'--x\r\nContent-Disposition: form-data; name="file"\r\n\r\na\r\n--x--',
        ),
        ("multipart/form-data; boundary=xyz", b"this is not multipart at all"),
        (
            "multipart/form-data; boundary=xyz",
            b'--xyz\r\nContent-Disposition: form-data; name="file"; filename="a.mp3"\r\n\r\nabcabc',
        ),
        ("multipart/form-data; boundary=xyz", b"--xyz\r\nGarbage\r\n\r\nabc\r\n--xyz--\r\n"),
        (
            "multipart/form-data; boundary=xyz",
            b'--xyz\r\nContent-Disposition: form-data; name="note"\r\n\r\nhello\r\n--xyz--\r\n',
        ),
        ("multipart/form-data; boundary=xyz", b""),
    ],
    ids=["no-boundary", "garbage", "truncated", "bad-part-header", "no-file-part", "empty"],
)
def test_malformed_multipart_is_refused(sandbox, admin, victim, ctype, body):
    acct, c = victim
    with unchanged(sandbox, admin, acct, c):
        r = c.post("/v1/files", content=body, headers={"content-type": ctype})
        assert_invalid(r, "file")


def _m4a(seconds: float = 1.0) -> bytes:
    from tests.sandbox._util import m4a_tone

    return m4a_tone(seconds)


BAD_AUDIO = {
    "text": lambda: b"hello, I am not audio at all",
    "truncated-mp3": lambda: tone(1.0)[:300],
    "truncated-m4a": lambda: _m4a()[: len(_m4a()) // 2],
    "wav-header-only": lambda: tone(1.0, fmt="WAV")[:44] + b"\x00garbage",
    "empty": lambda: b"",
}


@pytest.mark.parametrize("kind", sorted(BAD_AUDIO))
def test_truncated_or_non_audio_inputs_are_refused(sandbox, admin, victim, kind):
    acct, c = victim
    data = BAD_AUDIO[kind]()
    fid = upload(c, data, "bad.mp3", "audio/mpeg") if data else None
    with unchanged(sandbox, admin, acct, c):
        if fid is not None:
            assert_invalid(
                create(c, "separate_stems", "2stem", {"audio": f"file_id:{fid}"}), "audio"
            )
            assert_invalid(
                c.post(
                    "/v1/voice-clones",
                    json={"reference_file_id": fid, "consent": True, "rights_attestation": "mine"},
                ),
                "reference_file_id",
            )
            assert_invalid(c.post("/v1/karaoke-tracks", json={"song_file_id": fid}), "song_file_id")
        b64 = base64.b64encode(data).decode()
        assert_invalid(
            create(c, "transcribe", "whisper-transcribe-v1", {"audio": {"base64": b64}}), "audio"
        )


def test_wrong_format_voice_reference_is_refused(sandbox, admin, victim):
    """A clean WAV is audio, but not mp3 or m4a: 422 naming the field, no consent, no task."""
    acct, c = victim
    fid = upload(c, tone(2.0, fmt="WAV"), "ref.wav", "audio/wav")
    with unchanged(sandbox, admin, acct, c):
        r = c.post(
            "/v1/voice-clones",
            json={"reference_file_id": fid, "consent": True, "rights_attestation": "my own voice"},
        )
        assert_invalid(r, "reference_file_id")
        assert "mp3 or m4a" in r.json()["message"]


def test_refused_create_keeps_no_inline_file(sandbox, admin, victim):
    """Valid inline audio in a create refused for another field stores nothing."""
    acct, c = victim
    b64 = base64.b64encode(tone(1.0)).decode()
    with unchanged(sandbox, admin, acct, c):
        assert_invalid(
            create(c, "audio_effect", "v5", {"audio": {"base64": b64}, "effect": "explode"}),
            "effect",
        )


def test_refused_for_funds_keeps_no_inline_file(sandbox, admin, new_account):
    acct = new_account(balance_tokens=1)
    with key_client(sandbox.base_url, acct.api_key) as c, unchanged(sandbox, admin, acct, c):
        r = create(
            c,
            "audio_effect",
            "v5",
            {"audio": {"base64": base64.b64encode(tone(1.0)).decode()}, "effect": "reverb"},
        )
        assert r.status_code == 402 and r.json()["error"] == "InsufficientFunds"


# --- ids ----------------------------------------------------------------------------------

HOSTILE_IDS = [
    "..",
    "../../etc/passwd",
    "..%2F..%2Fetc%2Fpasswd",
    "a" * 10_000,
    "x\x00y",
    "\U0001f4a5",
    "' OR 1=1 --",
    "file_id:x",
    "%00",
    " ",
    "/",
    "\\..\\..\\win.ini",
]


@pytest.mark.parametrize("bad_id", HOSTILE_IDS, ids=lambda s: repr(s[:16]))
def test_path_like_and_long_ids_find_nothing(sandbox, admin, victim, bad_id):
    acct, c = victim
    q = quote(bad_id, safe="")
    with unchanged(sandbox, admin, acct, c):
        for path, code in (
            (f"/v1/generations/{q}", "NOT_FOUND"),
            (f"/v1/generations/{q}/stream", "NOT_FOUND"),
            (f"/v1/files/{q}/url", "ResourceNotFound"),
            (f"/v1/files/{q}/download", "ResourceNotFound"),
        ):
            r = c.get(path)
            if r.status_code == 307:  # "//" in the decoded path: the router's slash redirect
                assert "/" in bad_id and r.headers["location"].startswith(sandbox.base_url)
                continue
            assert r.status_code == 404, (path, r.status_code, r.text[:200])
            if not r.request.url.path.startswith(path.rsplit(q, 1)[0]):
                code = "NOT_FOUND"  # the client resolved "..": another (unknown) route
            assert r.json() == {"error": code}  # unknown routes answer in the spec's shape too
        for body, field in (
            (
                {"reference_file_id": bad_id, "consent": True, "rights_attestation": "x"},
                "reference_file_id",
            ),
            ({"song_file_id": bad_id}, "song_file_id"),
        ):
            route = "/v1/voice-clones" if "consent" in body else "/v1/karaoke-tracks"
            assert_invalid(c.post(route, json=body), field)
        assert_invalid(
            create(
                c, "generate_song", "v5", {"prompt": "p", "vocal_id": bad_id, "duration_seconds": 5}
            ),
            "vocal_id",
        )
        assert_invalid(
            create(c, "separate_stems", "2stem", {"audio": f"file_id:{bad_id}"}), "audio"
        )


# --- bad base64 ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    [
        {"base64": "!!!not base64!!!"},
        {"base64": 12345},
        {"base64": None},
        {"base64": "aGVsbG8gd29ybGQ="},  # valid base64, not audio
        {"base64": "QUJD\nREVG"},  # a newline inside
        {"base64": "A" * (4 * 1024 * 1024)},  # says 3 MiB of zeros: not audio
        {"base64": "QQ"},  # bad padding
    ],
    ids=["garbage", "number", "null", "not-audio", "newline", "zeros", "padding"],
)
def test_bad_base64_is_refused_and_stores_nothing(sandbox, admin, victim, value):
    acct, c = victim
    with unchanged(sandbox, admin, acct, c):
        assert_invalid(create(c, "separate_stems", "2stem", {"audio": value}), "audio")


# --- JSON bombs ---------------------------------------------------------------------------


def _nest(depth: int) -> str:
    return "[" * depth + "]" * depth


@pytest.mark.parametrize("depth", [5_000, 100_000])
def test_json_bombs_are_refused(sandbox, admin, victim, depth):
    acct, c = victim
    bomb = _nest(depth)
    obj_bomb = '{"a":' * depth + "1" + "}" * depth
    json_headers = {"content-type": "application/json"}
    with unchanged(sandbox, admin, acct, c):
        for path in (
            "/v1/generations",
            "/v1/voice-clones",
            "/v1/song-translations",
            "/v5/generate/song",
            "/v1/trending-songs",
            "/v1/files",
        ):
            for raw in (bomb, obj_bomb):
                r = c.post(path, content=raw, headers=json_headers)
                assert r.status_code == 422, (path, r.status_code, r.text[:200])
        from songlab.sandbox.catalog import tool_id

        r = c.post(
            "/v1/generations",
            json={"tool_id": tool_id("write_lyrics", "v5"), "payload_json": obj_bomb},
        )
        assert_invalid(r, "payload_json")
        r = admin.put("/_sandbox/faults", content=bomb, headers=json_headers)
        assert r.status_code == 422
    assert admin.get("/_sandbox/faults").json()["rate_limited"] == 0.0


@pytest.mark.parametrize(
    "raw",
    [
        '{"prompt": "x", "duration_seconds": NaN}',
        '{"prompt": "x", "duration_seconds": Infinity}',
        '{"prompt": "x", "duration_seconds": 1e999}',
        '{"prompt": "x", "seed": ' + "9" * 5000 + "}",
    ],
    ids=["nan", "infinity", "overflow", "huge-int"],
)
def test_non_finite_and_huge_numbers_are_refused(sandbox, admin, victim, raw):
    acct, c = victim
    from songlab.sandbox.catalog import tool_id

    with unchanged(sandbox, admin, acct, c):
        r = c.post(
            "/v1/generations",
            json={"tool_id": tool_id("generate_music", "v5"), "payload_json": raw},
        )
        assert r.status_code == 422, r.text


# --- source_url and URL inputs ------------------------------------------------------------


@pytest.fixture
def trap() -> Iterator[tuple[str, socket.socket]]:
    """A loopback listener: any connection to it means the sandbox fetched a URL."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind(("127.0.0.1", 0))
    s.listen(8)
    s.setblocking(False)
    try:
        yield f"127.0.0.1:{s.getsockname()[1]}", s
    finally:
        s.close()


def _foreign_urls(sandbox: Any, c: httpx.Client, trap_netloc: str) -> list[str]:
    fid = upload(c, tone(1.0))
    good = c.get(f"/v1/files/{fid}/url").json()["url"]
    token = good.rsplit("/", 1)[1]
    own = f"{sandbox.host}:{sandbox.port}"
    return [
        f"http://{trap_netloc}/song.mp3",
        f"http://{trap_netloc}/_signed/{token}",  # a real token on another port
        "file:///etc/passwd",
        "file://localhost/etc/passwd",
        "http://169.254.169.254/latest/meta-data/iam/security-credentials/",
        "http://metadata.google.internal/computeMetadata/v1/",
        "http://[fd00:ec2::254]/latest/meta-data/",
        "http://100.100.100.200/latest/meta-data/",
        "https://example.com/song.mp3",
        "gopher://127.0.0.1:70/_x",
        "ftp://127.0.0.1/song.mp3",
        f"http://{own}/v1/files/{fid}/url",  # this sandbox, but not a signed URL
        f"http://{own}/_storage/songlab-private/{fid}",
        f"http://{own}/_signed/{token}x",  # tampered
        f"http://user:pw@{own}/_signed/{token}",
        f"http://{own}/_signed/../v1/files/{fid}/url",
        f"http://0x7f000001:{sandbox.port}/_signed/{token}",
        "",
        "not a url",
        "http://" + "a" * 5000 + ".example/x",
    ]


def test_source_url_is_refused_for_anything_but_own_signed_urls(sandbox, admin, victim, trap):
    acct, c = victim
    trap_netloc, listener = trap
    urls = _foreign_urls(sandbox, c, trap_netloc)
    with unchanged(sandbox, admin, acct, c):
        for url in urls:
            assert_invalid(c.post("/v1/files", json={"source_url": url}), "source_url")
            for value in ({"url": url}, url):
                if value:
                    assert_invalid(create(c, "separate_stems", "2stem", {"audio": value}), "audio")
    with pytest.raises(BlockingIOError):
        listener.accept()  # nobody ever connected: nothing was fetched
    # the positive control: this sandbox's own signed URL is accepted
    fid = upload(c, tone(1.0))
    good = c.get(f"/v1/files/{fid}/url").json()["url"]
    assert c.post("/v1/files", json={"source_url": good}).status_code == 201


def test_expired_signed_url_is_refused_as_source(sandbox, admin, new_account):
    from songlab.sandbox.storage.file_store import SIGNED_URL_SECONDS

    acct = new_account()
    with key_client(sandbox.base_url, acct.api_key) as c:
        fid = upload(c, tone(1.0))
        url = c.get(f"/v1/files/{fid}/url").json()["url"]
        r = admin.post("/_sandbox/clock", json={"advance_seconds": SIGNED_URL_SECONDS + 1})
        assert r.status_code == 200
        with unchanged(sandbox, admin, acct, c):
            r = c.post("/v1/files", json={"source_url": url})
            assert_invalid(r, "source_url")
            assert "expired" in r.json()["message"]
