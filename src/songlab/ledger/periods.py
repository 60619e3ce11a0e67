"""Periods, roll-ups, run-rate, a stated forecast and budgets over a tasks frame.

The calendar and the arithmetic are ``_periods``'s; every figure here is a query of the
ledger engine (``songlab.ledger.engine``), the same the report and the panel run:

- :func:`period` / :class:`Period`: ``--from``/``--to`` dates or a name (``month-to-date``,
  ``this-month``, ``last-month``, ``last-7-days``, ``last-30-days``, ``year-to-date``,
  ``all``, or a month ``YYYY-MM``); :func:`in_period` keeps the tasks created in one;
- :func:`rollup`: spend per day, week (Monday) or month, with empty periods as 0;
- :func:`forecast`: the month's spend so far, run rates and its one forecast (the
  guardrails' method, with an interval: ``_periods.month_forecast`` says how);
- :func:`budget_status`: monthly budgets (overall and per project), parsed once
  (:func:`parse_budgets`), against month-to-date spend and the forecast.
"""

from __future__ import annotations

from songlab.ledger._periods import (
    BUDGET_STATES,
    NAMED_PERIODS,
    Budgets,
    Forecast,
    Period,
    elapsed_text,
    month_forecast,
    parse_budgets,
    period,
    period_starts,
    worst_budget,
)
from songlab.ledger.engine import as_of_for, budget_status, forecast, in_period, rollup

__all__ = [
    "BUDGET_STATES",
    "Budgets",
    "Forecast",
    "NAMED_PERIODS",
    "Period",
    "as_of_for",
    "budget_status",
    "elapsed_text",
    "forecast",
    "in_period",
    "month_forecast",
    "parse_budgets",
    "period",
    "period_starts",
    "rollup",
    "worst_budget",
]
