"""A small HTTP server for a campaign: serves each rater's page and takes the answers.

``CampaignServer(campaign)`` binds 127.0.0.1 on a free port by default (pass
``host="0.0.0.0"`` and ``public_url=`` the address raters use, to reach raters
on the LAN). ``start()``/``stop()`` (or ``with``) run it in a background thread. Each
rater's page is at ``/p/<slug>``, a random slug per rater (the rater id is not in the
URL); ``links()`` lists them. The page's *Send* button posts its answer file to
``/answers``, and the server answers the rater at once:

* a file ``collect`` would refuse is refused now, with the reason shown on the page
  (clips not heard for the minimum, answers that changed, answers sent faster than their
  clips can be heard since the page was opened); a file not made by a page of this
  campaign as issued gets one sentence, whichever rule it broke, so nothing tells a real
  rater id from a guessed one;
* an accepted file is written to ``inbox`` (if given) under a name of its own with an
  exclusive create (a new file every time; a restart or a crash overwrites nothing), 0600
  in a 0700 folder, before "Received" is said. On start the server reads its inbox back,
  so after a restart it still knows what each rater sent.

``campaign.collect(server)`` merges what was received (the whole inbox when there is one).
Stdlib only (``http.server``): no dependency, and the listening package stays off the sandbox.
"""

from __future__ import annotations

import json
import secrets
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import songlab.listening._answers as ans
from songlab.listening._errors import ListeningError, SessionError
from songlab.listening._intake import read
from songlab.localfiles import create_exclusive, private_dir

FORGED = (
    "Refused: this file was not made by a page of this campaign as it was sent to you, or it "
    "was changed after the page saved it. Send the file your page saved, unchanged."
)


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
        self._slugs = {
            ans.keyed(campaign._secret, "slug", r)[:12].hex(): r for r in campaign.raters
        }
        self._queue: list[tuple[str, dict[str, Any]]] = []
        self._accepted: dict[str, dict[str, Any]] = {}  # rater -> the last file accepted
        self._issued: dict[str, float] = {}  # rater -> when their page was first served
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- life cycle ----------------------------------------------------------------------
    def start(self) -> CampaignServer:
        if self._httpd is not None:
            raise SessionError("the server is already running")
        if self.inbox is not None:
            private_dir(self.inbox)
            self._reread()
        self._httpd = ThreadingHTTPServer((self.host, self.port), _handler(self))
        self._httpd.daemon_threads = True
        self.port = self._httpd.server_address[1]
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, daemon=True, name="songlab-campaign-server"
        )
        self._thread.start()
        return self

    def _reread(self) -> None:
        """What the inbox holds (after a restart): each rater's last accepted file, and when
        each page was first served."""
        assert self.inbox is not None
        for path in sorted(self.inbox.glob("*.json")):
            try:
                doc = ans.parse(read(path))
                rater, _ = self.campaign._check(doc)
            except ans.Refused:
                continue  # collect will name it
            self._accepted[rater] = doc
        for path in self.inbox.glob("issued-*.txt"):
            rater = self.campaign._by_public.get(path.stem.removeprefix("issued-"))
            if rater is not None:
                try:
                    self._issued[rater] = float(path.read_text(encoding="ascii"))
                except (OSError, ValueError):
                    continue

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
        return f"CampaignServer({self.campaign.id}, {state}, received={len(self._accepted)})"

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def links(self) -> dict[str, str]:
        """``{rater: URL of their page}``: send each rater their own link (built on
        ``public_url`` when given, e.g. ``http://192.168.1.20:8765`` for ``host="0.0.0.0"``)."""
        base = self.public_url or self.url
        return {r: f"{base}/p/{slug}" for slug, r in self._slugs.items()}

    # -- pages ---------------------------------------------------------------------------
    def page(self, slug: str) -> str | None:
        """The page of the rater whose link ends in ``slug`` (its first serving is noted)."""
        rater = self._slugs.get(slug)
        if rater is None:
            return None
        with self._lock:
            if rater not in self._issued:
                self._issued[rater] = now = time.time()
                if self.inbox is not None:
                    mark = self.inbox / f"issued-{self.campaign.public_id(rater)}.txt"
                    try:
                        create_exclusive(mark, repr(now).encode("ascii"))
                    except FileExistsError:
                        pass
        text: str = self.campaign.page(rater)
        return text

    # -- answers -------------------------------------------------------------------------
    def receive(self, body: bytes) -> tuple[int, str]:
        """Check one posted answer file; ``(HTTP status, message for the rater)``."""
        try:
            doc = ans.parse(body)
            rater, _ = self.campaign._check(doc)
        except ans.Refused as exc:
            if exc.forged:
                return 400, FORGED
            return 400, f"Refused: the answer file {exc}"
        with self._lock:
            before = self._accepted.get(rater)
            if before is not None and before["mac"] == doc["mac"]:
                return 200, f"Already received: {len(doc['answers'])} answers. Thank you."
            if before is not None and not _adds_to(before, doc):
                return 409, (
                    "Refused: you already sent answers that these change. Your first answers "
                    "were kept; if they were a mistake, tell the organiser."
                )
            issued = self._issued.get(rater)
            fast = self._too_fast(rater, doc, issued)
            if fast:
                return 400, fast
            name = self._write(body)
            self._accepted[rater] = doc
            self._queue.append((f"{self.url}/answers ({name})", doc))
        return 200, f"Received {len(doc['answers'])} answers. Thank you."

    def _too_fast(self, rater: str, doc: dict[str, Any], issued: float | None) -> str | None:
        """Why the answers came faster than their clips can be heard since the page was
        first served (None when they did not, or when this server did not serve the page)."""
        if issued is None:
            return None
        session = self.campaign._sessions[rater]
        per_clip = session.need
        least = sum(per_clip * len(session.trials[a[0]].labels) for a in doc["answers"])
        elapsed = time.time() - issued
        if elapsed + 1.0 < least:
            return (
                f"Refused: these {len(doc['answers'])} answers came {elapsed:.0f} s after your "
                f"page was opened, but hearing their clips takes at least {least:.0f} s. Listen "
                "to every clip, then send again."
            )
        return None

    def _write(self, body: bytes) -> str:
        """Keep ``body`` in the inbox under a new name (exclusive create: never an overwrite)."""
        while True:
            name = f"{time.time_ns():020d}-{secrets.token_hex(4)}.json"
            if self.inbox is None:
                return name
            try:
                create_exclusive(self.inbox / name, body)
                return name
            except FileExistsError:
                continue

    def received_files(self) -> Iterator[tuple[str, Any]]:
        """What ``campaign.collect`` reads: the inbox's files (oldest first), or without an
        inbox the files received since the server started (each handed out once)."""
        if self.inbox is not None:
            for path in sorted(self.inbox.glob("*.json")):
                yield path.name, read(path)
            return
        with self._lock:
            queued, self._queue = self._queue, []
        yield from queued


def _adds_to(before: dict[str, Any], now: dict[str, Any]) -> bool:
    """Whether ``now`` keeps every answer of ``before`` and adds some."""
    old = {a[0]: a[1] for a in before["answers"]}
    new = {a[0]: a[1] for a in now["answers"]}
    return (
        set(old) < set(new)
        and all(new[t] == v for t, v in old.items())
        and before["headphones"] == now["headphones"]
    )


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
            self.send_header("X-Content-Type-Options", "nosniff")
            self.end_headers()
            self.wfile.write(body)

        def _json(self, status: int, message: str) -> None:
            self._send(status, json.dumps({"message": message}).encode(), "application/json")

        def do_GET(self) -> None:
            parts = self.path.split("?")[0].strip("/").split("/")
            page = server.page(parts[1]) if len(parts) == 2 and parts[0] == "p" else None
            if page is None:
                self._json(404, "no such page")
                return
            self._send(200, page.encode("utf-8"), "text/html; charset=utf-8")

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
            try:
                status, message = server.receive(self.rfile.read(length))
            except Exception as exc:  # noqa: BLE001 - the rater gets a reply, never a dropped line
                status, message = 500, f"The server could not take the file ({type(exc).__name__})"
            self._json(status, message)

    return Handler


def serve(campaign: Any, /, **options: Any) -> CampaignServer:
    """Start a :class:`CampaignServer` for ``campaign`` (options: host, port, inbox, public_url)."""
    if not hasattr(campaign, "raters"):
        raise ListeningError("campaign", "must be a Campaign")
    return CampaignServer(campaign, **options).start()


__all__ = ["CampaignServer", "serve"]
