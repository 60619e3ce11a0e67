"""Periods, roll-ups, run rates, a stated forecast and budgets over a tasks frame: one import
for a notebook's work with time (``from songlab.ledger import periods``).

The names live in the modules that make them; this module gathers them:

- :func:`period` / :class:`Period` (``dates``): ``--from``/``--to`` dates or a name
  (``month-to-date``, ``this-month``, ``last-month``, ``last-7-days``, ``last-30-days``,
  ``year-to-date``, ``all``, or a month ``YYYY-MM``); :func:`in_period` (``engine``) keeps
  the tasks created in one; :func:`as_of_for`, the later of now and the newest task;
- :func:`rollup` (``rollups``): spend per day, week (Monday) or month, empty periods as 0;
- :func:`forecast` (``month``): the month's spend so far, run rates and its one forecast
  (the guardrails' method, with an interval);
- :func:`budget_status` (``month``): monthly budgets (overall and per project), parsed once
  (:func:`parse_budgets`, ``budgets``), against month-to-date spend and the forecast.
"""

from __future__ import annotations

from songlab.ledger.budgets import BUDGET_STATES, Budgets, parse_budgets, worst_budget
from songlab.ledger.dates import NAMED_PERIODS, Period, period, period_starts
from songlab.ledger.engine import as_of_for, in_period
from songlab.ledger.month import Forecast, budget_status, elapsed_text, forecast, month_forecast
from songlab.ledger.rollups import rollup

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
