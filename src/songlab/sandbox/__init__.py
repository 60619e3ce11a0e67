"""songlab's sandbox: a complete local implementation of the Enterprise Audio Generation API.

Start it with ``python -m songlab.sandbox`` (or ``songlab sandbox``), or in-process::

    from songlab.sandbox.http.server import serve_in_thread
    with serve_in_thread(db=":memory:", speed=100) as srv:
        ...  # srv.base_url, srv.admin_token; demo key "sk-sandbox-demo"

Folders, one role each: ``http/`` (the ASGI app, the uvicorn server, the hot path,
profiles, request bodies, the OpenAPI document, ``routes/``), ``tasks/`` (creates,
the worker and its runners, task rows, payload rules, events, faults, rate limits),
``storage/`` (``db`` SQLite, ``files``, ``billing``, ``clock``), ``engine/`` (audio),
``agent/`` (Agent One). At the top: ``config``, ``errors``, ``catalog``, ``service``.
"""

from __future__ import annotations
