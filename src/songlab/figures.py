"""Figures that show themselves: a matplotlib Figure a notebook draws as a picture.

songlab builds its charts with ``matplotlib.figure.Figure``, never pyplot (no global
state, no open-figure warnings). Such a Figure has no picture in Jupyter until pyplot or
``%matplotlib inline`` has registered IPython's PNG formatter: before that a cell shows the
text ``<Figure size 700x360 with 1 Axes>`` where the chart should be. :func:`figure` makes a
Figure that draws itself (``_repr_png_``: the Agg canvas, tight bounding box) in any
kernel; where the inline backend is active, IPython's own formatter draws it, the same
picture. matplotlib is imported on the first chart, not with this module.
"""

from __future__ import annotations

import functools
import io
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["figure", "png"]


def png(fig: Figure, /, *, dpi: float | None = None) -> bytes:
    """``fig`` as PNG bytes, drawn by the Agg canvas (no pyplot, no GUI)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(fig)  # the figure's canvas: Agg, whatever backend is configured
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi or "figure", bbox_inches="tight")
    return buf.getvalue()


@functools.cache
def _chart_class() -> type[Figure]:
    from matplotlib.figure import Figure

    class Chart(Figure):
        """A Figure that IPython shows as a PNG picture (``_repr_png_``)."""

        def _repr_png_(self) -> bytes:
            return png(self)

    return Chart


def figure(**kwargs: Any) -> Figure:
    """A new Figure (``matplotlib.figure.Figure``'s arguments: ``figsize``, ``layout`` ...)
    that a notebook shows as a picture whether or not pyplot or ``%matplotlib inline`` ran."""
    return _chart_class()(**kwargs)
