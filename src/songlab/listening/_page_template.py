"""The rater page: one self-contained HTML document (no network, no external file).

Placeholders (filled in one pass by :func:`songlab.listening.page.render`): ``__TITLE__``
(HTML-escaped), ``__DESIGN__`` (the design text, JSON whose ``<``, ``>``, ``&`` are escaped;
hashed as is by the page), ``__AUDIO__`` (the clips as ``data:`` URIs, JSON, not hashed),
``__TOKEN__``, ``__SHA_K__``/``__SHA_H__`` (the SHA-256
constants, computed exactly in Python), ``__SERVED__`` (null offline; a served page's
assignment and where it posts, JSON), ``__HEARD__`` (:data:`songlab.listening.heard.HEARD_JS`,
the one rule of what counts as heard) and ``__ANSWERS_NAME__`` (the file name the page saves,
made from the title: a name the rater recognises). The script computes SHA-256 and HMAC itself
(WebCrypto is missing outside secure contexts, e.g. a page served over plain HTTP on a
LAN address). It knows no protocol: each trial's controls are described in the design
(choices, or a slider per clip with the scale's words), and every text it shows is set
as ``textContent``, never as HTML.
"""

TEMPLATE = r"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>__TITLE__</title>
<style>
body{font-family:system-ui,sans-serif;max-width:60em;margin:1em auto;padding:0 1em;color:#222}
.trial,.check{border:1px solid #ccc;border-radius:6px;padding:.6em 1em;margin:1em 0}
.trial.done,.check.done{border-color:#3a3}
.clip{display:flex;align-items:center;gap:.8em;margin:.3em 0;flex-wrap:wrap}
.clip .name{min-width:5.5em}
.clip .mark{min-width:9em;color:#777}.clip .mark.ok{color:#3a3}
.msg{color:#b00;min-height:1.2em}.ok{color:#3a3}
.scale{position:relative;display:inline-block;width:20em;padding-bottom:1.4em}
.scale input[type=range]{width:100%;margin:0}
.scale .words{position:absolute;left:0;right:0;bottom:0;height:1.2em;font-size:.8em;color:#444}
.scale .word{position:absolute;transform:translateX(-50%);white-space:nowrap}
.clip .value{min-width:8em}
#trials[hidden]{display:none}
</style></head>
<body>
<h1>__TITLE__</h1>
<p>Listen to every clip of a trial before you answer: <b>Play</b> starts a clip and stops the
one playing. <span id="need"></span> Clips are level-matched; use headphones.
<span id="how">When you are done, press <b>Download answers</b> and send the file to the
organiser.</span></p>
<div id="rules"></div>
<div id="headphones"></div>
<p id="progress"></p>
<div id="trials"></div>
<p><button id="download">Download answers</button></p>
<p id="status" class="msg"></p>
<div id="complete" hidden></div>
<script type="application/json" id="design">__DESIGN__</script>
<script type="application/json" id="audio">__AUDIO__</script>
<script type="application/json" id="token">"__TOKEN__"</script>
<script type="application/json" id="served">__SERVED__</script>
<script type="application/json" id="answers-name">__ANSWERS_NAME__</script>
<script>
"use strict";
__HEARD__
const K = new Uint32Array([__SHA_K__]), H0 = [__SHA_H__];
function sha256(bytes) {
  const l = bytes.length, nb = ((l + 72) >> 6) << 6, m = new Uint8Array(nb);
  m.set(bytes); m[l] = 0x80;
  const dv = new DataView(m.buffer);
  dv.setUint32(nb - 4, (l * 8) >>> 0); dv.setUint32(nb - 8, Math.floor(l / 0x20000000));
  const H = new Uint32Array(H0), w = new Uint32Array(64), r = (x, n) => (x >>> n) | (x << (32 - n));
  for (let o = 0; o < nb; o += 64) {
    for (let i = 0; i < 16; i++) w[i] = dv.getUint32(o + 4 * i);
    for (let i = 16; i < 64; i++) {
      const a = w[i - 15], b = w[i - 2];
      w[i] = w[i - 16] + (r(a, 7) ^ r(a, 18) ^ (a >>> 3)) + w[i - 7] + (r(b, 17) ^ r(b, 19) ^ (b >>> 10));
    }
    let [a, b, c, d, e, f, g, h] = H;
    for (let i = 0; i < 64; i++) {
      const t1 = (h + (r(e, 6) ^ r(e, 11) ^ r(e, 25)) + ((e & f) ^ (~e & g)) + K[i] + w[i]) | 0;
      const t2 = ((r(a, 2) ^ r(a, 13) ^ r(a, 22)) + ((a & b) ^ (a & c) ^ (b & c))) | 0;
      h = g; g = f; f = e; e = (d + t1) | 0; d = c; c = b; b = a; a = (t1 + t2) | 0;
    }
    H[0] += a; H[1] += b; H[2] += c; H[3] += d; H[4] += e; H[5] += f; H[6] += g; H[7] += h;
  }
  const out = new Uint8Array(32), odv = new DataView(out.buffer);
  H.forEach((v, i) => odv.setUint32(4 * i, v));
  return out;
}
const utf8 = s => new TextEncoder().encode(s);
const hex = b => Array.from(b, x => x.toString(16).padStart(2, "0")).join("");
function hmac(key, msg) {
  let k = key.length > 64 ? sha256(key) : key;
  const kk = new Uint8Array(64); kk.set(k);
  const ipad = kk.map(x => x ^ 0x36), opad = kk.map(x => x ^ 0x5c);
  const inner = new Uint8Array(64 + msg.length); inner.set(ipad); inner.set(msg, 64);
  const outer = new Uint8Array(96); outer.set(opad); outer.set(sha256(inner), 64);
  return hex(sha256(outer));
}
const designText = document.getElementById("design").textContent;
const design = JSON.parse(designText), digest = hex(sha256(utf8(designText)));
const token = JSON.parse(document.getElementById("token").textContent);
const audio = JSON.parse(document.getElementById("audio").textContent);
const need = design.need_ms;
const answers = {}, heardMs = {};
let phones = null;  // the headphone check's answers, once given
// answers and what was heard survive a reload (this browser only; labels only)
const store = "songlab-answers/" + design.campaign + "/" + design.rater + "/" + digest;
let saved = {};
try { saved = JSON.parse(localStorage.getItem(store) || "{}"); } catch (e) { saved = {}; }
function persist() {
  try { localStorage.setItem(store, JSON.stringify({answers: answers, heard: heardMs, phones: phones})); } catch (e) { /* private mode */ }
}
const $ = (tag, attrs, text) => {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) el.setAttribute(k, v);
  if (text !== undefined) el.textContent = text;
  return el;
};
// seconds to the millisecond without trailing zeros, as collect words them (campaign._secs)
const seconds = ms => (ms / 1000).toFixed(3).replace(/0+$/, "").replace(/\.$/, ".0") + " s";
document.getElementById("need").textContent = "Each clip counts once you have heard " + seconds(need) + " of it.";
for (const rule of design.rules) document.getElementById("rules").append($("p", {"class": "rule"}, rule));
function progress() {
  const n = Object.keys(answers).length;
  document.getElementById("progress").textContent = n + " of " + design.trials.length + " trials answered";
}
function player(label, name, src, onHeard) {
  // a row: the label, its Play button, the <audio> element, and how much of it was heard
  const row = $("div", {"class": "clip", "data-label": label});
  const audio = $("audio", {controls: "", preload: "auto", src: src, "data-label": label});
  const mark = $("span", {"class": "mark"}, "not played");
  heardClock(audio, ms => onHeard(ms, mark, row));
  // one clip at a time: starting this one pauses every other clip of the page
  audio.addEventListener("play", () => {
    document.querySelectorAll("audio").forEach(a => { if (a !== audio && !a.paused) a.pause(); });
  });
  const play = $("button", {"class": "play-btn", type: "button"}, "\u25b6 Play " + name);
  play.addEventListener("click", () => { audio.currentTime = 0; audio.play(); });
  row.append($("b", {"class": "name"}, name), play, audio, mark);
  return row;
}
function scaleWord(sc, v) {
  for (const [lo, hi, word] of sc.words) if (lo <= v && v <= hi) return word;
  return "";
}
function slider(sc, label) {
  // a slider with the scale's words along it, each at the middle of its band
  const box = $("div", {"class": "scale"});
  const s = $("input", {type: "range", min: String(sc.low), max: String(sc.high), step: String(sc.step),
                        value: String(sc.start), name: "rate-" + label, "data-label": label});
  const words = $("div", {"class": "words"});
  for (const [lo, hi, word] of sc.words) {
    const w = $("span", {"class": "word"}, word);
    w.style.left = (100 * ((lo + hi) / 2 - sc.low) / (sc.high - sc.low)) + "%";
    words.append(w);
  }
  const v = $("span", {"class": "value"});
  const show = () => { v.textContent = s.value + " (" + scaleWord(sc, +s.value) + ")"; };
  s.addEventListener("input", show); show();
  box.append(s, words);
  return [box, v, s];
}
function buildTrial(tr, n) {
  const box = $("section", {"class": "trial", "data-trial": tr.trial});
  box.append($("h3", {}, "Trial " + (n + 1) + " of " + design.trials.length + ": " + tr.prompt));
  const c = tr.controls, sc = c.scale || null, sliders = {};
  box.append($("p", {"class": "question"}, c.question));
  const heard = heardMs[tr.trial] = Object.assign({}, (saved.heard || {})[tr.trial] || {});
  const ok = label => (heard[label] || 0) >= need;
  let gate = () => {};  // set below, once the answer button exists
  for (const label of tr.play) {
    const name = label === "Ref" ? "Reference" : label;
    const row = player(label, name, audio.trials[tr.trial][label], (ms, mark, row) => {
      if (ms <= (heard[label] || 0)) return;
      heard[label] = ms;
      if (ok(label)) { mark.textContent = "played"; mark.classList.add("ok"); row.setAttribute("data-played", "1"); }
      else mark.textContent = "heard " + seconds(ms) + " of " + seconds(need);
      persist(); gate();
    });
    if (ok(label)) { const m = row.querySelector(".mark"); m.textContent = "played"; m.classList.add("ok"); row.setAttribute("data-played", "1"); }
    if (sc && sc.rate.includes(label)) {
      const [scale, value, input] = slider(sc, label);
      sliders[label] = input;
      row.append(scale, value);
    }
    box.append(row);
  }
  const form = $("div", {"class": "answer"});
  if (!sc) {
    c.choices.forEach(([value, text], i) => {
      const r = $("input", {type: "radio", name: "choice-" + tr.trial, value: value === null ? "" : String(value), "data-i": String(i)});
      const lab = $("label", {}); lab.append(r, " " + text + " "); form.append(lab);
    });
  }
  const btn = $("button", {"class": "answer-btn"}, c.submit), msg = $("div", {"class": "msg"});
  const waiting = "Play every clip before answering; not played yet: ";
  // the answer stays disabled until every clip of the trial was heard for the minimum
  gate = () => {
    const missing = tr.labels.filter(l => !ok(l));
    btn.disabled = missing.length > 0;
    if (missing.length) { msg.className = "msg"; msg.textContent = waiting + missing.join(", "); }
    else if (msg.textContent.startsWith(waiting)) { msg.className = "msg ok"; msg.textContent = "Every clip played: answer when ready."; }
  };
  btn.addEventListener("click", () => {
    const missing = tr.labels.filter(l => !ok(l));
    if (missing.length) {
      msg.className = "msg"; msg.textContent = waiting + missing.join(", ");
      return;
    }
    let value;
    if (sc) {
      value = sc.rate.slice().sort().map(l => [l, parseInt(sliders[l].value, 10)]);
    } else {
      const sel = form.querySelector("input:checked");
      if (!sel) { msg.className = "msg"; msg.textContent = "Choose an answer first."; return; }
      value = c.choices[+sel.dataset.i][0];
    }
    answers[tr.trial] = [tr.trial, value, heardList(tr)];
    box.classList.add("done"); msg.className = "msg ok"; msg.textContent = "Answered (you may change it).";
    persist(); progress();
    if (served) { lock(box, true); msg.textContent = "Sending..."; post("answers", {trial: tr.trial, value: value, heard: heardList(tr)}); }
  });
  form.append(btn, msg); box.append(form);
  const before = (saved.answers || {})[tr.trial];
  if (before && before[0] === tr.trial) {
    answers[tr.trial] = before;
    if (sc) {
      for (const [l, r] of before[1]) {
        if (sliders[l]) { sliders[l].value = r; sliders[l].dispatchEvent(new Event("input")); }
      }
    } else {
      const i = c.choices.findIndex(ch => JSON.stringify(ch[0]) === JSON.stringify(before[1]));
      const r = form.querySelector('input[data-i="' + i + '"]');
      if (r) r.checked = true;
    }
    box.classList.add("done"); msg.className = "msg ok"; msg.textContent = "Answered (restored; you may change it).";
  }
  if (served && served.answered.includes(tr.trial)) { lock(box, true); msg.className = "msg ok"; msg.textContent = "Received."; }
  else if (served && queue.some(q => q.trial === tr.trial)) { lock(box, true); msg.textContent = "Sending..."; }
  gate();
  return box;
}
function heardList(tr) {
  const h = heardMs[tr.trial] || {};
  return tr.play.filter(l => h[l] !== undefined).sort().map(l => [l, h[l]]);
}
function buildHeadphones(rounds) {
  // Woods et al. (2017): in each trial three tones; one is quieter. Pick it.
  const box = $("section", {"class": "check", id: "headphone-check"});
  box.append($("h3", {}, "Before the test: a headphone check"));
  box.append($("p", {}, "Each of the " + rounds.length + " rounds plays three tones. Put on your headphones, play all three, and choose the quietest one."));
  const chosen = (saved.phones || []).slice();
  rounds.forEach((uris, n) => {
    const round = $("div", {"class": "round", "data-round": String(n)});
    round.append($("b", {}, "Round " + (n + 1)));
    uris.forEach((uri, i) => round.append(player("tone-" + i, "tone " + (i + 1), uri, () => {})));
    const form = $("div", {});
    for (let i = 0; i < 3; i++) {
      const r = $("input", {type: "radio", name: "phones-" + n, value: String(i)});
      if (chosen[n] === i) r.checked = true;
      r.addEventListener("change", () => { chosen[n] = i; });
      const lab = $("label", {}); lab.append(r, " tone " + (i + 1) + " is the quietest "); form.append(lab);
    }
    round.append(form); box.append(round);
  });
  const done = $("button", {id: "phones-done"}, "Done: start the test"), msg = $("div", {"class": "msg"});
  done.addEventListener("click", () => {
    if (rounds.some((_, n) => chosen[n] === undefined)) { msg.textContent = "Choose the quietest tone of every round first."; return; }
    phones = rounds.map((_, n) => chosen[n]);
    persist(); box.classList.add("done"); msg.className = "msg ok"; msg.textContent = "Thank you: the test is below.";
    document.getElementById("trials").hidden = false;
    if (served) post("headphones", {trial: -1, value: phones, heard: []});
  });
  box.append(done, msg);
  return box;
}
function answerFile() {
  const list = Object.keys(answers).map(Number).sort((a, b) => a - b).map(t => answers[t]);
  const fmt = "songlab.campaign.answers/2";
  const body = JSON.stringify([fmt, design.campaign, design.rater, design.kind, digest, false, phones, list]);
  return {format: fmt, campaign: design.campaign, rater: design.rater, kind: design.kind,
          design: digest, scripted: false, headphones: phones, answers: list,
          mac: hmac(utf8(token), utf8(body))};
}
// -- served pages: every answer is posted with an id this page makes, again and again until the
// server says it committed it; what is not yet received waits in this browser (a reload or the
// server's restart loses nothing), and a retried answer is stored once
const served = JSON.parse(document.getElementById("served").textContent);
const outbox = store + "/outbox";
let queue = [];
try { queue = JSON.parse(localStorage.getItem(outbox) || "[]"); } catch (e) { queue = []; }
const keepQueue = () => { try { localStorage.setItem(outbox, JSON.stringify(queue)); } catch (e) { /* private mode */ } };
function lock(box, on) {
  box.querySelectorAll("input, .answer-btn").forEach(el => { el.disabled = on; });
}
function post(path, item) {
  item.path = path; item.assignment = served.assignment;
  item.id = hex(crypto.getRandomValues(new Uint8Array(16)));
  item.mac = hmac(utf8(token), utf8(JSON.stringify(["songlab.campaign.answer/1", design.campaign, design.rater,
    digest, item.assignment, item.id, item.trial, item.value, item.heard])));
  queue.push(item); keepQueue(); flush();
}
let sending = false, pause = 1000;
async function flush() {
  if (sending || !served) return;
  sending = true;
  while (queue.length) {
    const item = queue[0];
    let r = null, body = {};
    try {
      r = await fetch(served[item.path], {method: "POST", headers: {"Content-Type": "application/json"}, body: JSON.stringify(item)});
      body = await r.json();
    } catch (e) { r = null; }
    if (r === null || r.status >= 500 || r.status === 429) {
      status.className = "msg";
      status.textContent = "The organiser's server is not answering: your answers are kept in this browser and sent when it is back (next try in " + Math.round(pause / 1000) + " s).";
      await new Promise(done => setTimeout(done, pause)); pause = Math.min(2 * pause, 30000);
      continue;
    }
    pause = 1000; queue.shift(); keepQueue(); status.textContent = "";
    received(item, r.ok, body);
  }
  sending = false;
}
function received(item, ok, body) {
  const box = document.querySelector('.trial[data-trial="' + item.trial + '"]');
  const msg = box ? box.querySelector(".answer .msg") : status;
  msg.className = ok ? "msg ok" : "msg"; msg.textContent = body.message || (ok ? "Received." : "Refused.");
  if (box && !ok && !body.keep) lock(box, false);
  if (body.complete) finish(body.complete);
}
function finish(done) {
  // the end of the study: the completion code, and the way back to the platform
  const box = document.getElementById("complete");
  box.hidden = false; box.textContent = "";
  box.append($("h2", {}, done.title), $("p", {}, done.text));
  if (done.code) box.append($("p", {}, "Completion code: "), $("code", {id: "completion-code"}, done.code));
  if (done.url) { const a = $("a", {href: done.url, id: "completion-link"}, done.link); box.append($("p", {}).appendChild(a).parentNode); }
  if (done.form) {
    const f = $("form", {method: "POST", action: done.form.action, id: "completion-form"});
    for (const [k, v] of Object.entries(done.form.fields)) f.append($("input", {type: "hidden", name: k, value: v}));
    f.append($("button", {type: "submit"}, done.link)); box.append(f);
  }
  if (done.stop) document.getElementById("trials").hidden = true;
  box.scrollIntoView();
}
const status = document.getElementById("status");
const answersName = JSON.parse(document.getElementById("answers-name").textContent);
document.getElementById("download").addEventListener("click", () => {
  const doc = answerFile();
  if (!doc.answers.length) { status.className = "msg"; status.textContent = "Answer at least one trial first."; return; }
  const a = $("a", {href: URL.createObjectURL(new Blob([JSON.stringify(doc)], {type: "application/json"})),
                   download: answersName});
  document.body.append(a); a.click(); a.remove();
  status.className = "ok"; status.textContent = "Saved " + doc.answers.length + " answers as " + answersName + ": send that file to the organiser.";
});
const root = document.getElementById("trials");
if (served) document.getElementById("how").textContent = "Each answer is sent to the organiser as you give it; the page says when it was received.";
if (served && served.complete) finish(served.complete);
design.trials.forEach((tr, n) => root.append(buildTrial(tr, n)));
flush();
if (served) setInterval(() => { fetch(served.alive, {method: "POST", body: JSON.stringify({assignment: served.assignment})}).catch(() => {}); }, 60000);
if (design.headphones) {
  phones = saved.phones || null;
  root.hidden = phones === null;
  root.before(buildHeadphones(audio.headphones));
}
progress();
document.body.setAttribute("data-ready", "1");
</script></body></html>
"""
