"""Rate limits: rolling windows (the last 3600 s and 86400 s of the sandbox clock).

Limits are per account, per tool and per model. Agent One's are the spec's
(flash 30/h 150/d, standard 20/100, pro 10/50); for every other tool songlab
picks :data:`TOOL_LIMIT` per tool and :data:`MODEL_LIMIT` per model (all tools
of one model together); dedicated and workflow routes count under their route.
Only accepted creates count (idempotent repeats and refused creates do not).
"""

from __future__ import annotations

from dataclasses import dataclass

import songlab.sandbox.errors as errors
from songlab.sandbox.storage.db import Store
from songlab.spec import AGENT_RATE_LIMITS, ErrorCode

HOUR = 3600.0
DAY = 86400.0
TOOL_LIMIT = (100, 500)  # per tool: per hour, per day
MODEL_LIMIT = (200, 1000)  # per model (all its tools): per hour, per day


@dataclass(frozen=True, slots=True)
class Bucket:
    key: str  # "tool:<id>", "model:<name>", "route:<path>"
    label: str  # for the message
    per_hour: int
    per_day: int


def for_tool(tool_id: str, operation: str, model: str) -> list[Bucket]:
    if operation == "agent":
        hour, day = AGENT_RATE_LIMITS[model]
        return [Bucket(f"tool:{tool_id}", f"Agent One {model}", hour, day)]
    return [
        Bucket(f"tool:{tool_id}", f"tool {operation} {model}", *TOOL_LIMIT),
        Bucket(f"model:{model}", f"model {model}", *MODEL_LIMIT),
    ]


def for_route(route: str) -> list[Bucket]:
    return [Bucket(f"route:{route}", f"route {route}", *TOOL_LIMIT)]


def check(store: Store, account_id: str, buckets: list[Bucket], now: float) -> None:
    """Raise 429 RateLimited if any bucket is full (call inside the create transaction)."""
    for b in buckets:
        for window, limit, name in ((HOUR, b.per_hour, "hour"), (DAY, b.per_day, "day")):
            count = store.value(
                "SELECT COUNT(*) FROM rate_hits WHERE account_id = ? AND bucket = ? AND at > ?",
                (account_id, b.key, now - window),
            )
            if count >= limit:
                raise errors.pipeline(
                    ErrorCode.RATE_LIMITED,
                    f"rate limit of {limit} per {name} for {b.label} exceeded for this account",
                )


def record(store: Store, account_id: str, buckets: list[Bucket], now: float) -> None:
    for b in buckets:
        store.execute(
            "INSERT INTO rate_hits (account_id, bucket, at) VALUES (?,?,?)",
            (account_id, b.key, now),
        )
