"""Fixtures of the widget tests: a scripted client (no server) and a synthetic voice mp3.

The scripted client answers like the sandbox where the widgets depend on it:
a repeated Idempotency-Key returns the original task, streams replay after a
seq, snapshots end completed (or failed, when asked).
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from songlab import audio


@dataclass(frozen=True)
class FakeTool:
    id: str
    model: str
    operation: str


TOOLS = tuple(
    FakeTool(f"tool-{op}-{model}", model, op)
    for op, models in {
        "generate_song": ("v5", "v6", "v7"),
        "generate_music": ("v5", "v6", "v7"),
        "generate_singing": ("v5", "v6", "v7"),
        "write_lyrics": ("v5",),
        "sfx_gen": ("v5",),
        "remix_song": ("v5",),
        "vocal_clone": ("v5", "v6", "v7"),
    }.items()
    for model in models
)


@dataclass
class FakeBackend:
    """Records creates; dedups by Idempotency-Key like the service. ``fail_creates``: the
    next creates raise these, once each (a transient failure); ``refusals``: a create whose
    body holds one of these values (anywhere) is refused with its error, every time (the
    service refusing that request as it stands)."""

    fail_creates: list[Exception] = field(default_factory=list)
    refusals: dict[str, Exception] = field(default_factory=dict)
    creates: list[dict[str, Any]] = field(default_factory=list)
    tasks: dict[str, dict[str, Any]] = field(default_factory=dict)
    by_key: dict[str, str] = field(default_factory=dict)
    uploads: list[tuple[str, int]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    counter: Any = field(default_factory=lambda: itertools.count(1))

    def create(self, kind: str, key: str, **body: Any) -> SimpleNamespace:
        with self.lock:
            self.creates.append({"kind": kind, "key": key, **body})
            if self.fail_creates:
                raise self.fail_creates.pop(0)
            sent = repr(body)
            for marker, error in self.refusals.items():
                if marker in sent:
                    raise error
            if key in self.by_key:
                task_id = self.by_key[key]
            else:
                task_id = f"task-{next(self.counter)}"
                self.by_key[key] = task_id
                meta = {"vocal_id": f"voice-{task_id}"} if kind == "clone" else None
                self.tasks[task_id] = {"kind": kind, "body": body, "meta": meta}
        consent = f"consent-{task_id}" if kind == "clone" else None
        return SimpleNamespace(task_id=task_id, status="queued", consent_id=consent)


class FakeGenerations:
    def __init__(self, backend: FakeBackend) -> None:
        self.b = backend

    def create(self, *, tool_id: str, payload: dict, license: int, idempotency_key: str) -> Any:
        return self.b.create(
            "generation", idempotency_key, tool_id=tool_id, payload=payload, license=license
        )

    def stream(self, task_id: str, *, after: int = 0) -> Iterator[dict]:
        events = [
            {"seq": 1, "kind": "progress", "status": "processing", "progress": 0.5},
            {"seq": 2, "kind": "terminal", "status": "completed"},
        ]
        yield from (e for e in events if e["seq"] > after)

    def get(self, task_id: str) -> Any:
        meta = self.b.tasks[task_id]["meta"]
        return SimpleNamespace(
            task_id=task_id,
            status="completed",
            file_ids=(),
            vocal_id=(meta or {}).get("vocal_id"),
            raw={"task_id": task_id, "status": "completed"},
        )


class FakeClient:
    def __init__(self, backend: FakeBackend) -> None:
        self.backend = backend
        self.generations = FakeGenerations(backend)
        self.tools = SimpleNamespace(list=lambda: TOOLS)
        self.files = SimpleNamespace(upload=self._upload)
        self.voice_clones = SimpleNamespace(create=self._clone)

    def _upload(self, content: bytes, *, filename: str) -> Any:
        self.backend.uploads.append((filename, len(content)))
        return SimpleNamespace(file_id=f"file-{len(self.backend.uploads)}")

    def _clone(self, *, idempotency_key: str, **fields: Any) -> Any:
        return self.backend.create("clone", idempotency_key, **fields)


@pytest.fixture
def fake() -> FakeClient:
    return FakeClient(FakeBackend())


@pytest.fixture(scope="session")
def voice_mp3() -> bytes:
    """Three seconds of a sung vowel (harmonics of a gliding 180-240 Hz pitch), mp3."""
    sr = 44100
    t = np.arange(3 * sr) / sr
    f0 = 180 + 60 * np.sin(2 * np.pi * 0.5 * t)
    phase = 2 * np.pi * np.cumsum(f0) / sr
    x = sum((0.4 / k) * np.sin(k * phase) for k in range(1, 8))
    x *= np.clip(np.minimum(t, 3 - t) / 0.25, 0, 1)  # 250 ms fades
    return audio.encode(x.astype(np.float32)[None], sr=sr, format="mp3")


def _widgets_of(root: Any) -> list[Any]:
    seen, stack = [], [root]
    while stack:
        w = stack.pop()
        seen.append(w)
        stack.extend(getattr(w, "children", ()) or ())
    return seen


def visible_text(panel: Any) -> str:
    """Every trait value, repr and output of the panel's widget tree, as text."""
    parts = [repr(panel), str(panel)]
    for w in _widgets_of(panel):
        parts.append(repr(w))
        for name, value in w.get_state().items():
            if isinstance(value, bytes | memoryview):
                value = bytes(value).decode("latin-1")
            parts.append(f"{name}={value}")
        for out in getattr(w, "outputs", ()) or ():
            parts.append(str(out))
    return "\n".join(parts)


def _assert_blind(panel: Any, models: tuple[str, ...]) -> None:
    text = visible_text(panel)
    for model in models:
        assert model not in text, f"{model!r} visible before reveal"


@pytest.fixture
def assert_blind() -> Any:
    """``assert_blind(panel, models)``: no model name in any trait, repr or output."""
    return _assert_blind
