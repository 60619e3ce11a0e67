"""`make lab` has JupyterLab save widget state with a notebook (scripts/lab.py): a notebook
run and saved in Lab then opens with its widgets, not "Error displaying widget: model not
found" (tests/browser/test_notebooks_as_committed.py shows both in Chromium)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def _lab() -> Any:
    spec = importlib.util.spec_from_file_location("lab_script", ROOT / "scripts" / "lab.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_widget_manager_saves_state_and_other_overrides_stay(tmp_path: Path) -> None:
    lab = _lab()
    path = tmp_path / "share" / "jupyter" / "lab" / "settings" / "overrides.json"
    path.parent.mkdir(parents=True)
    path.write_text(
        json.dumps(
            {
                "@jupyterlab/apputils-extension:themes": {"theme": "JupyterLab Dark"},
                lab.WIDGETS_PLUGIN: {"saveState": False, "other": 1},
            }
        )
    )
    assert lab.widget_state_saved(tmp_path) == path
    assert lab.widget_state_saved(tmp_path) == path  # again: the same file
    settings = json.loads(path.read_text())
    assert settings[lab.WIDGETS_PLUGIN] == {"saveState": True, "other": 1}
    assert settings["@jupyterlab/apputils-extension:themes"] == {"theme": "JupyterLab Dark"}
    path.write_text("not json")
    lab.widget_state_saved(tmp_path)
    assert json.loads(path.read_text()) == {lab.WIDGETS_PLUGIN: {"saveState": True}}
