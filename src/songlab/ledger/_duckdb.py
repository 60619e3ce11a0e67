"""The DuckDB backend of the ledger engine: embedded, the default.

It reads an Arrow table in place (zero copy; dictionary columns as they are) and a
``LedgerStore``'s month-partitioned Parquet files in place, out of core (1 GB of memory,
then a scratch directory), on all cores; sums are exact ``DECIMAL(38, 8)``.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import pyarrow as pa

import songlab.ledger._arrow_codes as arrow_codes
import songlab.ledger._arrow_rows as arrow_rows
from songlab.ledger._arrow_codes import Coded

__all__ = ["DuckDB"]


class DuckDB:
    """``engine.Backend`` on an in-process DuckDB connection (closed by :meth:`close`)."""

    dialect = "duckdb"

    def __init__(self, *, memory_limit: str = "1GB") -> None:
        import duckdb

        self._scratch = tempfile.mkdtemp(prefix="songlab-duckdb-")
        self.con: Any = duckdb.connect(
            config={
                "threads": max(1, os.cpu_count() or 1),
                "memory_limit": memory_limit,
                "temp_directory": self._scratch,
                "preserve_insertion_order": False,
            }
        )
        self.con.execute("SET TimeZone = 'UTC'")
        self.con.execute("SET enable_progress_bar = false")
        self._kept: dict[str, pa.Table] = {}  # registered tables stay alive while the view exists
        self._order: dict[str, arrow_rows.Order | None] = {}  # their times' order, once

    def register(self, name: str, table: pa.Table) -> None:
        self._kept[name] = table
        self._order.pop(name, None)
        self.con.register(name, table)

    def register_rows(
        self,
        name: str,
        source: str,
        *,
        created_from: datetime | None = None,
        created_to: datetime | None = None,
        operation: str | None = None,
    ) -> bool:
        """Register as ``name`` the rows of the Arrow table registered as ``source`` created
        from ``created_from`` to ``created_to`` (inclusive) of ``operation`` (None: any), taken
        by Arrow's kernels reading those columns only (DuckDB converts every projected column
        of every row of an Arrow table before it filters). False: ``source`` is not an Arrow
        table registered here (a Parquet dataset, a view), nothing registered."""
        table = self._kept.get(source)
        if table is None:
            return False
        if source not in self._order:
            self._order[source] = arrow_rows.Order.of(table)
        self.register(
            name, arrow_rows.rows(table, self._order[source], created_from, created_to, operation)
        )
        return True

    def register_coded(self, name: str, source: str, columns: Sequence[str]) -> Coded | None:
        """Register as ``name`` the Arrow table registered as ``source`` with its dictionary
        string ``columns`` as integer codes (``_arrow_codes``: DuckDB groups them several
        times faster than strings); its codes' values returned. None: ``source`` is not an
        Arrow table registered here, nothing registered."""
        table = self._kept.get(source)
        if table is None:
            return None
        coded = arrow_codes.encode(table, columns)
        self.register(name, coded.table)
        return coded

    def unregister(self, name: str) -> None:
        """Forget the table registered as ``name``."""
        self.con.unregister(name)
        self._kept.pop(name, None)
        self._order.pop(name, None)

    def register_dataset(self, name: str, root: Path, files: Sequence[Path]) -> None:
        # newest month first: a ledger's rows are newest first in each file, so a scan in
        # file order is the ledger's order (the CSV of every task keeps it)
        listed = ", ".join(
            "'" + str(f).replace("'", "''") + "'" for f in sorted(files, reverse=True)
        )
        self.con.execute(
            f"CREATE OR REPLACE VIEW {name} AS SELECT * FROM read_parquet([{listed}], "
            "hive_partitioning = true, union_by_name = true)"
        )

    def execute(self, sql: str) -> None:
        self.con.execute(sql)

    def materialize(self, name: str, sql: str) -> None:
        self.con.execute(f"CREATE OR REPLACE TEMP TABLE {name} AS {sql}")

    def arrow(self, sql: str) -> pa.Table:
        result: pa.Table = self.con.sql(sql).to_arrow_table()
        return result

    def write_csv(self, sql: str, path: Path) -> None:
        target = str(path).replace("'", "''")
        # the source's order (a ledger's: newest first), streamed: a sort of every task
        # would cost more than the whole rest of the report
        self.con.execute("SET preserve_insertion_order = true")
        try:
            self.con.execute(f"COPY ({sql}) TO '{target}' (FORMAT csv, HEADER true)")
        finally:
            self.con.execute("SET preserve_insertion_order = false")

    def close(self) -> None:
        try:
            self.con.close()
        finally:
            self._kept.clear()
            self._order.clear()
            shutil.rmtree(self._scratch, ignore_errors=True)
