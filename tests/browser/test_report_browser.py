"""Real Chromium opens the HTML report that `songlab report --demo` wrote, as a reader would.

The report is made by the real command in its own process (the demo moves the
sandbox clock through six weeks of work); headless Debian Chromium, driven by
Playwright, loads the file with the network off and checks that every section is
there, every chart decoded to a real image, the budget statuses are styled, and
nothing tried to load from anywhere else.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.browser._chromium import CHROMIUM
from tests.browser._chromium import CHROMIUM_ARGS as BASE_ARGS

pytestmark = pytest.mark.browser

CHROMIUM_ARGS = BASE_ARGS
SECTIONS = [
    "Summary",
    "Budgets",
    "Spend over time",
    "By project, tag and API key",
    "Spend by operation",
    "Spend by model and tier",
    "Tier comparison",
    "Agent One: cost per step",
    "Tasks",
]


@pytest.fixture(scope="module")
def demo_report(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, float]]:
    if not CHROMIUM.exists():
        pytest.skip("browser test: /usr/bin/chromium is absent (make browser-deps installs it)")
    pytest.importorskip("playwright.sync_api", reason="browser test: playwright is not installed")
    out = tmp_path_factory.mktemp("report")
    env = {k: v for k, v in os.environ.items() if k not in ("SONGLAB_API_KEY", "SONGLAB_BASE_URL")}
    t0 = time.perf_counter()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "songlab.cli",
            "report",
            "--demo",
            "--out",
            str(out / "r.html"),
            "--xlsx",
            str(out / "r.xlsx"),
        ],
        capture_output=True,
        text=True,
        timeout=240,
        env=env,
        cwd=out,
    )
    seconds = time.perf_counter() - t0
    assert done.returncode == 0, done.stderr
    assert "sk-sandbox-demo" not in done.stdout + done.stderr
    # no API key (the demo's, or the two keys it made) in the report or the workbook
    import zipfile

    assert "sk-" not in (out / "r.html").read_text(encoding="utf-8")
    with zipfile.ZipFile(out / "r.xlsx") as z:
        assert not any(b"sk-" in z.read(n) for n in z.namelist())
    yield out / "r.html", seconds


def test_chromium_renders_every_section_and_chart(demo_report: tuple[Path, float]) -> None:
    from playwright.sync_api import sync_playwright

    path, seconds = demo_report
    print(f"songlab report --demo took {seconds:.1f} s here")  # shown with -s; never asserted
    requests: list[str] = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            page.on("request", lambda r: requests.append(r.url))
            errors: list[str] = []
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.goto(path.as_uri())
            page.wait_for_load_state("load")
            headings = page.locator("h2").all_inner_texts()
            for section in SECTIONS:
                assert section in headings, (section, headings)
            images = page.evaluate(
                "() => Array.from(document.images).map(i => "
                "({alt: i.alt, ok: i.complete && i.naturalWidth > 0, w: i.naturalWidth,"
                " h: i.naturalHeight, shown: i.getBoundingClientRect().width}))"
            )
            assert len(images) == 6
            for img in images:
                assert img["ok"] and img["w"] >= 300 and img["h"] >= 200, img
                assert img["shown"] > 100, img
            alts = {i["alt"] for i in images}
            assert {
                "month to date and forecast",
                "spend per day by project",
                "Agent One cost per step",
            } <= alts
            # the budget lines (the demo's: overall, jingles, podcast) are coloured by status;
            # jingles' launch week puts it over its budget
            statuses = page.locator("#budgets td.status").all_inner_texts()
            assert len(statuses) == 3 and statuses[1] == "over", statuses
            assert set(statuses) <= {"ok", "near", "forecast over", "over"}
            over = page.locator("#budgets td.status.over").first
            colour = over.evaluate("e => getComputedStyle(e).backgroundColor")
            assert colour == "rgb(255, 221, 221)"
            # attribution: four projects and three keys, by name in the tables
            text = page.locator("#attribution").inner_text()
            for project in ("jingles", "podcast", "game-audio", "research"):
                assert project in text
            assert text.count("key_") >= 3
            # the long per-day table is folded; it opens without a script
            page.locator("#over-time details summary").click()
            assert page.locator("#over-time details table tr").count() >= 40
            _check_headline(page)
            _check_money_aligned_to_the_cent(page)
            # the per-step table of Agent One pages without a script
            pages = page.locator("#agent .pager > label")
            if pages.count() > 1:
                first = page.locator("#agent .pager table.page").first
                assert first.is_visible()
                pages.nth(1).click()
                assert not first.is_visible()
                assert page.locator("#agent .pager table.page").nth(1).is_visible()
            assert not errors, errors
        finally:
            browser.close()
    assert requests == [path.as_uri()]  # self-contained: nothing else was fetched


MONEY = r"^\$-?[\d,]+\.\d\d$"


def _check_headline(page: Any) -> None:
    """The five numbers a reader wants first, to the cent, and the sandbox's clock named."""
    figures = page.evaluate(
        "() => Array.from(document.querySelectorAll('#headline > div')).map(d => ({"
        "key: d.dataset.figure, label: d.querySelector('dt').innerText, "
        "value: d.querySelector('dd.value').innerText, "
        "detail: d.querySelector('dd.detail').innerText}))"
    )
    assert [f["key"] for f in figures] == [
        "period-spend",
        "month-to-date",
        "forecast",
        "budget",
        "estimated-unknown",
    ], figures
    by_key = {f["key"]: f for f in figures}
    for key in ("period-spend", "month-to-date", "forecast"):
        assert re.match(MONEY, by_key[key]["value"]), by_key[key]
    # the budget card shows the worst state among the budgets (the demo's: overall $25,
    # jingles and podcast), with its amounts to the cent and how much of it is used
    card = re.match(
        r"^(ok|near|forecast over|over): \$[\d,]+\.\d\d of \$[\d,]+\.\d\d \([\d.]+%\)$",
        by_key["budget"]["value"],
    )
    assert card, by_key["budget"]
    states = page.locator("#budgets td.status").all_inner_texts()
    worst = min(states, key=["over", "forecast over", "near", "ok"].index)
    assert card.group(1) == worst, (card.group(1), states)
    # the forecast card: the guardrails' forecast, its interval (or why none) and its method
    assert re.match(
        r"^(\d+% interval \$[\d,]+\.\d\d to \$[\d,]+\.\d\d|no interval \(fewer than 3 complete "
        r"days of spend\)); \S",
        by_key["forecast"]["detail"],
    ), by_key["forecast"]
    # days elapsed stated to the hundredth, the figure the run rate divides by
    # ("13.59 of 31 days elapsed"), never "13.5899 days"
    summary = page.locator("#summary p").nth(1).inner_text()  # month to date
    assert re.search(r"\(\w+ \d{4}, \d+\.\d\d of \d+ days elapsed\)", summary), summary
    est = by_key["estimated-unknown"]
    assert re.match(r"^\$[\d,]+\.\d\d estimated$", est["value"]), est
    assert re.search(r"[\d,]+ tasks estimated; [\d,]+ of unknown cost", est["detail"]), est
    # the header's period spend is the summary's, and the summary table's rows agree
    rows = page.evaluate(
        "() => Array.from(document.querySelectorAll('#summary table tbody tr')).map(r => "
        "Array.from(r.cells).map(c => c.innerText))"
    )
    spent = next(r for r in rows if r[0] == "spent in the period")
    assert "$" + spent[2] == by_key["period-spend"]["value"]
    mtd = next(r for r in rows if r[0].startswith("month to date"))
    assert "$" + mtd[2] == by_key["month-to-date"]["value"]
    # made from the sandbox: the report says its clock is simulated
    assert "clock is simulated" in page.locator("p.sandbox").inner_text()
    assert "(sandbox clock)" in page.locator("body > p.note").first.inner_text()


def _check_money_aligned_to_the_cent(page: Any) -> None:
    """Every money column shows cents (two decimals), right aligned, decimal points in line."""
    columns = page.evaluate("""() => {
      const out = [];
      for (const table of document.querySelectorAll('table')) {
        if (!table.offsetParent) continue;  // a folded or hidden page
        const cols = {};
        for (const td of table.querySelectorAll('tbody td.money')) {
          const text = td.innerText;
          const node = td.firstChild;
          let point = null;
          if (node && text.includes('.')) {
            const r = document.createRange();
            const i = node.textContent.indexOf('.');
            r.setStart(node, i); r.setEnd(node, i + 1);
            point = r.getBoundingClientRect().left;
          }
          (cols[td.cellIndex] ||= []).push({text, point,
            align: getComputedStyle(td).textAlign});
        }
        for (const [i, cells] of Object.entries(cols)) {
          out.push({table: table.closest('section')?.id, col: i, cells});
        }
      }
      return out;
    }""")
    assert sum(1 for col in columns if any(c["text"] for c in col["cells"])) >= 10, columns
    for col in columns:
        cells = [c for c in col["cells"] if c["text"]]  # blank: an amount nobody knows
        for c in cells:
            assert re.match(r"^-?[\d,]+\.\d\d$", c["text"]), (col["table"], c)
            assert c["align"] == "right", (col["table"], c)
        points = [c["point"] for c in cells]
        if points:
            assert max(points) - min(points) < 0.5, (col["table"], col["col"], points)
