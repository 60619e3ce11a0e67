"""Build step that pyproject.toml cannot say: put the notebooks and their fixtures in the wheel.

``notebooks/`` and ``data/`` sit at the top of the checkout (design.md's layout), outside
the ``songlab`` package, so setuptools' package data cannot reach them. This ``build_py``
copies them to ``songlab/_lab/`` in the build tree, which is where ``songlab notebooks DIR``
finds them in an installed wheel. Which files go is decided by one function,
``songlab.notebooks.checkout_files`` (loaded here by path: the build must not import the
package). An editable install copies nothing: it reads the checkout's own directories.
Everything else is configured in pyproject.toml.
"""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent


def _checkout_files() -> list[Path]:
    spec = importlib.util.spec_from_file_location(
        "_songlab_lab_files", ROOT / "src/songlab/notebooks.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.checkout_files(ROOT)


class build_py_with_lab(build_py):  # noqa: N801 (setuptools names commands in lower case)
    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return
        lab = Path(self.build_lib) / "songlab" / "_lab"
        for rel in _checkout_files():
            (lab / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(ROOT / rel, lab / rel)


setup(cmdclass={"build_py": build_py_with_lab})
