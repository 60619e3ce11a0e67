"""Helpers of the sandbox contract tests: clients, creates, waiting, small audio files."""

from __future__ import annotations

import io
import json
import time
from typing import Any

import httpx
import numpy as np
import soundfile as sf

from songlab.sandbox.catalog import tool_id

WAIT_SECONDS = 60.0


def client(sandbox: Any, api_key: str | None) -> httpx.Client:
    headers = {} if api_key is None else {"Authorization": f"Bearer {api_key}"}
    return httpx.Client(base_url=sandbox.base_url, headers=headers, timeout=30.0, verify=False)


def tid(operation: str, model: str) -> str:
    return tool_id(operation, model)


def create(
    c: httpx.Client, operation: str, model: str, payload: dict | None = None, **extra: Any
) -> httpx.Response:
    body = {"tool_id": tid(operation, model), "payload_json": json.dumps(payload or {}), **extra}
    headers = {}
    if "idempotency_key" in body:
        headers["Idempotency-Key"] = body.pop("idempotency_key")
    return c.post("/v1/generations", json=body, headers=headers)


def wait(c: httpx.Client, task_id: str, timeout: float = WAIT_SECONDS) -> dict:
    """Poll until the task is terminal; returns its snapshot."""
    deadline = time.monotonic() + timeout
    while True:
        r = c.get(f"/v1/generations/{task_id}")
        assert r.status_code == 200, r.text
        snap = r.json()
        if snap["status"] in ("completed", "failed"):
            return snap
        if time.monotonic() > deadline:
            raise AssertionError(f"task {task_id} still {snap['status']}")
        time.sleep(0.02)


def run(
    c: httpx.Client, operation: str, model: str, payload: dict | None = None, **extra: Any
) -> dict:
    r = create(c, operation, model, payload, **extra)
    assert r.status_code == 201, r.text
    return wait(c, r.json()["task_id"])


def tone(seconds: float = 2.0, *, freq: float = 220.0, fmt: str = "MP3", sr: int = 22050) -> bytes:
    t = np.arange(int(seconds * sr)) / sr
    audio = (0.3 * np.sin(2 * np.pi * freq * t)).astype(np.float32)
    buf = io.BytesIO()
    sf.write(buf, audio, sr, format=fmt)
    return buf.getvalue()


def upload(c: httpx.Client, data: bytes, name: str = "clip.mp3", mime: str = "audio/mpeg") -> str:
    r = c.post("/v1/files", files={"file": (name, data, mime)})
    assert r.status_code == 201, r.text
    return r.json()["file_id"]


def signed_url(c: httpx.Client, file_id: str) -> str:
    r = c.get(f"/v1/files/{file_id}/url")
    assert r.status_code == 200, r.text
    return r.json()["url"]


def sse(c: httpx.Client, task_id: str, after: int | None = None) -> list[dict]:
    """All events of one stream connection, until the server closes it."""
    params = {} if after is None else {"after": after}
    out = []
    with c.stream("GET", f"/v1/generations/{task_id}/stream", params=params) as r:
        assert r.status_code == 200, r.read()
        frame: dict[str, str] = {}
        for line in r.iter_lines():
            if not line:
                if frame:
                    out.append(
                        {
                            "id": int(frame["id"]),
                            "event": frame["event"],
                            **json.loads(frame["data"]),
                        }
                    )
                frame = {}
                continue
            key, _, value = line.partition(": ")
            frame[key] = value
    return out


def ledger(admin: httpx.Client, account_id: str) -> list[dict]:
    r = admin.get(f"/_sandbox/accounts/{account_id}/ledger")
    assert r.status_code == 200, r.text
    return r.json()["entries"]


def balance(c: httpx.Client) -> dict:
    return c.get("/v1/account/balance").json()


def assert_invalid(r: httpx.Response, field: str) -> None:
    assert r.status_code == 422, r.text
    body = r.json()
    assert body["error"] == "InvalidGenerationInput"
    assert body["retryable"] is False
    assert field in body["message"], body["message"]


def m4a_tone(seconds: float = 2.0, *, freq: float = 330.0, sr: int = 44100) -> bytes:
    """A small AAC-in-ipod (.m4a) file, encoded with PyAV."""
    import av

    t = np.arange(int(seconds * sr)) / sr
    a = (0.3 * np.sin(2 * np.pi * freq * t)).astype(np.float32)[None, :]
    buf = io.BytesIO()
    with av.open(buf, "w", format="ipod") as out:
        st = out.add_stream("aac", rate=sr, layout="mono")
        frame = av.AudioFrame.from_ndarray(np.ascontiguousarray(a), format="fltp", layout="mono")
        frame.sample_rate = sr
        for pkt in st.encode(frame):
            out.mux(pkt)
        for pkt in st.encode(None):
            out.mux(pkt)
    return buf.getvalue()


def midi_file() -> bytes:
    import mido

    mid = mido.MidiFile()
    track = mido.MidiTrack()
    mid.tracks.append(track)
    for note in (60, 64, 67, 72):
        track.append(mido.Message("note_on", note=note, velocity=80, time=0))
        track.append(mido.Message("note_off", note=note, velocity=0, time=240))
    buf = io.BytesIO()
    mid.save(file=buf)
    return buf.getvalue()
