"""The browser test's fixture notebook is driven by Playwright, not collected by nbval."""

from __future__ import annotations

collect_ignore = ["clone_song.ipynb", "lab_smoke.ipynb", "listening_panel.ipynb"]
