"""The notebooks as a user and a scheduler run them, against what the spec shows, twice,
under a fresh home.

First pass: all 9 notebooks under papermill against one ``songlab sandbox --profile spec``
process on its default database, reached as the real service is
(``SONGLAB_API_KEY``/``SONGLAB_BASE_URL``), a few at a time, each in its own papermill
process and kernel (each kernel names itself, as a user's does). Everything runs as a user
with a fresh ``HOME`` (no ``XDG_*``, no ``SONGLAB_RECORD`` / ``SONGLAB_CACHE_DIR``: every
default location is used) and the loosest umask a user may have (``0o000``). No cell
raises on answers that carry only what the spec shows, and the cost report's total is not
zero.

Second pass, on the same service and the same record: re-running 01, 02 and 05 creates
nothing and the balance does not move; 02 says what it reused and what was not spent
again. Then 05 with one parameter changed (``LICENSE``) makes exactly the creates that
changed, at their list price.

Then ``songlab report`` with a ledger, CSV and Excel, and a walk over the home: every file
songlab wrote is ``0600`` and every folder it made ``0700``. Left out, each for a stated
reason (``NOT_SONGLAB``): the notebooks this test copied in; the folders and files the
notebooks' own code makes; and what Jupyter, IPython and matplotlib keep under the home.

Until 2026-11-26 these were three tests with a sandbox and notebook runs of their own: the
second pass ran 01, 02 and 05 a first time for itself (on a default-profile sandbox), and
the walk (``tests/reliability/test_private_modes.py``) ran 01, 02 and 08 under its own
home. Six notebook runs and two sandboxes fewer; the walk now covers all nine notebooks.

Outputs are not compared (nbval does that against the default sandbox). The notebooks run
from a copy of ``notebooks/`` (their ``out/`` files never meet the nbval run's).
"""

from __future__ import annotations

import inspect
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from fnmatch import fnmatch
from pathlib import Path

import pytest

from songlab import pricing
from songlab.listening.campaign import Campaign
from tests._profiles import ProfileSandbox, process

pytestmark = [pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
AGAIN = ("01_quickstart", "02_voice_clone", "05_ab_listening")
PARALLEL = 3  # papermill processes at once (each runs one kernel)
NOTEBOOK_TIMEOUT = 300

# not songlab's files (relative to the home, fnmatch patterns)
NOT_SONGLAB = {
    "lab/notebooks/*.ipynb": "the notebooks this test copied, and papermill's outputs",
    "lab/data": "a link to the repository's fixtures",
    "lab/notebooks/out/campaign/*_answers": "the stand-in raters' inbox folders (notebook code)",
    "lab/notebooks/out/campaign/*_answers/*": "the stand-in raters' answer files (notebook code)",
    ".ipython*": "IPython's profile and history",
    ".local": "the folder above songlab's data folder",
    ".local/share": "the folder above songlab's data folder",
    ".local/share/jupyter*": "Jupyter's runtime files",
    ".cache": "the folder above songlab's cache folder",
    ".cache/matplotlib*": "matplotlib's font cache",
    ".config": "the folder above matplotlib's",
    ".config/matplotlib*": "matplotlib's settings",
    ".jupyter*": "Jupyter's settings",
    "lab": "the user's own folder (made by this test)",
    "lab/notebooks/out": "made by notebook 01's own code (OUT.mkdir)",
    "lab/notebooks/out/campaign": "made by notebook 08's own code (out.mkdir)",
    "lab/notebooks": "the user's own folder (made by this test)",
}

# songlab's files that are not private yet, each waiting for a named change to be merged.
# The test fails if a file not listed here is not private. The saved campaign is written
# private by the listening engineer's change to ``Campaign.save`` (branch i-listen): once
# that is in this tree (``save`` writes through ``songlab.localfiles``), nothing is pending
# and the campaign file must be 0600 like the rest; until then it must still be wide (so
# this list cannot go stale).
_SAVE = inspect.getsource(Campaign.save)
PENDING = (
    {}
    if "write_atomic(" in _SAVE or "localfiles" in _SAVE
    else {
        "lab/notebooks/out/campaign/*_campaign.json": "listening: the saved campaign (its secret)"
    }
)


def _mode(p: Path) -> int:
    return stat.S_IMODE(p.lstat().st_mode)


def _match(rel: str, patterns: dict[str, str]) -> str | None:
    return next((pat for pat in patterns if fnmatch(rel, pat)), None)


def _outputs_text(nb: dict) -> str:
    parts = []
    for cell in nb["cells"]:
        for out in cell.get("outputs", []):
            text = out.get("text") or (out.get("data") or {}).get("text/plain", "")
            parts.append("".join(text) if isinstance(text, list) else text)
    return "\n".join(parts)


def _errors(nb: dict) -> list[str]:
    return [
        f"cell {c.get('id')}: {o.get('ename')}: {o.get('evalue')}"
        for c in nb["cells"]
        for o in c.get("outputs", [])
        if o.get("output_type") == "error"
    ]


@dataclass
class Ran:
    name: str
    seconds: float
    stderr: str
    notebook: dict | None

    def failure(self) -> str | None:
        if self.notebook is None:
            return f"{self.name}: no output notebook\n{self.stderr}"
        if errs := _errors(self.notebook):
            return f"{self.name}: {errs}"
        return None


@dataclass
class FirstPass:
    sandbox: ProfileSandbox
    home: Path
    env: dict[str, str]
    results: list[Ran]
    run: Callable[..., Ran]


def _loosest_umask() -> None:
    os.umask(0)


@pytest.fixture(scope="module")
def first_pass(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FirstPass]:
    pytest.importorskip("papermill")
    tmp = tmp_path_factory.mktemp("papermill-spec")
    home = tmp / "home"
    work = home / "lab" / "notebooks"
    work.mkdir(parents=True)
    (home / "lab" / "data").symlink_to(ROOT / "data")
    for nb in NOTEBOOKS:
        shutil.copy(nb, work / nb.name)
    fresh = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("XDG_")
        and k
        not in (
            "MPLCONFIGDIR",
            "SONGLAB_RECORD",
            "SONGLAB_CACHE_DIR",
            "SONGLAB_ORIGIN",
            "SONGLAB_ANALYSIS_CACHE",
            "SONGLAB_API_KEY",
            "SONGLAB_BASE_URL",
            "SONGLAB_SANDBOX_DB",  # the sandbox on its default file, under the fresh home
        )
    }
    fresh["HOME"] = str(home)
    # on its default database, under the fresh home
    sb = process("spec", db=None, env=fresh, umask=0)
    env = {**fresh, **sb.env(), "MPLBACKEND": "Agg"}
    runs = iter(range(1_000_000))

    def run(name: str, **params: str) -> Ran:
        out = tmp / f"ran-{next(runs)}-{name}.ipynb"  # outside the home: not songlab's
        started = time.monotonic()
        proc = subprocess.run(
            [
                sys.executable, "-m", "papermill",
                str(work / f"{name}.ipynb"), str(out),
                "--cwd", str(work), "-k", "python3", "--no-progress-bar",
                "--execution-timeout", str(NOTEBOOK_TIMEOUT),
                *(a for k, v in params.items() for a in ("-p", k, v)),
            ],
            env=env, capture_output=True, text=True, timeout=NOTEBOOK_TIMEOUT + 60,
            preexec_fn=_loosest_umask,  # the kernel inherits it
        )  # fmt: skip
        ran = json.loads(out.read_text(encoding="utf-8")) if out.exists() else None
        return Ran(name, time.monotonic() - started, proc.stderr[-3000:], ran)

    started = time.monotonic()
    try:
        with ThreadPoolExecutor(PARALLEL) as pool:
            results = list(pool.map(run, (nb.stem for nb in NOTEBOOKS)))
        took = {r.name: round(r.seconds, 1) for r in results}
        print(f"papermill, spec profile: {time.monotonic() - started:.1f} s wall, {took}")
        yield FirstPass(sb, home, env, results, run)
    finally:
        sb.stop()


@pytest.mark.timeout(900)
def test_every_notebook_runs_on_what_the_spec_shows(first_pass: FirstPass) -> None:
    results = first_pass.results
    failures = [f for r in results if (f := r.failure())]
    assert not failures, "\n\n".join(failures)
    assert len(results) == 9  # 01-09
    report = next(r.notebook for r in results if r.name == "03_cost_report")
    assert report is not None
    # printed to the cent, as every printed amount is: "total spent: $1,234.56 over 9 tasks"
    found = re.search(r"total spent: \$(\S+) over \d+ tasks", _outputs_text(report))
    assert found, "03_cost_report printed no total"
    try:
        total = Decimal(found.group(1).replace(",", ""))
    except InvalidOperation:
        pytest.fail(f"03_cost_report's total is not an amount: {found.group(1)!r}")
    assert total > 0, f"03_cost_report says the work cost {total}: an unknown cost shown as 0"


def _state(sb: ProfileSandbox) -> tuple[set[str], int]:
    """Every task id of the demo account, and its balance (cents)."""
    with sb.http() as c:
        tasks, cursor = [], None
        while True:
            page = c.get(
                "/v1/generations", params={"limit": 100, **({"cursor": cursor} if cursor else {})}
            ).json()
            tasks += [t["task_id"] for t in page["data"]]
            cursor = page.get("next_cursor")
            if not cursor:
                break
        return set(tasks), c.get("/v1/account/balance").json()["total_effective"]


@pytest.mark.timeout(900)
def test_a_second_pass_creates_nothing_and_a_changed_parameter_only_its_creates(
    first_pass: FirstPass,
) -> None:
    failed = [f for r in first_pass.results if r.name in AGAIN and (f := r.failure())]
    assert not failed, "the first pass failed:\n" + "\n\n".join(failed)
    sb = first_pass.sandbox
    tasks1, balance1 = _state(sb)
    assert len(tasks1) >= 15 and balance1 < 100000  # songs, a clone, takes: real spend
    with ThreadPoolExecutor(PARALLEL) as pool:
        again = {r.name: r for r in pool.map(first_pass.run, AGAIN)}
    failures = [f for r in again.values() if (f := r.failure())]
    assert not failures, "\n\n".join(failures)
    tasks2, balance2 = _state(sb)
    assert tasks2 == tasks1 and balance2 == balance1
    clone = _outputs_text(again["02_voice_clone"].notebook or {"cells": []})
    assert "reused task" in clone and "$12 not spent again" in clone, clone[-2000:]
    # one parameter changed: the nine songs of 05 at another tier, nothing else (a tier no
    # notebook used for them: 08 makes 05's songs at "standard", and the record re-attaches
    # those, as it should)
    changed = first_pass.run("05_ab_listening", LICENSE="distribution")
    assert changed.failure() is None, changed.failure()
    tasks3, balance3 = _state(sb)
    assert len(tasks3 - tasks1) == 9 and tasks1 <= tasks3
    price = sum(pricing.price("generate_song", m, 3) for m in ("v5", "v6", "v7")) * 3
    assert Decimal(balance1 - balance3) / 100 == price


@pytest.mark.skipif(os.name != "posix", reason="file modes are POSIX")
@pytest.mark.timeout(600)
def test_every_file_songlab_writes_under_the_fresh_home_is_private(first_pass: FirstPass) -> None:
    home = first_pass.home
    try:
        done = subprocess.run(
            [
                sys.executable, "-m", "songlab.cli", "report",
                "--out", str(home / "reports" / "costs.html"),
                "--ledger", str(home / "reports" / "ledger"),
                "--xlsx", str(home / "reports" / "costs.xlsx"),
                "--csv", str(home / "reports" / "csv"),
            ],
            env=first_pass.env, capture_output=True, text=True, timeout=300,
            preexec_fn=_loosest_umask,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
    finally:
        first_pass.sandbox.stop()  # its database files as they are left

    wide: dict[str, str] = {}
    private_pending: list[str] = []
    seen: list[str] = []
    for p in sorted(home.rglob("*")):
        rel = p.relative_to(home).as_posix()
        if any(fnmatch(rel, pat) for pat in NOT_SONGLAB) or any(
            fnmatch(rel, pat + "/*") for pat in NOT_SONGLAB if pat.endswith("*")
        ):
            continue
        if p.is_symlink():
            continue
        seen.append(rel)
        want = 0o700 if p.is_dir() else 0o600
        pending = _match(rel, PENDING)
        if _mode(p) != want:
            if pending is None:
                wide[rel] = f"{_mode(p):04o}"
        elif pending is not None:
            private_pending.append(f"{rel} (PENDING {pending!r})")
    print("files and folders checked:", len(seen))
    for rel in seen:
        print(f"  {_mode(home / rel):04o} {rel}")
    # what songlab writes, each kind at least once
    for expected in (
        ".local/share/songlab/sandbox.sqlite3",
        ".local/share/songlab/sandbox.sqlite3.signing-key",
        ".local/share/songlab/record.sqlite",
        "reports/costs.html",
        "reports/costs.xlsx",
        "reports/ledger",
    ):
        assert expected in seen, expected
    assert any(r.startswith(".cache/songlab/assets/") for r in seen)  # the asset cache
    assert any(r.startswith("reports/csv/") and r.endswith(".csv") for r in seen)
    assert any(r.startswith("reports/ledger/month=") for r in seen)
    assert wide == {}, "songlab files open to other users: " + repr(wide)
    assert private_pending == [], "now private: delete these lines from PENDING"
