"""Quality per dollar: a campaign's scores beside what each model's clips cost (the ledger).

``quality_per_dollar(quality, tasks, clip_tasks)`` joins a panel score per model
(MUSHRA ``mean`` or the Bradley-Terry ``score``, 0-100, with their intervals)
with the ledger's cost of the tasks that made each model's clips (one license
tier for all, the tier the campaign was made at) and, from the ledger's tier
prices, what the same clips would cost in every other tier. Money stays
``Decimal``; ``points_per_usd`` (with its interval: the score's, divided by the exact
price) is a float for reading and plotting only, and :func:`value_verdict` says which model
gives the most of it, by :func:`songlab.listening.verdict.verdict`.
The license tier changes what a clip may be used for, not how it sounds (the
sandbox renders the same audio whatever the tier), so a row of another tier
keeps its model's score: check that your use fits that tier's license.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import TYPE_CHECKING

import pandas as pd

from songlab.figures import figure
from songlab.ledger import tier_prices
from songlab.listening._errors import ListeningError
from songlab.listening.verdict import Estimate, Measure, Verdict, per, verdict
from songlab.spec import LICENSE_NAMES

if TYPE_CHECKING:
    from matplotlib.figure import Figure

CENT = Decimal("0.00000001")  # the ledger's 8 decimal places
COLUMNS = [
    "model",
    "license",
    "tier",
    "measured",
    "clips",
    "usd_per_clip",
    "score",
    "score_low",
    "score_high",
    "usd_per_point",
    "points_per_usd",
    "points_per_usd_low",
    "points_per_usd_high",
    "save_per_clip_usd",
    "save_per_1000_usd",
    "score_change",
]
#: how quality per dollar reads, in the table, the sentence and the chart alike
POINTS_PER_DOLLAR = Measure("points per dollar", digits=0)


def _score_columns(quality: pd.DataFrame) -> tuple[str, str | None, str | None]:
    if not isinstance(quality, pd.DataFrame) or "model" not in quality.columns:
        raise ListeningError("quality", "must be a frame with a model column (panel statistics)")
    for score, low, high in (
        ("mean", "ci_low_rater", "ci_high_rater"),
        ("mean", "ci_low", "ci_high"),
        ("score", "score_low", "score_high"),
    ):
        if score in quality.columns:
            if low in quality.columns and high in quality.columns:
                return score, low, high
    if "score" in quality.columns or "mean" in quality.columns:
        return ("score" if "score" in quality.columns else "mean"), None, None
    raise ListeningError("quality", "needs a score column: MUSHRA 'mean' or Bradley-Terry 'score'")


def _clip_costs(tasks: pd.DataFrame, clip_tasks: Mapping[str, Sequence[str]]) -> pd.DataFrame:
    if not isinstance(clip_tasks, Mapping) or not clip_tasks:
        raise ListeningError("clip_tasks", "must map each model to the task ids of its clips")
    wanted = {str(t): m for m, ids in clip_tasks.items() for t in ids}
    prices = tier_prices(tasks)
    rows = prices[prices["task_id"].isin(list(wanted))]
    missing = sorted(set(wanted) - set(rows["task_id"]))
    if missing:
        raise ListeningError(
            "clip_tasks",
            f"{len(missing)} task(s) are not billed tasks of the ledger (first: {missing[0]}); "
            "refresh the tasks frame after the clips were made",
        )
    licenses = sorted({int(x) for x in rows["license"]})
    if len(licenses) != 1:
        raise ListeningError(
            "clip_tasks", f"the clips were made at license tiers {licenses}: compare at one tier"
        )
    return rows.assign(model=[wanted[t] for t in rows["task_id"]])


def quality_per_dollar(
    quality: pd.DataFrame, tasks: pd.DataFrame, clip_tasks: Mapping[str, Sequence[str]], /
) -> pd.DataFrame:
    """One row per (model, tier): USD per clip, the model's score, USD per point, and what
    choosing that row saves per clip (and per 1000 clips) against the best-scoring model
    at the campaign's tier (``score_change``: the points given up). ``measured`` marks the
    campaign's own tier (billed costs); other tiers are the ledger's list prices."""
    score, low, high = _score_columns(quality)
    costs = _clip_costs(tasks, clip_tasks)
    scores = _model_scores(quality, score, low, high)
    unknown = sorted(set(clip_tasks) - set(scores))
    if unknown:
        raise ListeningError("clip_tasks", f"models without a score: {unknown}")
    own = int(costs["license"].iloc[0])
    tier_cols = [c for c in costs.columns if c.endswith("_usd") and c != "cost_usd"]
    rows = []
    for model, g in costs.groupby("model", sort=True):
        n = len(g)
        for lic, col in enumerate(tier_cols, start=1):
            measured = lic == own
            total = sum((Decimal(v) for v in g["cost_usd" if measured else col]), Decimal(0))
            per_clip = (total / n).quantize(CENT)
            s, s_low, s_high = scores[str(model)]
            rows.append(
                {
                    "model": model,
                    "license": lic,
                    "tier": col.removesuffix("_usd"),
                    "measured": measured,
                    "clips": n,
                    "usd_per_clip": per_clip,
                    "score": s,
                    "score_low": s_low,
                    "score_high": s_high,
                    "usd_per_point": (per_clip / Decimal(repr(s))).quantize(CENT)
                    if s > 0
                    else None,
                    **_points_per_usd(_score_estimate(str(model), s, s_low, s_high), per_clip),
                }
            )
    out = pd.DataFrame(rows)
    best = out[out["measured"]].sort_values(["score", "usd_per_clip"], ascending=[False, True])
    ref = best.iloc[0]
    out["save_per_clip_usd"] = [ref["usd_per_clip"] - v for v in out["usd_per_clip"]]
    out["save_per_1000_usd"] = [
        (v * 1000).quantize(Decimal("0.00001")) for v in out["save_per_clip_usd"]
    ]
    out["score_change"] = out["score"] - ref["score"]
    out = out.sort_values(["measured", "score", "license"], ascending=[False, False, True])
    out = out.reset_index(drop=True)[COLUMNS]
    out.attrs.update(reference_model=ref["model"], license=own, score_column=score)
    return out


def _model_scores(
    quality: pd.DataFrame, score: str, low: str | None, high: str | None
) -> dict[str, tuple[float, float, float]]:
    """Each model's score and the bounds of its interval (nan where the panel gives none)."""
    nan = float("nan")
    return {
        str(r["model"]): (
            float(r[score]),
            float(r[low]) if low else nan,
            float(r[high]) if high else nan,
        )
        for r in quality.to_dict("records")
    }


def _score_estimate(model: str, score: float, low: float, high: float) -> Estimate:
    """``model``'s score with its interval (nan bounds when either bound is missing)."""
    if low != low or high != high:  # nan: no interval
        low = high = float("nan")
    return Estimate(model, score, low, high)


def _points_per_usd(score: Estimate, per_clip: Decimal) -> dict[str, float]:
    """Points per dollar and its interval: the score's interval divided by the exact price."""
    ratio = per(score, per_clip)
    return {
        "points_per_usd": ratio.value,
        "points_per_usd_low": ratio.low,
        "points_per_usd_high": ratio.high,
    }


def value_verdict(table: pd.DataFrame, /) -> Verdict:
    """The sentence on which model gives the most points per dollar at the campaign's tier
    (:func:`quality_per_dollar`'s measured rows): a model is named only when its interval
    (the panel's score interval divided by its exact price per clip) lies wholly above every
    other's, at whole points (see :func:`songlab.listening.verdict.verdict`)."""
    if not isinstance(table, pd.DataFrame) or "points_per_usd_low" not in table.columns:
        raise ListeningError("table", "must be quality_per_dollar()'s table")
    own = table[table["measured"]]
    return verdict(
        [
            Estimate(
                str(r["model"]),
                float(r["points_per_usd"]),
                float(r["points_per_usd_low"]),
                float(r["points_per_usd_high"]),
            )
            for r in own.to_dict("records")
        ],
        measure=POINTS_PER_DOLLAR,
    )


def _dollars(value: float, _pos: object = None) -> str:
    """A dollar tick: $0.10, $0.25, $1, $2.50 (cents shown below $10)."""
    if value <= 0:
        return ""
    if value < 0.01:
        return f"${value:.3f}"
    if value >= 10 or float(value).is_integer():
        return f"${value:,.0f}"
    return f"${value:.2f}"


def plot_quality_per_dollar(table: pd.DataFrame, /, *, title: str | None = None) -> Figure:
    """Score (with its interval) against USD per clip: the campaign's tier as filled
    points, the other tiers of each model as hollow points on the same line.

    The dollar axis is logarithmic with ticks in dollars ($0.10, $0.20, $0.50, $1 ...);
    the legend sits outside the plot, so it covers no line."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    fig = figure(figsize=(8, 4), layout="constrained")
    ax = fig.add_subplot(1, 1, 1)
    for i, (model, g) in enumerate(table.groupby("model", sort=True)):
        color = f"C{i}"
        g = g.sort_values("license")
        x = [float(v) for v in g["usd_per_clip"]]
        ax.plot(x, g["score"], color=color, lw=0.8, alpha=0.5)
        other = g[~g["measured"]]
        ax.scatter(
            [float(v) for v in other["usd_per_clip"]],
            other["score"],
            facecolors="none",
            edgecolors=color,
            s=30,
        )
        m = g[g["measured"]].iloc[0]
        yerr = [[m["score"] - m["score_low"]], [m["score_high"] - m["score"]]]
        ppd = POINTS_PER_DOLLAR
        ax.errorbar(
            [float(m["usd_per_clip"])],
            [m["score"]],
            yerr=yerr,
            fmt="o",
            color=color,
            capsize=4,
            label=f"{model}: {ppd.show(m['points_per_usd'])} {ppd.what}"
            f" ({ppd.span(m['points_per_usd_low'], m['points_per_usd_high'])})",
        )
    ax.set_xscale("log")
    ax.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    ax.xaxis.set_major_formatter(FuncFormatter(_dollars))
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("price per clip (log scale; hollow: the same clips in other tiers)")
    ax.set_ylabel(f"panel {table.attrs.get('score_column', 'score')} (0-100)")
    tier = table.attrs.get("license", "?")
    ax.set_title(
        title or f"Panel score and {POINTS_PER_DOLLAR.what} ({LICENSE_NAMES.get(tier, tier)} tier)"
    )
    ax.legend(  # the title's unit: points per dollar, with the interval the verdict uses
        loc="upper left",
        bbox_to_anchor=(1.02, 1.0),
        borderaxespad=0.0,
        fontsize="small",
        title=f"{POINTS_PER_DOLLAR.what} (95 % interval)",
    )
    ax.grid(alpha=0.3)
    return fig


__all__ = [
    "POINTS_PER_DOLLAR",
    "plot_quality_per_dollar",
    "quality_per_dollar",
    "value_verdict",
]
