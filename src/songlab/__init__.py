"""songlab: work with the Enterprise Audio Generation API from Jupyter."""

from __future__ import annotations

__version__ = "0.1.0"
