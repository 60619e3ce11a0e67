"""songlab's charts show as pictures in any notebook: a Figure songlab makes answers
IPython's PNG formatter without pyplot or ``%matplotlib inline`` (notebook 09's scorecard
chart was the text ``<Figure size 700x360 with 1 Axes>``), and every chart is made that way."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pandas as pd
from IPython.core.formatters import PlainTextFormatter, PNGFormatter
from matplotlib.figure import Figure

from songlab.audio.plots import waveform
from songlab.figures import figure, png
from songlab.listening.scorecard import Scorecard

SRC = Path(__file__).resolve().parents[1] / "src" / "songlab"
# draws into a widget's Image (figure_png), never returned to a notebook cell
DRAWN_INTO_A_WIDGET = {"widgets/players.py"}
PNG = b"\x89PNG\r\n\x1a\n"


def _shown(fig: object) -> bytes | None:
    """What a fresh kernel's PNG formatter makes of ``fig`` (no inline backend registered)."""
    return PNGFormatter()(fig)


def test_a_songlab_figure_is_a_picture_where_a_bare_figure_is_text() -> None:
    bare = Figure(figsize=(2, 1))
    bare.add_subplot().plot([0, 1])
    assert _shown(bare) is None  # what notebook 09 showed: only the text below
    assert PlainTextFormatter()(bare).startswith("<Figure size 200x100")
    ours = figure(figsize=(2, 1))
    ours.add_subplot().plot([0, 1])
    picture = _shown(ours)
    assert picture is not None and picture.startswith(PNG) and png(ours).startswith(PNG)


def test_the_scorecard_and_audio_charts_are_pictures() -> None:
    card = Scorecard(
        pd.DataFrame(
            {
                "model": ["v5", "v7"],
                "key_score": [0.5, 1.0],
                "key_score_low": [0.2, 1.0],
                "key_score_high": [0.8, 1.0],
            }
        )
    )
    tone = np.sin(np.linspace(0, 200, 8000)).astype(np.float32)
    for fig in (card.plot(), waveform((tone, 8000))):
        picture = _shown(fig)
        assert picture is not None and picture.startswith(PNG), type(fig)


def test_no_chart_of_songlab_is_a_bare_figure() -> None:
    """Every ``Figure(...)`` call in the source goes through ``songlab.figures.figure``."""
    bare = []
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        if rel == "figures.py" or rel in DRAWN_INTO_A_WIDGET:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Figure":
                bare.append(f"{rel}:{node.lineno}")
    assert bare == []
