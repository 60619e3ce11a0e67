"""One test in a real browser: JupyterLab + headless Chromium run a notebook of widgets.

JupyterLab starts on a free loopback port with a random token, its root a temp
copy of notebooks/ (plus this directory's ``lab_smoke.ipynb``), and runs the
project's .venv kernel. Playwright opens the quickstart notebook (when it
drives the widgets this test checks; else ``lab_smoke.ipynb``), waits for the
kernel's "| Idle", runs "Run All Cells" from the Run menu and checks that the
progress bar rendered and completed, that an ``<audio>`` element is present, and
that ticking the consent box enables the clone button. Screenshots go to
``test-output/browser/`` (gitignored).
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

pytestmark = [pytest.mark.browser, pytest.mark.timeout(180)]

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
    "--autoplay-policy=no-user-gesture-required",
]
OUT = ROOT / "test-output" / "browser"
QUICKSTART = ("01_quickstart.ipynb", "quickstart.ipynb")
# what a notebook must do for this test's checks to apply to it
NEEDED = ("GenerationForm", "ClonePanel", "attestation")


def _notebook_to_open(root: Path) -> str:
    for name in QUICKSTART:
        path = root / name
        if path.is_file():
            text = path.read_text(encoding="utf-8")
            if all(word in text for word in NEEDED):
                return name
    return "lab_smoke.ipynb"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def lab(tmp_path: Path) -> Iterator[tuple[str, str]]:
    """A running JupyterLab: (base URL with token query, notebook name)."""
    if not CHROMIUM.exists():
        pytest.skip("browser test: /usr/bin/chromium is absent (make browser-deps installs it)")
    pytest.importorskip("playwright.sync_api", reason="browser test: playwright is not installed")
    root = tmp_path / "notebooks"
    if (ROOT / "notebooks").is_dir():
        shutil.copytree(ROOT / "notebooks", root, ignore=shutil.ignore_patterns("out"))
    else:
        root.mkdir()
    if (ROOT / "data").is_dir():  # notebooks read ../data/ fixtures
        shutil.copytree(ROOT / "data", tmp_path / "data")
    for fixture in HERE.glob("*.ipynb"):  # lab_smoke.ipynb, listening_panel.ipynb
        shutil.copy(fixture, root / fixture.name)
    name = _notebook_to_open(root)
    assert "kernelspec" in json.loads((root / name).read_text(encoding="utf-8"))["metadata"]
    port, token = _free_port(), secrets.token_hex(16)
    state = tmp_path / "jupyter"
    env = {
        **os.environ,
        "JUPYTER_RUNTIME_DIR": str(state / "runtime"),
        "JUPYTERLAB_WORKSPACES_DIR": str(state / "workspaces"),
        "JUPYTERLAB_SETTINGS_DIR": str(state / "settings"),
        "JUPYTER_CONFIG_DIR": str(state / "config"),
        "PYTHONWARNINGS": "ignore",
    }
    env.pop("SONGLAB_API_KEY", None)
    env.pop("SONGLAB_BASE_URL", None)
    log = (tmp_path / "lab.log").open("wb")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "jupyterlab",
            "--no-browser",
            "--ServerApp.ip=127.0.0.1",
            f"--ServerApp.port={port}",
            "--ServerApp.port_retries=0",
            f"--IdentityProvider.token={token}",
            f"--ServerApp.root_dir={root}",
            "--LabApp.extension_manager=readonly",
            "--log-level=WARN",
            *(["--allow-root"] if os.geteuid() == 0 else []),
        ],
        cwd=root,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            if proc.poll() is not None:
                pytest.fail(
                    "JupyterLab exited early:\n"
                    + (tmp_path / "lab.log").read_text(errors="replace")[-3000:]
                )
            try:
                if httpx.get(f"{base}/api/status", params={"token": token}, timeout=2).is_success:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                pytest.fail("JupyterLab did not answer within 60 s")
            time.sleep(0.3)
        yield f"{base}/lab/tree/{name}?token={token}", name
    finally:
        try:
            os.killpg(proc.pid, signal.SIGTERM)  # Lab and the kernels it started
            proc.wait(15)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(5)
        log.close()


def _menu(page: object, menu: str, item: str) -> None:
    page.locator(".lm-MenuBar-itemLabel", has_text=menu).first.click()  # type: ignore[attr-defined]
    page.locator(".lm-Menu-itemLabel", has_text=item).first.click()  # type: ignore[attr-defined]


def test_lab_runs_the_notebook_and_the_widgets_work(lab: tuple[str, str]) -> None:
    from playwright.sync_api import expect, sync_playwright

    url, name = lab
    OUT.mkdir(parents=True, exist_ok=True)
    for old in OUT.glob("*.png"):
        old.unlink()
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        try:
            page.goto(url)
            status = page.locator(".jp-StatusBar-Widget").filter(has_text="| Idle")
            expect(status.first).to_be_visible(timeout=90_000)  # the first kernel start is slow
            page.screenshot(path=str(OUT / "1-opened.png"))

            news = page.get_by_role("button", name="No", exact=True)
            if news.count():
                news.first.click()  # the "official Jupyter news?" toast would cover widgets
            _menu(page, "Edit", "Clear Outputs of All Cells")  # no stale saved widget views
            expect(page.locator(".widget-hprogress")).to_have_count(0)
            # record every width a progress bar shows while the notebook runs
            page.evaluate("""() => {
              window.__widths = [];
              new MutationObserver(ms => ms.forEach(m => {
                if (m.target.classList && m.target.classList.contains('progress-bar'))
                  window.__widths.push([performance.now(), m.target.style.width]);
              })).observe(document.body, {attributes: true, attributeFilter: ['style'],
                                          subtree: true});
            }""")
            _menu(page, "Run", "Run All Cells")

            bars = page.locator(".widget-hprogress .progress-bar")  # IntProgress, horizontal
            expect(bars.first).to_be_attached(timeout=60_000)
            expect(page.get_by_text("completed (100%)").first).to_be_attached(timeout=60_000)
            expect(bars.first).to_have_attribute("style", re.compile(r"width: 100%"))
            # the bar was seen on its way: it showed progress between 0 and 100 % for at
            # least half a second (at the sandbox speed of the other notebooks, 20, it is
            # over in about a quarter of a second)
            widths = [
                (t, float(w[:-1])) for t, w in page.evaluate("window.__widths") if w.endswith("%")
            ]
            moving = [t for t, w in widths if 0 < w < 100]
            full = [t for t, w in widths if w >= 100 and moving and t > moving[0]]
            assert moving and full, f"the progress bar never showed progress: {widths}"
            shown = (full[0] - moving[0]) / 1000
            assert shown >= 0.5, f"the bar moved for only {shown:.2f} s: {widths}"
            clone_button = page.locator("button", has_text="Clone voice").first
            consent = page.locator(".songlab-consent input[type=checkbox]")
            expect(clone_button).to_be_attached(timeout=60_000)  # the run got to the clone panel
            # every bar of the run (those before the clone panel) ended green at 100%
            unfinished = page.locator(".widget-hprogress .progress-bar:not(.progress-bar-success)")
            expect(unfinished).to_have_count(0, timeout=30_000)
            expect(page.locator("audio").first).to_be_attached(timeout=30_000)
            bars.last.scroll_into_view_if_needed()
            page.screenshot(path=str(OUT / "2-progress-completed.png"))
            page.locator("audio").last.scroll_into_view_if_needed()
            page.screenshot(path=str(OUT / "3-audio.png"))

            clone_button.scroll_into_view_if_needed()
            expect(clone_button).to_be_disabled(timeout=30_000)
            # the consent statement is shown whole (wrapped, not cut) and the upload button
            # counts the reference the notebook loaded from code
            statement = page.locator(".songlab-consent .widget-html-content").first
            expect(statement).to_contain_text("attest the statement in rights above")
            assert statement.evaluate("e => e.scrollWidth <= e.clientWidth + 1")
            expect(page.locator(".widget-upload", has_text="reference (1)").first).to_be_attached()
            consent.check()
            expect(clone_button).to_be_enabled(timeout=15_000)
            page.screenshot(path=str(OUT / "4-consent-ticked.png"), full_page=True)
        except Exception:
            page.screenshot(path=str(OUT / "failure.png"), full_page=True)
            raise
        finally:
            browser.close()
    assert name in url


def _audio(page: object, label: str) -> dict:
    return page.eval_on_selector(  # type: ignore[attr-defined]
        f"audio.songlab-clip[data-label='{label}']",
        "a => ({paused: a.paused, t: a.currentTime, ended: a.ended})",
    )


def test_listening_panel_plays_for_real_and_reveals_a_summary(lab: tuple[str, str]) -> None:
    """The A/B panel in JupyterLab: its play button starts the <audio> element (time advances),
    B pauses A, the answers unlock only once the browser reported both clips played through,
    and the revealed panel shows the summary by model with no controls left. No kernel
    message of the whole run says "No such comm" (what JupyterLab's log console shows in
    red when the browser writes to a widget the kernel closed)."""
    from playwright.sync_api import expect, sync_playwright

    url, name = lab
    url = url.replace(f"/lab/tree/{name}", "/lab/tree/listening_panel.ipynb")
    OUT.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1200, "height": 900})
        frames: list[str] = []  # what the kernel sent the page
        sent: list[str] = []  # what the page sent the kernel

        def text(payload: object) -> str:
            raw = payload if isinstance(payload, bytes) else str(payload).encode()
            return raw.decode("utf-8", "replace")

        def watch(ws: object) -> None:
            ws.on("framereceived", lambda p: frames.append(text(p)))  # type: ignore[attr-defined]
            ws.on("framesent", lambda p: sent.append(text(p)))  # type: ignore[attr-defined]

        page.on("websocket", watch)
        try:
            page.goto(url)
            status = page.locator(".jp-StatusBar-Widget").filter(has_text="| Idle")
            expect(status.first).to_be_visible(timeout=90_000)
            news = page.get_by_role("button", name="No", exact=True)
            if news.count():
                news.first.click()
            _menu(page, "Run", "Run All Cells")
            play_a = page.locator("button.songlab-play", has_text="A")
            play_b = page.locator("button.songlab-play", has_text="B")
            expect(play_a).to_be_visible(timeout=60_000)
            prefer = page.locator(".songlab-listening button", has_text="prefer A")
            expect(prefer).to_be_disabled()

            play_a.click()
            page.wait_for_function(
                "(() => { const a = document.querySelector("
                "\"audio.songlab-clip[data-label='A']\");"
                " return a && !a.paused && a.currentTime > 0.2; })()",
                timeout=15_000,
            )
            first = _audio(page, "A")["t"]
            page.wait_for_timeout(250)
            assert _audio(page, "A")["t"] > first  # really playing: its time advances
            play_b.click()  # B starts, A stops
            page.wait_for_function(
                "(() => { const a = document.querySelector("
                "\"audio.songlab-clip[data-label='B']\");"
                " return a && !a.paused && a.currentTime > 0.1; })()",
                timeout=15_000,
            )
            assert _audio(page, "A")["paused"], "starting B must pause A"
            page.screenshot(path=str(OUT / "listening-playing.png"))
            # B plays to its end: B counts, A (cut short) does not; the answers stay locked
            expect(page.locator(".songlab-listening", has_text="played").first).to_be_visible()
            page.wait_for_function(
                "document.querySelector(\"audio.songlab-clip[data-label='B']\").ended",
                timeout=15_000,
            )
            expect(page.get_by_text("play A to the end to answer")).to_be_visible(timeout=10_000)
            expect(prefer).to_be_disabled()
            play_a.click()
            expect(prefer).to_be_enabled(timeout=15_000)  # the browser reported A played through
            prefer.click()
            expect(page.get_by_text("All 1 trials answered")).to_be_visible(timeout=15_000)
            page.locator(".songlab-listening button", has_text="Reveal").click()
            expect(page.get_by_text("Winner:")).to_be_visible(timeout=15_000)
            summary = page.locator(".songlab-listening").inner_text()
            assert "low tone" in summary and "high tone" in summary and "95 % interval" in summary
            expect(page.locator("button.songlab-play")).to_have_count(0)
            expect(page.locator(".songlab-listening button", has_text="prefer")).to_have_count(0)
            expect(page.locator(".songlab-listening button", has_text="Reveal")).to_have_count(0)
            page.screenshot(path=str(OUT / "listening-revealed.png"))
            page.wait_for_timeout(1500)  # messages after the last click have time to arrive
            assert any("comm_msg" in f for f in frames), "the kernel's messages were not seen"
            # "No such comm: <id>": the browser wrote to a widget the kernel closed. Left out:
            # JupyterLab's own "jupyter.widget.control" comm, which it opens when the kernel
            # starts, before the notebook imports ipywidgets (the kernel refuses it, and the
            # page's request_states to it logs once per kernel start, no widget's doing).
            control = {
                m
                for f in sent
                if '"target_name":"jupyter.widget.control"' in f.replace(" ", "")
                for m in re.findall(r'"comm_id":\s*"([0-9a-f-]{36})"', f)
            }
            said = [m for f in frames for m in re.findall(r"No such comm: ([0-9a-f-]{36})", f)]
            assert set(said) - control == set(), said
        except Exception:
            page.screenshot(path=str(OUT / "listening-failure.png"), full_page=True)
            raise
        finally:
            browser.close()
