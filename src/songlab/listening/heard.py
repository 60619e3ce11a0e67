"""Heard means heard: the one rule for how much of a clip a listener heard, as browser script.

A clip counts once the listener heard :attr:`~songlab.listening.ListeningSession.need_ms` of
it. What counts as heard is the same on every screen that plays clips (the campaign's rater
pages, offline and served; the notebook panel's player can take the same script):

* the playback rate is held at 1: a change (the browser's menu offers 1.25x and 1.5x, a script
  any speed) is undone at once;
* only time that passed no faster than the wall clock counts (media time advancing faster
  than real time, from a faster rate or a jump ahead, is not counted), and each moment of the
  clip once (re-listening to the first second twice is one second).

``HEARD_JS`` defines ``heardClock(audio, onChange, onRateReset)``: it holds ``audio``'s rate
at 1 (calling ``onRateReset()``, if given, each time it puts a rate back) and calls
``onChange(milliseconds heard)`` as playback goes on; it returns ``{reset}``, which forgets what
was heard (a new clip in the same element). Python checks what a page reports
against the same numbers: at least the minimum, at most the clip's length
(``Campaign.most_heard_ms``).
"""

from __future__ import annotations

__all__ = ["HEARD_JS", "RATE_TOLERANCE"]

#: media time may run this much faster than the wall clock (timer jitter) and still count
RATE_TOLERANCE = 1.05

HEARD_JS = r"""
// Heard means heard (songlab.listening.heard): time played at normal speed, each moment once.
function heardClock(audio, onChange, onRateReset) {
  let spans = [], last = null;
  const hold = () => {
    const changed = audio.playbackRate !== 1 || audio.defaultPlaybackRate !== 1;
    if (audio.playbackRate !== 1) audio.playbackRate = 1;
    if (audio.defaultPlaybackRate !== 1) audio.defaultPlaybackRate = 1;
    if (changed && onRateReset) onRateReset();
  };
  const add = (a, b) => {
    spans.push([a, b]);
    spans.sort((x, y) => x[0] - y[0]);
    const merged = [];
    for (const s of spans) {
      const top = merged[merged.length - 1];
      if (top && s[0] <= top[1]) top[1] = Math.max(top[1], s[1]); else merged.push(s.slice());
    }
    spans = merged;
  };
  const total = () => spans.reduce((t, s) => t + s[1] - s[0], 0);
  const mark = () => ({media: audio.currentTime, wall: performance.now() / 1000});
  const tick = () => {
    const now = mark();
    if (last && !audio.seeking && audio.playbackRate === 1) {
      const d = now.media - last.media, w = now.wall - last.wall;
      if (d > 0 && d <= w * __RATE_TOLERANCE__ + 0.05) add(last.media, now.media);
    }
    last = audio.paused || audio.ended ? null : now;
    onChange(Math.floor(1000 * total()));
  };
  audio.addEventListener("ratechange", () => { hold(); last = null; });
  audio.addEventListener("play", () => { hold(); last = mark(); });
  audio.addEventListener("seeking", () => { last = null; });
  audio.addEventListener("timeupdate", tick);
  audio.addEventListener("pause", tick);
  audio.addEventListener("ended", tick);
  hold();
  return { reset: () => { spans = []; last = null; } };
}
""".replace("__RATE_TOLERANCE__", repr(RATE_TOLERANCE))
