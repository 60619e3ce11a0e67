"""Replicas making the audio pool known at once (issue 40): every page's tokens end up in the
database, whatever another replica inserted meanwhile.

Two stores on one real PostgreSQL database are two replicas. Under READ COMMITTED, what a
transaction read as known can be stale when it inserts: replica B reads which of its page's
tokens are known, replica A then commits one of them, and B inserts. That conflict on one
token must neither fail B's request nor drop B's other tokens (a page that links to a token
missing from the pool cannot play it, and its rater is stuck). The interleaving is forced, not
hoped for: B's transaction waits after its read until A has committed.
"""

from __future__ import annotations

import threading

import sqlalchemy as sa

from songlab.listening.crowd.store import audio, open_store
from tests.reliability._postgres import postgres_server


def _element(token: str) -> str:
    return f'["m", 0, "{token}"]'


def test_a_token_another_replica_committed_meanwhile_drops_none_of_the_pages_others() -> None:
    with postgres_server() as url:
        a, b = open_store(url), open_store(url)
        read, committed = threading.Event(), threading.Event()

        def pause_after_the_read(conn, cursor, statement, *args) -> None:
            if statement.lstrip().upper().startswith("SELECT") and "audio" in statement:
                read.set()
                assert committed.wait(30), "replica A never committed"

        sa.event.listen(b.engine, "after_cursor_execute", pause_after_the_read)
        failed: list[Exception] = []

        def replica_b() -> None:
            try:
                b.register_audio("c1", {t: _element(t) for t in ("t1", "t2", "t3")})
            except Exception as exc:  # noqa: BLE001 (reported by the assertion below)
                failed.append(exc)

        thread = threading.Thread(target=replica_b)
        try:
            thread.start()
            assert read.wait(30), "replica B never read the pool"
            a.register_audio("c1", {"t2": _element("t2")})  # commits while B's read is stale
            committed.set()
            thread.join(60)
            with a.reads.connect() as conn:
                known = set(conn.execute(sa.select(audio.c.token)).scalars())
        finally:
            committed.set()
            a.close()
            b.close()
    assert not failed, failed
    assert known == {"t1", "t2", "t3"}
