"""``watch(task, callback)``: one loop for following a task, on both clients and on any
object with the client's public ``generations.stream``/``generations.get``."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from songlab.client import (
    NotFound,
    TaskFailed,
    ValidationError,
    WaitTimeout,
    WatchUpdate,
    watch,
)
from tests.client.fakes import task_body


def kinds(updates: list[WatchUpdate]) -> list[str]:
    return [u.kind for u in updates]


def test_sync_watch_tells_each_event_then_the_snapshot(client, fake):
    fake.tasks["t1"] = task_body("t1")
    fake.streams["t1"] = [
        [
            {"seq": 1, "kind": "progress", "task_id": "t1", "progress": 0.5},
            {"seq": 2, "kind": "terminal", "task_id": "t1", "status": "completed"},
        ]
    ]
    seen: list[WatchUpdate] = []
    task = client.watch("t1", seen.append)
    assert task.status == "completed" and task.task_id == "t1"
    assert kinds(seen) == ["event", "event", "snapshot"]
    assert [u.event.seq for u in seen[:2]] == [1, 2]
    assert seen[-1].task is task
    assert fake.paths("GET").count("/v1/generations/t1") == 1  # one GET after terminal


def test_a_handle_is_watched_like_its_id(client, fake):
    fake.tasks["t1"] = task_body("t1")
    fake.streams["t1"] = [[{"seq": 1, "kind": "terminal", "task_id": "t1", "status": "completed"}]]
    assert client.watch(client.task("t1")).task_id == "t1"


def test_async_watch_awaits_a_coroutine_callback(aclient, fake):
    fake.tasks["t1"] = task_body("t1")
    fake.streams["t1"] = [
        [
            {"seq": 1, "kind": "progress", "task_id": "t1"},
            {"seq": 2, "kind": "terminal", "task_id": "t1"},
        ]
    ]
    seen: list[str] = []

    async def callback(update: WatchUpdate) -> None:
        await asyncio.sleep(0)
        seen.append(update.kind)

    async def main() -> Any:
        async with aclient:
            return await aclient.watch("t1", callback)

    assert asyncio.run(main()).status == "completed"
    assert seen == ["event", "event", "snapshot"]


def test_a_failed_task_raises_unless_asked_not_to(client, fake):
    fake.tasks["t1"] = task_body(
        "t1", status="failed", failure={"error": "PipelineError", "message": "boom"}
    )
    fake.streams["t1"] = [[{"seq": 1, "kind": "terminal", "task_id": "t1", "status": "failed"}]]
    with pytest.raises(TaskFailed):
        client.watch("t1")
    assert client.watch("t1", raise_on_failure=False).status == "failed"


def test_a_refused_stream_is_raised_not_resumed(client, fake):
    with pytest.raises(NotFound):
        client.watch("missing")
    assert fake.paths("GET").count("/v1/generations/missing/stream") == 1


def test_a_deadline_ends_the_watch(client, fake):
    fake.tasks["t1"] = task_body("t1", status="processing")
    fake.streams["t1"] = [[{"seq": 1, "kind": "progress", "task_id": "t1"}]]
    with pytest.raises(WaitTimeout):
        client.watch("t1", timeout=0.05, poll_interval=0.01)


@pytest.mark.parametrize(
    ("field", "options"),
    [
        ("task", {"task": ""}),
        ("timeout", {"timeout": 0}),
        ("poll_interval", {"poll_interval": -1}),
        ("max_resumes", {"max_resumes": -1}),
    ],
)
def test_bad_options_name_the_field(client, field, options):
    task = options.pop("task", "t1")
    with pytest.raises(ValidationError) as err:
        client.watch(task, **options)
    assert err.value.field == field


class Scripted:
    """A duck-typed client: streams cut after ``drop_after`` events, dict snapshots."""

    def __init__(
        self, events: list[dict[str, Any]], final: dict[str, Any], drop_after: int | None = None
    ) -> None:
        self.events, self.final, self.drop_after = events, final, drop_after
        self.afters: list[int] = []
        self.generations = self

    def stream(self, task_id: str, *, after: int = 0) -> Iterator[dict[str, Any]]:
        self.afters.append(after)
        fresh = [e for e in self.events if e["seq"] > after]
        yield from fresh[: self.drop_after]

    def get(self, task_id: str) -> dict[str, Any]:
        return {"task_id": task_id, **self.final}


def test_the_function_resumes_a_duck_typed_client_after_the_last_seq():
    events = [{"seq": i, "kind": "progress"} for i in range(1, 6)]
    events.append({"seq": 6, "kind": "terminal"})
    c = Scripted(events, {"status": "completed"}, drop_after=2)
    seen: list[WatchUpdate] = []
    final = watch(c, "t", seen.append)
    assert final == {"task_id": "t", "status": "completed"}
    assert c.afters == [0, 2, 4]
    assert kinds(seen).count("resumed") == 2 and [u.after for u in seen if u.kind == "resumed"] == [
        2,
        4,
    ]


def test_resumes_are_bounded_then_the_task_is_read():
    c = Scripted([{"seq": 1, "kind": "progress"}], {"status": "completed"})
    seen: list[WatchUpdate] = []
    watch(c, "t", seen.append, max_resumes=1, poll_interval=0.01)
    assert c.afters == [0, 1] and kinds(seen) == ["event", "resumed", "resumed", "snapshot"]


def test_what_the_callback_raises_is_not_taken_for_a_dropped_stream():
    c = Scripted(
        [{"seq": 1, "kind": "progress"}, {"seq": 2, "kind": "terminal"}], {"status": "completed"}
    )

    def callback(update: WatchUpdate) -> None:
        raise ConnectionError("the callback's own error")

    with pytest.raises(ConnectionError):
        watch(c, "t", callback)
    assert c.afters == [0]
