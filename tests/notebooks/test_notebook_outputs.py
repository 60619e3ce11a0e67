"""The committed notebooks: no API key or machine path in any output, outputs that nbval
compares (not ``--nbval-lax``), and a sanitize file that masks ids but never money."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.notebooks._scan import scan_notebook, scan_text

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
SANITIZE = ROOT / "notebooks" / "sanitize.cfg"
JOURNEYS = (
    "01_quickstart",
    "02_voice_clone",
    "03_cost_report",
    "04_agent_one",
    "05_ab_listening",
    "06_translation_and_workflows",
    "07_stems_and_extend",
    "08_listening_campaign",
    "09_choose_a_model",
)
IGNORE = "nbval-ignore-output"
KERNELSPEC = {"name": "python3", "display_name": "Python 3 (songlab)", "language": "python"}


def _load(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def _code_cells(nb: dict) -> list[dict]:
    return [c for c in nb["cells"] if c["cell_type"] == "code"]


def _patterns() -> list[tuple[str, str]]:
    # the same parser nbval uses for --nbval-sanitize-with
    from nbval.plugin import get_sanitize_patterns

    return get_sanitize_patterns(SANITIZE.read_text(encoding="utf-8"))


def _sanitize(text: str) -> str:
    for regex, replace in _patterns():
        text = re.sub(regex, replace, text)
    return text


def test_every_journey_has_its_notebook() -> None:
    assert [p.stem for p in NOTEBOOKS] == list(JOURNEYS)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_no_api_key_or_machine_path_in_outputs(path: Path) -> None:
    findings = scan_notebook(path)
    assert not findings, "\n".join(map(str, findings))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_outputs_are_committed_and_compared(path: Path) -> None:
    nb = _load(path)
    assert nb["metadata"]["kernelspec"] == KERNELSPEC
    cells = _code_cells(nb)
    assert all(c.get("execution_count") for c in cells), "run the notebook top to bottom"
    assert not [c for c in cells for o in c.get("outputs", []) if o["output_type"] == "error"]
    with_output = [c for c in cells if c.get("outputs")]
    compared = [c for c in with_output if IGNORE not in c["metadata"].get("tags", [])]
    assert len(compared) >= max(3, len(with_output) // 2), "most result cells must be compared"
    for c in cells:  # images and widgets change bytes/ids on every run: their cells are ignored
        mimes = {m for o in c.get("outputs", []) for m in (o.get("data") or {})}
        if mimes & {"image/png", "application/vnd.jupyter.widget-view+json"}:
            assert IGNORE in c["metadata"].get("tags", []), c["source"][:80]


def test_the_scanner_finds_keys_and_paths() -> None:
    def nb(text: str, *, mime: str = "text/plain") -> dict:
        return {
            "cells": [
                {
                    "cell_type": "code",
                    "outputs": [{"output_type": "execute_result", "data": {mime: text}}],
                }
            ],
            "metadata": {},
        }

    assert scan_notebook(nb("Client(api_key='sk-sandbox-demo')"))[0].kind == "api key"
    assert scan_notebook(nb("key sk-live_9f8A7b6C5d4E"))
    for path in (
        "/work/main/notebooks/out",
        "'/root/x'",
        "/home/me/a.mp3",
        "(/tmp/nbout)",
        "C:\\Users\\me\\song.mp3",
    ):
        assert scan_notebook(nb(path)), path
    stream = {
        "cells": [
            {
                "cell_type": "code",
                "outputs": [
                    {"output_type": "stream", "name": "stderr", "text": ["see /tmp/x.log\n"]}
                ],
            }
        ],
        "metadata": {"widgets": {"state": {"m": {"value": "sk-abcdef123"}}}},
    }
    assert {f.where for f in scan_notebook(stream)} == {"cell 0 output 0 stderr", "widget state"}
    for clean in (
        "out/quickstart.mp3",
        "http://127.0.0.1:PORT/v1/tools",
        "risk-free 0.25 USD",
        '<audio src="data:audio/mpeg;base64,AAAA/tmp/BBBBsk-abcdefgh==">',
    ):
        assert not scan_text(clean, "t"), clean


def test_sanitize_masks_ids_and_times_but_not_money() -> None:
    line = (
        "task 429ba695-5f81-4e72-930e-8be1c44fef66 at http://127.0.0.1:39227 "
        "2026-11-22 00:16:43.707000+00:00 voice_b32832d2748846de9b481a9b722a50f9"
    )
    assert _sanitize(line) == "task UUID at http://127.0.0.1:PORT TIMESTAMP voice_ID"
    assert _sanitize("ledger/month=2026-11/part.parquet") == "ledger/month=DATE/part.parquet"
    for money in (
        "billed: $0.25",
        "balance: 99,975 tokens = $999.75",
        "total spent: $3.03 over 9 tasks",
        "p_value 0.038574",
    ):
        assert _sanitize(money) == money
    assert _sanitize("billed: $0.25") != _sanitize("billed: $0.26")


def _recorder() -> Any:
    """scripts/record_notebooks.py (a script, not a package): its scrubber and its check."""
    spec = importlib.util.spec_from_file_location(
        "record_notebooks", ROOT / "scripts" / "record_notebooks.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_committed_outputs_hold_nothing_that_is_wrong_when_opened(path: Path) -> None:
    """No sandbox address, id, timestamp or take time of the run that saved the notebook,
    in any output or in the saved widget state (scripts/record_notebooks.py scrubs them)."""
    found = _recorder().stale(_load(path))
    assert found == [], "\n".join(found[:20])


def test_the_scrubber_replaces_stale_values_and_nbval_still_matches() -> None:
    rec = _recorder()
    line = (
        "using the local sandbox at http://127.0.0.1:36301; task "
        "429ba695-5f81-4e72-930e-8be1c44fef66 voice_b32832d2748846de9b481a9b722a50f9 at "
        "2026-11-22 00:16:43.707000+00:00, saved as v5-take1-lofi-429ba695.mp3"
    )
    nb = {
        "cells": [
            {
                "cell_type": "code",
                "outputs": [{"output_type": "stream", "name": "stdout", "text": [line]}],
            }
        ],
        "metadata": {
            "widgets": {
                "application/vnd.jupyter.widget-state+json": {
                    "state": {
                        "0123456789abcdef0123456789abcdef": {
                            "model_id": "0123456789abcdef0123456789abcdef",
                            "state": {"value": "v5 take 1 \u00b7 04:17 \u00b7 lofi", "n": 3},
                            "buffers": [{"data": "AAAA", "path": ["value"]}],
                        }
                    }
                }
            }
        },
    }
    assert len(rec.stale(nb)) == 6
    clean = rec.scrub(json.loads(json.dumps(nb)))
    assert rec.stale(clean) == [] and rec.scrub(json.loads(json.dumps(clean))) == clean
    text = clean["cells"][0]["outputs"][0]["text"][0]
    assert "36301" not in text and "http://127.0.0.1:PORT" in text and "voice_ID" in text
    assert "v5-take1-lofi-ID.mp3" in text
    state = clean["metadata"]["widgets"]["application/vnd.jupyter.widget-state+json"]["state"]
    model = state["0123456789abcdef0123456789abcdef"]
    assert (
        model["state"]["value"] == "v5 take 1 \u00b7 HH:MM \u00b7 lofi" and model["state"]["n"] == 3
    )
    assert model["model_id"] == "0123456789abcdef0123456789abcdef"  # saved views need it
    # nbval compares the sanitized texts: a fresh run's line equals the scrubbed one
    assert _sanitize(line) == _sanitize(text)


def test_a_widget_becomes_a_picture_of_itself_with_nothing_of_the_gone_run() -> None:
    """scripts/record_notebooks.py: each widget output becomes HTML drawn from the saved
    state (text, controls as they stood, playable audio), the run's ids shortened and its
    times left out, and no widget state stays (no "disconnected" view, no "model not
    found")."""
    import base64

    rec = _recorder()
    names = ("box", "html", "button", "player", "hidden", "lay")
    ids = {name: f"{i:x}" * 32 for i, name in enumerate(names, start=1)}

    def model(name: str, kind: str, state: dict, **extra: Any) -> dict:
        return {
            "model_name": kind,
            "model_module": "@jupyter-widgets/controls",
            "state": state,
            **extra,
        }

    state = {
        ids["box"]: model(
            "box",
            "VBoxModel",
            {"children": [f"IPY_MODEL_{ids[n]}" for n in ("html", "button", "player", "hidden")]},
        ),
        ids["html"]: model(
            "html",
            "HTMLModel",
            {
                "value": "v5 take 1 \u00b7 04:17 \u00b7 lofi: task 429ba695-5f81-4e72-930e-8be1c44fef66 "
                "at http://127.0.0.1:36301/_signed/abc saved 2026-11-22 00:16:43"
            },
        ),
        ids["button"]: model(
            "button", "ButtonModel", {"description": "Generate", "disabled": False}
        ),
        ids["player"]: model(
            "player",
            "AnyModel",
            {"label": "A", "mime": "audio/mpeg"},
            buffers=[{"path": ["value"], "data": base64.b64encode(b"ID3 mp3 bytes").decode()}],
        ),
        ids["hidden"]: model(
            "hidden", "HTMLModel", {"value": "not shown", "layout": f"IPY_MODEL_{ids['lay']}"}
        ),
        ids["lay"]: model("lay", "LayoutModel", {"display": "none"}),
    }
    view = {"model_id": ids["box"], "version_major": 2, "version_minor": 0}
    nb = {
        "cells": [
            {
                "cell_type": "code",
                "outputs": [
                    {
                        "output_type": "display_data",
                        "data": {
                            "application/vnd.jupyter.widget-view+json": view,
                            "text/plain": "Form(...)",
                        },
                    }
                ],
            }
        ],
        "metadata": {"widgets": {"application/vnd.jupyter.widget-state+json": {"state": state}}},
    }
    clean = rec.scrub(rec.pictures(nb))
    data = clean["cells"][0]["outputs"][0]["data"]
    assert (
        "application/vnd.jupyter.widget-view+json" not in data
        and "widgets" not in clean["metadata"]
    )
    picture = data["text/html"]
    assert "songlab-snapshot" in picture and "A picture of the panel" in picture
    assert "task 429ba695\u2026" in picture and "v5 take 1 \u00b7 lofi" in picture
    assert "<button disabled>Generate</button>" in picture and "not shown" not in picture
    assert "data:audio/mpeg;base64," + base64.b64encode(b"ID3 mp3 bytes").decode() in picture
    for stale in ("36301", "04:17", "2026-11-22", "UUID", "HH:MM", "PORT", "TIMESTAMP", "DATE"):
        assert stale not in picture, stale
    assert rec.stale(clean) == []
