"""Which raters of a campaign to trust: the rejection rules, each with its source.

A rater is excluded from the statistics (never from the record: ``Campaign.results``
keeps every answer, with an ``excluded`` column) when any rule below holds:

=================  ===============================================  ===========================
rule               holds when                                       source
=================  ===============================================  ===========================
``checks``         ``fail_limit`` (2) or more of the rater's gold   ITU-T P.808 (gold standard
                   clips and trapping questions were failed         and trapping questions); the
                                                                    P.808 toolkit rejects a
                                                                    session failing either
``flat``           the same answer in every trial (5 or more), or   the P.808 toolkit's
                   ratings whose variance is below 0.1 on a five-   ``variance_bigger_equal:
                   point scale (scaled to the protocol's scale)     0.1`` (flat-lining)
``headphones``     fewer than 5 of the 6 headphone-check trials     Woods et al. (2017),
                   right                                            Attention, Perception &
                                                                    Psychophysics 79, 2064-2072
``screening``      the protocol's own post-screening (MUSHRA:       ITU-R BS.1534-3 sec. 4.1.2
                   hidden reference below 90, or the mid anchor
                   above 90, in more than 15 % of the items)
=================  ===============================================  ===========================

Clips not heard for the minimum (Music Arena: 5 s, or the whole clip) are not a rule
here: such an answer file is refused outright, at the server when it is sent and at
``collect``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

__all__ = [
    "FAIL_LIMIT",
    "FLAT_MIN_TRIALS",
    "FLAT_VARIANCE",
    "HEADPHONES_PASS",
    "RULES",
    "Rater",
    "exclusions",
]

FAIL_LIMIT = 2
FLAT_MIN_TRIALS = 5
FLAT_VARIANCE = 0.1  # on a five-point scale (4 steps wide)
HEADPHONES_PASS = 5  # of 6 (Woods et al. 2017)
RULES = {
    "checks": "ITU-T P.808 gold and trapping questions",
    "flat": "P.808 toolkit: vote variance below 0.1",
    "headphones": "headphone check, Woods et al. 2017",
    "screening": "ITU-R BS.1534-3 sec. 4.1.2 post-screening",
}
COLUMNS = {
    "rater": "string",
    "scripted": "boolean",
    "answered": "Int64",
    "checks": "Int64",
    "checks_failed": "Int64",
    "flat": "boolean",
    "headphones": "string",
    "excluded": "boolean",
    "reason": "string",
}


@dataclass(frozen=True)
class Rater:
    """What the rules read of one collected rater: the filled (organiser's) session, the
    answer file, and the headphone check's right answers (None without the check)."""

    name: str
    session: Any
    doc: Mapping[str, Any]
    headphones: Sequence[int] | None


def _flat(session: Any) -> str | None:
    """Why the rater's answers have no spread, or None."""
    plans = session._unseal()["plans"]
    trials = [
        t for t in session.trials if t.index in session._answers and plans[t.index].check is None
    ]
    if len(trials) < FLAT_MIN_TRIALS:
        return None
    controls = session.controls(trials[0].index)
    answers = [session._answers[t.index] for t in trials]
    if controls.scale is None:
        if len({repr(a) for a in answers}) == 1:
            return f"the same answer ({answers[0]!r}) in all {len(answers)} trials"
        return None
    scale = controls.scale
    ratings = np.array([float(v) for a in answers for v in a.values()])
    limit = FLAT_VARIANCE * ((scale.high - scale.low) / 4) ** 2
    if ratings.size > 1 and float(ratings.var()) < limit:
        return f"ratings of variance {ratings.var():.3g} (below {limit:.3g})"
    return None


def exclusions(
    raters: Sequence[Rater],
    /,
    *,
    screening: pd.DataFrame | None = None,
    fail_limit: int = FAIL_LIMIT,
) -> pd.DataFrame:
    """One row per rater: the checks failed, flat-lining, the headphone check, the
    protocol's screening, ``excluded`` and the ``reason`` (each rule with its source)."""
    screened = (
        {}
        if screening is None
        else {r: why for r, why, out in screening[["rater", "reason", "excluded"]].values if out}
    )
    rows = []
    for r in raters:
        session = r.session
        session._revealed = True  # the organiser's copy; pages never see it
        checks = session.checks()
        failed = int(checks["passed"].eq(False).sum())
        reasons = []
        if len(checks) and failed >= fail_limit:
            reasons.append(f"failed {failed} of {len(checks)} checks ({RULES['checks']})")
        flat = _flat(session)
        if flat is not None:
            reasons.append(f"flat-lining: {flat} ({RULES['flat']})")
        phones = None
        if r.headphones is not None:
            given = list(r.doc.get("headphones") or [])
            right = sum(1 for a, b in zip(given, r.headphones, strict=False) if a == b)
            phones = f"{right} of {len(r.headphones)}"
            if right < HEADPHONES_PASS * len(r.headphones) / 6:
                reasons.append(f"headphone check {phones} right ({RULES['headphones']})")
        if r.name in screened:
            reasons.append(f"{screened[r.name]} ({RULES['screening']})")
        rows.append(
            {
                "rater": r.name,
                "scripted": bool(r.doc.get("scripted")),
                "answered": len(session._answers),
                "checks": len(checks),
                "checks_failed": failed,
                "flat": flat is not None,
                "headphones": phones,
                "excluded": bool(reasons),
                "reason": "; ".join(reasons),
            }
        )
    return pd.DataFrame(rows, columns=list(COLUMNS)).astype(COLUMNS)
