"""The ledger's SQL in each engine's own dialect: transpiling, literals and the trace's schema.

Every query of the ledger is written once, in DuckDB's dialect (:data:`DIALECT`), and
:func:`transpile` carries it to another engine's (Spark SQL) with sqlglot. What sqlglot
cannot carry is here too: :data:`TRACE_PARSE`, an Agent One trace (``output.metadata_json``)
parsed as a struct, since a JSON schema is written in each engine's own type language. A
backend of another dialect adds its entry there. :func:`date_sql`, :func:`ts_sql` and
:func:`text_sql` write a date, a UTC time and a string as literals every dialect reads.
"""

from __future__ import annotations

from datetime import UTC, date, datetime
from functools import lru_cache
from typing import Final

__all__ = [
    "DAY_SQL",
    "DIALECT",
    "TRACE_COSTS",
    "TRACE_PARSE",
    "date_sql",
    "text_sql",
    "transpile",
    "ts_sql",
]

DIALECT: Final[str] = "duckdb"  # the dialect every query of the ledger is written in

# The UTC day of a task's ``created_at``, per dialect (written in DuckDB's, transpiled after;
# another dialect: the plain CAST, its session's time zone UTC). DuckDB's CAST of a TIMESTAMPTZ
# to DATE asks ICU's calendar for every row, most of a grouping-sets scan by day (0.8 of
# 2.5 CPU-s over 10M tasks); the same instant read as a plain timestamp (microseconds since
# the epoch) is cut at UTC midnight by integer arithmetic: the same day, nulls and times
# before 1970 included.
DAY_SQL: Final[dict[str, str]] = {
    "duckdb": "CAST(make_timestamp(epoch_us(created_at)) AS DATE)",
    "spark": "CAST(created_at AS DATE)",
}

# The fields of a trace's steps, and their types.
_TRACE_FIELDS: Final[tuple[tuple[str, str], ...]] = (
    ("index", "INTEGER"),
    ("kind", "VARCHAR"),
    ("tool", "VARCHAR"),
    ("tool_id", "VARCHAR"),
    ("status", "VARCHAR"),
    ("cost_usd", "VARCHAR"),
    ("task_id", "VARCHAR"),
    ("text", "VARCHAR"),
)
# Per dialect: (the trace parsed as a struct, the rows whose text is JSON).
TRACE_PARSE: Final[dict[str, tuple[str, str]]] = {
    "duckdb": (
        'from_json(metadata_json, \'{"steps": [{'
        + ", ".join(f'"{n}": "{t}"' for n, t in _TRACE_FIELDS)
        + '}], "agent_fee_usd": "VARCHAR", "stopped_by": "VARCHAR"}\')',
        "json_valid(metadata_json)",
    ),
    "spark": (  # PERMISSIVE from_json: text that is not JSON gives null, which explodes to nothing
        "from_json(metadata_json, 'steps ARRAY<STRUCT<"
        + ", ".join(f"`{n}`: {'INT' if t == 'INTEGER' else 'STRING'}" for n, t in _TRACE_FIELDS)
        + ">>, agent_fee_usd STRING, stopped_by STRING')",
        "TRUE",
    ),
}


# The same for what a trace costs: each step's kind, tool and cost, and the run's own fee (a
# smaller struct to build: what the per-step totals read of every run).
_COST_FIELDS: Final[tuple[tuple[str, str], ...]] = (
    ("kind", "VARCHAR"),
    ("tool", "VARCHAR"),
    ("cost_usd", "VARCHAR"),
)
TRACE_COSTS: Final[dict[str, str]] = {
    "duckdb": 'from_json(metadata_json, \'{"steps": [{'
    + ", ".join(f'"{n}": "{t}"' for n, t in _COST_FIELDS)
    + '}], "agent_fee_usd": "VARCHAR"}\')',
    "spark": "from_json(metadata_json, 'steps ARRAY<STRUCT<"
    + ", ".join(f"`{n}`: STRING" for n, _ in _COST_FIELDS)
    + ">>, agent_fee_usd STRING')",
}


@lru_cache(maxsize=512)
def transpile(sql: str, dialect: str) -> str:
    """``sql`` (DuckDB's dialect) in ``dialect``'s, by sqlglot (unchanged for DuckDB)."""
    if dialect == DIALECT:
        return sql
    import sqlglot

    return ";\n".join(sqlglot.transpile(sql, read=DIALECT, write=dialect, pretty=False))


def date_sql(d: date) -> str:
    """A date literal: ``DATE '2026-11-20'``."""
    return f"DATE '{d.isoformat()}'"


def ts_sql(t: datetime) -> str:
    """A UTC time literal, to the microsecond."""
    return f"TIMESTAMPTZ '{t.astimezone(UTC).strftime('%Y-%m-%d %H:%M:%S.%f')}+00:00'"


def text_sql(value: str) -> str:
    """A string literal (quotes doubled)."""
    return "'" + value.replace("'", "''") + "'"
