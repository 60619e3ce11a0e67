"""Parameterised notebooks as a scheduler runs them: every parameter of 05_ab_listening,
08_listening_campaign and 03_cost_report is changed (04's by test_papermill_agent_one.py);
each change is found in what the run printed or wrote.

Every list parameter is passed as people type it, JSON text after ``-p`` (papermill hands
the notebook a string): ``-p MODELS '["v6", "v7"]'``; text that is not a list stops the
notebook at once, naming the parameter and the ``-y`` form, before anything is spent.

The runs are papermill processes, two at a time (one per core), started by a module
fixture; each test then reads its own executed copy. A static check covers every notebook:
no cell after the parameters cell assigns a parameter again (05 once re-set MODELS and
PROMPTS right after it, so papermill's values were silently replaced).
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from songlab import listening, pricing
from songlab.ledger.display import cents

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "notebooks"
pytestmark = pytest.mark.timeout(300)

AB = {
    "MODELS": ["v6", "v7"],
    "PROMPTS": ["calm piano", "dark techno"],
    "LICENSE": "standard",
    "SEED": 8,
    "LISTENER_SEED": 2,
    "REPEATS": 2,
}
# 03: the dates win over PERIOD (last-7-days would hold every task of the run)
REPORT = {
    "PERIOD": "last-7-days",
    "DATE_FROM": "2020-01-01",
    "DATE_TO": "2020-01-31",
    "TIERS": ["sync", "sync"],
    "BUDGET": "1.00",
}
CAMPAIGN = {
    "MODELS": ["v6", "v7"],
    "PROMPTS": ["calm piano", "dark techno"],
    "RATERS": 6,
    "CARELESS": 1,
    "LICENSE": "distribution",
    "CLIP_SECONDS": 2.0,
    "SEED": 16,
}


def _parameters_cell(nb: dict) -> int | None:
    for i, cell in enumerate(nb["cells"]):
        if "parameters" in cell["metadata"].get("tags", []):
            return i
    return None


def _assigned(source: str) -> set[str]:
    """Names a cell binds at its top level (assignments, augmented ones, for targets, imports)."""
    lines = [ln for ln in source.splitlines() if not ln.lstrip().startswith(("%", "!"))]
    names: set[str] = set()
    for node in ast.walk(ast.parse("\n".join(lines))):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.alias):
            names.add((node.asname or node.name).split(".")[0])
    return names


PARAMETERISED = [
    p
    for p in sorted(NOTEBOOKS.glob("*.ipynb"))
    if _parameters_cell(json.loads(p.read_text(encoding="utf-8"))) is not None
]


def test_the_parameterised_notebooks_are_those_with_a_papermill_test() -> None:
    assert [p.stem for p in PARAMETERISED] == [
        "03_cost_report",
        "04_agent_one",
        "05_ab_listening",
        "08_listening_campaign",
    ]


@pytest.mark.parametrize("path", PARAMETERISED, ids=lambda p: p.stem)
def test_nothing_after_the_parameters_cell_reassigns_a_parameter(path: Path) -> None:
    nb = json.loads(path.read_text(encoding="utf-8"))
    at = _parameters_cell(nb)
    assert at is not None
    params = _assigned("".join(nb["cells"][at]["source"]))
    assert params, f"{path.name}: the parameters cell assigns nothing"
    for cell in nb["cells"][at + 1 :]:
        if cell["cell_type"] != "code":
            continue
        source = "".join(cell["source"])
        again = params & _assigned(source) - _reads_parameters(source)
        assert not again, (
            f"{path.name} cell {cell.get('id')}: reassigns parameter(s) {sorted(again)}"
        )


def _reads_parameters(source: str) -> set[str]:
    """Parameters a cell re-binds only to read them as people typed them:
    ``A, B = lists(A=A, B=B)`` (songlab.params) keeps the value it was given."""
    lines = [ln for ln in source.splitlines() if not ln.lstrip().startswith(("%", "!"))]
    tree = ast.parse("\n".join(lines))
    kept: set[str] = set()
    for node in tree.body:
        if not (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)):
            continue
        call = node.value
        if getattr(call.func, "id", None) not in ("lists", "dicts"):
            continue
        targets = node.targets[0]
        names = [t.id for t in getattr(targets, "elts", [targets]) if isinstance(t, ast.Name)]
        given = [k.arg for k in call.keywords]
        values = [getattr(k.value, "id", None) for k in call.keywords]
        if names == given == values:
            kept |= set(names)
    return kept


def test_the_static_check_catches_a_reassignment() -> None:
    assert _assigned("%matplotlib inline\nMODELS = ['v5']\nfor OUT in []: pass") == {
        "MODELS",
        "OUT",
    }
    assert "PROMPTS" not in _assigned("print(PROMPTS)\nx = PROMPTS[0]")
    # reading a parameter as typed keeps its value; anything else is a reassignment
    assert _reads_parameters("MODELS, PROMPTS = lists(MODELS=MODELS, PROMPTS=PROMPTS)") == {
        "MODELS",
        "PROMPTS",
    }
    assert _reads_parameters("MODELS = lists(MODELS=['v5'])") == set()
    assert _reads_parameters("MODELS, PROMPTS = lists(MODELS=PROMPTS, PROMPTS=MODELS)") == set()


@pytest.mark.parametrize("path", PARAMETERISED, ids=lambda p: p.stem)
def test_every_list_parameter_is_read_as_typed_before_anything_else(path: Path) -> None:
    """The cell after the parameters cell reads every list parameter through
    songlab.params.lists, so papermill's -p JSON text works there, before any request."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    at = _parameters_cell(nb)
    assert at is not None
    defaults: dict[str, object] = {}
    exec("".join(nb["cells"][at]["source"]), {}, defaults)  # plain assignments only
    wanted = {k for k, v in defaults.items() if isinstance(v, list | dict)}
    following = "".join(nb["cells"][at + 1]["source"])
    assert wanted and _reads_parameters(following) == wanted, following


def test_text_that_is_not_a_list_stops_at_once_naming_the_y_form(tmp_path: Path) -> None:
    """``-p MODELS 'v6, v7'``: the run stops in the cell after the parameters, before the
    client connects (nothing sent, nothing spent), and says which -y form works."""
    pytest.importorskip("papermill")
    out = tmp_path / "ran.ipynb"
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "papermill",
            str(NOTEBOOKS / "05_ab_listening.ipynb"),
            str(out),
            "--cwd",
            str(NOTEBOOKS),
            "-k",
            "python3",
            "--no-progress-bar",
            "-p",
            "MODELS",
            "v6, v7",
        ],
        capture_output=True,
        text=True,
        timeout=240,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
    )
    assert run.returncode != 0
    said = run.stdout + run.stderr + _outputs(out)
    assert "ParameterError: MODELS: must be a list" in said, said[-3000:]
    assert "-y 'MODELS: [v6, v7]'" in said
    assert "using the local sandbox" not in _outputs(out)  # it never connected


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Path]]:
    """Start both papermill runs in parallel; yield {name: output dir} once both ended."""
    pytest.importorskip("papermill")
    base = tmp_path_factory.mktemp("papermill")
    work = base / "notebooks"  # a copy: 03 writes its ledger under its own out/
    shutil.copytree(NOTEBOOKS, work, ignore=shutil.ignore_patterns("out", "*.ipynb"))
    shutil.copytree(ROOT / "data", base / "data")
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    env.pop("SONGLAB_API_KEY", None)
    env.pop("SONGLAB_BASE_URL", None)
    todo = [
        ("05_ab_listening", {**AB, "OUT": str(base / "ab")}),
        ("08_listening_campaign", {**CAMPAIGN, "OUT": str(base / "campaign")}),
        ("03_cost_report", {**REPORT, "OUTPUT_PATH": str(base / "report")}),
    ]
    running: dict[str, tuple[subprocess.Popen[bytes], object]] = {}

    def start(name: str, params: dict) -> None:
        args = [
            sys.executable,
            "-m",
            "papermill",
            str(NOTEBOOKS / f"{name}.ipynb"),
            str(base / f"{name}.ipynb"),
            "--cwd",
            str(work),
            "-k",
            "python3",
            "--no-progress-bar",
        ]
        for key, value in params.items():
            if isinstance(value, list):  # as people type a list: JSON text after -p
                args += ["-p", key, json.dumps(value)]
            else:
                args += ["-y", json.dumps({key: value})]
        log = (base / f"{name}.log").open("wb")
        running[name] = (subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, env=env), log)

    for name, params in todo[:2]:
        start(name, params)
    queue = todo[2:]
    while running:
        done = [n for n, (p, _) in running.items() if p.poll() is not None]
        for name in done:
            proc, log = running.pop(name)
            log.close()  # type: ignore[attr-defined]
            if proc.returncode:
                for p, _ in running.values():
                    p.kill()
                pytest.fail(
                    f"papermill {name} failed:\n"
                    + (base / f"{name}.log").read_text(errors="replace")[-4000:]
                )
            if queue:
                start(*queue.pop(0))
        time.sleep(0.2)
    yield {"base": base}


def _outputs(path: Path) -> str:
    nb = json.loads(path.read_text(encoding="utf-8"))
    parts = []
    for cell in nb["cells"]:
        for out in cell.get("outputs", []):
            data = out.get("data") or {}
            parts.append("".join(out.get("text") or data.get("text/plain") or ""))
    return "\n".join(parts)


def _tones(models: list[str], prompts: list[str]) -> dict[str, list[tuple[np.ndarray, int]]]:
    """Stand-in clips: the design and the scripted listener depend on seeds, models and prompts."""
    sr = 8000
    t = np.arange(sr) / sr
    return {
        m: [
            ((0.1 * np.sin(2 * np.pi * (200 + 40 * i + 90 * j) * t)).astype(np.float32)[None], sr)
            for j in range(len(prompts))
        ]
        for i, m in enumerate(models)
    }


@pytest.mark.slow  # reads the module's papermill runs: kernels started
def test_05_obeys_every_parameter(runs: dict[str, Path]) -> None:
    base = runs["base"]
    text = _outputs(base / "05_ab_listening.ipynb")
    # MODELS, PROMPTS, LICENSE: 2 x 2 songs at the standard tier, priced from the list
    each = sum(pricing.price("generate_song", m, "standard") for m in AB["MODELS"])
    assert f"4 songs, estimated ${each * 2}" in text
    assert "v5" not in text and "lofi" not in text
    assert "calm piano" in text and "dark techno" in text
    # REPEATS: one pair x two prompts x two repeats
    assert "PreferenceSession(models=2, prompts=2, trials=4" in text
    # OUT: the session and its answers were written there
    saved = base / "ab" / "session.json"
    answers = pd.read_csv(base / "ab" / "listening_results.csv")

    # SEED and LISTENER_SEED: the same design and the same scripted answers as the library
    # gives for these seeds (and not those of the defaults, 7 and 1)
    def answered(seed: int, listener: int) -> list:
        s = listening.preference(
            _tones(AB["MODELS"], AB["PROMPTS"]),
            prompts=AB["PROMPTS"],
            repeats=AB["REPEATS"],
            seed=seed,
        )
        for _ in range(2):  # the notebook answers two trials "A" through the panel
            first = s.next_trial
            for label in s.trials[first].labels:
                s.mark_played(first, label)
            s.answer(first, "A")
        listening.simulate(s, prefer="v7", p=0.75, seed=listener)
        s.reveal()
        r = s.results()
        return r[["trial", "prompt", "label", "model", "chosen", "scripted"]].values.tolist()

    doc = json.loads(saved.read_text(encoding="utf-8"))
    order = [t["prompt"] for t in doc["trials"]]
    got = answers[["trial", "prompt", "label", "model", "chosen", "scripted"]].values.tolist()
    assert got == answered(AB["SEED"], AB["LISTENER_SEED"])
    assert order == [row[1] for row in got[::2]]
    others = [answered(7, AB["LISTENER_SEED"]), answered(AB["SEED"], 1)]
    assert all(got != other for other in others), "the seeds must change the run"


@pytest.mark.slow  # reads the module's papermill runs: kernels started
def test_08_obeys_every_parameter(runs: dict[str, Path]) -> None:
    base = runs["base"]
    text = _outputs(base / "08_listening_campaign.ipynb")
    billed = sum(pricing.price("generate_song", m, "distribution") for m in CAMPAIGN["MODELS"]) * 2
    assert f"4 songs billed ${cents(billed)} at distribution" in text  # MODELS, PROMPTS, LICENSE
    assert "each rater hears 2.0 s of each song" in text  # CLIP_SECONDS
    assert "models=2, prompts=2, raters=6" in text  # RATERS
    assert "v5" not in text and "lofi" not in text
    out = base / "campaign"  # OUT
    assert len(list((out / "mushra_pages").glob("*.html"))) == 6
    assert len(list((out / "mushra_answers").glob("*.json"))) == 6
    saved = json.loads((out / "mushra_campaign.json").read_text(encoding="utf-8"))
    assert saved["seed"] == CAMPAIGN["SEED"]  # SEED
    # CARELESS: the one careless rater (the last) is the one excluded: the notebook prints
    # "N of M raters excluded ..." and then one "  rNN: reason" line per excluded rater
    assert "1 of 6 raters excluded" in text
    excluded = re.findall(r"^  (r\d\d): \S", text, re.M)
    assert excluded == ["r06"], excluded


def test_03_parameters_cell_names_every_parameter() -> None:
    nb = json.loads((NOTEBOOKS / "03_cost_report.ipynb").read_text(encoding="utf-8"))
    tagged = [c for c in nb["cells"] if "parameters" in c["metadata"].get("tags", [])]
    assert len(tagged) == 1
    src = "".join(tagged[0]["source"])
    for name in ("PERIOD", "DATE_FROM", "DATE_TO", "TIERS", "BUDGET", "OUTPUT_PATH"):
        assert f"\n{name} = " in f"\n{src}", name


@pytest.mark.slow  # reads the module's papermill runs: kernels started
def test_03_obeys_every_parameter(runs: dict[str, Path]) -> None:
    base = runs["base"]
    ran = json.loads((base / "03_cost_report.ipynb").read_text(encoding="utf-8"))
    text = _outputs(base / "03_cost_report.ipynb")
    committed = _outputs(NOTEBOOKS / "03_cost_report.ipynb")
    injected = [c for c in ran["cells"] if "injected-parameters" in c["metadata"].get("tags", [])]
    assert len(injected) == 1 and '"last-7-days"' in "".join(injected[0]["source"])
    # TIERS: two songs, both in sync, priced by the list (and not the committed 4 tiers)
    expected = (
        pricing.price("generate_song", "v5", 4)
        + pricing.price("generate_song", "v6", 4)
        + pricing.price("generate_music", "v7", 2)
        + pricing.price("write_lyrics", "v5", 1)
        + pricing.price("sfx_gen", "v5", 1)
    )
    assert f"5 generations, estimated ${cents(expected)}" in text
    assert "7 generations, estimated $2.83" in committed and "7 generations" not in text
    # DATE_FROM/DATE_TO replace the named period: January 2020 holds none of today's tasks
    assert "spend in the period: $0.00 over 0 tasks" in text
    assert "spend in the period: $3.03 over 9 tasks" in committed
    # BUDGET: another budget, against the same month to date
    assert "budget $1.00," in text and "budget $5.00," in committed
    month = [line for line in text.splitlines() if line.startswith("month to date:")]
    assert month and Decimal(month[0].split()[3].strip("$;").replace(",", "")) > Decimal("1.00")
    # OUTPUT_PATH: the report and its exports were written there, the period's both ends named
    report = (base / "report.html").read_text(encoding="utf-8")
    assert "2020-01-01 to 2020-01-31" in report
    assert (base / "report.xlsx").exists()
    assert (base / "report_csv" / "by_project.csv").exists()
