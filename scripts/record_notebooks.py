"""Re-record notebooks: run each top to bottom, then keep only outputs that stay true.

    .venv/bin/python scripts/record_notebooks.py notebooks/01_quickstart.ipynb [...]
    .venv/bin/python scripts/record_notebooks.py --all        # the eight notebooks
    .venv/bin/python scripts/record_notebooks.py --check      # are the committed ones clean?

A run against the sandbox prints things that are wrong as soon as it ends: the sandbox's
address (``http://127.0.0.1:36301``: a link that no longer answers), task, file and consent
ids and ``voice_...`` ids of a sandbox that is gone, timestamps and dates of that run, the
clock time of a take (``v5 take 1 - 04:17``). A notebook opened later would show them as if
they were live. So after nbconvert has executed a notebook (``--execute --inplace``, widget
state saved), every output and the saved widget state are rewritten with the placeholders
nbval's ``notebooks/sanitize.cfg`` uses (``http://127.0.0.1:PORT``, ``UUID``, ``voice_ID``,
``TIMESTAMP``, ``DATE``) plus ``HH:MM`` for a take's time. nbval applies the same table to
a fresh run before comparing, so the recorded notebook still passes ``--nbval``. Widget
model ids are left alone: the saved views need them.
"""

from __future__ import annotations

import argparse
import configparser
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
# more than nbval needs: nbval compares no widget state, but a person sees it
EXTRA = [
    (
        re.compile(r"(\u00b7 )\d\d:\d\d( \u00b7)"),
        r"\1HH:MM\2",
    ),  # a take's label: "v5 take 1 · 04:17 · ..."
    (re.compile(r"\bfrom \d\d:\d\d\b"), "from HH:MM"),  # "re-attached ... from 04:17"
]


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
    import json

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
    nbformat.write(scrub(nb), path)


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
            nbformat.write(scrub(nbformat.read(path, as_version=4)), path)
        else:
            print(f"recording {path.name} ...", flush=True)
            record(path)
        print(
            f"{path.name}: recorded, {len(stale(nbformat.read(path, as_version=4)))} stale values"
        )
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
