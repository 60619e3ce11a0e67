"""A small HTTP server for a campaign: serves each rater's page and takes the answers.

``CampaignServer(campaign)`` binds 127.0.0.1 on a free port by default (pass
``host="0.0.0.0"`` and ``public_url=`` the address raters use, to reach raters
on the LAN). ``start()``/``stop()`` (or
``with``) run it in a background thread. Each rater's page is at
``/p/<slug>``, a random slug per rater (the rater id is not in the URL);
``links()`` lists them. The page's *Send* button posts its answer file to
``/answers``: the server checks it against the campaign at once (same rules as
``collect``) and answers the rater with a message, writes every accepted file
to ``inbox`` (if given) so nothing is lost with the kernel, and queues it;
``campaign.collect(server)`` merges the queued files. Stdlib only
(``http.server``): no dependency, and the listening package stays off the sandbox.
"""

from __future__ import annotations

import json
import secrets
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import songlab.listening._answers as ans
from songlab.listening._errors import ListeningError, SessionError


class CampaignServer:
    """Serve a :class:`~songlab.listening.Campaign`'s pages and collect answers over HTTP."""

    def __init__(
        self,
        campaign: Any,
        /,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        inbox: str | Path | None = None,
        public_url: str | None = None,
    ) -> None:
        if public_url is not None and not str(public_url).startswith(("http://", "https://")):
            raise ListeningError("public_url", f"must be an http(s) URL; got {public_url!r}")
        self.campaign, self.host, self.port = campaign, host, port
        self.public_url = public_url.rstrip("/") if public_url else None
        self.inbox = Path(inbox) if inbox is not None else None
        self._slugs = {secrets.token_urlsafe(12): r for r in campaign.raters}
        self._queue: list[tuple[str, dict[str, Any]]] = []
        self._seen: dict[str, str] = {}  # rater -> mac of the file the server accepted
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- life cycle ----------------------------------------------------------------------
    def start(self) -> CampaignServer:
        if self._httpd is not None:
            raise SessionError("the server is already running")
        if self.inbox is not None:
            self.inbox.mkdir(parents=True, exist_ok=True)
        self._httpd = ThreadingHTTPServer((self.host, self.port), _handler(self))
        self._httpd.daemon_threads = True
        self.port = self._httpd.server_address[1]
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, daemon=True, name="songlab-campaign-server"
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is None:
            return
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(10)
        self._httpd = self._thread = None

    def __enter__(self) -> CampaignServer:
        return self if self._httpd is not None else self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = f"running at {self.url}" if self._httpd else "stopped"
        return f"CampaignServer({self.campaign.id}, {state}, queued={len(self._queue)})"

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def links(self) -> dict[str, str]:
        """``{rater: URL of their page}``: send each rater their own link (built on
        ``public_url`` when given, e.g. ``http://192.168.1.20:8765`` for ``host="0.0.0.0"``)."""
        base = self.public_url or self.url
        return {r: f"{base}/p/{slug}" for slug, r in self._slugs.items()}

    # -- answers -------------------------------------------------------------------------
    def receive(self, body: bytes) -> tuple[int, str]:
        """Check one posted answer file; ``(HTTP status, message for the rater)``."""
        try:
            doc = ans.parse(body)
            rater, _ = self.campaign._check(doc)
        except ans.Refused as exc:
            return 400, f"Refused: the answer file {exc}"
        with self._lock:
            if self._seen.get(rater) == doc["mac"] or (
                rater in self.campaign.received
                and self.campaign.received[rater].doc["mac"] == doc["mac"]
            ):
                return 200, f"Already received: {len(doc['answers'])} answers. Thank you."
            self._seen[rater] = doc["mac"]
            name = f"answers-{rater}-{len(self._queue) + 1:03d}.json"
            if self.inbox is not None:
                tmp = self.inbox / (name + ".part")
                tmp.write_bytes(body)
                tmp.replace(self.inbox / name)
            self._queue.append((f"{self.url}/answers ({name})", doc))
        return 200, f"Received {len(doc['answers'])} answers. Thank you."

    def received_files(self) -> Iterator[tuple[str, dict[str, Any]]]:
        """Hand the queued files to ``campaign.collect`` (each is handed out once)."""
        with self._lock:
            queued, self._queue = self._queue, []
        yield from queued


def _handler(server: CampaignServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        timeout = 10
        server_version = "songlab-campaign"
        sys_version = ""

        def log_message(self, format: str, *args: Any) -> None:  # quiet: notebooks
            return

        def _send(self, status: int, body: bytes, ctype: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(body)

        def _json(self, status: int, message: str) -> None:
            self._send(status, json.dumps({"message": message}).encode(), "application/json")

        def do_GET(self) -> None:
            parts = self.path.split("?")[0].strip("/").split("/")
            rater = server._slugs.get(parts[1]) if len(parts) == 2 and parts[0] == "p" else None
            if rater is None:
                self._json(404, "no such page")
                return
            page = server.campaign.page(rater).encode("utf-8")
            self._send(200, page, "text/html; charset=utf-8")

        def do_POST(self) -> None:
            if self.path.split("?")[0] != "/answers":
                self._json(404, "no such route")
                return
            try:
                length = int(self.headers.get("Content-Length", "-1"))
            except ValueError:
                length = -1
            if not 0 < length <= ans.MAX_ANSWER_BYTES:
                self._json(413 if length > 0 else 411, "an answer file of at most 1 MB is expected")
                return
            status, message = server.receive(self.rfile.read(length))
            self._json(status, message)

    return Handler


def serve(campaign: Any, /, **options: Any) -> CampaignServer:
    """Start a :class:`CampaignServer` for ``campaign`` (options: host, port, inbox)."""
    if not hasattr(campaign, "raters"):
        raise ListeningError("campaign", "must be a Campaign")
    return CampaignServer(campaign, **options).start()
