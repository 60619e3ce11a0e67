"""Injected faults (``PUT /_sandbox/faults``): what they are and when they fire.

``rate_limited`` and ``dependency_unavailable`` are probabilities applied to
create routes only (a refused create creates and bills nothing);
``latency_ms`` delays every vendor route; ``drop_stream_after`` cuts each
stream connection after n events; ``fail_tasks`` is the probability that the
worker fails a task (released, not billed). ``seed`` makes the draws
repeatable. None of them touch ``POST /v1/files``, ``/health`` or ``/_sandbox``.
"""

from __future__ import annotations

import random
import threading
from dataclasses import dataclass
from typing import Any

import songlab.sandbox.errors as errors
from songlab.spec import ErrorCode

_PROBABILITIES = ("rate_limited", "dependency_unavailable", "fail_tasks")
_COUNTS = ("drop_stream_after", "latency_ms")
MAX_LATENCY_MS = 60_000  # a minute per request; more would only hang the client
MAX_COUNT = 2**31 - 1
MAX_SEED = 2**63 - 1


@dataclass(slots=True)
class FaultSettings:
    rate_limited: float = 0.0
    dependency_unavailable: float = 0.0
    fail_tasks: float = 0.0
    drop_stream_after: int | None = None
    latency_ms: int = 0
    seed: int | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "rate_limited": self.rate_limited,
            "dependency_unavailable": self.dependency_unavailable,
            "fail_tasks": self.fail_tasks,
            "drop_stream_after": self.drop_stream_after,
            "latency_ms": self.latency_ms,
            "seed": self.seed,
        }


def parse(body: Any) -> FaultSettings:
    """Validate a PUT body; raises ValueError naming the field and the rule."""
    if not isinstance(body, dict):
        raise ValueError("body: must be a JSON object")
    unknown = set(body) - set(_PROBABILITIES) - set(_COUNTS) - {"seed"}
    if unknown:
        raise ValueError(f"{sorted(unknown)[0]}: unknown fault")
    s = FaultSettings()
    for name in _PROBABILITIES:
        if body.get(name) is not None:  # null is absent: no such fault
            v = body[name]
            if isinstance(v, bool) or not isinstance(v, int | float) or not 0 <= v <= 1:
                raise ValueError(f"{name}: must be a probability 0-1")
            setattr(s, name, float(v))
    for name in _COUNTS:
        if name in body and body[name] is not None:
            v = body[name]
            hi = MAX_LATENCY_MS if name == "latency_ms" else MAX_COUNT
            if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= hi:
                raise ValueError(f"{name}: must be an integer 0-{hi}")
            setattr(s, name, v)
    if body.get("seed") is not None:
        if (
            isinstance(body["seed"], bool)
            or not isinstance(body["seed"], int)
            or not -MAX_SEED <= body["seed"] <= MAX_SEED
        ):
            raise ValueError(f"seed: must be an integer {-MAX_SEED}-{MAX_SEED}")
        s.seed = body["seed"]
    return s


class Faults:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.settings = FaultSettings()
        self._rng = random.Random()

    def set(self, settings: FaultSettings) -> None:
        with self._lock:
            self.settings = settings
            self._rng = random.Random(settings.seed)

    def clear(self) -> None:
        self.set(FaultSettings())

    def _draw(self, p: float) -> bool:
        if p <= 0:
            return False
        with self._lock:
            return self._rng.random() < p

    def check_create(self) -> None:
        """Raise the injected 429 / 503 for a create route, if one is drawn."""
        s = self.settings
        if self._draw(s.rate_limited):
            raise errors.pipeline(
                ErrorCode.RATE_LIMITED, "rate limit exceeded for this tool (injected fault)"
            )
        if self._draw(s.dependency_unavailable):
            raise errors.pipeline(
                ErrorCode.DEPENDENCY_UNAVAILABLE,
                "a required internal dependency is unavailable (injected fault)",
            )

    def fail_task(self) -> bool:
        return self._draw(self.settings.fail_tasks)
