"""Running a served campaign: in a notebook's background thread, or as ``songlab campaign
serve`` under uvicorn with several worker processes.

``serve(campaign, db=URL)`` (``listening.serve``) starts uvicorn in a thread of this process and
returns a :class:`CrowdServer` (``url``, ``links()``, ``stop()``, what ``campaign.collect``
takes). ``run(...)`` is the command: it checks the campaign and its clips, records the campaign
in the database (a restart finds its raters and answers there), binds the port, prints
``songlab campaign listening on http://HOST:PORT`` and serves with ``workers`` processes (each
loads the campaign itself; the database is what they share). Several replicas on one
PostgreSQL database behind a load balancer are several such commands.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import uvicorn

from songlab.listening._errors import ListeningError, SessionError
from songlab.listening.campaign import Campaign, load_campaign
from songlab.listening.crowd.app import create_app
from songlab.listening.crowd.service import Service
from songlab.listening.crowd.store import open_store

__all__ = ["CrowdServer", "default_db", "read_clip_folder", "run", "serve", "worker_app"]

_ENV = "SONGLAB_CAMPAIGN_SERVE"
AUDIO = (".wav", ".flac", ".ogg", ".mp3", ".m4a")


def default_db(campaign: Campaign) -> str:
    """``sqlite:///`` a private file named after the campaign, under ``SONGLAB_CAMPAIGN_DIR``
    (default: songlab's folder in the user's data dir)."""
    folder = os.environ.get("SONGLAB_CAMPAIGN_DIR")
    if not folder:
        import platformdirs

        folder = str(Path(platformdirs.user_data_dir("songlab")) / "campaigns")
    return f"sqlite:///{Path(folder) / campaign.id}.sqlite"


class CrowdServer:
    """A campaign served from a thread of this process (a notebook's server)."""

    def __init__(
        self,
        campaign: Campaign,
        /,
        *,
        db: str | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        public_url: str | None = None,
        clock: Callable[[], float] = time.time,
        **settings: Any,
    ) -> None:
        if public_url is not None and not str(public_url).startswith(("http://", "https://")):
            raise ListeningError("public_url", f"must be an http(s) URL; got {public_url!r}")
        if not isinstance(campaign, Campaign):
            raise ListeningError("campaign", "must be a Campaign")
        self.campaign, self.host, self.port = campaign, host, port
        self.public_url = public_url.rstrip("/") if public_url else None
        self.db = db or default_db(campaign)
        self._settings, self._clock = settings, clock
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self.service: Service | None = None

    def start(self) -> CrowdServer:
        if self._server is not None:
            raise SessionError("the server is already running")
        store = open_store(self.db)
        import socket

        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((self.host, self.port))
        _no_delay(sock)
        self.port = sock.getsockname()[1]
        self.service = Service(
            self.campaign, store, settings=self._settings, base_url=self.base, clock=self._clock
        )
        config = uvicorn.Config(
            create_app(self.service),
            log_level="warning",
            backlog=2048,
            access_log=False,
            timeout_keep_alive=75,
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run,
            kwargs={"sockets": [sock]},
            daemon=True,
            name="songlab-campaign-server",
        )
        self._thread.start()
        deadline = time.monotonic() + 30
        while not self._server.started and self._thread.is_alive() and time.monotonic() < deadline:
            time.sleep(0.02)
        if not self._server.started:
            raise SessionError("the campaign server did not start")
        return self

    def stop(self) -> None:
        if self._server is None:
            return
        self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(15)
        if self.service is not None:
            self.service.store.close()
        self._server = self._thread = None

    def __enter__(self) -> CrowdServer:
        return self if self._server is not None else self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = f"running at {self.url}" if self._server else "stopped"
        done = 0
        if self.service is not None:
            done = sum(1 for _ in self.service.received_files())
        return f"CrowdServer({self.campaign.id}, {state}, finished={done})"

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def base(self) -> str:
        return self.public_url or self.url

    def links(self) -> dict[str, str]:
        """``{rater: URL of their own page}`` (a panel invited by email)."""
        service = self._running()
        return {r: f"{self.base}{path}" for r, path in service.links().items()}

    def join_url(self) -> str:
        """Where crowd raters arrive (give this to the platform, with its own query fields)."""
        return f"{self.base}/join"

    def received_files(self) -> Iterator[tuple[str, Any]]:
        """The finished raters' answer files (``campaign.collect(server)`` reads these)."""
        yield from self._running().received_files()

    def _running(self) -> Service:
        if self.service is None:
            raise SessionError("the server was not started")
        return self.service


def serve(campaign: Campaign, /, **options: Any) -> CrowdServer:
    """Serve ``campaign`` from this process (options: ``db``, ``host``, ``port``,
    ``public_url``, and the settings ``raters``, ``ratings``, ``timeout``, ``prolific``,
    ``screen_headphones``)."""
    if not isinstance(campaign, Campaign):
        raise ListeningError("campaign", "must be a Campaign")
    return CrowdServer(campaign, **options).start()


def _no_delay(sock: Any) -> None:
    """TCP_NODELAY on the listening socket (Linux gives it to every accepted connection): a
    reply written in two parts (head, then body) is not held back by Nagle's algorithm until
    the client's delayed ACK, about 40 ms a request."""
    import socket

    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


# -- the command: several worker processes -----------------------------------------------
def read_clip_folder(folder: str | Path) -> dict[str, list[Any]]:
    """Clips from ``folder``: one sub-folder per model, one audio file per prompt (the same
    count in each, taken in name order), as bytes."""
    root = Path(folder)
    if not root.is_dir():
        raise ListeningError("clips", f"must be a folder of one folder per model; got {folder!r}")
    clips = {
        d.name: [f.read_bytes() for f in sorted(d.iterdir()) if f.suffix.lower() in AUDIO]
        for d in sorted(root.iterdir())
        if d.is_dir()
    }
    if len(clips) < 2:
        raise ListeningError("clips", f"{folder} must hold one folder per model (at least two)")
    return clips


def _load(config: dict[str, Any]) -> Campaign:
    return load_campaign(config["campaign"], read_clip_folder(config["clips"]))


def worker_app() -> Any:
    """One worker's app (uvicorn calls this in each process; the parent set the config)."""
    _die_with_parent()
    config = json.loads(os.environ[_ENV])
    service = Service(_load(config), open_store(config["db"]), base_url=config["base"])
    return create_app(service)


def _die_with_parent() -> None:
    """On Linux, a worker gets SIGKILL when the process that started it dies (so a killed
    server leaves no worker holding its port)."""
    if sys.platform.startswith("linux"):
        import ctypes

        try:
            ctypes.CDLL("libc.so.6").prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        except OSError:
            return


def run(
    campaign: str | Path,
    clips: str | Path,
    *,
    db: str,
    host: str = "127.0.0.1",
    port: int = 0,
    workers: int = 1,
    public_url: str | None = None,
    settings: dict[str, Any] | None = None,
) -> int:
    """Serve a saved campaign until stopped (the ``songlab campaign serve`` command)."""
    config = {"campaign": str(campaign), "clips": str(clips), "db": db}
    loaded = _load(config)
    store = open_store(db)
    Service(loaded, store, settings=settings or {})  # records the campaign and its slots
    store.close()
    uconfig = uvicorn.Config(
        "songlab.listening.crowd.run:worker_app",
        factory=True,
        host=host,
        port=port,
        workers=workers,
        log_level="warning",
        backlog=2048,
        access_log=False,
        timeout_keep_alive=75,
    )
    sock = uconfig.bind_socket()
    _no_delay(sock)
    bound = sock.getsockname()[1]
    base = (public_url or f"http://{host}:{bound}").rstrip("/")
    os.environ[_ENV] = json.dumps(dict(config, base=base))
    print(f"songlab campaign listening on http://{host}:{bound}", flush=True)
    print(f"raters join at {base}/join", flush=True)
    server = uvicorn.Server(uconfig)
    if workers > 1:
        from uvicorn.supervisors import Multiprocess

        Multiprocess(uconfig, sockets=[sock]).run()
    else:
        server.run(sockets=[sock])
    return 0
