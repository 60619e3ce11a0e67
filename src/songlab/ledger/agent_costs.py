"""What Agent One runs cost, by tier and step, read from their traces by the ledger engine.

A run's trace (``output.metadata_json``) lists its steps (a tool call and what it cost, prose,
a check of its work); the run's own fee is ``agent_fee_usd``. :func:`by_step` sums every run
of a period by tier and step ("own fee", "called generate_song", ...) in one query that
parses each trace once and keeps no step row; :func:`newest_steps` lists the steps of the
newest runs only (it parses only theirs). Both are written once (``dialects.TRACE_PARSE``
says the trace's schema in each engine's dialect).
"""

from __future__ import annotations

from typing import Final

import pandas as pd

from songlab.ledger.dates import Period
from songlab.ledger.dialects import TRACE_COSTS, TRACE_PARSE
from songlab.ledger.engine import Ledger
from songlab.ledger.relation import day_filter

__all__ = ["AGENT_STEP_ROWS", "COSTS_SQL", "STEPS_SQL", "by_step", "newest_steps"]

# The steps of the newest runs shown, at most.
AGENT_STEP_ROWS: Final[int] = 1_000

# The runs (``{runs}``: a relation with the run's columns and ``metadata_json``) as steps, plus
# each run's own fee. ``{trace}`` is the trace parsed as a struct, ``{valid}`` the rows whose
# text is JSON: the one part each engine says its own way (``dialects.TRACE_PARSE``).
STEPS_SQL: Final[str] = """
WITH runs AS (
  SELECT task_id AS run_task_id, model AS run_model, status AS run_status,
         tool_id AS run_tool_id, created_at, {trace} AS m
  FROM {runs} AS run_rows WHERE {valid}
), calls AS (
  SELECT run_task_id, run_model, created_at, unnest(m.steps) AS s FROM runs
), steps AS (
  SELECT run_task_id, run_model, created_at, s."index" AS step_index, s.kind AS kind,
         s.tool AS tool, s.tool_id AS tool_id, s.status AS status,
         CAST(s.cost_usd AS DECIMAL(18, 8)) AS cost_usd, s.task_id AS task_id, s.text AS text
  FROM calls
  UNION ALL
  SELECT run_task_id, run_model, created_at, NULL, 'agent_fee', NULL, run_tool_id, run_status,
         CAST(m.agent_fee_usd AS DECIMAL(18, 8)), run_task_id, m.stopped_by
  FROM runs
)
"""

_STEP_WORDS: Final[str] = """CASE kind WHEN 'agent_fee' THEN 'own fee'
  WHEN 'tool_call' THEN 'called ' || coalesce(tool, 'a tool')
  WHEN 'prose' THEN 'wrote text' WHEN 'verification' THEN 'checked its work' ELSE kind END"""


def _runs(lg: Ledger, p: Period | None) -> str:
    """The top-level Agent One runs of ``p`` that carry a trace: read from every task once per
    ledger and period, kept (``Ledger.keep``: the totals and the newest steps both read them; a
    scan converts each task's columns before it filters, so a second one costs as much as the
    first). On a cluster engine they are brought to the embedded DuckDB, which parses them."""
    where = day_filter(p)
    kept: dict[str, str] = lg.state.setdefault("agent_runs", {})
    if where not in kept:
        kept[where] = f"agent_runs_{len(kept)}"
        lg.keep(
            kept[where],
            "SELECT task_id, model, status, tool_id, created_at, metadata_json "
            f"FROM {lg.rows(operation='agent')} "
            f"WHERE operation = 'agent' AND top_level AND metadata_json IS NOT NULL AND {where}",
        )
    return kept[where]


def _steps(lg: Ledger, runs: str, kept: str) -> str:
    """:data:`STEPS_SQL` of ``runs`` (a relation of the kept runs ``kept``), parsed in the
    dialect of the engine that holds them."""
    trace, valid = TRACE_PARSE[lg.dialect_of(kept)]
    return STEPS_SQL.format(trace=trace, valid=valid, runs=runs)


# What every run's steps and fee cost (``{costs}``: ``dialects.TRACE_COSTS``), no step row kept.
COSTS_SQL: Final[str] = """
WITH runs AS (
  SELECT task_id AS run_task_id, model AS run_model, {costs} AS m
  FROM {runs} AS run_rows WHERE {valid}
), steps AS (
  SELECT run_task_id, run_model, s.kind AS kind, s.tool AS tool,
         CAST(s.cost_usd AS DECIMAL(18, 8)) AS cost_usd
  FROM (SELECT run_task_id, run_model, unnest(m.steps) AS s FROM runs) AS calls
  UNION ALL
  SELECT run_task_id, run_model, 'agent_fee', NULL, CAST(m.agent_fee_usd AS DECIMAL(18, 8))
  FROM runs
)
"""


def by_step(lg: Ledger, p: Period | None) -> pd.DataFrame:
    """Per tier and step: the runs, the steps, what they cost, and the calls of unknown
    cost; ``attrs["total_steps"]``: every step of the period's runs."""
    runs = _runs(lg, p)
    dialect = lg.dialect_of(runs)
    costs = COSTS_SQL.format(costs=TRACE_COSTS[dialect], valid=TRACE_PARSE[dialect][1], runs=runs)
    out = lg.frame(
        costs
        + f"""
        SELECT coalesce(run_model, '(unknown)') AS tier, {_STEP_WORDS} AS step,
               CAST(count(DISTINCT run_task_id) AS BIGINT) AS runs,
               CAST(count(*) AS BIGINT) AS steps,
               CAST(sum(cost_usd) AS DECIMAL(38, 8)) AS cost_usd,
               CAST(sum(CASE WHEN kind <> 'agent_fee' AND cost_usd IS NULL THEN 1 ELSE 0 END)
                    AS BIGINT) AS unknown_cost_steps
        FROM steps GROUP BY 1, 2 ORDER BY 1, 5 DESC NULLS LAST, 2"""
    )
    out.attrs["total_steps"] = int(sum(out["steps"].tolist())) if len(out) else 0
    return out


def newest_steps(lg: Ledger, p: Period | None, *, limit: int = AGENT_STEP_ROWS) -> pd.DataFrame:
    """Every step of the newest runs of ``p``, newest run first, at most ``limit`` rows."""
    runs = _runs(lg, p)
    newest = (
        f"(SELECT * FROM {runs} AS r "
        f"ORDER BY created_at DESC NULLS LAST, task_id DESC LIMIT {int(limit)})"
    )
    return lg.frame(
        _steps(lg, newest, runs)
        + f"""
        SELECT created_at AS run_created_at, run_task_id, run_model, step_index,
               {_STEP_WORDS} AS step, status, cost_usd, task_id, text
        FROM steps
        ORDER BY run_created_at DESC NULLS LAST, run_task_id, kind = 'agent_fee', step_index
        LIMIT {int(limit)}"""
    )
