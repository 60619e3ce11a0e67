"""``songlab notebooks DIR``: copy the notebooks and the fixtures they read into DIR.

A wheel carries them under ``songlab/_lab/`` (``setup.py`` puts them there); an
editable install reads the checkout's ``notebooks/`` and ``data/``. DIR gets the
checkout's layout, ``DIR/notebooks/NN_*.ipynb`` next to ``DIR/data/``, so the
notebooks' relative paths (``../data/voice_female.mp3``, ``out/``) resolve inside
DIR and never in a checkout. Nothing is overwritten unless ``--force``: if any file
would be, nothing is written and the error names them.

This module imports nothing of songlab: ``setup.py`` loads it by path to pick the
files that go into the wheel (:func:`checkout_files`).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterator, Sequence
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path, PurePosixPath

__all__ = ["checkout_files", "copy_notebooks", "lab_files", "main"]

_NOTEBOOK_GLOBS = ("[0-9][0-9]_*.ipynb", "sanitize.cfg")


def checkout_files(root: Path) -> list[PurePosixPath]:
    """The files, relative to a checkout ``root``, that a user's lab directory gets: the
    numbered notebooks, nbval's ``sanitize.cfg`` and every fixture in ``data/`` (not the
    script that made them)."""
    picked = {p for pattern in _NOTEBOOK_GLOBS for p in (root / "notebooks").glob(pattern)}
    picked |= {
        p
        for p in (root / "data").iterdir()
        if p.is_file() and p.suffix != ".py" and not p.name.startswith(".")
    }
    return sorted(PurePosixPath(p.relative_to(root).as_posix()) for p in picked)


def _walk(node: Traversable, prefix: PurePosixPath) -> Iterator[tuple[PurePosixPath, Traversable]]:
    for child in node.iterdir():
        rel = prefix / child.name
        if child.is_dir():
            yield from _walk(child, rel)
        elif not child.name.endswith((".py", ".pyc")):
            yield rel, child


def lab_files() -> list[tuple[PurePosixPath, Traversable]]:
    """``(relative path, source)`` of every file ``songlab notebooks`` copies, from the
    installed package (a wheel) or else from the checkout (an editable install)."""
    packaged = resources.files("songlab") / "_lab"
    if packaged.is_dir():
        return sorted(_walk(packaged, PurePosixPath()), key=lambda item: item[0])
    root = Path(__file__).resolve().parents[2]
    if (root / "notebooks").is_dir() and (root / "pyproject.toml").is_file():
        return [(rel, root / rel) for rel in checkout_files(root)]
    raise FileNotFoundError(
        "this songlab install carries no notebooks (songlab/_lab is missing): "
        "install a wheel built by `python -m build`, or songlab from its checkout"
    )


def copy_notebooks(dest: str | os.PathLike[str], *, force: bool = False) -> list[Path]:
    """Copy the notebooks and their fixtures under ``dest`` (created if needed) and
    return the written paths. Raises ``FileExistsError`` naming the files that exist
    already (and writes nothing) unless ``force``; ``NotADirectoryError`` if ``dest``
    is a file."""
    dest = Path(dest)
    if dest.exists() and not dest.is_dir():
        raise NotADirectoryError(f"DIR: {dest} exists and is not a directory")
    files = lab_files()
    clashes = [str(rel) for rel, _ in files if (dest / rel).exists()]
    if clashes and not force:
        raise FileExistsError(
            f"DIR: {dest} already has {', '.join(clashes)}; "
            "pass --force to overwrite them (your edits would be lost)"
        )
    written: list[Path] = []
    for rel, source in files:
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_name(target.name + ".partial")
        partial.write_bytes(source.read_bytes())
        os.replace(partial, target)
        written.append(target)
    return written


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="songlab notebooks",
        description="Copy songlab's notebooks and the fixtures they read into DIR "
        "(DIR/notebooks, DIR/data), then open them with `jupyter lab DIR`.",
    )
    p.add_argument("dir", metavar="DIR", help="where to put them (created if missing)")
    p.add_argument("--force", action="store_true", help="overwrite files that exist already")
    args = p.parse_args(argv)
    try:
        written = copy_notebooks(args.dir, force=args.force)
    except (OSError, ValueError) as exc:
        print(f"songlab notebooks: {exc}", file=sys.stderr)
        return 1
    notebooks = sum(path.suffix == ".ipynb" for path in written)
    data = sum(path.parent.name == "data" for path in written)
    print(
        f"copied {notebooks} notebooks and {data} data files into {args.dir}"
        f" ({args.dir}/notebooks, {args.dir}/data)"
    )
    print(f"next: jupyter lab {args.dir}")
    return 0
