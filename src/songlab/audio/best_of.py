"""Best of n: n takes of one request, priced first, made within the budget, ranked by adherence.

``best_of(client, request, n=4, k=2, budget_usd="2.00")`` sends the request as takes
1..n (``take=`` of the client's record: each take its own task, and a re-run of the
notebook re-attaches to the takes already made, so it buys nothing again). The whole
batch is priced before anything is sent and refused over ``budget_usd``. Each take is
measured (:func:`songlab.audio.study.analyse`, cached) and ranked by its mean adherence
over what the request asked (key, tempo, length, melody, and ``1 - WER`` when a
transcript is known); the top ``k`` are the takes to send to a listening session.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from decimal import Decimal
from typing import Any

import numpy as np

import songlab.audio.study as study
from songlab.audio._audio_error import AudioError
from songlab.ledger import batch_frame

__all__ = ["BestOf", "best_of", "rank"]

_SCORES = ("key_score", "tempo_score", "duration_score", "melody_score")


@dataclass(frozen=True, slots=True)
class BestOf:
    """The ranked takes (``frame``: one row per take, best first, with ``adherence``), the
    batch that made them (``client.batch``'s result), the list price of the takes bought by this call (0 on a re-run)
    and the ``top`` k takes' file ids."""

    frame: Any  # pandas DataFrame
    batch: Any
    new_usd: Decimal
    top: list[str]


def rank(adherence: Any, /) -> Any:
    """``adherence`` with an ``adherence`` column (the mean of the asked scores; lyrics as
    ``1 - WER``), best first; ties keep the take order."""
    cols = [c for c in _SCORES if c in adherence.columns]
    parts = adherence[cols].to_numpy(dtype=float)
    if "lyrics_wer" in adherence.columns:
        lyr = 1.0 - np.clip(adherence["lyrics_wer"].to_numpy(dtype=float), 0.0, 1.0)
        parts = np.column_stack([parts, lyr])
    with np.errstate(invalid="ignore"):
        asked = np.isfinite(parts)
        total = np.where(asked, parts, 0.0).sum(axis=1)
        n = asked.sum(axis=1)
        mean = np.where(n > 0, total / np.maximum(n, 1), np.nan)
    out = adherence.assign(adherence=mean)
    return out.sort_values("adherence", ascending=False, kind="stable", na_position="last")


def best_of(
    client: Any,
    request: Mapping[str, Any],
    /,
    *,
    n: int = 4,
    k: int = 2,
    budget_usd: Decimal | int | str | None = None,
    cache: Any = True,
    workers: int | None = 1,
) -> BestOf:
    """Make ``n`` takes of ``request`` (``generations.create`` arguments) within
    ``budget_usd`` (priced before anything is sent; ``BudgetExceeded`` and nothing sent when
    the takes not yet made cost more), measure and rank them, keep the best ``k``."""
    if not isinstance(n, int) or not 1 <= n <= 50:
        raise AudioError("n", f"must be a whole number of takes from 1 to 50; got {n!r}")
    if not isinstance(k, int) or not 1 <= k <= n:
        raise AudioError("k", f"must be from 1 to n ({n}); got {k!r}")
    if not isinstance(request, Mapping) or "take" in request:
        raise AudioError("request", "must be one create request without a take (best_of sets it)")
    requests = [{**request, "take": t} for t in range(1, n + 1)]
    batch = client.batch(requests, budget_usd=budget_usd)
    made = batch_frame(batch)  # the ledger's one rule of what a row costs
    bought = made.loc[~made["reused"] & made["cost_usd"].notna(), "cost_usd"]
    new = sum((Decimal(c) for c in bought), Decimal(0))
    clips = [
        replace(c, label=f"take {c.request['take']}")
        for c in study.clips_from_batch(batch, requests, client)
    ]
    frame = rank(study.analyse(clips, client=client, cache=cache, workers=workers, progress=False))
    top = [str(f) for f in frame["file_id"].head(k)]
    return BestOf(frame=frame.reset_index(drop=True), batch=batch, new_usd=new, top=top)
