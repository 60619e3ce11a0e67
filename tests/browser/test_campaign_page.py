"""Rater pages in a real browser: headless Chromium opens an exported page from disk
(offline), plays every clip, answers every trial, downloads the answer file, and
``Campaign.collect`` takes it; a second test shows the page refusing an early answer.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.browser._chromium import CHROMIUM
from tests.browser._chromium import CHROMIUM_ARGS as BASE_ARGS
from tests.listening.listening_signals import MODELS, make_clips

from songlab.listening import campaign

pytestmark = [pytest.mark.browser, pytest.mark.timeout(120)]

CHROMIUM_ARGS = [*BASE_ARGS, "--autoplay-policy=no-user-gesture-required"]


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    if not CHROMIUM.exists():
        pytest.skip("browser test: /usr/bin/chromium is absent (make browser-deps installs it)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
    with sync_api.sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture(scope="module")
def pref() -> object:
    """Three models, one short prompt: three pair trials per rater. The clips' length gives a
    minimum that is no multiple of 10 ms (702 ms), so the page's wording of it is checked to
    the millisecond."""
    return campaign(
        "preference",
        make_clips(1, seconds=0.952),
        raters=3,
        seed=11,
        gold=0,
        traps=0,
        both_bad=False,
    )


def _open(browser, c, rater: str, tmp_path: Path):
    path = c.export(tmp_path, raters=[rater])[0]
    ctx = browser.new_context(accept_downloads=True, offline=True)
    page = ctx.new_page()
    page.goto(path.as_uri())
    page.wait_for_selector("body[data-ready='1']")
    page.mouse.click(5, 5)  # a user gesture, so the page may start audio
    return ctx, page, path


def _play(page, trial: int, *labels: str) -> None:
    """Play the clips of ``labels`` one after the other (starting one pauses the others, as a
    rater would hear them), each until it is marked played."""
    rows = [f"section[data-trial='{trial}'] .clip[data-label='{label}']" for label in labels]
    for row in rows:
        page.eval_on_selector(f"{row} audio", "a => a.play()")
        page.wait_for_selector(f"{row}[data-played='1']", timeout=20_000)


def _download(page, to: Path) -> Path:
    """Click *Download answers* and save the file the browser downloads."""
    with page.expect_download() as info:
        page.click("#download")
    info.value.save_as(to)
    return to


def test_page_plays_answers_downloads_and_collect_matches(browser, pref, tmp_path) -> None:
    ctx, page, path = _open(browser, pref, "r02", tmp_path)
    try:
        trials = page.eval_on_selector_all("section.trial", "s => s.map(x => +x.dataset.trial)")
        assert sorted(trials) == [0, 1, 2]
        clicked = {}
        for n, t in enumerate(trials):
            _play(page, t, "A", "B")
            state = page.eval_on_selector_all(
                f"section[data-trial='{t}'] audio",
                "as => as.map(a => [a.readyState, a.duration, a.played.length])",
            )
            assert all(rs >= 2 and d > 0.9 and p >= 1 for rs, d, p in state), state
            choice = "AB"[n % 2]
            page.check(f"section[data-trial='{t}'] input[value='{choice}']")
            page.click(f"section[data-trial='{t}'] .answer-btn")
            clicked[t] = choice
        assert page.inner_text("#progress").startswith("3 of 3")
        saved = _download(page, tmp_path / "answers-r02.json")
    finally:
        ctx.close()
    frame = pref.collect(saved)
    chosen = frame[frame["chosen"]]
    assert dict(zip(chosen["trial"].tolist(), chosen["label"].tolist(), strict=True)) == clicked
    assert set(frame["rater"]) == {"r02"}
    # the organiser's frame names the models; the page and the file name none
    assert set(frame["model"]) <= set(MODELS)
    for blob in (path.read_bytes(), saved.read_bytes()):
        for name in MODELS:
            assert name.encode() not in blob


def test_page_refuses_an_answer_before_every_clip_was_played(browser, pref, tmp_path) -> None:
    ctx, page, _ = _open(browser, pref, "r03", tmp_path)
    try:
        t = page.eval_on_selector("section.trial", "s => +s.dataset.trial")
        box = f"section[data-trial='{t}']"
        page.check(f"{box} input[value='A']")
        assert page.is_disabled(f"{box} .answer-btn")  # nothing played: no answer yet
        assert "not played yet: A, B" in page.inner_text(f"{box} .msg")
        # the minimum in the words collect uses for a refusal, to the millisecond (a page
        # that rounded to 10 ms said 0.7 s)
        assert pref._sessions["r03"].need_ms == 702
        assert "heard 0.702 s of it" in page.inner_text("#need")
        page.eval_on_selector(f"{box} .answer-btn", "b => b.click()")  # forced: still refused
        assert "not played yet: A, B" in page.inner_text(f"{box} .msg")
        _play(page, t, "A")
        assert page.is_disabled(f"{box} .answer-btn")
        assert "not played yet: B" in page.inner_text(f"{box} .msg")
        assert page.inner_text("#progress").startswith("0 of 3")
        page.click("#download")
        assert "Answer at least one trial" in page.inner_text("#status")
        _play(page, t, "B")
        page.click(f"{box} .answer-btn")
        assert page.inner_text("#progress").startswith("1 of 3")
        page.reload()  # an accidental reload keeps the answer and the played marks
        page.wait_for_selector("body[data-ready='1']")
        assert page.inner_text("#progress").startswith("1 of 3")
        assert page.eval_on_selector(f"{box} input[value='A']", "r => r.checked")
        assert page.locator(f"{box} .clip[data-played='1']").count() == 2
        saved = _download(page, tmp_path / "answers-r03.json")
    finally:
        ctx.close()
    frame = pref.collect(saved)
    mine = frame[frame["rater"] == "r03"]
    assert mine.loc[mine["chosen"], ["trial", "label"]].values.tolist() == [[t, "A"]]


def _fresh(secret: bytes | None = None):
    return campaign(
        "preference",
        make_clips(1, seconds=0.952),
        raters=3,
        seed=11,
        gold=0,
        traps=0,
        both_bad=False,
        secret=secret or b"tests/browser/test_campaign_page served",
    )


def test_a_served_page_played_and_answered_gives_the_offline_verdict(browser, tmp_path) -> None:
    """A rater arrives from Prolific, plays and answers every trial in Chromium; each answer
    says "Received" (committed), the last shows the completion code; the campaign's results
    and statistics from the server equal those of the same page's downloaded file collected
    offline."""
    from songlab.listening import serve

    served = _fresh()
    with serve(served, db=f"sqlite:///{tmp_path}/c.sqlite", prolific={"complete": "C0DE42"}) as srv:
        ctx = browser.new_context(accept_downloads=True)
        try:
            page = ctx.new_page()
            page.goto(f"{srv.join_url()}?PROLIFIC_PID=abc&STUDY_ID=s1&SESSION_ID=x1")
            page.wait_for_selector("body[data-ready='1']")
            page.mouse.click(5, 5)
            trials = page.eval_on_selector_all("section.trial", "s => s.map(x => +x.dataset.trial)")
            for t in trials:
                _play(page, t, "A", "B")
                page.check(f"section[data-trial='{t}'] input[value='A']")
                page.click(f"section[data-trial='{t}'] .answer-btn")
                page.wait_for_function(
                    f"document.querySelector(\"section[data-trial='{t}'] .answer .msg\")"
                    ".textContent.startsWith('Received')",
                    timeout=20_000,
                )
            page.wait_for_selector("#completion-code")
            assert page.inner_text("#completion-code") == "C0DE42"
            assert "submissions/complete?cc=C0DE42" in page.get_attribute(
                "#completion-link", "href"
            )
            downloaded = _download(page, tmp_path / "answers.json")
        finally:
            ctx.close()
        from_server = served.collect(srv)
    offline = _fresh()
    from_file = offline.collect(downloaded)
    assert len(from_server) == 2 * len(trials)
    assert from_server.drop(columns=[]).equals(from_file)
    for name, frame in served.stats().items():
        if name != "exclusions":
            assert frame.equals(offline.stats()[name]), name


def test_the_page_holds_playback_at_normal_speed(browser, tmp_path) -> None:
    """Chromium's menu offers 1.25x and 1.5x, a script any speed: the page sets the rate back
    to 1 at once, so six clips can no longer count as heard in 5.8 s at 4x."""
    c = _fresh()
    ctx, page, _ = _open(browser, c, "r01", tmp_path)
    try:
        row = "section.trial .clip[data-label='A'] audio"
        page.eval_on_selector(row, "a => { a.playbackRate = 4; }")
        page.wait_for_function(f'document.querySelector("{row}").playbackRate === 1')
        page.eval_on_selector(row, "a => { a.play(); a.playbackRate = 1.5; }")
        page.wait_for_timeout(300)
        assert page.eval_on_selector(row, "a => a.playbackRate") == 1
    finally:
        ctx.close()


def test_mushra_page_ratings_arrive_as_set(browser, tmp_path) -> None:
    ref = MODELS[0]
    c = campaign(
        "mushra",
        make_clips(1, seconds=1.0),
        raters=1,
        seed=3,
        reference=ref,
        mid_anchor=True,
        gold=0,
        traps=0,
    )
    ctx, page, _ = _open(browser, c, "r01", tmp_path)
    try:
        t = page.eval_on_selector("section.trial", "s => +s.dataset.trial")
        labels = page.eval_on_selector_all(
            f"section[data-trial='{t}'] .clip", "cs => cs.map(c => c.dataset.label)"
        )
        assert labels == ["Ref", "A", "B", "C", "D"]  # the reference first (BS.1534-3)
        box = f"section[data-trial='{t}']"
        # the reference is played, not rated; every rated clip has its slider in its own row,
        # with BS.1534-3's five words visible along it, under the slider, left to right
        assert page.locator(f"{box} .clip[data-label='Ref'] input[type=range]").count() == 0
        for label in labels[1:]:
            row = f"{box} .clip[data-label='{label}']"
            words = page.locator(f"{row} .scale .word")
            assert words.all_inner_texts() == ["Bad", "Poor", "Fair", "Good", "Excellent"]
            boxes = [w.bounding_box() for w in words.all()]
            slider = page.locator(f"{row} input[type=range]").bounding_box()
            assert all(
                w is not None and w["y"] >= slider["y"] + slider["height"] - 2 for w in boxes
            )
            assert [w["x"] for w in boxes] == sorted(w["x"] for w in boxes)
            assert all(page.locator(f"{row} .scale .word").nth(i).is_visible() for i in range(5))
            assert page.inner_text(f"{row} .value") == "50 (Fair)"
        _play(page, t, *labels[1:])  # the open reference is optional
        wanted = {"A": 12, "B": 100, "C": 57, "D": 0}
        for label, value in wanted.items():
            page.eval_on_selector(
                f"section[data-trial='{t}'] input[data-label='{label}']",
                "(e, v) => { e.value = v; e.dispatchEvent(new Event('input')); }",
                value,
            )
        page.click(f"section[data-trial='{t}'] .answer-btn")
        saved = _download(page, tmp_path / "answers-mushra.json")
    finally:
        ctx.close()
    frame = c.collect(saved)
    assert dict(zip(frame["label"], frame["rating"], strict=True)) == wanted
    assert set(frame["model"]) == {*MODELS, "anchor (7 kHz low-pass)"}


def test_abx_page_needs_x_played_and_its_answer_arrives(browser, tmp_path) -> None:
    c = campaign("abx", make_clips(1, seconds=1.0), raters=1, seed=5, gold=0, traps=0)
    ctx, page, _ = _open(browser, c, "r01", tmp_path)
    try:
        t = page.eval_on_selector("section.trial", "s => +s.dataset.trial")
        box = f"section[data-trial='{t}']"
        _play(page, t, "A", "B")
        page.check(f"{box} input[value='B']")
        assert page.is_disabled(f"{box} .answer-btn")
        assert "not played yet: X" in page.inner_text(f"{box} .msg")
        _play(page, t, "X")
        page.click(f"{box} .answer-btn")
        saved = _download(page, tmp_path / "answers-abx.json")
    finally:
        ctx.close()
    frame = c.collect(saved)
    assert frame["trial"].tolist() == [t] and frame["answer"].tolist() == ["B"]


def _media(page, trial: int, label: str) -> dict:
    return page.eval_on_selector(
        f"section[data-trial='{trial}'] .clip[data-label='{label}'] audio",
        "a => ({paused: a.paused, t: a.currentTime, ended: a.ended})",
    )


def test_play_buttons_play_one_clip_at_a_time_and_unlock_the_answer(browser, tmp_path) -> None:
    """Real playback: Play starts the media element (time advances), B's Play pauses A,
    and the answer counts only once both were heard (min_heard seconds of each)."""
    c = campaign(
        "preference", make_clips(1, seconds=4.0), raters=1, seed=2, min_heard=2.0, gold=0, traps=0
    )
    ctx, page, _ = _open(browser, c, "r01", tmp_path)
    try:
        t = page.eval_on_selector("section.trial", "s => +s.dataset.trial")
        box = f"section[data-trial='{t}']"
        page.click(f"{box} .clip[data-label='A'] .play-btn")
        page.wait_for_function(
            f"(() => {{ const a = document.querySelector(\"{box} .clip[data-label='A'] audio\");"
            " return !a.paused && a.currentTime > 0.3; })()",
            timeout=10_000,
        )
        first = _media(page, t, "A")["t"]
        page.wait_for_timeout(300)
        assert _media(page, t, "A")["t"] > first  # its time advances: it is really playing
        page.click(f"{box} .clip[data-label='B'] .play-btn")
        page.wait_for_function(
            f"(() => {{ const a = document.querySelector(\"{box} .clip[data-label='B'] audio\");"
            " return !a.paused && a.currentTime > 0.1; })()",
            timeout=10_000,
        )
        assert _media(page, t, "A")["paused"], "starting B must pause A"
        assert not _media(page, t, "B")["paused"]
        page.check(f"{box} input[value='B']")
        assert page.is_disabled(f"{box} .answer-btn")  # neither was heard for 2 s yet
        page.wait_for_selector(f"{box} .clip[data-label='B'][data-played='1']", timeout=10_000)
        assert page.is_disabled(f"{box} .answer-btn")  # A was cut short (< 2 s)
        assert "not played yet: A" in page.inner_text(f"{box} .msg")
        page.click(f"{box} .clip[data-label='A'] .play-btn")
        page.wait_for_selector(f"{box} .clip[data-label='A'][data-played='1']", timeout=10_000)
        assert _media(page, t, "B")["paused"]
        assert not page.is_disabled(f"{box} .answer-btn")
        assert "Every clip played" in page.inner_text(f"{box} .msg")
        page.click(f"{box} .answer-btn")
        assert page.inner_text("#progress").startswith("1 of 3")
    finally:
        ctx.close()


def _check_answer(c, rater):
    """What passes each check trial of ``rater``'s page (the organiser knows)."""
    session = c._sessions[rater]
    plans = session._unseal()["plans"]
    out = {}
    for t in session.trials:
        plan = plans[t.index]
        if plan.check == "gold":
            out[t.index] = t.labels[1 - plan.at]
        elif plan.check == "trap":
            out[t.index] = t.labels[plan.at]
    return out


def test_gold_and_trap_trials_appear_like_any_other_and_count(browser, tmp_path) -> None:
    c = campaign("preference", make_clips(1, seconds=1.0), raters=1, seed=4, gold=1, traps=1)
    checks = _check_answer(c, "r01")
    assert len(checks) == 2
    ctx, page, path = _open(browser, c, "r01", tmp_path)
    try:
        assert "When a clip is interrupted by beeps, choose that clip." in page.inner_text("#rules")
        trials = page.eval_on_selector_all("section.trial", "s => s.map(x => +x.dataset.trial)")
        assert sorted(trials) == list(range(5))  # 3 pairs + a gold clip + a trapping question
        shape = page.eval_on_selector_all(
            "section.trial",
            "s => s.map(x => [x.querySelectorAll('.clip').length,"
            " x.querySelectorAll('input[type=radio]').length, x.querySelector('.question').textContent])",
        )
        assert len({tuple(x) for x in shape}) == 1  # a check looks like any trial
        for t in trials:
            _play(page, t, "A", "B")
            page.check(f"section[data-trial='{t}'] input[value='{checks.get(t, 'A')}']")
            page.click(f"section[data-trial='{t}'] .answer-btn")
        saved = _download(page, tmp_path / "answers-checks.json")
    finally:
        ctx.close()
    c.collect(saved)
    ex = c.exclusions().set_index("rater")
    assert (ex.loc["r01", "checks"], ex.loc["r01", "checks_failed"]) == (2, 0)
    assert len(c.results()) == 3 * 2  # the checks are not data


HOSTILE_TITLE = '</title><h1 id="pwn">__DESIGN__ __TOKEN__ & <script>window.pwned = 1</script>'
HOSTILE_PROMPTS = [
    '<img src=x onerror="window.pwned = 2">',
    "<!--<script>",
    "__TITLE__ </script><script>window.pwned = 3</script>",
]


def test_a_hostile_title_and_prompts_show_as_text(browser, tmp_path) -> None:
    c = campaign(
        "preference",
        make_clips(3, seconds=1.0),
        raters=1,
        seed=5,
        gold=0,
        traps=0,
        title=HOSTILE_TITLE,
        prompts=HOSTILE_PROMPTS,
    )
    ctx, page, _ = _open(browser, c, "r01", tmp_path)
    try:
        assert page.evaluate("window.pwned") is None
        assert page.title() == HOSTILE_TITLE and page.inner_text("h1") == HOSTILE_TITLE
        assert page.locator("#pwn, img").count() == 0
        heads = page.eval_on_selector_all("section.trial h3", "hs => hs.map(h => h.textContent)")
        assert len(heads) == 9  # every trial is there: nothing ended the design early
        shown = {h.split(": ", 1)[1] for h in heads}
        assert shown == set(HOSTILE_PROMPTS)
    finally:
        ctx.close()


def test_the_headphone_check_comes_first_and_its_answers_arrive(browser, tmp_path) -> None:
    c = campaign(
        "abx", make_clips(1, seconds=1.0), raters=1, seed=6, gold=0, traps=0, headphone_check=True
    )
    right = c._right_headphones("r01")
    ctx, page, _ = _open(browser, c, "r01", tmp_path)
    try:
        assert page.is_visible("#headphone-check") and not page.is_visible("#trials")
        assert page.locator("#headphone-check .round").count() == 6
        page.click("#phones-done")
        assert "every round" in page.inner_text("#headphone-check .msg")
        for n, i in enumerate(right):
            page.check(f".round[data-round='{n}'] input[value='{i}']")
        page.click("#phones-done")
        assert page.is_visible("#trials")
        t = page.eval_on_selector("section.trial", "s => +s.dataset.trial")
        _play(page, t, "A", "B", "X")
        page.check(f"section[data-trial='{t}'] input[value='A']")
        page.click(f"section[data-trial='{t}'] .answer-btn")
        saved = _download(page, tmp_path / "answers-phones.json")
    finally:
        ctx.close()
    c.collect(saved)
    assert c.exclusions().set_index("rater").loc["r01", "headphones"] == "6 of 6"
