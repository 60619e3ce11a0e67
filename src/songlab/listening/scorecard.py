"""One scorecard per model: listening, prompt adherence, waiting and cost, side by side.

``scorecard(adherence=..., listening=..., tasks=..., records=...)`` joins four answers
that each have one engine, and computes none of them again:

* **listening**: the listening panel's score per model after its rater exclusions (a
  campaign's ``stats(raters="kept")``: Bradley-Terry for preference, the MUSHRA mean,
  the ACR MOS), with a 95 % interval by bootstrap over the kept raters (the panel's own
  function run on raters drawn with replacement, as Music Arena does over votes), and
  the number of raters and answers counted and of raters excluded. The point score is
  the panel's, figure for figure.
* **adherence**: the mean of each score column of :func:`songlab.audio.study.analyse`'s
  frame per model, with a bootstrap 95 % interval over clips (NaN rows, where the
  request asked nothing, left out and counted).
* **waiting**: the client's own clock from sending the create to first seeing the task
  end (the record's ``sent_at`` and ``finished_at``), p50 and p95: no service timestamp
  is needed, so it works against a service that shows none (the spec).
* **cost**: the ledger's ``cost_usd`` and ``cost_source`` of each clip's task (billed,
  else the list-price estimate, labelled which); per clip and per minute of audio.

The rows are per model, or per (model, license) with ``by=("model", "license")``.
``quality_per_usd`` is listening points per dollar of a clip, with the listening interval
divided by the clip's exact price (``_low``, ``_high``). :meth:`Scorecard.verdicts` says in
one sentence per measure what the table separates, by
:func:`songlab.listening.verdict.verdict`. Any part may be missing: adherence alone works
before anyone has listened.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping, Sequence
from decimal import Decimal
from typing import Any, Final

import numpy as np
import pandas as pd

import songlab.listening.panel as panel
from songlab.figures import figure
from songlab.listening._errors import ListeningError
from songlab.listening.verdict import Estimate, Measure, Verdict, per, verdict
from songlab.localfiles import replace_atomically, write_atomic

__all__ = [
    "ADHERENCE_COLUMNS",
    "Scorecard",
    "adherence_summary",
    "bootstrap_mean",
    "cost_summary",
    "listening_summary",
    "scorecard",
    "waiting",
]

# the adherence frame's score columns, in the scorecard's order (lyrics: lower is better)
ADHERENCE_COLUMNS: Final = (
    "key_score",
    "tempo_score",
    "duration_score",
    "melody_score",
    "lyrics_wer",
)
REPORTED: Final = ("loudness_lufs", "true_peak_dbtp")
CENT: Final = Decimal("0.00000001")
# the ledger's cost_source -> the scorecard's label ("unbilled" failed tasks and "unknown"
# costs are not a clip's price: left out and counted)
_BASIS: Final = {"billed": "billed", "estimate": "estimated", "estimated": "estimated"}
BOOT: Final = 1000


def bootstrap_mean(
    values: Sequence[float], /, *, boot: int = BOOT, seed: int = 0, confidence: float = 0.95
) -> tuple[float, float, float, int]:
    """``(mean, low, high, n)`` of the finite values, with a percentile bootstrap interval
    (``boot`` resamples, seeded). Fewer than two values, or ``boot=0``: NaN bounds."""
    if isinstance(boot, bool) or not isinstance(boot, int) or boot < 0:
        raise ListeningError("boot", f"must be a whole number of resamples >= 0; got {boot!r}")
    x = np.asarray([v for v in values if v is not None], dtype=float)
    x = x[np.isfinite(x)]
    if x.size == 0:
        return float("nan"), float("nan"), float("nan"), 0
    mean = float(x.mean())
    if x.size < 2 or boot == 0:
        return mean, float("nan"), float("nan"), int(x.size)
    rng = np.random.default_rng(seed)
    means = x[rng.integers(0, x.size, size=(boot, x.size))].mean(axis=1)
    a = (1 - confidence) / 2
    low, high = np.quantile(means, [a, 1 - a])
    return mean, float(low), float(high), int(x.size)


def _keys(frame: pd.DataFrame, by: Sequence[str]) -> list[str]:
    missing = [c for c in by if c not in frame.columns]
    if missing:
        raise ListeningError("by", f"columns {missing} are not in the frame")
    return list(by)


def adherence_summary(
    adherence: pd.DataFrame, /, *, by: Sequence[str] = ("model",), boot: int = BOOT, seed: int = 0
) -> pd.DataFrame:
    """Per group: clips, and for each score column its mean, bootstrap interval and the
    number of clips it was asked of (``<col>``, ``<col>_low``, ``<col>_high``, ``<col>_n``);
    loudness and true peak means; ``audio_s`` (the clips' total length)."""
    keys = _keys(adherence, by)
    rows = []
    for group, g in adherence.groupby(keys, sort=True, dropna=False):
        row = dict(zip(keys, group if isinstance(group, tuple) else (group,), strict=True))
        row["clips"] = len(g)
        row["audio_s"] = float(g["duration_s"].sum()) if "duration_s" in g else float("nan")
        for col in ADHERENCE_COLUMNS:
            if col not in g:
                continue
            mean, low, high, n = bootstrap_mean(g[col].to_list(), boot=boot, seed=seed)
            row.update({col: mean, f"{col}_low": low, f"{col}_high": high, f"{col}_n": n})
        for col in REPORTED:
            if col in g:
                vals = g[col].to_numpy(dtype=float)
                vals = vals[np.isfinite(vals)]
                row[col] = float(vals.mean()) if vals.size else float("nan")
        if "clipped_samples" in g:
            row["clipped_share"] = float((g["clipped_samples"] > 0).mean())
        rows.append(row)
    return pd.DataFrame(rows)


def _record_frame(records: Any) -> pd.DataFrame:
    if isinstance(records, pd.DataFrame):
        return records
    table = records.table() if hasattr(records, "table") else records
    if hasattr(table, "to_pandas"):
        out: pd.DataFrame = table.to_pandas()
        return out
    raise ListeningError("records", "must be a RecordStore, its Arrow table or a frame")


def waiting(
    records: Any, /, *, by: Sequence[str] = ("model",), task_ids: Sequence[str] | None = None
) -> pd.DataFrame:
    """Per group, from the client's record (its own clock): ``waited`` (tasks seen to their
    end), ``wait_p50_s`` and ``wait_p95_s`` of ``finished_at - sent_at`` over completed
    tasks. ``task_ids``: only these tasks (a study's clips). Tasks the client never saw end
    are counted in ``unseen``, never guessed."""
    frame = _record_frame(records)
    for col in ("task_id", "sent_at", "finished_at", "final_status"):
        if col not in frame.columns:
            raise ListeningError("records", f"has no {col!r} column (a record of songlab >= 0.1)")
    if task_ids is not None:
        frame = frame[frame["task_id"].isin(list(task_ids))]
    frame = frame.drop_duplicates("task_id")
    keys = _keys(frame, by)
    rows = []
    for group, g in frame.groupby(keys, sort=True, dropna=False):
        row = dict(zip(keys, group if isinstance(group, tuple) else (group,), strict=True))
        done = g[
            (g["final_status"] == "completed") & g["finished_at"].notna() & g["sent_at"].notna()
        ]
        secs = (
            (pd.to_datetime(done["finished_at"]) - pd.to_datetime(done["sent_at"]))
            .dt.total_seconds()
            .to_numpy(dtype=float)
        )
        row["waited"] = int(secs.size)
        row["unseen"] = int(g["finished_at"].isna().sum())
        row["wait_p50_s"] = float(np.percentile(secs, 50)) if secs.size else float("nan")
        row["wait_p95_s"] = float(np.percentile(secs, 95)) if secs.size else float("nan")
        rows.append(row)
    return pd.DataFrame(rows)


def _ledger_costs(tasks: Any) -> pd.DataFrame:
    """``task_id, model, license, cost_usd, cost_source`` of every top-level task, read from
    the ledger's one relation (``songlab.ledger.engine``): the scorecard's cost is the
    ledger's, figure for figure."""
    from songlab.ledger.engine import open_ledger

    with open_ledger(tasks) as lg:
        out: pd.DataFrame = lg.frame(
            "SELECT task_id, model, license, cost_usd, cost_source FROM ledger WHERE top_level"
        )
    return out


def cost_summary(
    tasks: Any,
    /,
    *,
    clips: pd.DataFrame | None = None,
    by: Sequence[str] = ("model",),
) -> pd.DataFrame:
    """Per group, the ledger's cost of the clips' tasks (``tasks``: the ledger's tasks frame,
    a ``LedgerStore`` or a client, read through ``songlab.ledger.engine``'s relation):
    ``usd_per_clip`` and ``usd_per_minute`` (Decimal; per minute of the clips' audio when
    ``clips`` gives ``task_id`` and ``duration_s``), ``cost_basis`` ("billed", "estimated"
    or "billed+estimated") and ``unknown_cost`` (clips whose cost is unknown or still
    pending: left out of the means, never counted as 0)."""
    t = _ledger_costs(tasks).drop_duplicates("task_id").set_index("task_id")
    if clips is not None:
        want = clips.dropna(subset=["task_id"]).drop_duplicates("task_id")
        missing = sorted(set(want["task_id"]) - set(t.index))
        if missing:
            raise ListeningError(
                "tasks", f"{len(missing)} clip task(s) are not in the ledger (first: {missing[0]})"
            )
        keys = _keys(want, by)
        base = want[[*keys, "task_id", "duration_s"]].set_index("task_id")
    else:
        keys = _keys(t.reset_index(), by)
        base = t[keys].assign(duration_s=float("nan"))
    joined = base.join(t[["cost_usd", "cost_source"]])
    rows = []
    for group, g in joined.groupby(keys, sort=True, dropna=False):
        row = dict(zip(keys, group if isinstance(group, tuple) else (group,), strict=True))
        known = g[g["cost_usd"].notna() & g["cost_source"].isin(list(_BASIS))]
        sources = sorted({_BASIS[str(v)] for v in known["cost_source"]})
        total = sum((Decimal(str(v)) for v in known["cost_usd"]), Decimal(0))
        n = len(known)
        row["usd_per_clip"] = (total / n).quantize(CENT) if n else None
        minutes = float(known["duration_s"].sum()) / 60.0 if n else float("nan")
        row["usd_per_minute"] = (
            (total / Decimal(repr(minutes))).quantize(CENT) if n and minutes > 0 else None
        )
        row["cost_basis"] = "+".join(sources) if sources else "unknown"
        row["unknown_cost"] = int(len(g) - n)
        rows.append(row)
    return pd.DataFrame(rows)


# the panel's score of each protocol: which table of its panel statistics, which column


def _panel_score(kind: str, stats: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    table, column = _panel_score_at(kind)
    out = stats[table][["model", column]].rename(columns={column: "score"})
    return out.reset_index(drop=True)


def _panel_fn(kind: str, options: Mapping[str, Any]) -> Callable[[pd.DataFrame], pd.DataFrame]:
    """The panel's score of a frame of answers, as the campaign's statistics compute it (the
    protocol's ``panel_stats``; for preference only its ranking, ``panel.bradley_terry``,
    which is what ``panel_stats`` puts there, without the shares a resample never shows)."""
    if _bradley_terry(kind):
        return lambda f: panel.bradley_terry(f)[["model", "score"]]
    from songlab.listening.registry import protocol

    cls = protocol(kind)
    return lambda f: _panel_score(kind, cls.panel_stats(f, options=options))


def _panel_score_at(kind: str | None) -> tuple[str, str]:
    """``(table, column)`` of the protocol's panel score per model (its ``panel_score``)."""
    from songlab.listening.registry import PROTOCOLS, protocol

    if kind is None:
        raise ListeningError(
            "kind", f"name the protocol of these answers: one of {', '.join(PROTOCOLS)}"
        )
    at = protocol(kind).panel_score
    if at is None:
        scoring = [k for k, c in PROTOCOLS.items() if c.panel_score is not None]
        raise ListeningError(
            "kind",
            f"must be a protocol that scores each model ({', '.join(scoring)}); {kind!r} tells "
            "whether raters hear a difference, not which is better",
        )
    return at


def _bradley_terry(kind: str | None) -> bool:
    """Whether the protocol's panel score is the Bradley-Terry ranking (fitted to pairwise
    outcomes, which the bootstrap makes once)."""
    return _panel_score_at(kind) == ("ranking", "score")


def _check_kind(kind: str | None) -> str:
    """``kind`` when it names a protocol that scores each model."""
    if kind is None:
        from songlab.listening.registry import PROTOCOLS

        raise ListeningError(
            "kind", f"name the protocol of these answers: one of {', '.join(PROTOCOLS)}"
        )
    _panel_score_at(kind)
    return kind


def _from_campaign(campaign: Any, answers: str | None) -> tuple[Any, ...]:
    """``(kind, kept answers, the panel's point scores, score function, excluded raters)``
    of a campaign, after its exclusions (:meth:`Campaign.exclusions`)."""
    kind = _check_kind(campaign.kind)
    stats = campaign.stats(raters="kept", answers=answers)  # the panel's own figures
    table = stats[_panel_score_at(kind)[0]]
    # every rater's answers, each row marked as its rater's exclusion says (what
    # results(raters="kept"), which the statistics above counted, keeps)
    everyone = campaign.results(answers=table.attrs["answers"])
    gone = everyone["excluded"].fillna(False).astype(bool)
    kept, out = everyone[~gone].reset_index(drop=True), everyone[gone]
    return kind, kept, _panel_score(kind, stats), _panel_fn(kind, campaign.options), out


def _from_session(session: Any, answers: str | None) -> tuple[pd.DataFrame, str]:
    """A revealed session's answers and its kind. One listener: each trial is its own unit
    (``rater`` "trial N"), so the panel's fit treats the trials as independent and the
    bootstrap resamples the listener's trials."""
    kind = _check_kind(session.kind)
    frame = session.results(answers=answers or "all")
    if "model" not in frame.columns:
        raise ListeningError(
            "listening", "the session is still blind: reveal() it before it is scored"
        )
    if frame.empty:
        raise ListeningError("listening", "the session has no answers yet")
    return frame.assign(rater=[f"trial {t}" for t in frame["trial"]]), kind


def _resampler(
    kept: pd.DataFrame, fn: Callable[[pd.DataFrame], pd.DataFrame] | None
) -> Callable[[list[str]], pd.DataFrame]:
    """The panel's score of raters drawn with replacement (each draw a rater of its own).

    ``fn`` runs on the drawn raters' answers. None: preference, whose Bradley-Terry
    ranking is fitted to the drawn raters' pairwise outcomes (``panel.comparisons`` of
    each rater, made once, in the order ``panel.bradley_terry`` makes them), which is
    ``panel.bradley_terry`` of their answers without making the outcomes again."""
    by_rater = {str(r): g for r, g in kept.groupby("rater")}
    if fn is not None:
        run = fn

        def answers(picked: list[str]) -> pd.DataFrame:
            return run(
                pd.concat(
                    [by_rater[r].assign(rater=f"{r}#{k}") for k, r in enumerate(picked)],
                    ignore_index=True,
                )
            )

        return answers
    pairs = panel.comparisons(kept)
    pairs_of = {str(r): g for r, g in pairs.groupby("rater")}
    models_of = {r: set(g["model"]) for r, g in by_rater.items()}
    none = pairs.iloc[:0]

    def outcomes(picked: list[str]) -> pd.DataFrame:
        drawn = pd.concat(
            [pairs_of.get(r, none).assign(rater=f"{r}#{k}") for k, r in enumerate(picked)],
            ignore_index=True,
        ).sort_values(["rater", "trial"], kind="stable", ignore_index=True)
        models = sorted(set().union(*(models_of[r] for r in picked)))
        return panel.bradley_terry_pairs(drawn, models)[["model", "score"]]

    return outcomes


def listening_summary(
    results: Any,
    /,
    *,
    kind: str | None = None,
    boot: int = 400,
    seed: int = 0,
    score: Callable[[pd.DataFrame], pd.DataFrame] | None = None,
    answers: str | None = None,
) -> pd.DataFrame:
    """Per model: the listening panel's ``score`` after its rater exclusions, a bootstrap 95 %
    interval over the kept raters, the number of ``raters`` and ``answers`` counted, and
    ``raters_excluded`` (raters of the model the panel's rules left out).

    ``results``: a revealed :class:`~songlab.listening.ListeningSession` (one listener:
    the panel's score of their answers with each trial a unit, the interval a bootstrap
    over their trials), a
    :class:`~songlab.listening.Campaign` (its ``stats(raters="kept")`` give
    the score, figure for figure; its ``exclusions()`` say who is out: failed gold and
    trap checks, flat-lining, the headphone check, the protocol's screening; ``answers``
    chooses a person's or the scripted raters' answers as ``stats`` does), or a frame of
    answers with ``rater`` and ``model`` (``Campaign.results()``: rows of raters marked
    ``excluded`` are left out; ``kind`` says the protocol). The interval runs the panel's
    own function on ``boot`` resamples of the kept raters drawn with replacement (as Music
    Arena bootstraps its votes); resamples the panel cannot fit are skipped and counted in
    ``attrs["boot_failed"]``. Protocols: preference (Bradley-Terry score, 0-100), mushra
    (mean, 0-100), acr (MOS, 1-5); ``score``: another panel function, same shape."""
    from songlab.listening.campaign import Campaign
    from songlab.listening.session import ListeningSession

    one_listener = isinstance(results, ListeningSession)
    if one_listener:
        results, kind = _from_session(results, answers)
    if isinstance(results, Campaign):
        kind, kept, point_frame, fn, out = _from_campaign(results, answers)
        fn = score or fn
        if score is not None:
            point_frame = score(kept)
    else:
        kept, out, fn = _from_frame(results, kind, score)
        point_frame = fn(kept)
    point = point_frame.set_index("model")["score"]
    raters = sorted(kept["rater"].unique())
    resample = _resampler(kept, fn if score is not None or not _bradley_terry(kind) else None)
    draws, failed = _bootstrap(resample, raters, list(point.index), boot=boot, seed=seed)
    rows = []
    for m, s in point.items():
        d = np.asarray(draws[str(m)])
        mine = kept[_involves(kept, str(m))]
        rows.append(
            {
                "model": m,
                "listening_score": float(s),
                "listening_low": float(np.quantile(d, 0.025)) if d.size else float("nan"),
                "listening_high": float(np.quantile(d, 0.975)) if d.size else float("nan"),
                "raters": int(mine["rater"].nunique()),
                "answers": int(len(mine)),
                "raters_excluded": int(out[_involves(out, str(m))]["rater"].nunique()),
            }
        )
    frame = pd.DataFrame(rows)
    if one_listener:
        frame["raters"] = 1
    frame.attrs.update(
        resampled="trials" if one_listener else "raters",
        boot=boot,
        boot_failed=failed,
        kind=kind,
        excluded_raters=sorted(str(r) for r in out["rater"].unique()),
    )
    return frame


def _from_frame(
    results: Any, kind: str | None, score: Callable[[pd.DataFrame], pd.DataFrame] | None
) -> tuple[pd.DataFrame, pd.DataFrame, Callable[[pd.DataFrame], pd.DataFrame]]:
    """A frame of campaign answers: its kept and excluded rows and the panel's function."""
    if not isinstance(results, pd.DataFrame):
        raise ListeningError(
            "listening", "must be a Campaign or a frame of its answers (rater and model)"
        )
    if "rater" not in results.columns or "model" not in results.columns:
        raise ListeningError("listening", "must be campaign results (rater and model columns)")
    fn = score or _panel_fn(_check_kind(kind), {})
    if "excluded" in results.columns:
        gone = results["excluded"].fillna(False).astype(bool)
        kept, out = results[~gone], results[gone]
    else:
        kept, out = results, results.iloc[:0]
    if kept.empty:
        raise ListeningError(
            "listening", f"every rater ({results['rater'].nunique()}) was excluded"
        )
    return kept, out, fn


def _bootstrap(
    resample: Callable[[list[Any]], pd.DataFrame],
    raters: list[Any],
    models: list[Any],
    *,
    boot: int,
    seed: int,
) -> tuple[dict[str, list[float]], int]:
    """Each model's scores over ``boot`` resamples of the raters drawn with replacement, and
    how many resamples the panel could not fit (none with a single rater)."""
    rng = np.random.default_rng(seed)
    draws: dict[str, list[float]] = {str(m): [] for m in models}
    failed = 0
    for _ in range(boot if len(raters) > 1 else 0):
        pick = rng.integers(0, len(raters), size=len(raters))
        try:
            got = resample([raters[i] for i in pick]).set_index("model")["score"]
        except (ListeningError, ValueError, np.linalg.LinAlgError):
            failed += 1
            continue
        for m in models:
            if m in got.index:
                draws[str(m)].append(float(got[m]))
    return draws, failed


def _involves(results: pd.DataFrame, model: str) -> pd.Series:
    hit = results["model"] == model
    for col in ("model_a", "model_b", "winner", "loser", "other"):
        if col in results.columns:
            hit |= results[col] == model
    return hit


class Scorecard:
    """The joined table (``frame``), shown as a table in a notebook, plotted with
    :meth:`plot`, exported with :meth:`to_html` and :meth:`to_parquet`."""

    def __init__(self, frame: pd.DataFrame, *, provenance: Mapping[str, Any] | None = None) -> None:
        self.frame = frame
        self.provenance = dict(provenance or {})

    def __repr__(self) -> str:
        said = "".join(f"\n- {line}" for line in self._verdict_lines())
        table = self.display_frame().to_string(index=False)
        return f"Scorecard({len(self.frame)} rows)\n{table}{said}"

    def display_frame(self) -> pd.DataFrame:
        """The frame as a person reads it: intervals as "0.91 (0.80-1.00)", money in cents,
        seconds rounded, what is unknown as "-"."""
        f = self.frame
        out = pd.DataFrame()
        for col in ("model", "license"):
            if col in f:
                out[col] = f[col]
        if "listening_score" in f:
            out["listening (95% CI)"] = [
                _ci(s, lo, hi, 1)
                for s, lo, hi in zip(
                    f["listening_score"], f["listening_low"], f["listening_high"], strict=True
                )
            ]
            out["raters / answers"] = [
                f"{int(r)} / {int(a)}" if _num(r) else "-"
                for r, a in zip(f["raters"], f["answers"], strict=True)
            ]
        for col in ADHERENCE_COLUMNS:
            if col in f and f[col].notna().any():
                out[col.replace("_score", "").replace("_", " ") + " (95% CI)"] = [
                    _ci(s, lo, hi, 2)
                    for s, lo, hi in zip(f[col], f[f"{col}_low"], f[f"{col}_high"], strict=True)
                ]
        if "wait_p50_s" in f:
            out["wait p50 / p95"] = [
                f"{a:.1f} s / {b:.1f} s" if _num(a) else "-"
                for a, b in zip(f["wait_p50_s"], f["wait_p95_s"], strict=True)
            ]
        if "usd_per_clip" in f:
            out["per clip"] = [_cents(v) for v in f["usd_per_clip"]]
            out["per minute"] = [_cents(v) for v in f["usd_per_minute"]]
            out["cost basis"] = f["cost_basis"]
        if "quality_per_usd" in f:
            out["points per $ (95% CI)"] = [
                _ci(s, lo, hi, 0)
                for s, lo, hi in zip(
                    f["quality_per_usd"],
                    f["quality_per_usd_low"],
                    f["quality_per_usd_high"],
                    strict=True,
                )
            ]
        return out

    def verdicts(self) -> dict[str, Verdict]:
        """What the table says, one sentence per measure it shows (listening, each adherence
        score, points per dollar, price per clip), each rendered by
        :func:`songlab.listening.verdict.verdict` from the figures and intervals the table
        shows, at the precision it shows them: a model is named only where its interval
        separates from every other's; otherwise the sentence says which overlap."""
        f = self.frame
        names = _row_names(f)
        out: dict[str, Verdict] = {}
        for column, measure in _MEASURES.items():
            if column not in f or not f[column].notna().any():
                continue
            low, high = _bounds(column)
            rows = [
                _estimate(name, r, column, low, high)
                for name, (_, r) in zip(names, f.iterrows(), strict=True)
            ]
            out[column] = verdict(rows, measure=measure)
        return out

    def _verdict_lines(self) -> list[str]:
        return [v.text for v in self.verdicts().values()]

    def _repr_html_(self) -> str:
        import html as h

        table: str = self.display_frame().to_html(index=False, escape=True, na_rep="-")
        said = "".join(f"<li>{h.escape(line)}</li>" for line in self._verdict_lines())
        return table + (f"<ul class='songlab-verdicts'>{said}</ul>" if said else "")

    def to_html(self, path: str | os.PathLike[str], /) -> str:
        """A self-contained HTML page: the table and each measure's provenance (0600)."""
        import html as h

        rows = "".join(
            f"<li><b>{h.escape(k)}</b>: {h.escape(str(v.get('library', '')))}; "
            f"rule: {h.escape(str(v.get('rule', '')))}; versions: "
            f"{h.escape(str(v.get('library_versions', '')))}</li>"
            for k, v in self.provenance.items()
        )
        text = (
            "<!doctype html><html><head><meta charset='utf-8'><title>songlab scorecard</title>"
            "<style>body{font-family:sans-serif}table{border-collapse:collapse}"
            "td,th{border:1px solid #ccc;padding:4px 8px}</style></head><body>"
            "<h1>Scorecard</h1>"
            + self._repr_html_()
            + "<h2>Provenance</h2><ul>"
            + rows
            + "</ul></body></html>"
        )
        write_atomic(path, text)  # 0600, whole, fsynced
        return text

    def to_parquet(self, path: str | os.PathLike[str], /) -> None:
        """The frame as Parquet (money as decimal128(18, 8), provenance in the metadata)."""
        import json

        import pyarrow as pa
        import pyarrow.parquet as pq

        f = self.frame.copy()
        schema_fields = []
        for col in f.columns:
            if col.startswith("usd_"):
                schema_fields.append(pa.field(col, pa.decimal128(18, 8)))
        table = pa.Table.from_pandas(f, preserve_index=False)
        for fld in schema_fields:
            i = table.schema.get_field_index(fld.name)
            table = table.set_column(i, fld, pa.array(list(f[fld.name]), fld.type))
        meta = dict(table.schema.metadata or {})
        meta[b"songlab.provenance"] = json.dumps(self.provenance, default=str).encode()
        table = table.replace_schema_metadata(meta)
        replace_atomically(path, lambda tmp: pq.write_table(table, tmp))  # 0600, whole

    def plot(self, *, measure: str = "key_score") -> Any:
        """Quality per dollar: each model's listening score (or ``measure`` when nobody has
        listened) against its price per clip, with the 95 % intervals; legend outside."""
        f = self.frame
        use_listening = "listening_score" in f and f["listening_score"].notna().any()
        y, lo, hi = (
            ("listening_score", "listening_low", "listening_high")
            if use_listening
            else (measure, f"{measure}_low", f"{measure}_high")
        )
        if y not in f:
            raise ListeningError("measure", f"{measure!r} is not a column of the scorecard")
        fig = figure(figsize=(7, 3.6), layout="constrained")
        ax = fig.add_subplot(1, 1, 1)
        for i, (_, r) in enumerate(f.iterrows()):
            x = (
                float(r["usd_per_clip"])
                if "usd_per_clip" in f and r["usd_per_clip"] is not None
                else float(i)
            )
            err = [[max(0.0, r[y] - r[lo])], [max(0.0, r[hi] - r[y])]] if _num(r[lo]) else None
            label = str(r["model"]) + (f" ({r['license']})" if "license" in f else "")
            ax.errorbar([x], [r[y]], yerr=err, fmt="o", capsize=4, color=f"C{i}", label=label)
        ax.set_xlabel("price per clip (USD)" if "usd_per_clip" in f else "model")
        ax.set_ylabel(y.replace("_", " "))
        ax.grid(alpha=0.3)
        ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0, fontsize="small")
        return fig


def _num(v: Any) -> bool:
    try:
        return v is not None and bool(np.isfinite(float(v)))
    except (TypeError, ValueError):
        return False


def _ci(s: Any, lo: Any, hi: Any, digits: int) -> str:
    if not _num(s):
        return "-"
    if not (_num(lo) and _num(hi)):
        return f"{float(s):.{digits}f}"
    return f"{float(s):.{digits}f} ({float(lo):.{digits}f}-{float(hi):.{digits}f})"


def _cents(v: Any) -> str:
    if v is None or (isinstance(v, float) and not np.isfinite(v)):
        return "-"
    return f"${Decimal(str(v)).quantize(Decimal('0.01'))}"


def _float(v: Any) -> float:
    """A figure of the frame as a float (None and other unknowns: nan)."""
    return float(v) if _num(v) else math.nan


def _estimate(name: str, row: pd.Series, value: str, low: str, high: str) -> Estimate:
    """``row``'s figure ``value`` with its interval ``low``-``high`` (nan where absent)."""
    low_v, high_v = _float(row.get(low)), _float(row.get(high))
    if math.isnan(low_v) or math.isnan(high_v):
        low_v = high_v = math.nan
    return Estimate(name, _float(row.get(value)), low_v, high_v)


#: the listening score and its interval, as the frame holds them
LISTENING: Final = ("listening_score", "listening_low", "listening_high")
# what each column the table shows measures, at the precision display_frame shows it
_MEASURES: Final[dict[str, Measure]] = {
    "listening_score": Measure("listening score", digits=1),
    **{
        col: Measure(
            col.replace("_score", " score").replace("_wer", " word error rate").replace("_", " "),
            better="lower" if col == "lyrics_wer" else "higher",
        )
        for col in ADHERENCE_COLUMNS
    },
    "quality_per_usd": Measure("listening points per dollar", digits=0),
    "usd_per_clip": Measure("price per clip", better="lower", prefix="$", interval="exact price"),
}


def _bounds(column: str) -> tuple[str, str]:
    """The frame's columns of ``column``'s interval (an exact price has none: its own value)."""
    if column == "listening_score":
        return "listening_low", "listening_high"
    if column == "usd_per_clip":
        return column, column
    return f"{column}_low", f"{column}_high"


def _row_names(frame: pd.DataFrame) -> list[str]:
    """Each row's name in a sentence: the model, with its tier when rows are per tier."""
    if "license" not in frame:
        return [str(m) for m in frame["model"]]
    return [f"{m} ({lic})" for m, lic in zip(frame["model"], frame["license"], strict=True)]


def scorecard(
    *,
    adherence: pd.DataFrame | None = None,
    listening: Any = None,
    tasks: Any = None,
    records: Any = None,
    by: Sequence[str] = ("model",),
    kind: str | None = None,
    answers: str | None = None,
    boot: int = BOOT,
    seed: int = 0,
) -> Scorecard:
    """The scorecard: one row per ``by`` group (models, or models and license tiers).

    ``adherence``: :func:`songlab.audio.study.analyse`'s frame (its tasks also choose which
    tasks waiting and cost look at). ``listening``: a revealed listening session (one
    listener), a listening campaign (its panel's
    figures after its rater exclusions: :func:`listening_summary`), a frame of its answers
    (``Campaign.results()``: raters marked ``excluded`` are left out; ``kind`` names the
    protocol) or an already summarised frame (``model, listening_score, listening_low,
    listening_high, raters, answers``). ``answers``: a campaign's "person", "scripted"
    or "all" answers (by default the only kind it holds). ``tasks``: the ledger's tasks frame (``ledger.tasks_frame(client)``).
    ``records``: the client's record (``client.record``) for the waiting. Any may be None.
    """
    parts: list[pd.DataFrame] = []
    keys = list(by)
    prov: dict[str, Any] = {}
    clips = None
    if adherence is not None:
        parts.append(adherence_summary(adherence, by=keys, boot=boot, seed=seed))
        prov.update(adherence.attrs.get("provenance", {}))
        clips = adherence
    if listening is not None:
        if isinstance(listening, pd.DataFrame) and "listening_score" in listening.columns:
            lis = listening
        else:
            lis = listening_summary(
                listening, kind=kind, boot=min(boot, 400), seed=seed, answers=answers
            )
            kind = str(lis.attrs.get("kind", kind))
        parts.append(lis)
        prov["listening"] = {
            "library": f"songlab.listening.panel ({kind}), bootstrap over raters",
            "rule": "the panel's score after its rater exclusions (checks failed, "
            "flat-lining, headphone check, screening: songlab.listening.raters); 95 % "
            "percentile interval of the kept raters drawn with replacement",
            "excluded_raters": list(lis.attrs.get("excluded_raters", [])),
            "library_versions": {},
        }
    ids = None if clips is None else clips["task_id"].dropna().tolist()
    if records is not None:
        parts.append(waiting(records, by=keys, task_ids=ids))
    if tasks is not None:
        parts.append(cost_summary(tasks, clips=clips, by=keys))
    if not parts:
        raise ListeningError(
            "scorecard", "needs at least one of adherence, listening, tasks, records"
        )
    frame = parts[0]
    for p in parts[1:]:
        on = [k for k in keys if k in p.columns and k in frame.columns]
        frame = frame.merge(p, on=on or ["model"], how="outer")
    if "listening_score" in frame and "usd_per_clip" in frame:
        ratio = [
            per(
                _estimate("-", r, *LISTENING),
                r["usd_per_clip"],
            )
            for _, r in frame.iterrows()
        ]  # the listening interval divided by the exact price: the ratio's own interval
        frame["quality_per_usd"] = [e.value for e in ratio]
        frame["quality_per_usd_low"] = [e.low for e in ratio]
        frame["quality_per_usd_high"] = [e.high for e in ratio]
    frame = frame.sort_values(keys, ignore_index=True)
    return Scorecard(frame, provenance=prov)
