"""songlab: work with the Enterprise Audio Generation API from Jupyter."""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"
__all__ = ["__version__", "connect"]


def connect(**options: Any) -> Any:
    """A client on the real service (``SONGLAB_API_KEY`` + ``SONGLAB_BASE_URL``), else on
    a local sandbox started in a background thread. See ``songlab.client._connect``."""
    from songlab.client._connect import connect as _connect

    return _connect(**options)
