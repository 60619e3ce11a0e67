"""A clip player the kernel can start and that reports what the browser really played.

ipywidgets' ``Audio`` cannot be told to play, and says nothing back. :class:`ClipPlayer`
is an anywidget: an ``<audio>`` element with its own play button. Its button (or
``play()`` from code) starts playback; starting any songlab clip pauses every other
``<audio>`` on the page (one clip at a time). The media element's own events
(``timeupdate``, ``pause``, ``ended``) report back through traits: ``heard`` (seconds
of the clip actually heard, each part once, so seeking ahead or replaying does not add),
``duration``, ``paused`` and ``ended``. Whoever needs "played through" observes ``heard``.

Heard means heard at normal speed: the element's rate is kept at 1 (its menu's speed
choice is hidden, and a rate set by a script is put back, ``rate_resets`` counting each),
and ``heard`` sums only the spans of the clip that played no faster than the wall clock
(``timeupdate`` to ``timeupdate``: media time advanced at most the time that passed). A
clip played at 4x, by a menu or a script, never counts as heard in a quarter of its length.
The rule is the rater pages' own script, :data:`songlab.listening.heard.HEARD_JS`: one clock
for every screen that plays clips.

With a ``filename`` the player also shows a download link that saves the clip under that
name (the browser's own "Save audio as" would offer ``download.mp3``); ``show_button=False``
leaves only the ``<audio controls>`` element (and the link), for a take in a list.
"""

from __future__ import annotations

import anywidget
import traitlets as T

from songlab.listening.heard import HEARD_JS

__all__ = ["ClipPlayer"]

_ESM = (
    HEARD_JS
    + r"""
function render({ model, el }) {
  const box = document.createElement("div");
  box.className = "songlab-clip-player";
  box.style.cssText = "display:flex;flex-wrap:wrap;align-items:center;gap:.5em;margin:.2em 0";
  const button = document.createElement("button");
  button.className = "songlab-play jupyter-button";
  const audio = document.createElement("audio");
  audio.className = "songlab-clip";
  audio.controls = true;
  audio.preload = "auto";
  audio.style.height = "2.2em";
  const link = document.createElement("a");
  link.className = "songlab-download jupyter-button";
  link.style.cssText = "white-space:normal;overflow-wrap:anywhere;height:auto;line-height:1.3;" +
    "padding:.3em .6em;text-decoration:none";
  let url = null, last = 0, started = model.get("play_count"), heardMs = 0;
  // heard means heard: the rule of songlab.listening.heard, the rater pages' own clock
  const clock = heardClock(audio, ms => { heardMs = ms; report(false); }, () => {
    model.set("rate_resets", model.get("rate_resets") + 1);
    model.save_changes();
  });
  function label() {
    button.textContent = "\u25b6 " + model.get("label");
    audio.dataset.label = model.get("label");
    button.disabled = !model.get("enabled");
    button.style.display = model.get("show_button") ? "" : "none";
  }
  function downloadLink() {
    const name = model.get("filename");
    link.style.display = name && url ? "" : "none";
    link.download = name || "";
    link.title = name ? "save as " + name : "";
    link.textContent = "\u2b07 " + (name || "");
    if (url) link.href = url; else link.removeAttribute("href");
    // the media element's own menu would save "download.mp3": the link names the file;
    // its speed choice is hidden (heard means heard at normal speed)
    audio.setAttribute("controlslist", name ? "nodownload noplaybackrate" : "noplaybackrate");
  }
  function load() {
    const v = model.get("value");
    if (url) { URL.revokeObjectURL(url); url = null; }
    clock.reset();
    heardMs = 0;
    if (!v || v.byteLength === 0) { audio.removeAttribute("src"); audio.load(); downloadLink(); return; }
    const bytes = new Uint8Array(v.buffer, v.byteOffset || 0, v.byteLength);
    url = URL.createObjectURL(new Blob([bytes], { type: model.get("mime") }));
    audio.src = url;
    downloadLink();
  }
  function report(force) {
    const now = Date.now();
    if (!force && now - last < 200) return;
    last = now;
    model.set("heard", heardMs / 1000);
    if (isFinite(audio.duration)) model.set("duration", audio.duration);
    model.set("paused", audio.paused);
    model.save_changes();
  }
  function start() {
    audio.currentTime = 0;
    const p = audio.play();
    if (p && p.catch) p.catch(e => { model.set("error", String(e)); model.save_changes(); });
  }
  audio.addEventListener("play", () => {
    // one clip at a time: starting this one pauses every other audio element of the page
    document.querySelectorAll("audio").forEach(a => { if (a !== audio && !a.paused) a.pause(); });
    report(true);
  });
  audio.addEventListener("pause", () => report(true));
  audio.addEventListener("ended", () => { model.set("ended", true); report(true); });
  button.addEventListener("click", () => {
    start();
    model.send({ event: "clicked" });
  });
  model.on("change:value", load);
  model.on("change:label", label);
  model.on("change:enabled", label);
  model.on("change:show_button", label);
  model.on("change:filename", downloadLink);
  model.on("change:play_count", () => { if (model.get("play_count") !== started) { started = model.get("play_count"); start(); } });
  model.on("change:stop_count", () => audio.pause());
  label(); load();
  box.append(button, audio, link);
  el.append(box);
  return () => { audio.pause(); if (url) URL.revokeObjectURL(url); };
}
export default { render };
"""
)


class ClipPlayer(anywidget.AnyWidget):
    """One clip: a play button and an ``<audio>`` element; ``heard`` says how much really played."""

    _esm = T.Unicode(_ESM).tag(sync=True)
    value = T.Bytes(b"").tag(sync=True)  # the encoded clip
    mime = T.Unicode("audio/mpeg").tag(sync=True)
    label = T.Unicode("").tag(sync=True)
    enabled = T.Bool(True).tag(sync=True)
    show_button = T.Bool(True).tag(sync=True)
    filename = T.Unicode("").tag(sync=True)  # a download link saving the clip under this name
    play_count = T.Int(0).tag(sync=True)  # the kernel asks the browser to play (a counter)
    stop_count = T.Int(0).tag(sync=True)
    # reported by the browser's media element
    heard = T.Float(0.0).tag(sync=True)  # seconds heard at normal speed (no seeking ahead)
    duration = T.Float(0.0).tag(sync=True)
    paused = T.Bool(True).tag(sync=True)
    ended = T.Bool(False).tag(sync=True)
    error = T.Unicode("").tag(sync=True)
    rate_resets = T.Int(0).tag(sync=True)  # times a rate other than 1 was put back to 1

    def play(self) -> None:
        """Ask every displayed view to start this clip from its beginning."""
        self.play_count += 1

    def stop(self) -> None:
        self.stop_count += 1

    def load(self, data: bytes, *, mime: str = "audio/mpeg", duration: float = 0.0) -> None:
        """A new clip: what was heard of the previous one no longer counts."""
        self.heard, self.ended, self.paused, self.error = 0.0, False, True, ""
        self.duration, self.mime, self.value = float(duration), mime, bytes(data)

    def played_fraction(self) -> float:
        return min(1.0, self.heard / self.duration) if self.duration > 0 else 0.0
