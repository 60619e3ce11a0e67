"""`make lab`: start JupyterLab on notebooks/ for any user, root included, and say where to open it.

JupyterLab refuses to run as root unless told ``--allow-root`` (and a container's user is
usually root), and it cannot open a browser where there is none. This launcher picks a port
(``LAB_PORT``, else the first free one from 8888), makes a token, marks the project's
notebooks trusted (their saved widgets and outputs render on open, before anything is run),
has the widget manager save widget state with a notebook (so a notebook run and saved in
Lab opens again with its widgets, not "model not found"), prints the address to open (with
the token) before JupyterLab starts, then replaces itself with JupyterLab.

The port is probed the way JupyterLab binds it (``SO_REUSEADDR``, as tornado does), so a
port whose last connections are only in TIME-WAIT (a browser's, after JupyterLab stopped) is
free at once; a port something really listens on is refused with a free one suggested.
Kernels talk to JupyterLab over local IPC sockets rather than TCP on Linux and macOS, so
ipykernel has nothing to warn about ("Kernel is running over TCP without encryption").

Environment (the Makefile passes its variables): ``LAB_PORT`` (a port; ``0`` or empty = the
first free one from 8888), ``LAB_IP`` (``127.0.0.1``; ``0.0.0.0`` to reach a container from
its host), ``LAB_BROWSER`` (``no`` opens no browser; with no display none is opened anyway),
``LAB_TOKEN`` (else a random one).
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import sys
from pathlib import Path

FIRST_PORT = 8888
PORTS = 100  # 8888-8987 when LAB_PORT is not given
# A kernel's IPC socket is <runtime dir>/kernel-<36-character id>-ipc-<n>, and a Unix socket
# path holds at most 107 bytes: where the runtime dir is longer, kernels keep TCP on loopback.
IPC_PATH_MAX = 107
IPC_NAME = len("/kernel-00000000-0000-0000-0000-000000000000-ipc-99")


def _bind_host(ip: str) -> str:
    return ip if ip not in ("", "0.0.0.0") else ""


def free(ip: str, port: int) -> bool:
    """Could JupyterLab listen on ``port``? Probed as tornado binds: with SO_REUSEADDR, so
    connections left in TIME-WAIT do not count (nothing listens there), a listener does."""
    family = socket.AF_INET6 if ":" in ip else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        if os.name != "nt":  # on Windows SO_REUSEADDR would let two listeners share a port
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((_bind_host(ip), port))
            s.listen(1)
        except OSError:
            return False
    return True


def next_free(ip: str, after: int) -> int | None:
    """The first free port after ``after`` (within 100), never ``after`` itself."""
    for port in range(after + 1, min(after + 1 + PORTS, 65536)):
        if free(ip, port):
            return port
    return None


def pick_port(ip: str, wanted: str) -> int:
    if wanted and wanted != "0":
        try:
            port = int(wanted)
        except ValueError:
            sys.exit(f"make lab: LAB_PORT must be a port number, got {wanted!r}")
        if not 1 <= port <= 65535:
            sys.exit(f"make lab: LAB_PORT must be 1-65535, got {port}")
        if not free(ip, port):
            other = next_free(ip, port)
            hint = f"make lab LAB_PORT={other}" if other else "make lab LAB_PORT=<another port>"
            sys.exit(
                f"make lab: port {port} is in use (a program is listening on it); "
                f"a free one: {hint}, or leave LAB_PORT out to take the first free one"
            )
        return port
    for port in range(FIRST_PORT, FIRST_PORT + PORTS):
        if free(ip, port):
            return port
    sys.exit(
        f"make lab: no free port in {FIRST_PORT}-{FIRST_PORT + PORTS - 1}; "
        "pick one: make lab LAB_PORT=..."
    )


def ipc_fits() -> bool:
    """Can kernels use IPC sockets here (not Windows, and a runtime dir short enough)?"""
    if os.name == "nt":
        return False
    try:
        from jupyter_core.paths import jupyter_runtime_dir
    except ImportError:
        return False
    return len(os.fsencode(jupyter_runtime_dir())) + IPC_NAME <= IPC_PATH_MAX


def trust(root: Path) -> int:
    """Mark the notebooks under ``root`` trusted (what ``jupyter trust`` does): their saved
    widget views and HTML outputs render when opened, before they are run. Answers how many."""
    try:
        import nbformat
        from nbformat.sign import NotebookNotary
    except ImportError:  # JupyterLab comes with nbformat; without it Lab would not start
        return 0
    notary = NotebookNotary()
    done = 0
    for path in sorted(root.glob("*.ipynb")):
        try:
            nb = nbformat.read(path, as_version=4)
            if not notary.check_signature(nb):
                notary.sign(nb)
            done += 1
        except Exception as exc:  # noqa: BLE001 - a notebook that cannot be read stays untrusted
            print(f"make lab: {path.name} not marked trusted: {exc}", file=sys.stderr)
    return done


WIDGETS_PLUGIN = "@jupyter-widgets/jupyterlab-manager:plugin"
#: JupyterLab's widget manager saves the widget state with the notebook. Left at its
#: default (off), a notebook run and saved in Lab keeps widget outputs whose models it does
#: not hold: opened again, each shows "Error displaying widget: model not found" (seen in
#: Chromium, tests/browser/test_notebooks_as_committed.py); saved, they render from the state.
WIDGET_SETTINGS = {"saveState": True}


def widget_state_saved(prefix: Path) -> Path:
    """Tell this environment's JupyterLab to save widget state with a notebook (its
    ``overrides.json``, other settings kept); a user's own setting still wins."""
    path = prefix / "share" / "jupyter" / "lab" / "settings" / "overrides.json"
    try:
        settings = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        settings = {}
    if not isinstance(settings, dict):
        settings = {}
    plugin = settings.get(WIDGETS_PLUGIN)
    settings[WIDGETS_PLUGIN] = {**(plugin if isinstance(plugin, dict) else {}), **WIDGET_SETTINGS}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(settings, indent=2) + "\n", encoding="utf-8")
    return path


def main() -> None:
    root = Path(__file__).resolve().parents[1] / "notebooks"
    ip = os.environ.get("LAB_IP") or "127.0.0.1"
    port = pick_port(ip, os.environ.get("LAB_PORT", ""))
    token = os.environ.get("LAB_TOKEN") or secrets.token_hex(24)
    headless = not (
        os.environ.get("DISPLAY")
        or os.environ.get("WAYLAND_DISPLAY")
        or sys.platform in ("darwin", "win32")
    )
    browser = os.environ.get("LAB_BROWSER", "yes").lower() not in ("no", "0", "false", "")
    args = [
        sys.executable,
        "-m",
        "jupyterlab",
        f"--ServerApp.ip={ip}",
        f"--ServerApp.port={port}",
        "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={root}",
    ]
    ipc = ipc_fits()
    if ipc:  # kernels over local sockets: nothing in plain TCP, no warning
        args.append("--KernelManager.transport=ipc")
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        args.append("--allow-root")  # a container's user is root: a normal place to run it
    if headless or not browser:
        args.append("--no-browser")
    trusted = trust(root)
    widget_state_saved(Path(sys.prefix))
    host = "127.0.0.1" if ip in ("0.0.0.0", "") else ip
    print(
        f"\nsonglab: JupyterLab on notebooks/ - open this address in a browser:\n\n"
        f"    http://{host}:{port}/lab?token={token}\n\n"
        f"(start with 01_quickstart.ipynb; no API key needed: the sandbox runs in the kernel."
        f" {trusted} notebooks marked trusted. Ctrl-C stops JupyterLab.)\n",
        flush=True,
    )
    if not ipc:
        print(
            "songlab: kernels use TCP on 127.0.0.1 here (no Unix sockets, or the Jupyter "
            "runtime dir is too long for one), so ipykernel warns 'Kernel is running over TCP "
            "without encryption': the traffic never leaves this machine.\n",
            flush=True,
        )
    os.chdir(root)
    os.execv(sys.executable, args)


if __name__ == "__main__":
    main()
