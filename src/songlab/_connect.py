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
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, overload
from urllib.parse import urlsplit

import songlab.localfiles as localfiles
from songlab.client import (
    AsyncClient,
    Client,
    Labels,
    ValidationError,
    make_labels,
    set_default_labels,
)
from songlab.client.choices import check_name
from songlab.pricing import cents

if TYPE_CHECKING:
    import httpx

__all__ = ["DEMO_API_KEY", "admin_http", "connect", "run_sandbox"]

DEMO_API_KEY = "sk-sandbox-demo"  # the sandbox's seeded demo account; not a secret
DEMO_ACCOUNT = "acct_demo"
MEMORY = ":memory:"
_SANDBOXES: dict[tuple[Any, ...], Any] = {}
_LOCK = threading.Lock()
SHARE_WAIT = 30.0  # seconds to wait for a sandbox another process is starting on the file


class _DefaultDb:
    """``connect()``'s ``db`` when not given: the sandbox file of the user's data dir."""

    def __repr__(self) -> str:
        return "<the user's sandbox file>"


DEFAULT_DB: Any = _DefaultDb()


def _stop_all() -> None:
    for srv in list(_SANDBOXES.values()):
        try:
            srv.stop()
        except Exception:  # noqa: BLE001 - interpreter exit: best effort
            pass
    _SANDBOXES.clear()


def _serve(db: str, speed: float, admin_token: str | None, profile: str, port: int = 0) -> Any:
    """A sandbox served in a thread of this process (on ``port`` when it is free)."""
    from songlab.sandbox.http.server import serve_in_thread

    shown: dict[str, Any] = {} if profile == "default" else {"profile": profile}
    try:
        return serve_in_thread(
            db=db, speed=speed, admin_token=admin_token, host="127.0.0.1", port=port, **shown
        )
    except RuntimeError:
        if not port:
            raise
    return serve_in_thread(  # the port is taken: any free one
        db=db, speed=speed, admin_token=admin_token, host="127.0.0.1", port=0, **shown
    )


@dataclass(eq=False)
class SharedSandbox:
    """A sandbox another process serves on the same database file: its address and admin
    token. A thread of this process waits for that process to stop (or end) and then
    serves the file itself, on the same port when it can (``served_here``), so a client of
    this process keeps working; what was in flight is resumed by its worker."""

    db: str
    base_url: str
    admin_token: str | None = field(repr=False)
    pid: int | None
    speed: float | None
    asked_speed: float = 1.0  # the speed this process asked for: the one it serves at
    served_here: Any = None

    def stop(self) -> None:
        if self.served_here is not None:
            self.served_here.stop()

    def take_over(self) -> None:
        """(In its own thread.) Wait for the file's lock, then serve the file here."""
        from songlab.sandbox.storage import owner

        claim = owner.wait(self.db)
        claim.release()  # serve() claims it again at once (it owns the whole start)
        port = urlsplit(self.base_url).port or 0
        old, pid = self.base_url, self.pid
        try:
            srv = _serve(self.db, self.asked_speed, self.admin_token, "default", port)
        except owner.SandboxInUse as exc:  # another process took it first: follow it
            self._follow(exc.serving)
            return
        self.served_here, self.base_url, self.pid = srv, srv.base_url, os.getpid()
        moved = "" if srv.base_url == old else f"; it now answers at {srv.base_url}: connect again"
        print(
            f"songlab: the sandbox of process {pid} stopped; this kernel serves {self.db} now "
            f"(what was running is resumed){moved}",
            file=sys.stderr,
        )

    def _follow(self, serving: dict[str, Any] | None) -> None:
        if serving and serving.get("base_url"):
            self.base_url, self.pid = str(serving["base_url"]), serving.get("pid")
        threading.Thread(target=self.take_over, daemon=True, name="songlab-takeover").start()


def _healthy(base_url: str) -> bool:
    import httpx

    try:
        return httpx.get(base_url + "/health", timeout=5.0).status_code == 200
    except httpx.HTTPError:
        return False


def _shared(db: str, serving: dict[str, Any] | None, speed: float) -> SharedSandbox:
    """The sandbox another process serves on ``db``, once it answers (it may be starting)."""
    from songlab.sandbox.storage import owner

    deadline = time.monotonic() + SHARE_WAIT
    while True:
        url = str((serving or {}).get("base_url") or "")
        if url and _healthy(url):
            break
        if time.monotonic() > deadline:
            raise owner.SandboxInUse(db, serving)
        time.sleep(0.2)
        serving = owner.serving(db)
    assert serving is not None
    shared = SharedSandbox(
        db,
        url,
        serving.get("admin_token"),
        serving.get("pid"),
        serving.get("speed"),
        speed,
    )
    threading.Thread(target=shared.take_over, daemon=True, name="songlab-takeover").start()
    return shared


def _sandbox(speed: float, db: str, admin_token: str | None, profile: str = "default") -> Any:
    """The running sandbox of these options: started here, already running in this process,
    or (a database file another process serves) that process's."""
    if db == MEMORY:
        key: tuple[Any, ...] = (speed, db, admin_token, profile)
    else:
        db = str(Path(db).expanduser().resolve())
        key = ("file", db)  # one sandbox per file, whatever the options
    with _LOCK:
        srv = _SANDBOXES.get(key)
        if srv is None:
            srv = _start(speed, db, admin_token, profile)
            if not _SANDBOXES:
                atexit.register(_stop_all)
            _SANDBOXES[key] = srv
        return srv


def _start(speed: float, db: str, admin_token: str | None, profile: str) -> Any:
    if db == MEMORY:
        return _serve(db, speed, admin_token, profile)
    from songlab.sandbox.storage import owner

    localfiles.private_dir(Path(db).parent)
    before = owner.serving(db) or {}
    port = urlsplit(str(before.get("base_url") or "")).port or 0  # the address it had
    try:
        return _serve(db, speed, admin_token, profile, port)
    except owner.SandboxInUse as exc:
        return _shared(db, exc.serving, speed)


def _sandbox_line(
    srv: Any, db: str, client: Client | AsyncClient, speed: float, profile: str
) -> str:
    """The line ``connect()`` prints about the sandbox: where, and whether it is fresh or
    what it kept (tasks, what is resumed, the balance)."""
    opts = f"speed {speed:g}{'' if profile == 'default' else ', profile ' + profile}"
    if db == MEMORY:
        return (
            f"a fresh local sandbox at {srv.base_url} (demo account, {opts}), in memory: "
            "nothing is kept after this kernel"
        )
    db = str(Path(db).expanduser().resolve())
    if isinstance(srv, SharedSandbox):
        speed_note = "" if srv.speed in (None, speed) else f", speed {srv.speed:g} (its own)"
        return (
            f"the local sandbox of process {srv.pid} at {srv.base_url} (demo account"
            f"{speed_note}), kept in {db}{_balance(client)}; this kernel takes it over "
            "if that process stops"
        )
    if srv.fresh:
        return f"a fresh local sandbox at {srv.base_url} (demo account, {opts}), kept in {db}"
    tasks, running = srv.sandbox.kept(DEMO_ACCOUNT)
    resumed = f", {running} resumed" if running else ""
    return (
        f"the local sandbox kept in {db} at {srv.base_url} (demo account, {opts}): "
        f"{tasks} task{'' if tasks == 1 else 's'}{resumed}{_balance(client)}"
    )


def _balance(client: Client | AsyncClient) -> str:
    if not isinstance(client, Client):
        return ""
    return f", balance ${cents(client.account.balance().total_usd)}"


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
    db: str = DEFAULT_DB,
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

    The sandbox keeps its state (the account, its balance, tasks, files, voices) in a
    private SQLite file: ``db``, else ``$SONGLAB_SANDBOX_DB``, else
    ``<user data dir>/songlab/sandbox.sqlite3`` (``":memory:"`` keeps nothing; another
    ``profile`` than the default is in memory unless ``db`` is given). A restarted kernel
    finds what the last one left, and its worker resumes the tasks that were running. One
    process serves a file at a time: a kernel that finds another serving it uses that one
    (and serves the file itself if that process stops).

    Prints one line saying which (never the key), and for the sandbox whether it is fresh
    or what it kept, unless ``quiet``.

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
    check_name(profile, "profile", ("default", "spec", "noisy"), of="the sandbox's profiles")
    where = _db_of(db, profile)
    srv = _sandbox(float(speed), where, admin_token, profile)
    client = cls(DEMO_API_KEY, base_url=srv.base_url, **{"quiet": quiet, **client_options})
    client.sandbox = srv  # the client's opaque slot: the running sandbox (base_url, admin_token)
    set_default_labels(client, labels if labels != Labels() else None)
    if not quiet:
        print(
            "songlab: no SONGLAB_API_KEY/SONGLAB_BASE_URL set; using "
            + _sandbox_line(srv, where, client, float(speed), profile)
        )
    return client


def _db_of(db: Any, profile: str) -> str:
    """The database a sandbox of ``connect()`` keeps its state in."""
    if db is not DEFAULT_DB:
        if not isinstance(db, str | os.PathLike) or not str(db):
            raise ValidationError("db", f"a file path or ':memory:', got {db!r}")
        return str(db)
    if profile != "default":
        return MEMORY
    from songlab.sandbox.config import default_db_path

    return default_db_path()


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
