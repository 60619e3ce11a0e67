"""songlab's sandbox: a complete local implementation of the Enterprise Audio Generation API.

Start it with ``python -m songlab.sandbox`` (or ``songlab sandbox``), or in-process::

    from songlab.sandbox.server import serve_in_thread
    with serve_in_thread(db=":memory:", speed=100) as srv:
        ...  # srv.base_url, srv.admin_token; demo key "sk-sandbox-demo"

Modules: ``server`` (uvicorn), ``app`` (FastAPI factory), ``routes/`` (one route
group each), ``service`` (the core object), ``store`` (SQLite), ``billing``,
``clock``, ``faults``, ``catalog``, ``storage``, ``events``, ``worker``,
``generation`` and ``pipelines`` (runners), ``context`` (the runner seam),
``validation``/``payloads`` (input rules), ``engine/`` (audio).
"""

from __future__ import annotations
