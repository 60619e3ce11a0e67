"""Watch a served campaign fill: who arrived, who finished, who was excluded and why, ratings
per clip against the quota, and the running statistics with their intervals.

``listening.watch(server)`` returns a :class:`LiveView` (re-run the cell, or call
``view.refresh()``, for the latest): its frames (``raters``, ``clips``, ``stats``) and, in a
notebook, the same as HTML. The statistics are the campaign's own (``Campaign.stats`` of the
raters who finished, the exclusion rules applied); the view states numbers and intervals, and
ranks nothing in words.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from typing import Any, cast

import pandas as pd

from songlab.listening._errors import ListeningError
from songlab.listening.crowd.store import ACTIVE, COMPLETE, SCREENED_OUT, TIMED_OUT

__all__ = ["LiveView", "watch"]

_STATES = (ACTIVE, COMPLETE, SCREENED_OUT, TIMED_OUT)


@dataclass
class LiveView:
    """A served campaign as it is now (:meth:`refresh` reads it again)."""

    server: Any
    counts: dict[str, Any] = field(default_factory=dict)
    raters: pd.DataFrame = field(default_factory=pd.DataFrame)
    clips: pd.DataFrame = field(default_factory=pd.DataFrame)
    stats: dict[str, pd.DataFrame] = field(default_factory=dict)
    verdict: str = ""
    note: str = ""

    def refresh(self) -> LiveView:
        service = self.server.service if hasattr(self.server, "service") else self.server
        campaign, store = service.campaign, service.store
        assignments = store.assignments(campaign.id)
        self.counts = {s: sum(1 for a in assignments if a.status == s) for s in _STATES}
        self.counts["arrived"] = len(assignments)
        self.counts["state"] = store.state(campaign.id)
        self.raters = _raters(assignments)
        self._collect(campaign, service)
        self.clips = _clips(campaign, self.raters, service.settings["ratings"])
        return self

    def _collect(self, campaign: Any, service: Any) -> None:
        """The campaign's statistics over the finished raters (the same engine as offline)."""
        from songlab.listening._intake import CollectError

        try:
            campaign.collect(service)
        except CollectError as exc:  # shown, not raised: the view still shows the rest
            self.note = str(exc)
        try:
            self.stats = campaign.stats()
        except ListeningError as exc:
            self.stats, self.note = {}, f"no statistics yet: {exc.rule}"
        self.verdict = _verdict(campaign, self.stats)

    def _repr_html_(self) -> str:
        c = self.counts
        head = (
            f"<p><b>{c.get('arrived', 0)}</b> arrived, <b>{c.get(COMPLETE, 0)}</b> finished, "
            f"{c.get(ACTIVE, 0)} answering now, {c.get(TIMED_OUT, 0)} timed out, "
            f"{c.get(SCREENED_OUT, 0)} screened out; the campaign is {html.escape(str(c.get('state', '')))}.</p>"
        )
        parts = [head]
        if self.verdict:
            parts.append(f"<p>{html.escape(self.verdict)}</p>")
        if not self.clips.empty:
            parts.append("<h4>Ratings per clip</h4>" + self.clips.to_html(index=False))
        excluded = (
            self.raters[self.raters["excluded"].fillna(False)] if len(self.raters) else self.raters
        )
        if len(excluded):
            parts.append(
                "<h4>Excluded, and why</h4>"
                + excluded[["participant", "reason"]].to_html(index=False)
            )
        for name, frame in self.stats.items():
            if name != "exclusions":
                parts.append(f"<h4>{html.escape(name)}</h4>" + frame.round(3).to_html(index=False))
        if self.note:
            parts.append(f"<p>{html.escape(self.note)}</p>")
        return "\n".join(parts)

    def __repr__(self) -> str:
        c = self.counts
        return (
            f"LiveView(arrived={c.get('arrived', 0)}, finished={c.get(COMPLETE, 0)}, "
            f"answering={c.get(ACTIVE, 0)}, timed_out={c.get(TIMED_OUT, 0)}, "
            f"screened_out={c.get(SCREENED_OUT, 0)}, state={c.get('state')!s})"
        )


def _verdict(campaign: Any, stats: dict[str, pd.DataFrame]) -> str:
    """The one sentence that ranks the models so far (``listening.verdict``, from the panel's
    score and its interval), or "" for a protocol without a score or before any statistics."""
    from songlab.listening.registry import protocol
    from songlab.listening.verdict import Estimate, Measure, verdict

    where = protocol(campaign.kind).panel_score
    if where is None or where[0] not in stats:
        return ""
    table, column = stats[where[0]], where[1]
    bounds = next(
        (
            (lo, hi)
            for lo, hi in (
                (f"{column}_low", f"{column}_high"),
                ("ci_low_rater", "ci_high_rater"),
                ("ci_low", "ci_high"),
            )
            if lo in table and hi in table
        ),
        None,
    )
    if bounds is None:
        return ""
    rows = [
        Estimate(str(r["model"]), float(r[column]), float(r[bounds[0]]), float(r[bounds[1]]))
        for r in table.to_dict("records")
    ]
    return verdict(rows, measure=Measure(f"the panel's {column} so far")).text


def _raters(assignments: list[Any]) -> pd.DataFrame:
    rows = [
        {
            "participant": a.participant,
            "platform": a.platform,
            "status": a.status,
            "minutes": ((a.finished_at or a.last_seen) - a.started_at) / 60,
            "excluded": None if a.kept is None else not a.kept,
            "reason": a.reason,
        }
        for a in assignments
    ]
    columns = {
        "participant": "string",
        "platform": "string",
        "status": "string",
        "minutes": "Float64",
        "excluded": "boolean",
        "reason": "string",
    }
    return pd.DataFrame(rows, columns=list(columns)).astype(columns)


def _clips(campaign: Any, raters: pd.DataFrame, quota: int | None) -> pd.DataFrame:
    """Per clip (model, prompt): the ratings of the kept raters who finished, against quota."""
    columns = {"model": "string", "prompt": "string", "ratings": "Int64", "quota": "Int64"}
    results = campaign.results(raters="kept") if campaign.received else pd.DataFrame()
    counts: dict[tuple[str, str], int] = {}
    for column in ("model", "model_a", "model_b"):  # ABX rates the two models of a pair
        if len(results) and column in results:
            for pair, n in results.groupby([column, "prompt"]).size().items():
                # the stubs type a group's key as Hashable: here it is (model, prompt)
                model, prompt = cast(tuple[str, str], pair)
                key = (str(model), str(prompt))
                counts[key] = counts.get(key, 0) + int(n)
    rows = [
        {"model": m, "prompt": p, "ratings": counts.get((m, p), 0), "quota": quota}
        for m in campaign.models
        for p in campaign.prompts
    ]
    return pd.DataFrame(rows, columns=list(columns)).astype(columns)


def watch(server: Any, /) -> LiveView:
    """The live view of a served campaign (a :class:`~.run.CrowdServer` or its service)."""
    if not hasattr(server, "service") and not hasattr(server, "store"):
        raise ListeningError("server", "must be a served campaign (listening.serve(...))")
    return LiveView(server).refresh()
