"""Heard means heard, on every screen: one clock (``songlab.listening.heard.HEARD_JS``) counts
what a listener heard, in the rater pages and in the notebook panel's clip player alike.

The clock runs in real Chromium against a scripted media element whose time and wall clock the
test sets, so each rule is checked to the millisecond: time played at normal speed counts,
each moment once; a rate other than 1 is put back (and counted); media time that runs faster
than the wall clock (a faster rate, a jump) does not count; a new clip starts from nothing.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.browser._chromium import CHROMIUM, CHROMIUM_ARGS

import songlab
from songlab.listening.heard import HEARD_JS
from songlab.widgets import _media

pytestmark = [pytest.mark.browser, pytest.mark.timeout(120)]

#: a media element the test drives: time, wall clock and events are the script's
_HARNESS = r"""
class FakeAudio extends EventTarget {
  constructor() {
    super();
    this.currentTime = 0; this.paused = true; this.seeking = false; this.ended = false;
    this._rate = 1; this.defaultPlaybackRate = 1;
  }
  get playbackRate() { return this._rate; }
  set playbackRate(v) {
    const old = this._rate; this._rate = v;
    if (v !== old) this.dispatchEvent(new Event("ratechange"));
  }
}
let wall = 0;
performance.now = () => wall * 1000;
function run(steps) {
  const audio = new FakeAudio();
  let heard = 0, resets = 0;
  const clock = heardClock(audio, ms => { heard = ms; }, () => { resets += 1; });
  const fire = name => audio.dispatchEvent(new Event(name));
  for (const [op, a, b] of steps) {
    if (op === "play") { audio.paused = false; fire("play"); }
    else if (op === "pause") { audio.paused = true; fire("pause"); }
    else if (op === "adv") { wall += b; audio.currentTime += a; fire("timeupdate"); }
    else if (op === "seek") {
      audio.seeking = true; fire("seeking"); audio.currentTime = a; audio.seeking = false;
      fire("timeupdate");
    }
    else if (op === "rate") { audio.playbackRate = a; }
    else if (op === "reset") { clock.reset(); heard = 0; }
  }
  return { heard, resets, rate: audio.playbackRate };
}
"""


@pytest.fixture(scope="module")
def clock_page() -> Iterator[object]:
    if not CHROMIUM.exists():
        pytest.skip("browser test: /usr/bin/chromium is absent (make browser-deps installs it)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            page.set_content("<html><body></body></html>")
            page.add_script_tag(content=HEARD_JS + _HARNESS)
            yield page
        finally:
            browser.close()


def _run(page: object, steps: list[tuple[object, ...]]) -> dict[str, float]:
    result: dict[str, float] = page.evaluate("steps => run(steps)", [list(s) for s in steps])  # type: ignore[attr-defined]
    return result


def _played(seconds: float, *, tick: float = 0.25, rate: float = 1.0) -> list[tuple[object, ...]]:
    """Playback of ``seconds`` of wall time in ``timeupdate`` ticks, media at ``rate``."""
    return [("adv", tick * rate, tick)] * round(seconds / tick)


def test_normal_speed_counts_and_each_moment_once(clock_page) -> None:
    steps = [("play",), *_played(2.0), ("pause",)]
    assert _run(clock_page, steps)["heard"] == 2000
    # the first second again: nothing new was heard
    again = [*steps, ("seek", 0.0), ("play",), *_played(1.0), ("pause",)]
    assert _run(clock_page, again)["heard"] == 2000
    # then on past where it stopped: the new second counts
    more = [*again, ("seek", 2.0), ("play",), *_played(1.0), ("pause",)]
    assert _run(clock_page, more)["heard"] == 3000


def test_a_faster_rate_is_put_back_and_counted(clock_page) -> None:
    out = _run(clock_page, [("play",), ("rate", 1.5), *_played(1.0), ("rate", 4), ("pause",)])
    assert out["rate"] == 1
    assert out["resets"] == 2
    assert out["heard"] <= 1000


def test_media_time_faster_than_the_wall_clock_does_not_count(clock_page) -> None:
    # a player that ignores the rate, or jumps: 4 s of media in 1 s of wall time
    fast = _run(clock_page, [("play",), *_played(1.0, rate=4.0), ("pause",)])
    assert fast["heard"] == 0
    jump = _run(clock_page, [("play",), *_played(1.0), ("adv", 30.0, 0.25), *_played(1.0)])
    assert jump["heard"] == 2000


def test_a_new_clip_starts_from_nothing(clock_page) -> None:
    first = [("play",), *_played(2.0), ("pause",)]
    out = _run(clock_page, [*first, ("reset",), ("seek", 0.0), ("play",), *_played(0.5)])
    assert out["heard"] == 500


def test_every_screen_that_plays_clips_uses_the_one_clock() -> None:
    """The panel's player module starts with the rater pages' script, and no module of songlab
    but heard.py touches a playback rate or counts heard time by a rule of its own."""
    assert _media._ESM.startswith(HEARD_JS)
    src = Path(songlab.__file__).parent
    own_rules = {
        str(path.relative_to(src))
        for path in src.rglob("*.py")
        if re.search(r"playbackRate\s*=|addSpan|heardOf", path.read_text(encoding="utf-8"))
    }
    assert own_rules == {"listening/heard.py"}
