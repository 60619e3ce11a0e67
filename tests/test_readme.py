"""The README is for the person arriving: short, in the user's order, no figures or history,
nothing said twice, every link live, and its code sample runs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
MAX_LINES = 150
MAX_LINE = 200

# a duration or a speed-up, as a run log would give it ("22 min 27 s", "240 s", "6.7x")
TIMING = re.compile(r"\b\d[\d.,]*\s*(?:s|ms|min|minutes|seconds|hours?)\b|\b\d+(?:\.\d+)?x\b")
# a commit hash: 7-40 hex digits with at least one letter and one digit
COMMIT = re.compile(r"\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{7,40}\b")
DATE = re.compile(
    r"\b20\d\d-\d\d-\d\d\b|\b\d{1,2} (?:January|February|March|April|May|June|July|"
    r"August|September|October|November|December)\b"
)


def _prose_and_code() -> tuple[list[str], list[str]]:
    """The README's lines outside fenced blocks, and its fenced blocks' bodies."""
    prose, blocks, current = [], [], None
    for line in README.splitlines():
        if line.startswith("```"):
            if current is None:
                current = []
            else:
                blocks.append("\n".join(current))
                current = None
        elif current is not None:
            current.append(line)
        else:
            prose.append(line)
    return prose, blocks


def test_the_readme_is_short_and_its_lines_fit() -> None:
    lines = README.splitlines()
    assert len(lines) <= MAX_LINES, f"README.md: {len(lines)} lines, at most {MAX_LINES}"
    long = [(n, len(line)) for n, line in enumerate(lines, 1) if len(line) > MAX_LINE]
    assert long == [], f"README.md: lines over {MAX_LINE} characters (line, length): {long}"


def test_the_readme_has_no_timings_dates_or_commit_hashes() -> None:
    prose, _ = _prose_and_code()
    text = "\n".join(prose)
    assert TIMING.findall(text) == [], "timings belong in docs/benchmarks.md"
    assert DATE.findall(text) == [], "dates belong in CHANGELOG.md and docs/benchmarks.md"
    assert COMMIT.findall(text) == [], "history stays in git"


def test_the_readme_says_nothing_twice() -> None:
    prose, blocks = _prose_and_code()
    assert len(blocks) == len(set(blocks)), "a code block appears twice"
    sentences = [s.strip() for s in re.split(r"(?<=[.:!?])\s+", " ".join(prose)) if len(s) > 40]
    twice = {s for s in sentences if sentences.count(s) > 1}
    assert twice == set()
    headings = [line for line in prose if line.startswith("#")]
    assert len(headings) == len(set(headings))


def test_the_readme_leads_with_the_users_path() -> None:
    marks = (
        "![",
        "make lab",
        "make test",
        "01_quickstart",
        "SONGLAB_API_KEY",
        "import songlab",
        "Where to read next",
    )
    at = {m: README.find(m) for m in marks}
    assert all(i >= 0 for i in at.values()), at
    order = [at[m] for m in marks]
    assert order == sorted(order), at
    assert "No key is needed" in README  # the sandbox needs no key


def test_every_link_of_the_readme_resolves() -> None:
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", README)
    assert targets
    missing = [t for t in targets if not t.startswith("http") and not (ROOT / t).exists()]
    assert missing == []


def test_the_screenshots_exist_are_small_pngs_and_made_by_a_script() -> None:
    images = re.findall(r"!\[[^\]]*\]\((docs/img/[^)]+\.png)\)", README)
    assert len(images) >= 2
    for rel in images:
        data = (ROOT / rel).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) < 200 * 1024, rel
        assert Path(rel).name in (ROOT / "scripts" / "screenshots.py").read_text(encoding="utf-8")
    assert "screenshots:" in (ROOT / "Makefile").read_text(encoding="utf-8")


def test_every_make_target_the_readme_names_exists() -> None:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    named = set(re.findall(r"^make ([a-z-]+)", README, flags=re.M))
    assert {"lab", "test", "test-fast"} <= named
    assert [t for t in sorted(named) if not re.search(rf"^{t}:", makefile, flags=re.M)] == []


@pytest.mark.slow
def test_the_readme_code_sample_runs(sandbox, new_account, monkeypatch) -> None:
    """The one Python sample, run as written against a sandbox given as the 'real' service."""
    _, blocks = _prose_and_code()
    (sample,) = [b for b in blocks if b.startswith("import songlab")]
    monkeypatch.setenv("SONGLAB_API_KEY", new_account().api_key)
    monkeypatch.setenv("SONGLAB_BASE_URL", sandbox.base_url)
    scope: dict[str, object] = {"print": lambda *a, **k: None}
    exec(compile(sample, "README.md", "exec"), scope)  # the README's own sample, run as written
    samples, rate = scope["samples"], scope["rate"]
    assert rate > 0 and samples.ndim == 2 and samples.shape[1] > rate  # more than a second
