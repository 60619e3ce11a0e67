"""The report's charts drawn by worker processes (``_drawing``): the same page as drawn here,
whatever happens to the workers; a failing chart fails as it would here; the caller's script
runs once; no secret reaches a worker."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd
import pytest

import songlab.ledger._drawing as drawing
import songlab.ledger.plots as plots
from songlab.ledger import report, tables
from songlab.ledger.synthetic import synthetic_table

AS_OF = datetime(2026, 12, 31, 12, tzinfo=UTC)
DATA = tables.build(
    synthetic_table(2000, seed=3, labels=True, days=40, settled_before=AS_OF),
    as_of=AS_OF,
    budgets=["1000"],
)
GENERATED = re.compile(r"generated [0-9: -]+ UTC")
pytestmark = pytest.mark.slow  # each test starts worker processes (make test runs them)


def _page(monkeypatch: pytest.MonkeyPatch, workers: str) -> str:
    monkeypatch.setenv(drawing.WORKERS_ENV, workers)
    return GENERATED.sub("", report.render_report(DATA))


@pytest.fixture
def fresh_workers() -> Iterator[None]:
    drawing._stop_all()
    yield
    drawing._stop_all()


def test_the_page_drawn_by_workers_is_the_page_drawn_here(
    monkeypatch: pytest.MonkeyPatch, fresh_workers: None
) -> None:
    """The first page draws its charts itself and starts the workers for the next; the next
    is drawn by them, the same page; fewer workers asked for stops the others."""
    here = _page(monkeypatch, "0")
    assert not drawing._pool
    assert _page(monkeypatch, "2") == here  # drawn here: no worker was ready
    assert len(drawing._pool) == 2 and not any(w.drawn for w in drawing._pool)
    assert drawing.warm(wait=60)
    by_workers = _page(monkeypatch, "2")
    assert sum(w.drawn for w in drawing._pool) == 6
    assert by_workers == here
    assert by_workers.count('<img alt="') == 6 and "songlab-chart-" not in by_workers
    workers = [w.process for w in drawing._pool]
    assert _page(monkeypatch, "0") == here
    assert not drawing._pool and all(p.wait(timeout=10) is not None for p in workers)


def test_a_last_report_starts_no_worker(
    monkeypatch: pytest.MonkeyPatch, fresh_workers: None, tmp_path: Path
) -> None:
    """``songlab report`` makes one report and ends (``write_report(..., last=True)``): a
    worker would cost more than it saves."""
    monkeypatch.setenv(drawing.WORKERS_ENV, "2")
    tasks = synthetic_table(300, seed=2, days=10, settled_before=AS_OF)
    report.write_report(tasks, tmp_path / "r.html", as_of=AS_OF, last=True)
    assert not drawing._pool
    report.write_report(tasks, tmp_path / "r.html", as_of=AS_OF)
    assert len(drawing._pool) == 2


def test_killed_workers_cost_time_not_charts(
    monkeypatch: pytest.MonkeyPatch, fresh_workers: None
) -> None:
    """Workers killed with charts in their queues: each chart is drawn here, the same bytes;
    the next page starts new workers."""
    here = _page(monkeypatch, "0")
    chart = plots.png_bytes(plots.spend_by_tier(DATA.charts["by_tier"]))
    monkeypatch.setenv(drawing.WORKERS_ENV, "2")
    assert drawing.warm(wait=60)
    pictures = [drawing.draw(plots.spend_by_tier, DATA.charts["by_tier"]) for _ in range(8)]
    killed = [w.process.pid for w in drawing._pool]
    for pid in killed:
        os.kill(pid, signal.SIGKILL)
    assert [picture() for picture in pictures] == [chart] * 8
    assert _page(monkeypatch, "2") == here  # drawn here, the workers started again after
    assert drawing.warm(wait=60) and len(drawing._pool) == 2
    assert not {w.process.pid for w in drawing._pool} & set(killed)
    assert _page(monkeypatch, "2") == here


def test_a_chart_that_fails_fails_as_it_would_here(
    monkeypatch: pytest.MonkeyPatch, fresh_workers: None
) -> None:
    broken = pd.DataFrame({"nothing": [1]})
    with pytest.raises(Exception) as here:
        plots.png_bytes(plots.spend_by_project(broken))
    monkeypatch.setenv(drawing.WORKERS_ENV, "1")
    assert drawing.warm(wait=60)
    picture = drawing.draw(plots.spend_by_project, broken)
    with pytest.raises(type(here.value)):
        picture()
    assert drawing._pool and drawing._pool[0].process.poll() is None  # the worker goes on


def test_a_script_without_a_main_guard_runs_once(tmp_path: Path) -> None:
    """Workers are plain children, not multiprocessing's spawn, which would run the caller's
    unguarded script again in each of them: the script's second report is drawn by them,
    and the script ran once."""
    runs = tmp_path / "runs.txt"
    script = tmp_path / "report_now.py"
    script.write_text(
        textwrap.dedent(f"""
        from datetime import UTC, datetime
        from songlab.ledger import _drawing
        from songlab.ledger.report import write_report
        from songlab.ledger.synthetic import synthetic_table
        with open({str(runs)!r}, "a") as fh:
            fh.write("ran\\n")
        as_of = datetime(2026, 12, 31, 12, tzinfo=UTC)
        tasks = synthetic_table(500, seed=1, days=20, settled_before=as_of)
        write_report(tasks, {str(tmp_path / "r1.html")!r}, as_of=as_of)
        assert _drawing.warm(wait=60)
        write_report(tasks, {str(tmp_path / "r2.html")!r}, as_of=as_of)
        print(sum(w.drawn for w in _drawing._pool))
        """)
    )
    env = {**os.environ, drawing.WORKERS_ENV: "2"}
    done = subprocess.run(
        [sys.executable, str(script)], check=True, env=env, timeout=120, capture_output=True
    )
    assert done.stdout.decode().strip() == "6"
    assert runs.read_text() == "ran\n"
    for page in ("r1.html", "r2.html"):
        assert (tmp_path / page).read_text().count('<img alt="') == 6


@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="reads /proc")
def test_a_worker_gets_no_secret(monkeypatch: pytest.MonkeyPatch, fresh_workers: None) -> None:
    secret = "sk-live-" + "9" * 24
    monkeypatch.setenv("SONGLAB_API_KEY", secret)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", secret)
    monkeypatch.setenv(drawing.WORKERS_ENV, "1")
    assert drawing.warm(wait=60)
    (worker,) = drawing._pool
    environ = Path(f"/proc/{worker.process.pid}/environ").read_bytes()
    assert secret.encode() not in environ
    assert b"PYTHONPATH=" + str(Path(drawing.__file__).parents[2]).encode() in environ


def test_workers_that_cannot_start_are_not_started_forever(
    monkeypatch: pytest.MonkeyPatch, fresh_workers: None
) -> None:
    """A Python whose child cannot import songlab (here: one that exits at once) gets its
    charts drawn here, and after a few failed starts no worker is started again."""
    here = _page(monkeypatch, "0")
    monkeypatch.setattr(drawing.sys, "executable", "/bin/false")
    monkeypatch.setattr(drawing, "_failed_starts", 0)
    monkeypatch.setenv(drawing.WORKERS_ENV, "1")
    for _ in range(drawing.MAX_FAILED_STARTS + 2):
        assert not drawing.warm(wait=30)
        assert _page(monkeypatch, "1") == here
    assert drawing._failed_starts == drawing.MAX_FAILED_STARTS
    assert not drawing._pool or not any(w.alive for w in drawing._pool)
