"""A served campaign as real processes, and a crowd of simulated raters (async httpx).

``CampaignProcess`` runs ``songlab campaign serve`` in its own process group (so a SIGKILL
takes its workers too, as a crashed machine would) and starts it again on the same port and
database. ``crowd(...)`` sends raters: each arrives from Prolific, reads their page, waits as
long as its clips take to hear, and posts each answer, retrying (like the page) until it is
acknowledged; it returns the ids acknowledged.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import ssl
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import numpy as np
import soundfile as sf

from songlab.listening import campaign
from tests.listening._crowd import PageState
from tests.listening.listening_signals import make_clips

ROOT = Path(__file__).resolve().parents[2]
_TLS = ssl.create_default_context()  # shared: a client making its own costs about 30 ms


def saved_campaign(folder: Path, *, raters: int, prompts: int = 2, **options):
    """A small ABX campaign of ``raters`` slots saved in ``folder`` with its clips."""
    clips = make_clips(prompts, seconds=1.0)
    for model, takes in clips.items():
        (folder / "clips" / model).mkdir(parents=True)
        for i, (audio, sr) in enumerate(takes):
            sf.write(folder / "clips" / model / f"{i:02d}.wav", audio, sr, subtype="FLOAT")
    c = campaign("abx", clips, raters=raters, seed=40, gold=0, traps=0, **options)
    c.save(folder / "campaign.json")
    return c, clips


class CampaignProcess:
    """``songlab campaign serve`` in its own process group."""

    def __init__(self, folder: Path, db: str, *, workers: int = 2, port: int = 0) -> None:
        self.folder, self.db, self.workers, self.port = folder, db, workers, port
        self.proc: subprocess.Popen[str] | None = None
        self.log = folder / f"server-{id(self):x}.log"

    def log_tail(self, lines: int = 40) -> str:
        """The end of what the server wrote to stderr (its tracebacks), for a failure."""
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        return "\n".join(text.splitlines()[-lines:])

    def start(self) -> CampaignProcess:
        cmd = [
            sys.executable,
            "-m",
            "songlab.cli",
            "campaign",
            "serve",
            str(self.folder / "campaign.json"),
            "--clips",
            str(self.folder / "clips"),
            "--db",
            self.db,
            "--port",
            str(self.port),
            "--workers",
            str(self.workers),
            "--timeout",
            "3600",
        ]
        with open(self.log, "ab") as log:  # every start's stderr, appended
            self.proc = subprocess.Popen(
                cmd,
                stdout=subprocess.PIPE,
                stderr=log,
                text=True,
                start_new_session=True,
                env={**os.environ, "PYTHONPATH": str(ROOT)},
            )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().strip()
        if not line.startswith("songlab campaign listening on http://"):
            self.kill()
            raise AssertionError(f"the server did not start: {line!r}")
        self.url = line.rsplit(" ", 1)[1]
        self.port = int(self.url.rsplit(":", 1)[1])
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{self.url}/health", timeout=5).status_code == 200:
                    return self
            except httpx.TransportError:
                pass
            time.sleep(0.2)
        raise AssertionError("the server's workers did not answer /health")

    def kill(self) -> None:
        """SIGKILL the whole process group (the server and its workers)."""
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(30)


@dataclass
class Tally:
    acknowledged: set[str] = field(default_factory=set)  # answer ids the server acknowledged
    finished: int = 0
    refused: list[str] = field(default_factory=list)
    retries: int = 0


class GaveUp(Exception):
    """A rater retried for ``PATIENCE`` seconds without an answer below 500."""


PATIENCE = 240.0  # a rater's patience per request: far above a restart, far below the test's


async def _retrying(call, tally: Tally):
    """``call()`` until the server answers below 500 (as the page does: backoff to 2 s); after
    ``PATIENCE`` seconds the rater gives up, and what it last saw is in ``tally.refused``."""
    pause, seen, until = 0.2, "", time.monotonic() + PATIENCE
    while time.monotonic() < until:
        try:  # a bound on the whole call: a connection to a killed server never hangs a rater
            r = await asyncio.wait_for(call(), 90)
            if r.status_code < 500:
                return r
            seen = f"{r.status_code} {r.text[:300]}"
        except (httpx.TransportError, TimeoutError) as exc:
            seen = f"{type(exc).__name__}: {exc}"
        tally.retries += 1
        await asyncio.sleep(pause)
        pause = min(2.0, 2 * pause)
    tally.refused.append(f"gave up after {PATIENCE:.0f} s of retries; last: {seen}")
    raise GaveUp(seen)


async def _rater(base, i: int, delay: float, tally: Tally) -> None:
    """One rater, with a client of their own (as each browser has: one pool shared by a
    thousand raters spends its time in httpcore's queue of waiting requests)."""
    await asyncio.sleep(delay)
    async with httpx.AsyncClient(timeout=60, verify=_TLS) as client:
        with contextlib.suppress(GaveUp):  # counted in tally.refused; the test says so
            await _answer_all(client, base, i, tally)


async def _answer_all(client: httpx.AsyncClient, base, i: int, tally: Tally) -> None:
    params = {"PROLIFIC_PID": f"p{i:05d}", "STUDY_ID": "load", "SESSION_ID": f"s{i}"}
    r = await _retrying(lambda: client.get(f"{base()}/join", params=params), tally)
    assert r.status_code == 303, r.text
    where = r.headers["location"]
    page = await _retrying(lambda: client.get(f"{base()}/{where}"), tally)
    state = PageState.read(page.text)
    rng = np.random.default_rng(i)
    for item in state.answers(rng):
        trial = next(t for t in state.design["trials"] if t["trial"] == item["trial"])
        await asyncio.sleep(state.design["need_ms"] * len(trial["labels"]) / 1000 + 0.3)
        reply = await _retrying(
            lambda item=item: client.post(f"{base()}/api/answers", json=item), tally
        )
        if reply.status_code == 200:
            tally.acknowledged.add(item["id"])
            tally.finished += bool(reply.json().get("complete"))
        else:
            tally.refused.append(reply.json()["message"])


async def crowd(base, n: int, *, within: float, tally: Tally) -> None:
    """``n`` raters arriving evenly over ``within`` seconds; ``base()`` gives the URL to use
    for each request (a round-robin over replicas, or one server)."""
    await asyncio.gather(*(_rater(base, i, within * i / n, tally) for i in range(n)))
