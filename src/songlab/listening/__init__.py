"""songlab.listening: blind listening sessions and campaigns, and their statistics.

Protocols (:data:`PROTOCOLS`): preference (A/B or k-way), ABX, MUSHRA (ITU-R BS.1534-3)
and ACR (ITU-T P.800/P.808 five-point MOS), each in its own module of
:mod:`songlab.listening.protocols`. Make a session from clips (model -> one clip per
prompt) with ``protocol(kind)(clips, ...)`` (or :func:`preference`, :func:`abx`,
:func:`mushra`), play each trial's blinded clips (``clip``/``player`` + ``mark_played``),
``answer``, then ``reveal`` and read ``results()`` / ``stats()``. Sessions save to JSON
and resume with :func:`load`; :func:`simulate` answers them unattended. :func:`campaign`
sends one protocol to a panel of raters; :func:`serve` serves it to raters who arrive
(:mod:`songlab.listening.crowd`), and :func:`watch` shows a served campaign as it fills.
"""

from __future__ import annotations

from typing import Any

import songlab.listening.panel as panel
import songlab.listening.raters as raters
import songlab.listening.stats as stats
from songlab.listening._errors import ListeningError, NotPlayedError, SessionError
from songlab.listening._match import Matched, lowpass_anchor, match_loudness
from songlab.listening._simulate import simulate
from songlab.listening.campaign import Campaign, CollectError, campaign, load_campaign
from songlab.listening.protocols.abx import ABXSession, abx
from songlab.listening.protocols.mushra import ANCHOR, MID_ANCHOR, MushraSession, mushra
from songlab.listening.protocols.preference import BOTH_BAD, PreferenceSession, preference
from songlab.listening.registry import PROTOCOLS, load, protocol
from songlab.listening.session import ListeningSession, Trial
from songlab.listening.value import plot_quality_per_dollar, quality_per_dollar, value_verdict


def serve(campaign: Campaign, /, **options: Any) -> Any:
    """Serve ``campaign`` to raters from this process: a
    :class:`~songlab.listening.crowd.CrowdServer` (see :func:`songlab.listening.crowd.serve`).
    The web stack (Starlette, uvicorn, SQLAlchemy) loads on first use."""
    from songlab.listening.crowd.run import serve as start

    return start(campaign, **options)


def watch(server: Any, /) -> Any:
    """The live view of a served campaign (:func:`songlab.listening.crowd.live.watch`)."""
    from songlab.listening.crowd.live import watch as view

    return view(server)


__all__ = [
    "ABXSession",
    "ANCHOR",
    "BOTH_BAD",
    "Campaign",
    "CollectError",
    "ListeningError",
    "ListeningSession",
    "MID_ANCHOR",
    "Matched",
    "MushraSession",
    "NotPlayedError",
    "PROTOCOLS",
    "PreferenceSession",
    "SessionError",
    "Trial",
    "abx",
    "campaign",
    "load",
    "load_campaign",
    "lowpass_anchor",
    "match_loudness",
    "mushra",
    "panel",
    "plot_quality_per_dollar",
    "preference",
    "protocol",
    "quality_per_dollar",
    "raters",
    "serve",
    "simulate",
    "stats",
    "value_verdict",
    "watch",
]
