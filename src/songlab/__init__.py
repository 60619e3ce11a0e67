"""songlab: work with the Enterprise Audio Generation API from Jupyter."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, overload

if TYPE_CHECKING:
    from songlab.client import AsyncClient, Client

__version__ = "0.1.0"
__all__ = ["__version__", "connect"]


@overload
def connect(*, asynchronous: Literal[False] = ..., **options: Any) -> Client: ...
@overload
def connect(*, asynchronous: Literal[True], **options: Any) -> AsyncClient: ...
def connect(*, asynchronous: bool = False, **options: Any) -> Client | AsyncClient:
    """A client on the real service (``SONGLAB_API_KEY`` + ``SONGLAB_BASE_URL``), else on
    a local sandbox started in a background thread: a :class:`Client`, or an
    :class:`AsyncClient` with ``asynchronous=True``. Options: ``speed``, ``db``,
    ``admin_token``, ``quiet`` and the client's own (``timeout``, ``retry``, ...).
    See ``songlab._connect`` (the module above both the client and the sandbox)."""
    from songlab._connect import connect as _connect

    if asynchronous:
        return _connect(asynchronous=True, **options)
    return _connect(asynchronous=False, **options)
