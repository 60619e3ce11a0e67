"""``songlab.connect()``: the real service when configured, else the embedded sandbox.

The environment is read when ``connect()`` is called, never at import. Without
``SONGLAB_API_KEY`` and ``SONGLAB_BASE_URL`` it starts the sandbox in a
background thread (its own event loop, so it works inside Jupyter's running
loop) on a free loopback port, once per process and options, stops it at
interpreter exit, and returns a client on the demo account. This is the only
place outside ``songlab.sandbox`` that imports it, lazily.
"""

from __future__ import annotations

import atexit
import os
import threading
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Literal, overload

from songlab.client._attribution import Labels, make_labels, set_client_defaults
from songlab.client._errors import ValidationError

if TYPE_CHECKING:
    from songlab.client._async import AsyncClient
    from songlab.client._sync import Client

__all__ = ["DEMO_API_KEY", "connect"]

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
            srv = serve_in_thread(db=db, speed=speed, admin_token=admin_token,
                                  host="127.0.0.1", port=0, **shown)
            if not _SANDBOXES:
                atexit.register(_stop_all)
            _SANDBOXES[key] = srv
        return srv


@overload
def connect(*, asynchronous: Literal[False] = ..., speed: float = ..., db: str = ...,
            admin_token: str | None = ..., quiet: bool = ..., project: str | None = ...,
            tags: Iterable[str] | str = ..., profile: str = ...,
            **client_options: Any) -> Client: ...
@overload
def connect(*, asynchronous: Literal[True], speed: float = ..., db: str = ...,
            admin_token: str | None = ..., quiet: bool = ..., project: str | None = ...,
            tags: Iterable[str] | str = ..., profile: str = ...,
            **client_options: Any) -> AsyncClient: ...
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
    from songlab.client._async import AsyncClient
    from songlab.client._sync import Client

    cls: type[Client] | type[AsyncClient] = AsyncClient if asynchronous else Client
    api_key = os.environ.get("SONGLAB_API_KEY") or None
    base_url = os.environ.get("SONGLAB_BASE_URL") or None
    if api_key and base_url:
        client = cls(api_key, base_url=base_url, **{"quiet": quiet, **client_options})
        set_client_defaults(client, labels if labels != Labels() else None)
        if not quiet:
            print(f"songlab: connected to {client.base_url} (key from SONGLAB_API_KEY)")
        return client
    if api_key or base_url:
        missing = "SONGLAB_BASE_URL" if api_key else "SONGLAB_API_KEY"
        raise ValidationError(missing, "set both SONGLAB_API_KEY and SONGLAB_BASE_URL for the "
                              "real service, or neither for the local sandbox")
    if not (isinstance(speed, int | float) and speed > 0):
        raise ValidationError("speed", f"a positive number, got {speed!r}")
    if profile not in ("default", "spec", "noisy"):
        raise ValidationError("profile", f"one of default, spec, noisy, got {profile!r}")
    srv = _sandbox(float(speed), db, admin_token, profile)
    client = cls(DEMO_API_KEY, base_url=srv.base_url, **{"quiet": quiet, **client_options})
    client.sandbox = srv  # the running sandbox (base_url, admin_token, stop())
    set_client_defaults(client, labels if labels != Labels() else None)
    if not quiet:
        print(f"songlab: no SONGLAB_API_KEY/SONGLAB_BASE_URL set; using the local sandbox at "
              f"{srv.base_url} (demo account, speed {speed:g}"
              f"{'' if profile == 'default' else ', profile ' + profile})")
    return client
