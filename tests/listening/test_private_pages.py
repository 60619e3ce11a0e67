"""Rater pages are private (issue 31): each holds its rater's token, so ``Campaign.export``
writes them 0600 in folders it makes 0700, whatever the umask, and whole (no part file)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from songlab.listening import campaign
from tests.listening.listening_signals import make_clips

pytestmark = pytest.mark.skipif(os.name != "posix", reason="file modes are POSIX")


def _mode(p: Path) -> int:
    return stat.S_IMODE(p.stat().st_mode)


def test_rater_pages_are_0600_in_0700_folders_whatever_the_umask(tmp_path: Path) -> None:
    c = campaign("preference", make_clips(2, seconds=1.0), raters=2, seed=5)
    out = tmp_path / "share" / "pages"
    old = os.umask(0)
    try:
        paths = c.export(out)
        (out / "rater-r01.html").chmod(0o644)  # widened by hand, then exported again
        again = c.export(out)
    finally:
        os.umask(old)
    assert paths == again and [p.name for p in paths] == ["rater-r01.html", "rater-r02.html"]
    assert sorted(p.name for p in out.iterdir()) == ["rater-r01.html", "rater-r02.html"]
    assert {p.name: f"{_mode(p):04o}" for p in paths} == {p.name: "0600" for p in paths}
    assert (f"{_mode(out):04o}", f"{_mode(out.parent):04o}") == ("0700", "0700")
    assert all(
        c._token(r) in p.read_text(encoding="utf-8") for r, p in zip(c.raters, paths, strict=True)
    )


def test_every_listening_export_is_0600_and_whole_whatever_the_umask(tmp_path: Path) -> None:
    """Results hold raters' answers and a study's prompts: the session's and the campaign's
    CSV and Parquet, and the scorecard's Parquet and HTML, are written like the pages (a
    walk over a fresh home found the session's CSV at 0666 under umask 0)."""
    import songlab.listening.scorecard as sc
    from songlab.listening import preference, simulate
    from tests.listening.test_scorecard import _adherence

    session = simulate(preference(make_clips(2, seconds=1.0), seed=3))
    c = campaign("preference", make_clips(2, seconds=1.0), raters=2, seed=5)
    card = sc.scorecard(adherence=_adherence())
    out = tmp_path / "results"
    out.mkdir()
    old = os.umask(0)
    try:
        written = [
            session.to_csv(out / "session.csv"),
            session.to_parquet(out / "session.parquet"),
            c.to_csv(out / "campaign.csv"),
        ]
        card.to_parquet(out / "card.parquet")
        card.to_html(out / "card.html")
    finally:
        os.umask(old)
    names = sorted(p.name for p in out.iterdir())
    assert names == sorted(
        ["session.csv", "session.parquet", "campaign.csv", "card.parquet", "card.html"]
    ), names  # no temporary file left beside them
    assert {n: f"{_mode(out / n):04o}" for n in names} == dict.fromkeys(names, "0600")
    assert [p.name for p in written] == ["session.csv", "session.parquet", "campaign.csv"]
    assert (
        (out / "session.csv")
        .read_text(encoding="utf-8")
        .startswith(",".join(session.results().columns))
    )
