"""`make lab`: start JupyterLab on notebooks/ for any user, root included, and say where to open it.

JupyterLab refuses to run as root unless told ``--allow-root`` (and a container's user is
usually root), and it cannot open a browser where there is none. This launcher picks a free
port (``LAB_PORT``, else the first free one from 8888), makes a token, prints the address to
open (with the token) before JupyterLab starts, then replaces itself with JupyterLab.

Environment (the Makefile passes its variables): ``LAB_PORT`` (a port; ``0`` or empty = the
first free one from 8888), ``LAB_IP`` (``127.0.0.1``; ``0.0.0.0`` to reach a container from
its host), ``LAB_BROWSER`` (``no`` opens no browser; with no display none is opened anyway),
``LAB_TOKEN`` (else a random one).
"""

from __future__ import annotations

import os
import secrets
import socket
import sys
from pathlib import Path


def _free(ip: str, port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind((ip if ip not in ("", "0.0.0.0") else "", port))  # noqa: S104 - a probe
        except OSError:
            return False
    return True


def pick_port(ip: str, wanted: str) -> int:
    if wanted and wanted != "0":
        port = int(wanted)
        if not _free(ip, port):
            sys.exit(f"make lab: port {port} is in use; pick another: make lab LAB_PORT=8899")
        return port
    for port in range(8888, 8988):
        if _free(ip, port):
            return port
    sys.exit("make lab: no free port in 8888-8987; pick one: make lab LAB_PORT=...")


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
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        args.append("--allow-root")  # a container's user is root: a normal place to run it
    if headless or not browser:
        args.append("--no-browser")
    host = "127.0.0.1" if ip in ("0.0.0.0", "") else ip  # noqa: S104
    print(
        f"\nsonglab: JupyterLab on notebooks/ - open this address in a browser:\n\n"
        f"    http://{host}:{port}/lab?token={token}\n\n"
        f"(start with 01_quickstart.ipynb; no API key needed: the sandbox runs in the kernel."
        f" Ctrl-C stops JupyterLab.)\n",
        flush=True,
    )
    os.chdir(root)
    os.execv(sys.executable, args)


if __name__ == "__main__":
    main()
