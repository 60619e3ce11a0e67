"""An in-memory fake of the service behind ``httpx.MockTransport``.

The fake answers the routes with design.md's shapes and lets a test script
faults (``fake.fail_next(path, status, body)``) and stream connections
(``fake.streams[task_id] = [[event, ...], [event, ...]]``, one list per
connection). Real-HTTP tests use the shared ``sandbox`` fixture instead.
"""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

import httpx

from songlab.client import RetryPolicy

API_KEY = "sk-test-SECRET-0123456789"
BASE = "http://svc.test"

TOOLS = [
    {"id": "t-song-v5", "model": "v5", "operation": "generate_song", "name": "Song v5"},
    {"id": "t-song-v7", "model": "v7", "operation": "generate_song", "name": "Song v7"},
    {"id": "t-extend-v5", "model": "v5", "operation": "extend_song", "name": "Extend"},
    {"id": "t-xmusic-v5", "model": "v5", "operation": "extend_music", "name": "Extend music"},
    {"id": "t-melody-v5", "model": "v5", "operation": "melody_to_song", "name": "Melody"},
    {"id": "t-sfx-v5", "model": "v5", "operation": "sfx_gen", "name": "SFX"},
    {"id": "t-clone-v5", "model": "v5", "operation": "vocal_clone", "name": "Clone"},
    {"id": "t-agent-flash", "model": "flash", "operation": "agent", "name": "Agent flash"},
    {"id": "t-agent-standard", "model": "standard", "operation": "agent", "name": "Agent std"},
    {"id": "t-agent-pro", "model": "pro", "operation": "agent", "name": "Agent pro"},
]


def task_body(task_id: str, status: str = "completed", **extra: Any) -> dict[str, Any]:
    body = {
        "task_id": task_id,
        "tool_id": "t-song-v5",
        "model": "v5",
        "operation": "generate_song",
        "license": 1,
        "status": status,
        "created_at": "2026-11-21T10:00:00Z",
        "updated_at": "2026-11-21T10:00:05Z",
        "cost_usd": "0.07" if status == "completed" else None,
        "output": {
            "assets": [{"file_id": "f-1", "blob_hash": "h1", "url": BASE + "/_storage/raw/1"}]
        }
        if status == "completed"
        else {},
    }
    body.update(extra)
    return body


def sse(events: list[dict[str, Any]]) -> bytes:
    out = []
    for e in events:
        out.append(f"id: {e['seq']}\nevent: {e['kind']}\ndata: {json.dumps(e)}\n\n")
    return "".join(out).encode()


class Fake:
    def __init__(self) -> None:
        self.requests: list[httpx.Request] = []
        self.faults: dict[str, list[Any]] = defaultdict(list)
        self.tasks: dict[str, dict[str, Any]] = {}
        self.by_key: dict[str, dict[str, Any]] = {}
        self.created = 0
        self.streams: dict[str, list[list[dict[str, Any]]]] = {}
        self.pages: list[dict[str, Any]] = []
        self.files: dict[str, bytes] = {}

    def fail_next(self, path: str, status: int | None, body: Any = None, *, times: int = 1) -> None:
        """Answer the next ``times`` requests to ``path`` with this (status None: ReadError)."""
        for _ in range(times):
            self.faults[path].append((status, body))

    def paths(self, method: str | None = None) -> list[str]:
        return [r.url.path for r in self.requests if method is None or r.method == method]

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        path = request.url.path
        if self.faults.get(path):
            status, body = self.faults[path].pop(0)
            if status is None:
                raise httpx.ReadError("connection reset", request=request)
            if status == "lost":  # processed, then the answer is lost in transit
                self._route(request)
                raise httpx.ReadError("connection reset", request=request)
            if isinstance(body, bytes):
                return httpx.Response(status, content=body)
            return httpx.Response(status, json=body)
        return self._route(request)

    def _route(self, request: httpx.Request) -> httpx.Response:
        path, method = request.url.path, request.method
        if path.startswith("/_signed/"):
            if "authorization" in request.headers:
                return httpx.Response(400, text="auth header sent to a signed url")
            return httpx.Response(200, content=self.files.get(path.rsplit("/", 1)[1], b"RIFF"))
        if request.headers.get("authorization") != f"Bearer {API_KEY}":
            return httpx.Response(401, json={"error": "INVALID_API_KEY"})
        if path == "/v1/tools":
            return httpx.Response(200, json={"data": TOOLS})
        if path == "/v1/account/balance":
            return httpx.Response(200, json=BALANCE)
        if path.startswith("/v1/files"):
            return self._file(request, path, method)
        if method == "POST":
            return self._create(request, path)
        if path == "/v1/generations":
            cursor = request.url.params.get("cursor")
            return httpx.Response(200, json=self.pages[int(cursor) if cursor else 0])
        if path.endswith("/stream"):
            return self._stream(request, path.split("/")[3])
        if path.startswith("/v1/generations/"):
            return self._task(path.split("/")[3])
        return httpx.Response(404, json={"error": "NOT_FOUND"})

    def _file(self, request: httpx.Request, path: str, method: str) -> httpx.Response:
        if method == "POST" and path == "/v1/files":
            fid = f"file-{len(self.files) + 1}"
            self.files[fid] = request.content
            return httpx.Response(
                201,
                json={
                    "file_id": fid,
                    "mime_type": "audio/mpeg",
                    "size_bytes": len(request.content),
                    "sha256": "x",
                },
            )
        fid = path.split("/")[3]
        if fid not in self.files:
            return httpx.Response(404, json={"error": "ResourceNotFound", "message": "no"})
        return httpx.Response(
            200,
            json={
                "file_id": fid,
                "url": f"{BASE}/_signed/{fid}",
                "mime_type": "audio/mpeg",
                "expires_at": "2026-11-21T10:10:00Z",
            },
        )

    def _create(self, request: httpx.Request, path: str) -> httpx.Response:
        key = request.headers.get("idempotency-key")
        if key and key in self.by_key:
            return httpx.Response(201, json=self.by_key[key])
        self.created += 1
        body = {"task_id": f"task-{self.created}", "status": "queued"}
        if path == "/v1/voice-clones":
            body["consent_id"] = f"consent-{self.created}"
        if key:
            self.by_key[key] = body
        self.tasks[body["task_id"]] = task_body(body["task_id"])
        return httpx.Response(201, json=body)

    def _stream(self, request: httpx.Request, task_id: str) -> httpx.Response:
        conns = self.streams.get(task_id)
        if not conns:
            return httpx.Response(404, json={"error": "NOT_FOUND"})
        after = int(request.url.params.get("after", 0))
        events = conns.pop(0) if len(conns) > 1 else conns[0]
        events = [e for e in events if e["seq"] > after - (1 if e.get("dup") else 0)]
        return httpx.Response(
            200, content=sse(events), headers={"content-type": "text/event-stream"}
        )

    def _task(self, task_id: str) -> httpx.Response:
        if task_id == "foreign":
            return httpx.Response(403, json={"error": "FORBIDDEN"})
        if task_id not in self.tasks:
            return httpx.Response(404, json={"error": "NOT_FOUND"})
        return httpx.Response(200, json=self.tasks[task_id])


BALANCE = {
    "total_effective": 99993,
    "base_effective": 99993,
    "extra_tokens": 0,
    "base_expires_at": "2027-11-21T00:00:00Z",
}

FAST_RETRY = RetryPolicy(max_attempts=4, base_s=0.0, cap_s=0.0, max_total_s=5.0)
