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

import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.browser._chromium import CHROMIUM
from tests.browser._chromium import CHROMIUM_ARGS as BASE_ARGS
from tests.browser._lab import menu, run_all, running_lab

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM_ARGS = [*BASE_ARGS, "--autoplay-policy=no-user-gesture-required"]
OUT = ROOT / "test-output" / "browser"


@pytest.fixture
def lab(tmp_path: Path) -> Iterator[tuple[str, str]]:
    with running_lab(tmp_path) as running:
        yield running


STALE = re.compile(
    r"127\.0\.0\.1:\d+|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
    r"|\bvoice_[0-9a-f]{8,}"
)


def _bar_seconds(widths: list[list]) -> tuple[float, list]:
    """How long the first bar moved: from its first width between 0 and 100 % to its first
    100 % after that (``widths``: [time ms, bar id, width] as the page recorded them)."""
    first = next(b for _, b, w in widths if w.endswith("%") and 0 < float(w[:-1]) < 100)
    own = [(t, float(w[:-1])) for t, b, w in widths if b == first and w.endswith("%")]
    moving = [t for t, w in own if 0 < w < 100]
    full = [t for t, w in own if w >= 100 and t > moving[0]]
    assert full, f"the first bar never completed: {own}"
    return (full[0] - moving[0]) / 1000, own


def _take_audio(page: object, n: int) -> dict:
    return page.evaluate(  # type: ignore[attr-defined]
        "n => { const a = document.querySelectorAll('.songlab-clip-player audio')[n];"
        " return {paused: a.paused, t: a.currentTime}; }",
        n,
    )


def _click_play(page: object, audio: object) -> None:
    """A person's click on the play button of an <audio controls> (at its left end)."""
    box = audio.bounding_box()  # type: ignore[attr-defined]
    assert box is not None
    page.mouse.click(box["x"] + 16, box["y"] + box["height"] / 2)  # type: ignore[attr-defined]


def _open_until_idle(page: Any, url: str) -> None:
    """Open the notebook and wait for an idle kernel; dismiss the news toast if it shows."""
    from playwright.sync_api import expect

    page.goto(url)
    status = page.locator(".jp-StatusBar-Widget").filter(has_text="| Idle")
    expect(status.first).to_be_visible(timeout=90_000)  # the first kernel start is slow
    news = page.get_by_role("button", name="No", exact=True)
    if news.count():
        news.first.click()  # the "official Jupyter news?" toast would cover widgets


def _opened_shows_nothing_stale(page: Any, url: str) -> None:
    """Freshly opened (trusted, as make lab marks it): the widgets' pictures render, and
    nothing on the page is an address, id or time of the run that saved it."""
    from playwright.sync_api import expect

    _open_until_idle(page, url)
    expect(page.locator(".songlab-snapshot progress").first).to_be_attached(timeout=30_000)
    page.screenshot(path=str(OUT / "1-opened.png"))
    opened = page.locator(".jp-NotebookPanel").first.inner_text()
    assert "local sandbox at http://127.0.0.1:PORT" in opened
    assert not STALE.findall(opened), STALE.findall(opened)[:5]


def _run_all_and_watch_the_bars(page: Any) -> None:
    """Clear, Run All: the quickstart's own bar moves for at least 3 s, and every bar of the
    run (those before the clone panel) ends green at 100%."""
    from playwright.sync_api import expect

    menu(page, "Edit", "Clear Outputs of All Cells")  # start from nothing
    expect(page.locator(".widget-hprogress")).to_have_count(0)
    # record every width every progress bar shows while the notebook runs
    page.evaluate("""() => {
      window.__widths = []; let next = 0;
      new MutationObserver(ms => ms.forEach(m => {
        const e = m.target;
        if (e.classList && e.classList.contains('progress-bar')) {
          if (!e.dataset.sid) e.dataset.sid = String(next++);
          window.__widths.push([performance.now(), e.dataset.sid, e.style.width]);
        }
      })).observe(document.body, {attributes: true, attributeFilter: ['style'],
                                  subtree: true});
    }""")
    run_all(page)

    bars = page.locator(".widget-hprogress .progress-bar")  # IntProgress, horizontal
    expect(bars.first).to_be_attached(timeout=60_000)
    expect(page.get_by_text("completed (100%)").first).to_be_attached(timeout=90_000)
    expect(bars.first).to_have_attribute("style", re.compile(r"width: 100%"))
    # the quickstart's own bar lives: a person watching sees it move for seconds
    shown, own = _bar_seconds(page.evaluate("window.__widths"))
    steps = len({w for _, w in own if 0 < w < 100})
    print(f"the quickstart's bar moved for {shown:.1f} s through {steps} widths")
    assert shown >= 3.0, f"the bar moved for only {shown:.2f} s: {own}"
    clone_button = page.locator("button", has_text="Clone voice").first
    expect(clone_button).to_be_attached(timeout=120_000)  # the run got to the clone panel
    unfinished = page.locator(".widget-hprogress .progress-bar:not(.progress-bar-success)")
    expect(unfinished).to_have_count(0, timeout=60_000)
    page.screenshot(path=str(OUT / "2-progress-completed.png"))


def _takes_play_and_download(page: Any) -> None:
    """The form's two takes, each with its own player and download link: the older plays,
    starting the newer pauses it, and a take downloads under its own name with its audio."""
    from playwright.sync_api import expect

    from songlab.codec import sniff

    takes = page.locator(".songlab-clip-player audio")
    expect(takes).to_have_count(2, timeout=60_000)
    links = page.locator("a.songlab-download")
    expect(links.nth(1)).to_be_visible(timeout=30_000)
    older, newer = takes.nth(0), takes.nth(1)
    older.scroll_into_view_if_needed()
    page.wait_for_function(
        "document.querySelectorAll('.songlab-clip-player audio')[0].readyState >= 2",
        timeout=15_000,
    )
    _click_play(page, older)  # the older take
    page.wait_for_function(
        "(() => { const a = document.querySelectorAll('.songlab-clip-player audio')[0];"
        " return !a.paused && a.currentTime > 0.2; })()",
        timeout=15_000,
    )
    t = _take_audio(page, 0)["t"]
    page.wait_for_timeout(300)
    assert _take_audio(page, 0)["t"] > t  # it really plays
    page.screenshot(path=str(OUT / "3-older-take-playing.png"))
    _click_play(page, newer)
    page.wait_for_function(
        "(() => { const a = document.querySelectorAll('.songlab-clip-player audio')[1];"
        " return !a.paused && a.currentTime > 0.1; })()",
        timeout=15_000,
    )
    assert _take_audio(page, 0)["paused"], "starting the newer take pauses the older"
    # a download named after the take, holding its audio
    expect(links.nth(0)).to_contain_text("v5-take1-sunny-ukulele-pop-")
    with page.expect_download() as got:
        links.nth(0).click()
    download = got.value
    assert re.fullmatch(
        r"v5-take1-sunny-ukulele-pop-[0-9a-f]{8}\.mp3", download.suggested_filename
    ), download.suggested_filename
    saved = Path(download.path()).read_bytes()
    assert sniff(saved) == "mp3" and len(saved) > 10_000
    print(f"downloaded {download.suggested_filename} ({len(saved):,} bytes)")


def _the_consent_gate(page: Any) -> None:
    """The clone panel: disabled until the consent box is ticked; the statement shown whole
    (wrapped, not cut); the upload button counts the reference the notebook loaded."""
    from playwright.sync_api import expect

    clone_button = page.locator("button", has_text="Clone voice").first
    consent = page.locator(".songlab-consent input[type=checkbox]")
    clone_button.scroll_into_view_if_needed()
    expect(clone_button).to_be_disabled(timeout=30_000)
    statement = page.locator(".songlab-consent .widget-html-content").first
    expect(statement).to_contain_text("attest the statement in rights above")
    assert statement.evaluate("e => e.scrollWidth <= e.clientWidth + 1")
    expect(page.locator(".widget-upload", has_text="reference (1)").first).to_be_attached()
    consent.check()
    expect(clone_button).to_be_enabled(timeout=15_000)
    page.screenshot(path=str(OUT / "4-consent-ticked.png"), full_page=True)


def test_lab_runs_the_notebook_and_the_widgets_work(lab: tuple[str, str]) -> None:
    """The quickstart in JupyterLab. Opened: its saved outputs and widget views show no
    address, id or time of the run that saved them. Run All: the first bar moves for at
    least 3 s, every bar ends green, the older take plays as well as the newer one (and
    starting one pauses the other), a take downloads under its own name; then the clone
    panel's consent gate."""
    from playwright.sync_api import sync_playwright

    url, name = lab
    OUT.mkdir(parents=True, exist_ok=True)
    for old in OUT.glob("*.png"):
        old.unlink()
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000}, accept_downloads=True)
        try:
            _opened_shows_nothing_stale(page, url)
            _run_all_and_watch_the_bars(page)
            _takes_play_and_download(page)
            _the_consent_gate(page)
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


def _a_and_b_play_then_unlock(page: Any) -> None:
    """Play A (its time advances), B pauses A; B played to its end counts, A cut short does
    not (the answers stay locked) until A is played through; then answer."""
    from playwright.sync_api import expect

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
    expect(page.get_by_text("Play A for at least")).to_be_visible(timeout=10_000)
    expect(prefer).to_be_disabled()
    play_a.click()
    expect(prefer).to_be_enabled(timeout=15_000)  # the browser reported A played through
    prefer.click()
    expect(page.get_by_text("All 1 trials answered")).to_be_visible(timeout=15_000)


def _revealed_summary_has_no_controls(page: Any) -> None:
    """Reveal: the summary by model, no winner named on one trial, no control left."""
    from playwright.sync_api import expect

    page.locator(".songlab-listening button", has_text="Reveal").click()
    # one trial: 1 of 1 against 0 of 1, Wilson 21-100 % and 0-79 %: no winner named
    expect(page.get_by_text("No clear winner")).to_be_visible(timeout=15_000)
    summary = page.locator(".songlab-listening").inner_text()
    assert "low tone" in summary and "high tone" in summary and "95 % interval" in summary
    expect(page.locator("button.songlab-play")).to_have_count(0)
    expect(page.locator(".songlab-listening button", has_text="prefer")).to_have_count(0)
    expect(page.locator(".songlab-listening button", has_text="Reveal")).to_have_count(0)
    page.screenshot(path=str(OUT / "listening-revealed.png"))


def _no_message_to_a_closed_comm(frames: list[str], sent: list[str]) -> None:
    """No "No such comm: <id>" (the browser wrote to a widget the kernel closed). Left out:
    JupyterLab's own "jupyter.widget.control" comm, which it opens when the kernel starts,
    before the notebook imports ipywidgets (the kernel refuses it, and the page's
    request_states to it logs once per kernel start, no widget's doing)."""
    assert any("comm_msg" in f for f in frames), "the kernel's messages were not seen"
    control = {
        m
        for f in sent
        if '"target_name":"jupyter.widget.control"' in f.replace(" ", "")
        for m in re.findall(r'"comm_id":\s*"([0-9a-f-]{36})"', f)
    }
    said = [m for f in frames for m in re.findall(r"No such comm: ([0-9a-f-]{36})", f)]
    assert set(said) - control == set(), said


def test_listening_panel_plays_for_real_and_reveals_a_summary(lab: tuple[str, str]) -> None:
    """The A/B panel in JupyterLab: its play button starts the <audio> element (time advances),
    B pauses A, the answers unlock only once the browser reported both clips played through,
    and the revealed panel shows the summary by model with no controls left. No kernel
    message of the whole run says "No such comm" (what JupyterLab's log console shows in
    red when the browser writes to a widget the kernel closed)."""
    from playwright.sync_api import sync_playwright

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
            _open_until_idle(page, url)
            run_all(page)
            _a_and_b_play_then_unlock(page)
            _revealed_summary_has_no_controls(page)
            page.wait_for_timeout(1500)  # messages after the last click have time to arrive
            _no_message_to_a_closed_comm(frames, sent)
        except Exception:
            page.screenshot(path=str(OUT / "listening-failure.png"), full_page=True)
            raise
        finally:
            browser.close()


@pytest.fixture
def clone_lab(tmp_path: Path) -> Iterator[tuple[str, Any, str]]:
    """JupyterLab whose kernels use this test's sandbox (an account of their own), so the
    test counts the account's tasks and tokens while it clicks: (notebook URL, sandbox, key)."""
    from songlab.sandbox.http.server import serve_in_thread

    srv = serve_in_thread(speed=20, admin_token="browser-admin")
    try:
        made = httpx.post(
            f"{srv.base_url}/_sandbox/accounts",
            headers={"X-Sandbox-Admin-Token": "browser-admin"},
            json={},
        )
        key = made.json()["api_key"]
        env = {"SONGLAB_API_KEY": key, "SONGLAB_BASE_URL": srv.base_url}
        with running_lab(tmp_path, env) as (url, name):
            yield url.replace(f"/lab/tree/{name}", "/lab/tree/clone_song.ipynb"), srv, key
    finally:
        srv.stop()


def _account(srv: Any, key: str) -> tuple[int, int]:
    """(tasks, tokens) of the account, from the service."""
    auth = {"Authorization": f"Bearer {key}"}
    tasks = httpx.get(f"{srv.base_url}/v1/generations", params={"limit": 100}, headers=auth)
    balance = httpx.get(f"{srv.base_url}/v1/account/balance", headers=auth)
    return len(tasks.json()["data"]), balance.json()["total_effective"]


def _the_song_form_opens_and_buys_nothing(page: Any, url: str, srv: Any, key: str) -> str:
    """Run All up to the clone; *Start a song with this voice* (shown whole, the status line
    saying the clone completed) opens the song form with nothing created; returns the price
    the form shows."""
    from playwright.sync_api import expect

    _open_until_idle(page, url)
    menu(page, "Edit", "Clear Outputs of All Cells")
    run_all(page)
    song = page.locator("button", has_text="Start a song with this voice")
    expect(song).to_be_visible(timeout=120_000)
    expect(page.get_by_text("The voice is saved")).to_be_visible()
    expect(page.get_by_text("clone sent")).to_have_count(0)
    assert song.evaluate("e => e.scrollWidth <= e.clientWidth + 1"), "label cut"
    before = _account(srv, key)
    assert before[0] == 1  # the clone
    song.click()
    generate = page.locator("button", has_text="Generate")
    expect(generate).to_be_visible(timeout=15_000)
    expect(generate).to_be_disabled()
    expect(page.get_by_text("prompt: required").first).to_be_visible()
    expect(page.locator("textarea[placeholder*='sung by Ana']")).to_be_visible()
    price = page.locator(".widget-html", has_text="Price: $").last
    shown = re.search(r"Price: \$(\d+\.\d\d)", price.inner_text())
    assert shown is not None
    page.screenshot(path=str(OUT / "5-song-form-opened.png"))
    page.wait_for_timeout(1000)  # anything it might have sent would be there by now
    assert _account(srv, key) == before, "the song button bought something"
    return shown.group(1)


def _generate_bills_the_price_shown(page: Any, srv: Any, key: str, price: str) -> None:
    """Typing a prompt enables Generate (still nothing bought); pressing it makes one song,
    billed the price the form showed."""
    from playwright.sync_api import expect

    before = _account(srv, key)
    prompt = page.locator("textarea[placeholder*='sung by Ana']")
    generate = page.locator("button", has_text="Generate")
    prompt.fill("a slow waltz in my own voice")
    prompt.press("Tab")
    expect(generate).to_be_enabled(timeout=15_000)
    assert _account(srv, key) == before
    generate.click()
    deadline = time.monotonic() + 30
    while _account(srv, key)[0] == before[0] and time.monotonic() < deadline:
        time.sleep(0.2)
    after = _account(srv, key)
    assert after[0] == before[0] + 1
    assert (before[1] - after[1]) / 100 == float(price)  # tokens: cents
    page.screenshot(path=str(OUT / "6-song-generated.png"), full_page=True)


def test_the_clone_panels_song_button_creates_nothing_until_generate(
    clone_lab: tuple[str, Any, str],
) -> None:
    """After a clone, *Start a song with this voice* (shown whole) opens the song form with
    the voice set and creates nothing; the status line says the clone completed (not
    "queued" beside a full bar); only typing a prompt and pressing Generate makes the song,
    billed the price the form showed."""
    from playwright.sync_api import sync_playwright

    url, srv, key = clone_lab
    OUT.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1300, "height": 1000})
        try:
            price = _the_song_form_opens_and_buys_nothing(page, url, srv, key)
            _generate_bills_the_price_shown(page, srv, key, price)
        except Exception:
            page.screenshot(path=str(OUT / "clone-failure.png"), full_page=True)
            raise
        finally:
            browser.close()
