"""Which notebook or script is asking: the origin a create is recorded with."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Final

__all__ = ["ORIGIN_ENV", "current_origin"]

ORIGIN_ENV: Final = "SONGLAB_ORIGIN"


def _ipython_namespace() -> dict[str, object] | None:
    ipython = sys.modules.get("IPython")
    if ipython is None:
        return None
    try:
        shell = ipython.get_ipython()
    except Exception:  # noqa: BLE001 - IPython imported but unusable (no shell): not a kernel
        return None
    return getattr(shell, "user_ns", None) if shell is not None else None


def current_origin() -> str | None:
    """The notebook or script asking: ``$SONGLAB_ORIGIN``; in a kernel the notebook's path
    (VS Code's ``__vsc_ipynb_file__``, Jupyter's ``JPY_SESSION_NAME`` / ``__session__``),
    else ``kernel:<working dir>``; in a script ``sys.argv[0]`` (absolute); else None."""
    env = os.environ.get(ORIGIN_ENV)
    if env:
        return env
    ns = _ipython_namespace()
    if ns is not None:
        for name in ("__vsc_ipynb_file__", "__session__"):
            value = ns.get(name)
            if isinstance(value, str) and value:
                return value
        session = os.environ.get("JPY_SESSION_NAME")
        if session:
            return session
        if "ipykernel" in sys.modules:
            return f"kernel:{os.getcwd()}"
    argv0 = sys.argv[0] if sys.argv else ""
    if argv0 and argv0 not in ("-c", "-m", "-"):
        return str(Path(argv0).resolve())
    return None
