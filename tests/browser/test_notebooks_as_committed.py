"""Notebooks 05 and 09 in JupyterLab and Chromium as a person opens them, then 05 run.

Opened as committed (nothing run): every output renders, the widgets as their pictures,
with no "disconnected" view, no "Error displaying widget: model not found", no placeholder
of a gone run (``UUID``, ``HH:MM``, ``voice_ID``, ``PORT`` in a picture), no
``<Figure size ...>`` text where a chart belongs, and the verdicts the notebook printed.
Then Run All on 05: its listening panel, revealed after a person's two answers (each model
chosen once, a tie), says "No clear winner" and names no winner. Saved and opened again
with no kernel, as `make lab` sets JupyterLab (widget state saved with the notebook), the
panel renders from its saved state: no widget output says "model not found" (with the
widget manager's default, not saving, every one did).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from tests.browser._chromium import CHROMIUM
from tests.browser._lab import menu as _menu
from tests.browser._lab import running_lab as _running_lab
from tests.browser.test_lab import CHROMIUM_ARGS, OUT, ROOT

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(600)]

PLACEHOLDER = re.compile(r"\b(UUID|HH:MM|voice_ID|TIMESTAMP|MODEL_ID)\b")
BROKEN = ("model not found", "Error displaying widget", "<Figure size")
# every cell rendered, not only those in view (JupyterLab 4 windows long notebooks)
ALL_CELLS = {"@jupyterlab/notebook-extension:tracker": {"windowingMode": "none"}}


def _lab_script() -> Any:
    """scripts/lab.py (a script, not a package): the widget settings `make lab` writes."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("lab_script", ROOT / "scripts" / "lab.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _settings(tmp_path: Path) -> None:
    """This run's JupyterLab settings: every cell of a notebook in the page, and the widget
    manager as `make lab` sets it (widget state saved with the notebook)."""
    settings = tmp_path / "jupyter" / "settings"
    for plugin, values in {
        **ALL_CELLS,
        _lab_script().WIDGETS_PLUGIN: _lab_script().WIDGET_SETTINGS,
    }.items():
        package, name = plugin.rsplit(":", 1)
        folder = settings / package
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{name}.jupyterlab-settings").write_text(json.dumps(values), encoding="utf-8")


def _open(page: Any, url: str, name: str) -> str:
    """Open notebook ``name`` and return the notebook's text once its outputs rendered."""
    from playwright.sync_api import expect

    page.goto(re.sub(r"/lab/tree/[^?]+", f"/lab/tree/{name}", url))
    status = page.locator(".jp-StatusBar-Widget").filter(has_text="| Idle")
    expect(status.first).to_be_visible(timeout=120_000)
    news = page.get_by_role("button", name="No", exact=True)
    if news.count():
        news.first.click()
    shown = page.locator(".jp-NotebookPanel:visible .jp-OutputArea-output")
    expect(shown.first).to_be_visible(timeout=30_000)
    page.wait_for_timeout(1500)  # the last outputs (HTML, pictures) settle
    text: str = page.locator(".jp-NotebookPanel:visible").first.inner_text()
    return text


def _as_committed(page: Any, text: str, name: str) -> None:
    for bad in BROKEN:
        assert bad not in text, f"{name}: {bad!r} on the page"
    assert page.locator(".jp-NotebookPanel:visible .jupyter-widgets-disconnected").count() == 0
    pictures = page.locator(".jp-NotebookPanel:visible .songlab-snapshot")
    for i in range(pictures.count()):
        shown = pictures.nth(i).inner_text()
        assert not PLACEHOLDER.search(shown) and "PORT" not in shown, shown[:300]
    assert not PLACEHOLDER.search(text), PLACEHOLDER.findall(text)[:5]
    assert "Winner:" not in text


@pytest.fixture
def lab_all_cells(tmp_path: Path) -> Any:
    _settings(tmp_path)
    with _running_lab(tmp_path) as running:
        yield running


def test_05_and_09_open_clean_and_05_says_no_clear_winner_on_a_tie(
    lab_all_cells: tuple[str, str],
) -> None:
    from playwright.sync_api import expect, sync_playwright

    url, _ = lab_all_cells
    OUT.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        try:
            text = _open(page, url, "09_choose_a_model.ipynb")
            _as_committed(page, text, "09")
            assert "No clear winner on listening points per dollar" in text
            assert page.locator(".jp-OutputArea-output img").count() >= 1  # the chart
            page.screenshot(path=str(OUT / "09-opened.png"), full_page=True)

            text = _open(page, url, "05_ab_listening.ipynb")
            _as_committed(page, text, "05")
            picture = page.locator(
                ".jp-NotebookPanel:visible .songlab-snapshot", has_text="Revealed"
            ).first
            expect(picture).to_be_visible()
            assert "No clear winner on choice share" in picture.inner_text()
            page.screenshot(path=str(OUT / "05-opened.png"), full_page=True)

            _menu(page, "Run", "Run All Cells")  # the tie: the person's two answers
            panel = page.locator(".songlab-listening", has_text="Revealed")
            expect(panel.first).to_be_visible(timeout=300_000)
            expect(panel.first).to_contain_text("No clear winner", timeout=30_000)
            said = panel.first.inner_text()
            assert "Winner:" not in said and "Your answers (2 trials)" in said
            expect(page.get_by_text("v7 preferred to v5").first).to_be_visible(timeout=300_000)
            page.screenshot(path=str(OUT / "05-run.png"), full_page=True)

            # saved after the run (as autosave does) and opened again: the widgets render
            # from the saved state, never "Error displaying widget: model not found"
            page.keyboard.press("Control+s")
            page.wait_for_timeout(2000)
            _menu(page, "Kernel", "Shut Down Kernel")
            page.wait_for_timeout(2000)
            page.reload()
            shown = page.locator(".jp-NotebookPanel:visible .jp-OutputArea-output")
            expect(shown.first).to_be_visible(timeout=60_000)
            panel = page.locator(
                ".jp-NotebookPanel:visible .songlab-listening", has_text="Revealed"
            )
            expect(panel.first).to_contain_text("No clear winner", timeout=60_000)
            reopened = page.locator(".jp-NotebookPanel:visible").first.inner_text()
            assert "model not found" not in reopened and "Error displaying widget" not in reopened
            page.screenshot(path=str(OUT / "05-reopened.png"), full_page=True)
        finally:
            browser.close()
