"""The README leads with the user's path, and its pictures are there and small."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_the_readme_leads_with_the_users_path() -> None:
    first = {
        word: README.find(word)
        for word in ("![", "make lab", "SONGLAB_API_KEY", "01_quickstart", "make test", "pyenv")
    }
    assert all(at >= 0 for at in first.values()), first
    # a picture, then how to start, the key, the tour; the test machinery after all of them
    assert (
        first["!["]
        < first["make lab"]
        < first["SONGLAB_API_KEY"]
        < first["make test"]
        < first["pyenv"]
    ), first
    assert "sandbox needs" in README  # says the sandbox needs no key


def test_the_screenshots_exist_are_small_pngs_and_made_by_a_script() -> None:
    images = re.findall(r"!\[[^\]]*\]\((docs/img/[^)]+\.png)\)", README)
    assert len(images) >= 2
    for rel in images:
        data = (ROOT / rel).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) < 200 * 1024, rel
        assert Path(rel).name in (ROOT / "scripts" / "screenshots.py").read_text(encoding="utf-8")
    assert "screenshots:" in (ROOT / "Makefile").read_text(encoding="utf-8")
