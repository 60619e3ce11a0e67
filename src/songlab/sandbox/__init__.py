"""songlab's sandbox: a complete local implementation of the Enterprise Audio Generation API.

Start it with ``python -m songlab.sandbox`` (or ``songlab sandbox``), or in-process::

    from songlab.sandbox import serve_in_thread
    with serve_in_thread(db=":memory:", speed=100) as srv:
        ...  # srv.base_url, srv.admin_token; demo key "sk-sandbox-demo"

Folders, one role each: ``http/`` (the ASGI app, the uvicorn server, the hot path,
profiles, request bodies, the OpenAPI document, ``routes/``), ``tasks/`` (creates,
the worker and its runners, task rows, payload rules, events, faults, rate limits),
``storage/`` (``db`` SQLite, ``files``, ``accounts``, ``billing``, ``clock``), ``engine/``
(audio), ``agent/`` (Agent One). At the top: ``config``, ``errors``, ``catalog``,
``ports`` (the Protocols each part is handed) and ``assembly`` (:func:`build`: the one
function that makes and wires the parts).

Public names: :func:`serve_in_thread` and :class:`SandboxServer` (start a served sandbox),
:func:`build` and :class:`Sandbox` (the assembled parts, unserved).
"""

from __future__ import annotations

from songlab.sandbox.assembly import Sandbox, build
from songlab.sandbox.http.server import SandboxServer, serve_in_thread

__all__ = ["Sandbox", "SandboxServer", "build", "serve_in_thread"]
