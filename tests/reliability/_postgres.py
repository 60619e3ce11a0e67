"""A real PostgreSQL server for a test: Debian's binaries, a data folder of its own, loopback.

PostgreSQL refuses to run as root, and ``make test`` runs as root in containers: then the
server runs as the ``postgres`` user (``runuser``), its data folder made in /tmp and given to
that user. ``make postgres-deps`` installs Debian's ``postgresql`` where it is missing; without
it the tests that need a server are skipped, saying so.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager

import pytest


def _bindir() -> str | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/postgres"))
    return os.path.dirname(found[-1]) if found else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def postgres_server() -> Iterator[str]:
    """A fresh PostgreSQL server with an empty database; yields its ``postgresql://`` URL."""
    bindir = _bindir()
    if bindir is None:
        pytest.skip("PostgreSQL is not installed (make postgres-deps installs Debian's postgresql)")
    as_user: list[str] = []
    data = tempfile.mkdtemp(prefix="songlab-pg-")
    if os.geteuid() == 0:
        user = pwd.getpwnam("postgres")
        os.chown(data, user.pw_uid, user.pw_gid)
        as_user = ["runuser", "-u", "postgres", "--"]
    port = _free_port()
    folder = os.path.join(data, "db")

    def run(*args: str) -> None:
        subprocess.run([*as_user, *args], check=True, capture_output=True, timeout=120)

    try:
        run(f"{bindir}/initdb", "-D", folder, "-A", "trust", "-U", "songlab", "--no-sync")
        run(
            f"{bindir}/pg_ctl",
            "-D",
            folder,
            "-w",
            "-t",
            "60",
            "-l",
            os.path.join(data, "log"),
            "-o",
            f"-p {port} -k {data} -c listen_addresses=127.0.0.1 -c max_connections=200",
            "start",
        )
        run(f"{bindir}/createdb", "-h", "127.0.0.1", "-p", str(port), "-U", "songlab", "campaign")
        yield f"postgresql://songlab@127.0.0.1:{port}/campaign"
    finally:
        subprocess.run(
            [*as_user, f"{bindir}/pg_ctl", "-D", folder, "-m", "immediate", "stop"],
            capture_output=True,
            timeout=60,
            check=False,
        )
        shutil.rmtree(data, ignore_errors=True)
