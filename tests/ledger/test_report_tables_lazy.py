"""The report's tables made as they are first read (``tables.Tables``, what ``write_report``
uses so each section's chart is drawn while the next sections' tables are made) are the
tables made all at once, every one of them, and none is made before it is read."""

from __future__ import annotations

from datetime import UTC, datetime

import pandas as pd

from songlab.ledger import tables
from songlab.ledger.engine import open_ledger
from songlab.ledger.synthetic import synthetic_table

AS_OF = datetime(2026, 12, 31, 12, tzinfo=UTC)
TASKS = synthetic_table(3000, seed=6, labels=True, days=50, settled_before=AS_OF)


def test_tables_made_when_read_are_the_tables_made_at_once() -> None:
    eager = tables.build(TASKS, as_of=AS_OF, budgets=["500"])
    with open_ledger(TASKS) as lg:
        lazy = tables.build_from(lg, as_of=AS_OF, budgets=["500"], lazy=True)
        made = lazy.tables._made  # type: ignore[attr-defined]
        assert set(made) == {"by_day"}  # the charts' period length, nothing else yet
        by_project = lazy.tables["by_project"]
        assert set(made) == {"by_day", "by_project"}
        tables.complete(lazy)
    assert (
        list(lazy.tables)
        == list(eager.tables)
        == [
            t.name
            for t in tables.TABLES
            if t.name != "reconciliation"  # no balance snapshot
        ]
    )
    pd.testing.assert_frame_equal(by_project, eager.tables["by_project"])
    for name in eager.tables:
        pd.testing.assert_frame_equal(lazy.tables[name], eager.tables[name], obj=name)
        assert lazy.tables[name].attrs == eager.tables[name].attrs, name
    steps = lazy.tables["agent_steps"]
    assert steps.attrs["total_steps"] == lazy.tables["agent_by_step"].attrs["total_steps"] > 0
