"""``songlab.connect()``: a client on the real service when configured, else on a local sandbox.

This module sits above both the client and the sandbox: the client never knows
what a sandbox is. The environment is read when ``connect()`` is called, never at
import. Without ``SONGLAB_API_KEY`` and ``SONGLAB_BASE_URL`` it starts the sandbox
in a background thread (its own event loop, so it works inside Jupyter's running
loop) on a free loopback port, once per process and options, stops it at
interpreter exit, and returns a client on the demo account with the running
sandbox in the client's opaque ``sandbox`` slot. :func:`admin_http` gives the
admin handle of that sandbox (what the ledger's demo moves the clock with). This
is the only module outside ``songlab.sandbox`` that imports it (lazily), besides
the ``songlab sandbox`` command of ``songlab.cli``.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Literal, overload

from songlab.client import (
    AsyncClient,
    Client,
    Labels,
    ValidationError,
    make_labels,
    set_default_labels,
)

if TYPE_CHECKING:
    import httpx

__all__ = ["DEMO_API_KEY", "admin_http", "connect", "run_sandbox"]

DEMO_API_KEY = "sk-sandbox-demo"  # the sandbox's seeded demo account; not a secret
_SANDBOXES: dict[tuple[Any, ...], Any] = {}
_LOCK = threading.Lock()


def _stop_all() -> None:
    for srv in list(_SANDBOXES.values()):
        try:
            srv.stop()
        except Exception:  # noqa: BLE001 - interpreter exit: best effort
            pass
    _SANDBOXES.clear()


def _sandbox(speed: float, db: str, admin_token: str | None, profile: str = "default") -> Any:
    key = (speed, db, admin_token, profile)
    with _LOCK:
        srv = _SANDBOXES.get(key)
        if srv is None:
            from songlab.sandbox.http.server import serve_in_thread

            shown: dict[str, Any] = {} if profile == "default" else {"profile": profile}
            srv = serve_in_thread(
                db=db, speed=speed, admin_token=admin_token, host="127.0.0.1", port=0, **shown
            )
            if not _SANDBOXES:
                atexit.register(_stop_all)
            _SANDBOXES[key] = srv
        return srv


def _notebook_display() -> None:
    """In an IPython kernel, every frame the notebook shows reads money to the cent
    (``songlab.ledger.notebook_display``); elsewhere nothing is imported or changed."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    if shell is not None:
        from songlab.ledger.notebook_display import register

        register(shell)


@overload
def connect(
    *,
    asynchronous: Literal[False] = ...,
    speed: float = ...,
    db: str = ...,
    admin_token: str | None = ...,
    quiet: bool = ...,
    project: str | None = ...,
    tags: Iterable[str] | str = ...,
    profile: str = ...,
    **client_options: Any,
) -> Client: ...
@overload
def connect(
    *,
    asynchronous: Literal[True],
    speed: float = ...,
    db: str = ...,
    admin_token: str | None = ...,
    quiet: bool = ...,
    project: str | None = ...,
    tags: Iterable[str] | str = ...,
    profile: str = ...,
    **client_options: Any,
) -> AsyncClient: ...
def connect(
    *,
    asynchronous: bool = False,
    speed: float = 1.0,
    db: str = ":memory:",
    admin_token: str | None = None,
    quiet: bool = False,
    project: str | None = None,
    tags: Iterable[str] | str = (),
    profile: str = "default",
    **client_options: Any,
) -> Client | AsyncClient:
    """A :class:`Client` (or :class:`AsyncClient` with ``asynchronous=True``).

    Real service: set ``SONGLAB_API_KEY`` and ``SONGLAB_BASE_URL``. Otherwise
    the sandbox; ``speed``, ``db``, ``admin_token`` and ``profile`` (``"default"``,
    ``"spec"``: only what the vendor's spec shows, ``"noisy"``: unknown fields added)
    pass through to it.
    Prints one line saying which (never the key) unless ``quiet``.

    ``project`` and ``tags``: the default attribution labels of every create this
    client makes (kept locally by a tracking ``songlab.ledger.LedgerStore``, never
    sent; ``songlab.ledger.attribution(...)`` blocks refine them). Checked before
    anything starts.

    Other keywords go to the client: ``record=`` (the record of creates: a path, a
    ``RecordStore`` or False), ``reuse=`` (``"notebook"``, the default: a re-run of this
    notebook re-attaches to what it bought; ``"account"``; False), ``cache=`` (the
    download cache), ``quiet=`` also silences the client's re-attach lines. See
    ``docs/client.md``.
    """
    labels = make_labels(project, tags)
    _notebook_display()
    cls: type[Client] | type[AsyncClient] = AsyncClient if asynchronous else Client
    api_key = os.environ.get("SONGLAB_API_KEY") or None
    base_url = os.environ.get("SONGLAB_BASE_URL") or None
    if api_key and base_url:
        client = cls(api_key, base_url=base_url, **{"quiet": quiet, **client_options})
        set_default_labels(client, labels if labels != Labels() else None)
        if not quiet:
            print(f"songlab: connected to {client.base_url} (key from SONGLAB_API_KEY)")
        return client
    if api_key or base_url:
        missing = "SONGLAB_BASE_URL" if api_key else "SONGLAB_API_KEY"
        raise ValidationError(
            missing,
            "set both SONGLAB_API_KEY and SONGLAB_BASE_URL for the "
            "real service, or neither for the local sandbox",
        )
    if not (isinstance(speed, int | float) and speed > 0):
        raise ValidationError("speed", f"a positive number, got {speed!r}")
    if profile not in ("default", "spec", "noisy"):
        raise ValidationError("profile", f"one of default, spec, noisy, got {profile!r}")
    srv = _sandbox(float(speed), db, admin_token, profile)
    client = cls(DEMO_API_KEY, base_url=srv.base_url, **{"quiet": quiet, **client_options})
    client.sandbox = srv  # the client's opaque slot: the running sandbox (base_url, admin_token)
    set_default_labels(client, labels if labels != Labels() else None)
    if not quiet:
        print(
            f"songlab: no SONGLAB_API_KEY/SONGLAB_BASE_URL set; using the local sandbox at "
            f"{srv.base_url} (demo account, speed {speed:g}"
            f"{'' if profile == 'default' else ', profile ' + profile})"
        )
    return client


def admin_http(client: Any, *, timeout: float = 30.0) -> httpx.Client | None:
    """An ``httpx.Client`` on the admin routes (``/_sandbox/...``) of the sandbox that
    :func:`connect` started for ``client``, or None (the real service, or a sandbox
    without an admin token). The caller closes it."""
    srv = getattr(client, "sandbox", None)
    if srv is None or not getattr(srv, "admin_token", None):
        return None
    import httpx

    return httpx.Client(
        base_url=srv.base_url, headers={"X-Sandbox-Admin-Token": srv.admin_token}, timeout=timeout
    )


def run_sandbox(argv: list[str]) -> int:
    """``songlab sandbox ARGS``: the sandbox in the foreground, as ``python -m songlab.sandbox``."""
    from songlab.sandbox.__main__ import main

    return main(argv)
