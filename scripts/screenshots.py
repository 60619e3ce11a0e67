"""Make the README's screenshots from real Chromium driving JupyterLab: `make screenshots`.

JupyterLab starts on a free loopback port with a random token, its root a temp copy of
notebooks/ and data/ (so autosave never touches the committed notebooks), with the
project's kernel. Headless Debian Chromium (Playwright) runs each notebook and photographs
what a person sees:

- docs/img/quickstart.png: the quickstart's generation form, priced, with its take done;
- docs/img/listening.png: a blind A/B panel (tests/browser/listening_panel.ipynb's two
  tones) with clip A playing;
- docs/img/campaign.png: 08's quality-per-dollar plot.

Images are reduced to a 128-colour palette to stay small (tens of KiB each).
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
from PIL import Image

ROOT = Path(__file__).resolve().parents[1]
IMG = ROOT / "docs" / "img"
CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--no-first-run",
    "--autoplay-policy=no-user-gesture-required",
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _start_lab(work: Path) -> tuple[subprocess.Popen[bytes], str]:
    root = work / "notebooks"
    shutil.copytree(ROOT / "notebooks", root, ignore=shutil.ignore_patterns("out"))
    shutil.copytree(ROOT / "data", work / "data")
    shutil.copy(ROOT / "tests" / "browser" / "listening_panel.ipynb", root)
    port, token = _free_port(), secrets.token_hex(16)
    state = work / "jupyter"
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
    args = [
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
    ]
    if os.geteuid() == 0:
        args.append("--allow-root")
    proc = subprocess.Popen(
        args,
        cwd=root,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    for _ in range(200):
        try:
            if httpx.get(f"{base}/api/status", params={"token": token}, timeout=2).is_success:
                return proc, f"{base}/lab/tree/{{name}}?token={token}"
        except httpx.TransportError:
            pass
        time.sleep(0.3)
    proc.kill()
    raise SystemExit("JupyterLab did not start within 60 s")


def _small(path: Path) -> None:
    image = Image.open(path).convert("RGB")
    image.quantize(colors=128, method=Image.Quantize.MEDIANCUT).save(path, optimize=True)


def _open(page, url: str, name: str) -> None:
    from playwright.sync_api import expect

    page.goto(url.format(name=name))
    expect(page.locator(".jp-StatusBar-Widget").filter(has_text="| Idle").first).to_be_visible(
        timeout=90_000
    )
    page.wait_for_timeout(1500)  # the notebook settles (its kernel's first idle)
    news = page.get_by_role("button", name="No", exact=True)
    if news.count():
        news.first.click()
    page.locator(".lm-MenuBar-itemLabel", has_text="Edit").first.click()
    page.locator(".lm-Menu-itemLabel", has_text="Clear Outputs of All Cells").first.click()
    page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
    page.locator(".lm-Menu-itemLabel", has_text="Run All Cells").first.click()


def _cell_with(page, text: str):
    return page.locator(".jp-Notebook .jp-Cell").filter(has_text=text).last


def main() -> None:
    from playwright.sync_api import expect, sync_playwright

    if not Path(CHROMIUM).exists():
        raise SystemExit("screenshots: /usr/bin/chromium is absent (make browser-deps)")
    IMG.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        proc, url = _start_lab(Path(tmp))
        (ROOT / "test-output").mkdir(exist_ok=True)
        try:
            with sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
                page = browser.new_page(viewport={"width": 1180, "height": 1200})
                # 1. the quickstart: run it all, photograph the form with its take done
                _open(page, url, "01_quickstart.ipynb")
                expect(page.locator("button", has_text="Clone voice").first).to_be_attached(
                    timeout=120_000
                )
                form = _cell_with(page, "form = GenerationForm").locator(".jp-OutputArea").first
                expect(form.get_by_text("completed").first).to_be_attached(timeout=60_000)
                form.scroll_into_view_if_needed()
                form.screenshot(path=str(IMG / "quickstart.png"))
                # 2. the blind A/B panel, clip A playing
                page.close()
                page = browser.new_page(viewport={"width": 1180, "height": 1200})
                _open(page, url, "listening_panel.ipynb")
                play = page.locator("button.songlab-play", has_text="A")
                expect(play).to_be_visible(timeout=60_000)
                play.click()
                page.wait_for_function(
                    "(() => { const a = document.querySelector("
                    "\"audio.songlab-clip[data-label='A']\");"
                    " return a && !a.paused && a.currentTime > 0.5; })()"
                )
                page.locator(".songlab-listening").screenshot(path=str(IMG / "listening.png"))
                # 3. 08's quality per dollar
                page.close()
                page = browser.new_page(viewport={"width": 1180, "height": 1200})
                _open(page, url, "08_listening_campaign.ipynb")
                plot = _cell_with(page, "listening.plot_quality_per_dollar").locator("img").first
                expect(plot).to_be_visible(timeout=180_000)
                plot.scroll_into_view_if_needed()
                plot.screenshot(path=str(IMG / "campaign.png"))
                browser.close()
        except Exception:
            if "page" in locals():
                page.screenshot(path=str(ROOT / "test-output" / "screenshots-failure.png"))
            raise
        finally:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(20)
    for name in ("quickstart.png", "listening.png", "campaign.png"):
        _small(IMG / name)
        print(f"docs/img/{name}: {(IMG / name).stat().st_size / 1024:.0f} KiB")


if __name__ == "__main__":
    main()
