"""Re-record notebooks: run each top to bottom, then keep only outputs that stay true.

    .venv/bin/python scripts/record_notebooks.py notebooks/01_quickstart.ipynb [...]
    .venv/bin/python scripts/record_notebooks.py --all        # every notebook
    .venv/bin/python scripts/record_notebooks.py --check      # are the committed ones clean?

A run against the sandbox prints things that are wrong as soon as it ends: the sandbox's
address (``http://127.0.0.1:36301``: a link that no longer answers), task, file and consent
ids and ``voice_...`` ids of a sandbox that is gone, timestamps and dates of that run. So
after nbconvert has executed a notebook (``--execute --inplace``, widget state saved), every
output is rewritten with the placeholders nbval's ``notebooks/sanitize.cfg`` uses
(``http://127.0.0.1:PORT``, ``UUID``, ``voice_ID``, ``TIMESTAMP``, ``DATE``); nbval applies
the same table to a fresh run before comparing, so the recorded notebook still passes
``--nbval``.

Widgets are not kept live. A saved widget opens without a kernel as a "disconnected" view of
a model the page may not have ("Error displaying widget: model not found" once JupyterLab
saves the notebook again), and its state holds the run's ids and times. So each widget
output becomes a **picture of the panel** as the run left it (:func:`snapshot`: HTML drawn
from the saved state; its audio stays playable as a ``data:`` URI), with the ids shortened
(``task 429ba695...``) and the run's times left out, and the widget state is dropped.
Running the notebook gives the live panels again.
"""

from __future__ import annotations

import argparse
import base64
import configparser
import html
import json
import os
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
SANITIZE = NOTEBOOKS / "sanitize.cfg"
# sanitize.cfg sections that must not touch a committed notebook (they are for comparing)
KEEP = {"widget-model-id"}
# more than nbval needs: a take's clock time, in a widget's picture
EXTRA = [
    (
        re.compile(r"(\u00b7 )\d\d:\d\d( \u00b7)"),
        r"\1HH:MM\2",
    ),  # a take's label: "v5 take 1 · 04:17 · ..."
    (re.compile(r"\bfrom \d\d:\d\d\b"), "from HH:MM"),  # "re-attached ... from 04:17"
]
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
# in a widget's picture, what a run leaves that a reader needs no placeholder for: ids
# shortened to their first characters, times and the sandbox's port left out
PICTURE = [
    (re.compile(r"\b([0-9a-f]{8})-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b"), r"\1…"),
    (re.compile(r"\b(voice|wf|consent|file|task)_([0-9a-f]{4})[0-9a-f]{4,}\b"), r"\1_\2…"),
    (re.compile(r"-[0-9a-f]{8}\.(mp3|wav|m4a|flac|ogg)\b"), r".\1"),
    (re.compile(r"( \u00b7 )\d\d:\d\d(?= \u00b7)"), ""),
    (re.compile(r" from \d\d:\d\d\b"), ""),
    (re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})?"), "(then)"),
    (re.compile(r"http://127\.0\.0\.1:\d+/[^\s\"'<>]*"), "#"),
    (re.compile(r"http://127\.0\.0\.1:\d+"), "the local sandbox"),
    (re.compile(r"\b20\d{2}-\d{2}(-\d{2})?\b"), "(then)"),
]


# -- a widget's picture, drawn from its saved state ---------------------------------------

State = dict[str, Any]
NOTE = (
    "<div style='font-size:85%;color:#666;margin-top:.3em'>A picture of the panel as the "
    "recorded run left it: run the notebook for the live panel.</div>"
)


def _ref(value: Any) -> str | None:
    return (
        value[len("IPY_MODEL_") :]
        if isinstance(value, str) and value.startswith("IPY_MODEL_")
        else None
    )


def _hidden(model: State, models: dict[str, State]) -> bool:
    layout = models.get(_ref(model["state"].get("layout")) or "", {}).get("state", {})
    return layout.get("display") == "none" or layout.get("visibility") == "hidden"


def _desc(state: State) -> str:
    text = state.get("description") or ""
    return f"<span style='margin-right:.5em'>{html.escape(text)}</span>" if text else ""


def _box(model: State, models: dict[str, State]) -> str:
    row = model["model_name"] in ("HBoxModel",)
    inner = "".join(_draw(_ref(c) or "", models) for c in model["state"].get("children", []))
    flow = "row;flex-wrap:wrap;align-items:center" if row else "column"
    return f"<div style='display:flex;flex-direction:{flow};gap:.3em'>{inner}</div>"


def _buffer(model: State, path: list[Any]) -> bytes | None:
    for buf in model.get("buffers", []):
        if buf.get("path") == path:
            return base64.b64decode(buf.get("data", ""))
    return None


def _media(model: State) -> str:
    """An audio player (songlab's ClipPlayer) or an image, playable from its bytes."""
    state = model["state"]
    data = _buffer(model, ["value"])
    if not data:
        return ""
    uri = base64.b64encode(data).decode()
    if model["model_name"] == "ImageModel":
        kind = state.get("format") or "png"
        return f"<img src='data:image/{kind};base64,{uri}' style='max-width:100%'>"
    label = html.escape(state.get("label") or "")
    mime = html.escape(state.get("mime") or "audio/mpeg")
    return f"{label}<audio controls preload='none' src='data:{mime};base64,{uri}'></audio>"


def _output(model: State) -> str:
    parts = []
    for out in model["state"].get("outputs", []):
        data = out.get("data") or {}
        if "text/html" in data:
            parts.append(_text(data["text/html"]))
        elif "text/plain" in data or "text" in out:
            parts.append(
                f"<pre>{html.escape(_text(data.get('text/plain', out.get('text', ''))))}</pre>"
            )
    return "".join(parts)


def _text(value: Any) -> str:
    return "".join(value) if isinstance(value, list) else str(value)


def _control(model: State) -> str:
    """A control as it stood, disabled: a button, a field, a choice, a bar."""
    name, state = model["model_name"], model["state"]
    value = state.get("value")
    if name == "ButtonModel":
        return f"<button disabled>{html.escape(state.get('description') or '')}</button>"
    if name in ("IntProgressModel", "FloatProgressModel"):
        return f"{_desc(state)}<progress value='{value}' max='{state.get('max', 100)}'></progress>"
    if name in ("DropdownModel", "SelectModel", "RadioButtonsModel", "ToggleButtonsModel"):
        labels, index = state.get("_options_labels") or [], state.get("index")
        chosen = labels[index] if isinstance(index, int) and index < len(labels) else ""
        return (
            f"{_desc(state)}<select disabled><option>{html.escape(str(chosen))}</option></select>"
        )
    if name == "CheckboxModel":
        ticked = " checked" if value else ""
        return f"<label><input type='checkbox' disabled{ticked}> {html.escape(state.get('description') or '')}</label>"
    if name == "FileUploadModel":
        names = ", ".join(html.escape(str(f.get("name", ""))) for f in value or [])
        return (
            f"<button disabled>{html.escape(state.get('description') or 'Upload')}</button> {names}"
        )
    if name in ("IntSliderModel", "FloatSliderModel"):
        return f"{_desc(state)}<input type='range' disabled value='{value}' min='{state.get('min')}' max='{state.get('max')}'>"
    field = html.escape("" if value is None else str(value))
    return f"{_desc(state)}<input disabled value='{field}'>"


BOXES = {"HBoxModel", "VBoxModel", "BoxModel", "GridBoxModel", "AccordionModel", "TabModel"}
TEXTS = {"HTMLModel", "HTMLMathModel", "LabelModel"}
MEDIA = {"AnyModel", "ImageModel"}
CONTROLS = {
    "ButtonModel", "IntProgressModel", "FloatProgressModel", "DropdownModel", "SelectModel",
    "RadioButtonsModel", "ToggleButtonsModel", "CheckboxModel", "FileUploadModel",
    "IntSliderModel", "FloatSliderModel", "TextModel", "TextareaModel", "FloatTextModel",
    "IntTextModel", "BoundedIntTextModel", "BoundedFloatTextModel",
}  # fmt: skip


def _draw(model_id: str, models: dict[str, State]) -> str:
    model = models.get(model_id)
    if model is None or _hidden(model, models):
        return ""
    name, state = model["model_name"], model["state"]
    if name in BOXES:
        return _box(model, models)
    if name in TEXTS:
        value = state.get("value") or ""
        return _desc(state) + (html.escape(value) if name == "LabelModel" else value)
    if name in MEDIA:
        return _media(model)
    if name == "OutputModel":
        return _output(model)
    if name in CONTROLS:
        return _control(model)
    return ""  # a model with no picture (styles, layouts, a custom widget)


def snapshot(model_id: str, models: dict[str, State]) -> str:
    """The picture of widget ``model_id`` (HTML) drawn from ``models`` (a notebook's saved
    widget state): boxes, text, controls as they stood (disabled), outputs, and audio or
    images from their bytes; with the run's ids shortened and its times left out."""
    drawn = _draw(model_id, models)
    return scrub_text(f"<div class='songlab-snapshot'>{drawn}{NOTE}</div>", PICTURE)


def pictures(nb: Any) -> Any:
    """``nb`` with every widget output replaced by its picture and no widget state left."""
    saved = (nb.get("metadata", {}).get("widgets") or {}).get(WIDGET_STATE, {})
    models = saved.get("state", {})
    for cell in nb["cells"]:
        for out in cell.get("outputs", []) if cell.get("cell_type") == "code" else []:
            data = out.get("data") or {}
            view = data.pop(WIDGET_VIEW, None)
            if view is not None:
                data["text/html"] = snapshot(view.get("model_id", ""), models)
    nb.get("metadata", {}).pop("widgets", None)
    return nb


def patterns() -> list[tuple[re.Pattern[str], str]]:
    """The stale-value patterns: sanitize.cfg's (but the widget model id), then :data:`EXTRA`."""
    cfg = configparser.ConfigParser(interpolation=None)
    cfg.read(SANITIZE, encoding="utf-8")
    found = [
        (re.compile(cfg[s]["regex"]), cfg[s]["replace"]) for s in cfg.sections() if s not in KEEP
    ]
    return found + EXTRA


def scrub_text(text: str, table: list[tuple[re.Pattern[str], str]]) -> str:
    for regex, replace in table:
        text = regex.sub(replace, text)
    return text


def _walk(value: Any, fix: Callable[[str], str]) -> Any:
    if isinstance(value, str):
        return fix(value)
    if isinstance(value, list):
        return [_walk(v, fix) for v in value]
    if isinstance(value, dict):  # a NotebookNode stays one
        return type(value)(
            {k: v if k in ("buffers", "model_id") else _walk(v, fix) for k, v in value.items()}
        )
    return value


def scrub(nb: Any) -> Any:
    """``nb`` (a notebook as a dict or NotebookNode) with every output and the saved widget
    state rewritten: no address, id or time of the run that saved it. Idempotent."""
    table = patterns()

    def fix(text: str) -> str:
        return scrub_text(text, table)

    for cell in nb["cells"]:
        if cell.get("cell_type") != "code":
            continue
        cell["outputs"] = [_walk(out, fix) for out in cell.get("outputs", [])]
    widgets = nb.get("metadata", {}).get("widgets")
    if widgets:
        nb["metadata"]["widgets"] = _walk(widgets, fix)
    return nb


def stale(nb: Any) -> list[str]:
    """What :func:`scrub` would still change: one line per output or widget value."""

    table = patterns()
    found = []
    for i, cell in enumerate(nb["cells"]):
        for out in cell.get("outputs", []) if cell.get("cell_type") == "code" else []:
            text = json.dumps(out)
            for regex, _ in table:
                for m in regex.finditer(text):
                    found.append(f"cell {i}: {m.group(0)!r}")
    widgets = json.dumps(_walk(nb.get("metadata", {}).get("widgets") or {}, lambda s: s))
    for regex, _ in table:
        for m in regex.finditer(widgets):
            found.append(f"widget state: {m.group(0)!r}")
    return found


def record(path: Path, *, timeout: int = 900) -> None:
    """Execute ``path`` in place (its own directory as the working directory, widget state
    saved, as ``jupyter nbconvert --execute --inplace``), then :func:`scrub` it."""
    import nbformat
    from nbconvert.preprocessors import ExecutePreprocessor

    nb = nbformat.read(path, as_version=4)
    # a recording starts from a fresh service, as nbval's runs do: connect()'s sandbox in
    # memory, not the person's kept sandbox file (its tasks and balance would show)
    os.environ["SONGLAB_SANDBOX_DB"] = ":memory:"
    ExecutePreprocessor(timeout=timeout, kernel_name="python3", store_widget_state=True).preprocess(
        nb, {"metadata": {"path": str(path.parent)}}
    )
    nbformat.write(scrub(pictures(nb)), path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("notebooks", nargs="*", type=Path)
    parser.add_argument("--all", action="store_true", help="every notebook of notebooks/")
    parser.add_argument("--check", action="store_true", help="only say what is stale")
    parser.add_argument("--scrub-only", action="store_true", help="rewrite, do not run")
    args = parser.parse_args(argv)
    paths = sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb")) if args.all or args.check else []
    paths += [p.resolve() for p in args.notebooks]
    if not paths:
        parser.error("name notebooks, or --all / --check")
    import nbformat

    bad = 0
    for path in paths:
        if args.check:
            found = stale(nbformat.read(path, as_version=4))
            bad += bool(found)
            print(f"{path.name}: {'clean' if not found else f'{len(found)} stale values'}")
            for line in found[:10]:
                print("   ", line)
            continue
        if args.scrub_only:
            nbformat.write(scrub(pictures(nbformat.read(path, as_version=4))), path)
        else:
            print(f"recording {path.name} ...", flush=True)
            record(path)
        print(
            f"{path.name}: recorded, {len(stale(nbformat.read(path, as_version=4)))} stale values"
        )
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
