"""``python -m songlab.sandbox`` / ``songlab sandbox``: run the sandbox in the foreground.

First stdout line: ``songlab sandbox listening on http://HOST:PORT``; a
generated admin token is printed on the second line.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading

from songlab.sandbox.config import SandboxConfig, default_db_path, resolve_admin_token
from songlab.sandbox.http.profiles import PROFILES
from songlab.sandbox.http.server import SandboxServer
from songlab.sandbox.storage.owner import SandboxInUse


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="songlab sandbox", description="Run the local Enterprise Audio Generation API sandbox."
    )
    p.add_argument("--host", default="127.0.0.1", help="interface to bind (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=0, help="port (0 = a free port; default 0)")
    p.add_argument(
        "--db",
        default=None,
        help=f"SQLite file (default {default_db_path()}); ':memory:' keeps nothing",
    )
    p.add_argument(
        "--speed",
        type=float,
        default=1.0,
        help="simulated-work speed factor (1.0 realistic, larger is faster)",
    )
    p.add_argument(
        "--admin-token",
        default=None,
        help="admin token (else $SONGLAB_SANDBOX_ADMIN_TOKEN, else random, printed)",
    )
    p.add_argument(
        "--profile",
        default="default",
        choices=PROFILES,
        help="what the vendor surface shows: default (generous answers), spec (only "
        "what the vendor's spec shows), noisy (default plus unknown fields)",
    )
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    token, generated = resolve_admin_token(args.admin_token)
    try:
        config = SandboxConfig(
            host=args.host,
            port=args.port,
            db=args.db or default_db_path(),
            speed=args.speed,
            admin_token=token,
            profile=args.profile,
        )
    except ValueError as exc:
        print(f"songlab sandbox: {exc}", file=sys.stderr)
        return 2
    try:
        server = SandboxServer(config).start()
    except SandboxInUse as exc:  # another sandbox serves this file: say where, start none
        print(f"songlab sandbox: {exc}", file=sys.stderr)
        return 2
    print(f"songlab sandbox listening on {server.base_url}", flush=True)
    if generated:
        print(f"admin token: {token}", flush=True)
    done = threading.Event()

    def _stop(signum: int, frame: object) -> None:
        done.set()

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    try:
        while not done.wait(0.5):
            pass
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
