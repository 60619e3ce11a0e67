"""songlab.listening: blind preference, ABX and MUSHRA-style sessions and their statistics.

Make a session from clips (model -> one clip per prompt), play each trial's
blinded clips (``clip``/``player`` + ``mark_played``), ``answer``, then
``reveal`` and read ``results()`` / ``stats()``. Sessions save to JSON and
resume with :func:`load`; :func:`simulate` answers them unattended.
"""

from __future__ import annotations

import songlab.listening.panel as panel
import songlab.listening.stats as stats
from songlab.listening._errors import ListeningError, NotPlayedError, SessionError
from songlab.listening._match import Matched, lowpass_anchor, match_loudness
from songlab.listening._protocols import (
    ANCHOR,
    MID_ANCHOR,
    ABXSession,
    MushraSession,
    PreferenceSession,
    abx,
    mushra,
    preference,
)
from songlab.listening._simulate import simulate
from songlab.listening.campaign import Campaign, CollectError, campaign, load_campaign
from songlab.listening.server import CampaignServer, serve
from songlab.listening.session import ListeningSession, Trial, load
from songlab.listening.value import plot_quality_per_dollar, quality_per_dollar

__all__ = [
    "ABXSession",
    "ANCHOR",
    "Campaign",
    "CampaignServer",
    "CollectError",
    "ListeningError",
    "ListeningSession",
    "MID_ANCHOR",
    "Matched",
    "MushraSession",
    "NotPlayedError",
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
    "quality_per_dollar",
    "serve",
    "simulate",
    "stats",
]
