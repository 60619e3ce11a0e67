"""The pace of a running task's events: one progress event every quarter of a simulated
second, the same series at every --speed (design.md: no speed skips the states or events)."""

from __future__ import annotations

import pytest

from songlab.sandbox.http.server import serve_in_thread
from songlab.sandbox.tasks.context import PROGRESS_TICK, ticks
from tests.sandbox._util import sse


@pytest.mark.parametrize(
    ("seconds", "events"),
    [(0.5, 4), (1.0, 4), (1.5, 8), (2.4, 12), (4.5, 20), (9.0, 36), (60.0, 40)],
)
def test_ticks_one_per_quarter_second_in_fours(seconds: float, events: int) -> None:
    assert PROGRESS_TICK == 0.25
    assert ticks(seconds) == events and ticks(seconds) % 4 == 0


def _progress(base_url: str, key: str) -> tuple[list[str], list[float]]:
    import httpx

    auth = {"Authorization": f"Bearer {key}"}
    with httpx.Client(base_url=base_url, headers=auth, timeout=60) as acct:
        made = acct.post(
            "/v1/generations",
            json={
                "tool_id": next(
                    t["id"]
                    for t in acct.get("/v1/tools").json()["data"]
                    if (t["operation"], t["model"]) == ("generate_song", "v5")
                ),
                "payload_json": '{"prompt": "x", "duration_seconds": 5, "seed": 1}',
            },
        )
        evs = sse(acct, made.json()["task_id"])
    kinds = [e["event"] for e in evs]
    fractions = [
        e["progress"] for e in evs if e["event"] == "progress" and e["status"] == "processing"
    ]
    return kinds, fractions


@pytest.mark.slow
def test_a_song_sends_twenty_progress_events_at_every_speed() -> None:
    seen = []
    for speed in (40.0, 1000.0):
        srv = serve_in_thread(speed=speed)
        try:
            seen.append(_progress(srv.base_url, "sk-sandbox-demo"))
        finally:
            srv.stop()
    (kinds, fractions), (fast_kinds, fast_fractions) = seen
    assert kinds == fast_kinds and fractions == fast_fractions  # the speed changes only time
    # processing 0, then every 5 % to 100 %: the bar has 20 steps to show
    assert fractions == [round(i / 20, 4) for i in range(21)]
    assert kinds.count("progress") == 22 and kinds[-1] == "terminal"
    # the excerpt follows the half-way event, the signed link comes before any step
    assert kinds.index("streaming_url") < kinds.index("partial_output")
    half = [i for i, k in enumerate(kinds) if k == "progress"][1 + 10]
    assert kinds[half + 1] == "partial_output"
