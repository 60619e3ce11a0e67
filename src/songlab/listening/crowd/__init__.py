"""Listening campaigns served to a crowd: raters arrive, take a slot, answer, and are paid.

:func:`serve` (``listening.serve``) serves a campaign from this process; ``songlab campaign
serve`` from several worker processes (:mod:`.run`). The store is a database chosen by URL
(:mod:`.store`: SQLite by default, PostgreSQL for replicas); the rules live in
:mod:`.service`, the web face in :mod:`.app`, the platforms' conventions in
:mod:`.platforms`, payments in :mod:`.payments` and the live view in :mod:`.live`.
"""

from __future__ import annotations

from songlab.listening.crowd.payments import Payments, payments
from songlab.listening.crowd.run import CrowdServer, read_clip_folder, serve

__all__ = ["CrowdServer", "Payments", "payments", "read_clip_folder", "serve"]
